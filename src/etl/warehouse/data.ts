/**
 * The bytes a caller hands to `create`, as Buffers, with the caller's own failures told apart from
 * the warehouse's: an error thrown while reading the data is wrapped in DataSourceError, so the
 * backends can report WAREHOUSE_DATA_FAILED instead of blaming the disk or the network.
 */
import { inspect } from 'node:util';
import type { WarehouseData } from './warehouse.js';

export class DataSourceError extends Error {
  constructor(cause: unknown) {
    super(`reading the data to write failed: ${cause instanceof Error ? cause.message : inspect(cause)}`, { cause });
    this.name = 'DataSourceError';
  }
}

export async function* chunksOf(data: WarehouseData): AsyncGenerator<Buffer, void, undefined> {
  if (Buffer.isBuffer(data)) {
    yield data;
    return;
  }
  if (typeof data !== 'object' || data === null || !(Symbol.asyncIterator in data)) {
    throw new DataSourceError(new TypeError(`expected a Buffer or an async iterable of Buffers, got ${inspect(data, { depth: 0 })}`));
  }
  try {
    for await (const chunk of data as AsyncIterable<unknown>) {
      if (!(chunk instanceof Uint8Array)) {
        throw new TypeError(`expected Buffer chunks, got ${inspect(chunk, { depth: 0, maxStringLength: 40 })}`);
      }
      yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
  } catch (error) {
    throw new DataSourceError(error);
  }
}
