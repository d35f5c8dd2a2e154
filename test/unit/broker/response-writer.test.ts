import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATHER_LIMIT_BYTES, STREAM_CHUNK_BYTES, writeFramedResponse, type FetchSendMode } from '../../../src/broker/response-writer.js';
import type { MessagePart } from '../../../src/protocol/wire.js';

// A real loopback connection: the bytes the peer receives must be the frame, whatever the writer
// gathers, corks or streams.
let dir: string;
let fd: number;
const file = randomBytes(3 * STREAM_CHUNK_BYTES + 123);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'response-writer-'));
  writeFileSync(join(dir, 'segment'), file);
  fd = openSync(join(dir, 'segment'), 'r');
});

afterAll(() => {
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

async function sendAndReceive(parts: readonly MessagePart[], mode: FetchSendMode): Promise<Buffer> {
  const received: Buffer[] = [];
  let serverSide: Socket | undefined;
  const server = createServer((socket) => {
    serverSide = socket;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const client = connect(address.port, '127.0.0.1');
  client.on('data', (chunk: Buffer) => received.push(chunk));
  const ended = new Promise<void>((resolve) => client.on('end', resolve));
  await new Promise<void>((resolve) => client.on('connect', resolve));
  while (serverSide === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
  await writeFramedResponse(serverSide, parts, mode);
  serverSide.end();
  await ended;
  client.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return Buffer.concat(received);
}

const range = (position: number, length: number, cached = false): MessagePart => ({ kind: 'external', length, source: { fd, position, length, cached } });

function expectedFrame(pieces: readonly Buffer[]): Buffer {
  const body = Buffer.concat(pieces);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length, 0);
  return Buffer.concat([size, body]);
}

describe('writeFramedResponse', () => {
  const header = Buffer.from('response header');
  const trailer = Buffer.from('trailer');

  for (const mode of ['stream', 'buffer'] as const) {
    it(`sends size, buffers and small file ranges as one frame (${mode})`, async () => {
      const bytes = await sendAndReceive([header, range(10, 1000), trailer, range(5000, 20)], mode);
      expect(bytes.equals(expectedFrame([header, file.subarray(10, 1010), trailer, file.subarray(5000, 5020)]))).toBe(true);
    });

    it(`sends a file range larger than a stream chunk whole and in order (${mode})`, async () => {
      const length = 2 * STREAM_CHUNK_BYTES + 77;
      const bytes = await sendAndReceive([header, range(3, length), trailer], mode);
      expect(bytes.equals(expectedFrame([header, file.subarray(3, 3 + length), trailer]))).toBe(true);
    });
  }

  for (const mode of ['stream', 'buffer'] as const) {
    it(`sends ranges the page cache holds (read on the event loop) like any others (${mode})`, async () => {
      const large = 2 * STREAM_CHUNK_BYTES + 77;
      // Cached ranges beside one that is not, and one larger than a stream chunk.
      const parts = [header, range(10, 1000, true), trailer, range(5000, 20, true), range(7000, 300, false), trailer, range(3, large, true)];
      const bytes = await sendAndReceive(parts, mode);
      expect(bytes.equals(expectedFrame([header, file.subarray(10, 1010), trailer, file.subarray(5000, 5020), file.subarray(7000, 7300), trailer, file.subarray(3, 3 + large)]))).toBe(true);
      const lone = await sendAndReceive([header, range(4321, 150_000, true), trailer], mode);
      expect(lone.equals(expectedFrame([header, file.subarray(4321, 154_321), trailer]))).toBe(true);
    });

    for (const cached of [false, true]) {
      it(`fails when a file range runs past the end of its file (${mode}, ${cached ? 'cached' : 'not cached'})`, async () => {
        const server = createServer();
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const address = server.address();
        if (address === null || typeof address === 'string') throw new Error('no port');
        const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
        const client = connect(address.port, '127.0.0.1');
        client.resume();
        const serverSide = await accepted;
        const short = [range(file.length - 10, 100, cached)];
        const long = [range(file.length - STREAM_CHUNK_BYTES - 10, STREAM_CHUNK_BYTES + 100, cached)];
        await expect(writeFramedResponse(serverSide, [header, ...short], mode)).rejects.toThrow(/90 bytes early/);
        await expect(writeFramedResponse(serverSide, [header, ...long], mode)).rejects.toThrow(/90 bytes early/);
        // Beside ranges read the other way, in the same gathered write.
        await expect(writeFramedResponse(serverSide, [header, range(0, 100, !cached), ...short, range(200, 100, !cached)], mode)).rejects.toThrow(/90 bytes early/);
        client.destroy();
        serverSide.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      });
    }
  }

  it('sends more small ranges than the gather limit holds, in order', async () => {
    const count = Math.ceil((2 * GATHER_LIMIT_BYTES) / STREAM_CHUNK_BYTES) + 1;
    const parts: MessagePart[] = [];
    const pieces: Buffer[] = [];
    for (let index = 0; index < count; index += 1) {
      const position = (index * 7919) % STREAM_CHUNK_BYTES;
      parts.push(Buffer.from(`part ${index}`), range(position, STREAM_CHUNK_BYTES));
      pieces.push(Buffer.from(`part ${index}`), file.subarray(position, position + STREAM_CHUNK_BYTES));
    }
    const bytes = await sendAndReceive(parts, 'stream');
    expect(bytes.equals(expectedFrame(pieces))).toBe(true);
  });

  it('keeps every byte of many responses to a slow reader while it reuses its read buffers', async () => {
    // A read buffer returned to the pool too early would be refilled by the next response while
    // the socket still queues it: the peer would then see later bytes in an earlier frame.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect(address.port, '127.0.0.1');
    const received: Buffer[] = [];
    client.on('data', (chunk: Buffer) => {
      received.push(chunk);
      client.pause();
      setTimeout(() => client.resume(), 1);
    });
    const ended = new Promise<void>((resolve) => client.on('end', resolve));
    const serverSide = await accepted;
    const expected: Buffer[] = [];
    for (let response = 0; response < 60; response += 1) {
      // Three ranges per response, gathered into one write (like a Fetch of three partitions).
      const parts: MessagePart[] = [Buffer.from(`response ${response}`)];
      const pieces: Buffer[] = [Buffer.from(`response ${response}`)];
      for (let partition = 0; partition < 3; partition += 1) {
        const position = ((response * 3 + partition) * 104_729) % (2 * STREAM_CHUNK_BYTES);
        const length = 150_000 + (((response * 3 + partition) * 7_919) % 100_000);
        parts.push(range(position, length));
        pieces.push(file.subarray(position, position + length));
      }
      await writeFramedResponse(serverSide, parts, 'stream');
      expected.push(expectedFrame(pieces));
    }
    serverSide.end();
    await ended;
    client.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(Buffer.concat(received).equals(Buffer.concat(expected))).toBe(true);
  });

  it('refuses to write to a closed connection', async () => {
    const server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const client = connect(address.port, '127.0.0.1');
    await new Promise<void>((resolve) => client.on('connect', resolve));
    client.destroy();
    await expect(writeFramedResponse(client, [header, trailer])).rejects.toThrow(/connection closed/);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
