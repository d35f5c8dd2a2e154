/**
 * Writes one framed response to a socket: `Size INT32`, then the encoded parts in order. Buffer
 * parts are written as they are; an external part (a file range of record batches, see
 * storage's LogSlice) is streamed from the segment file in bounded chunks, waiting for the socket
 * to drain, so a large Fetch never sits whole in the JS heap.
 */
import { read } from 'node:fs';
import type { Socket } from 'node:net';
import { promisify } from 'node:util';
import { isExternalPart, type MessagePart } from '../protocol/wire.js';

const readAsync = promisify(read);

/** What an external part of a Fetch response carries: where the bytes are. */
export interface FileRange {
  readonly fd: number;
  readonly position: number;
  readonly length: number;
}

export const STREAM_CHUNK_BYTES = 256 * 1024;

/**
 * How file ranges reach the socket: `stream` reads them in bounded chunks as the socket drains;
 * `buffer` reads each range whole into one Buffer first. Both are kept so `npm run bench:fetch`
 * can compare them (setting `fetch.send.mode`).
 */
export type FetchSendMode = 'stream' | 'buffer';

export async function writeFramedResponse(socket: Socket, parts: readonly MessagePart[], mode: FetchSendMode = 'stream'): Promise<void> {
  let total = 0;
  for (const part of parts) total += part.length;
  const size = Buffer.allocUnsafe(4);
  size.writeInt32BE(total, 0);
  await write(socket, size);
  for (const part of parts) {
    if (!isExternalPart(part)) await write(socket, part);
    else if (mode === 'stream') await streamFileRange(socket, part.source as FileRange);
    else await write(socket, await readFileRange(part.source as FileRange));
  }
}

async function readFileRange(range: FileRange): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(range.length);
  let filled = 0;
  while (filled < range.length) {
    const { bytesRead } = await readAsync(range.fd, bytes, filled, range.length - filled, range.position + filled);
    if (bytesRead === 0) throw new Error(`segment ended ${range.length - filled} bytes early while reading a fetch response`);
    filled += bytesRead;
  }
  return bytes;
}

async function streamFileRange(socket: Socket, range: FileRange): Promise<void> {
  let sent = 0;
  while (sent < range.length) {
    const length = Math.min(STREAM_CHUNK_BYTES, range.length - sent);
    const chunk = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await readAsync(range.fd, chunk, filled, length - filled, range.position + sent + filled);
      if (bytesRead === 0) {
        // The file is shorter than the range promised: the response can no longer be framed right.
        throw new Error(`segment ended ${range.length - sent - filled} bytes early while streaming a fetch response`);
      }
      filled += bytesRead;
    }
    await write(socket, chunk);
    sent += length;
  }
}

function write(socket: Socket, bytes: Buffer): Promise<void> {
  if (socket.destroyed) return Promise.reject(new Error('connection closed while writing a response'));
  if (socket.write(bytes)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onDrain = (): void => {
      socket.off('close', onClose);
      resolve();
    };
    const onClose = (): void => {
      socket.off('drain', onDrain);
      reject(new Error('connection closed while writing a response'));
    };
    socket.once('drain', onDrain);
    socket.once('close', onClose);
  });
}
