/**
 * Writes one framed response to a socket: `Size INT32`, then the encoded parts in order. Buffer
 * parts are written as they are; an external part (a file range of record batches, see
 * storage's LogSlice) is read from the segment file. Parts are gathered, up to
 * GATHER_LIMIT_BYTES, and handed to the socket corked, so a typical Fetch answer leaves in one
 * writev instead of one TCP segment per part (the socket has Nagle off). A file range larger than
 * the limit is streamed in bounded chunks, waiting for the socket to drain, so a large Fetch
 * never sits whole in the JS heap. The file ranges of one gathered write are read into one pooled
 * buffer (buffers.ts), which goes back to the pool once the socket's write callback says the
 * kernel has the bytes: ranges storage found in the page cache (FileRange.cached) are copied on
 * the event loop, the others read at once on the thread pool, where a disk read stalls no one.
 */
import { read, readSync } from 'node:fs';
import type { Socket } from 'node:net';
import { promisify } from 'node:util';
import { isExternalPart, type MessagePart } from '../protocol/wire.js';
import { brokerBuffers } from './buffers.js';

const readAsync = promisify(read);

/** What an external part of a Fetch response carries: where the bytes are. */
export interface FileRange {
  readonly fd: number;
  readonly position: number;
  readonly length: number;
  /**
   * Storage found the range's bytes in the page cache just now (LogSlice.cached), so it may be
   * read on the event loop; otherwise it is read on the thread pool, which a disk read cannot stall.
   */
  readonly cached?: boolean;
}

export const STREAM_CHUNK_BYTES = 256 * 1024;

/**
 * How file ranges reach the socket: `stream` reads them in bounded chunks as the socket drains;
 * `buffer` reads each range whole into one Buffer first. Both are kept so `npm run bench:fetch`
 * can compare them (setting `fetch.send.mode`).
 */
export type FetchSendMode = 'stream' | 'buffer';

/** Most bytes a response holds in memory before handing them to the socket. */
export const GATHER_LIMIT_BYTES = 1024 * 1024;

export async function writeFramedResponse(socket: Socket, parts: readonly MessagePart[], mode: FetchSendMode = 'stream'): Promise<void> {
  let total = 0;
  for (const part of parts) total += part.length;
  const size = Buffer.allocUnsafe(4);
  size.writeInt32BE(total, 0);
  let gathered: Buffer[] = [size];
  let gatheredBytes = size.length;
  /** The file ranges among `gathered` (placeholders there until read), and their bytes. */
  let ranges: { readonly range: FileRange; readonly at: number }[] = [];
  let rangeBytes = 0;
  const send = async (): Promise<void> => {
    const buffers = gathered;
    const reads = ranges;
    const readBytes = rangeBytes;
    gathered = [];
    gatheredBytes = 0;
    ranges = [];
    rangeBytes = 0;
    const pooled = reads.length === 0 ? undefined : brokerBuffers.take(readBytes);
    if (pooled !== undefined) await readFileRanges(reads, pooled, buffers);
    await writeCorked(socket, buffers, (error) => {
      if (pooled !== undefined && (error === undefined || error === null)) brokerBuffers.give(pooled);
    });
  };
  for (const part of parts) {
    const range = isExternalPart(part) ? (part.source as FileRange) : undefined;
    if (range !== undefined && mode === 'stream' && range.length > STREAM_CHUNK_BYTES) {
      await send();
      await streamFileRange(socket, range);
      continue;
    }
    if (gatheredBytes + part.length > GATHER_LIMIT_BYTES) await send();
    if (range === undefined) {
      gathered.push(part as Buffer);
      gatheredBytes += part.length;
      continue;
    }
    ranges.push({ range, at: gathered.length });
    gathered.push(EMPTY);
    gatheredBytes += range.length;
    rangeBytes += range.length;
  }
  await send();
}

const EMPTY = Buffer.alloc(0);

/**
 * Reads the gathered file ranges into consecutive views of one pooled buffer (one per write, not
 * one per partition: a 100-partition Fetch otherwise took more buffers at once than the pool keeps
 * idle, and each fresh one costs the kernel a page fault per 4 KiB) and puts each view in its
 * place in `buffers`. A range the page cache holds (FileRange.cached) is copied here, on the event
 * loop: a round trip through the thread pool (waking a pool thread, then the event loop) costs
 * more than copying 200 KB from the page cache. The others are read at once on the thread pool.
 * Settles only when every read has, so no read is still under way on a descriptor when a failure
 * lets the caller release its slices.
 */
async function readFileRanges(reads: readonly { readonly range: FileRange; readonly at: number }[], into: Buffer, buffers: Buffer[]): Promise<void> {
  let offset = 0;
  const pending: Promise<void>[] = [];
  const here: { readonly range: FileRange; readonly view: Buffer }[] = [];
  for (const { range, at } of reads) {
    const view = into.subarray(offset, offset + range.length);
    offset += range.length;
    buffers[at] = view;
    if (range.cached === true) here.push({ range, view });
    else pending.push(readFileRange(range, view));
  }
  // The pool's reads are under way meanwhile.
  let failure: { readonly error: unknown } | undefined;
  try {
    for (const { range, view } of here) readFileRangeSync(range, view);
  } catch (error) {
    failure = { error };
  }
  for (const outcome of await Promise.allSettled(pending)) {
    if (outcome.status === 'rejected') failure ??= { error: outcome.reason };
  }
  if (failure !== undefined) throw failure.error;
}

/** Fills `bytes` from the file range (bytes.length of them from range.position + offset), on the thread pool. */
async function readFileRange(range: FileRange, bytes: Buffer, offset = 0): Promise<void> {
  let filled = 0;
  while (filled < bytes.length) {
    const { bytesRead } = await readAsync(range.fd, bytes, filled, bytes.length - filled, range.position + offset + filled);
    if (bytesRead === 0) throw endedEarly(range, offset + filled);
    filled += bytesRead;
  }
}

/** `readFileRange` on the event loop, for bytes the page cache holds. */
function readFileRangeSync(range: FileRange, bytes: Buffer, offset = 0): void {
  let filled = 0;
  while (filled < bytes.length) {
    const bytesRead = readSync(range.fd, bytes, filled, bytes.length - filled, range.position + offset + filled);
    if (bytesRead === 0) throw endedEarly(range, offset + filled);
    filled += bytesRead;
  }
}

/** The file is shorter than the range promised: the response can no longer be framed right. */
function endedEarly(range: FileRange, done: number): Error {
  return new Error(`segment ended ${range.length - done} bytes early while reading a fetch response`);
}

async function streamFileRange(socket: Socket, range: FileRange): Promise<void> {
  let sent = 0;
  while (sent < range.length) {
    const bytes = brokerBuffers.take(Math.min(STREAM_CHUNK_BYTES, range.length - sent));
    if (range.cached === true) readFileRangeSync(range, bytes, sent);
    else await readFileRange(range, bytes, sent);
    await write(socket, bytes, (error) => {
      if (error === undefined || error === null) brokerBuffers.give(bytes);
    });
    sent += bytes.length;
  }
}

type WriteCallback = (error: Error | null | undefined) => void;

/** Writes the buffers as one writev; resolves when the socket can take more, calls `onWritten` when the kernel has them. */
function writeCorked(socket: Socket, buffers: readonly Buffer[], onWritten: WriteCallback): Promise<void> {
  const last = buffers.at(-1);
  if (last === undefined) return Promise.resolve();
  if (buffers.length === 1 || socket.destroyed) return write(socket, last, onWritten);
  socket.cork();
  try {
    for (let index = 0; index < buffers.length - 1; index += 1) socket.write(buffers[index] as Buffer);
    // Stream callbacks run in order, so the last one means every buffer before it is written too.
    return write(socket, last, onWritten);
  } finally {
    socket.uncork();
  }
}

function write(socket: Socket, bytes: Buffer, onWritten?: WriteCallback): Promise<void> {
  if (socket.destroyed) return Promise.reject(new Error('connection closed while writing a response'));
  if (socket.write(bytes, onWritten)) return Promise.resolve();
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
