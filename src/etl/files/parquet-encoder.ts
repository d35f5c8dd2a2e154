/**
 * Where Parquet row groups are encoded. Encoding (decode the rows, shred, write the pages,
 * compress) costs several times what the rest of a load does per record, so a loader hands it to
 * one worker thread and keeps fetching and decoding on the main thread: the second core of a
 * two-core machine does the encoding. The bytes are those of the inline encoder (the same
 * function runs there), so where a group was encoded never shows in a file.
 *
 * The worker starts on first use and lets the process exit whenever no request is in flight. Its
 * code is the worker module bundled by esbuild (common/module-worker.ts).
 */
import type { Worker } from 'node:worker_threads';
import type { RowGroup } from 'hyparquet';
import type { PageIndexes } from 'hyparquet-writer/src/types.js';
import { TributaryError } from '../../common/errors.js';
import { startModuleWorker } from '../../common/module-worker.js';
import { encodeRowGroup, type EncodedRowGroup, type RowGroupInput } from './parquet-row-group.js';
import type { EncodeRequest } from './parquet-encoder-worker.js';

export interface RowGroupEncoder {
  encode(input: RowGroupInput & { readonly schemaText: string; readonly microseconds: boolean }): Promise<EncodedRowGroup>;
}

/** Encodes on the calling thread. */
export const INLINE_ENCODER: RowGroupEncoder = {
  encode: (input) => Promise.resolve(encodeRowGroup(input)),
};

interface Answer {
  readonly id: number;
  readonly bytes?: Uint8Array;
  readonly rowGroup?: RowGroup;
  readonly pageIndexes?: PageIndexes[];
  readonly error?: { code: string; message: string; details: Record<string, unknown> };
}

/** The worker's heap: room for a row group's rows as JavaScript values several times over. */
const HEAP_PER_ROW_BYTE = 8;
const MIN_HEAP_MB = 64;

class WorkerEncoder implements RowGroupEncoder {
  private worker: Worker | undefined;
  /** Largest row group (its rows' Avro bytes) the heap was sized for. */
  private readonly heapMb: number;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (encoded: EncodedRowGroup) => void; reject: (error: Error) => void }>();

  constructor(readonly rowGroupBytes: number) {
    // A capped heap makes V8 collect before it grows: the thread then costs tens of MB, not a hundred.
    this.heapMb = Math.max(MIN_HEAP_MB, Math.ceil((HEAP_PER_ROW_BYTE * rowGroupBytes) / 2 ** 20));
  }

  encode(input: RowGroupInput & { readonly schemaText: string; readonly microseconds: boolean }): Promise<EncodedRowGroup> {
    // A group larger than the heap was sized for (another load of the process) is encoded here: same bytes.
    if (input.rows.length > this.rowGroupBytes + ROW_SLACK_BYTES) return INLINE_ENCODER.encode(input);
    const worker = this.start();
    const id = (this.nextId += 1);
    // A copy the worker owns: the caller's rows may share memory with other Buffers.
    const rows = new Uint8Array(input.rows);
    const request: EncodeRequest = { id, schema: input.schemaText, microseconds: input.microseconds, codec: input.codec, rows, rowCount: input.rowCount, start: input.start, firstRow: input.firstRow, ordinal: input.ordinal };
    return new Promise<EncodedRowGroup>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      if (this.waiting.size === 1) worker.ref();
      worker.postMessage(request, [rows.buffer]);
    });
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = startModuleWorker(WORKER_SOURCE, { name: 'tributary-parquet-encoder', resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: this.heapMb } });
    worker.unref();
    worker.on('message', (answer: Answer) => this.answered(answer));
    worker.on('error', (error) => this.failAll(error));
    worker.on('exit', (code) => {
      this.worker = undefined;
      this.failAll(new Error(`the Parquet encoder thread exited with code ${code}`));
    });
    this.worker = worker;
    return worker;
  }

  private answered(answer: Answer): void {
    const waiter = this.waiting.get(answer.id);
    if (waiter === undefined) return;
    this.waiting.delete(answer.id);
    if (this.waiting.size === 0) this.worker?.unref();
    if (answer.error !== undefined) {
      waiter.reject(new TributaryError({ code: answer.error.code, message: answer.error.message, details: answer.error.details }));
      return;
    }
    const bytes = answer.bytes!;
    waiter.resolve({ bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), rowGroup: answer.rowGroup!, pageIndexes: answer.pageIndexes! });
  }

  private failAll(cause: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const waiter of waiting) {
      waiter.reject(new TributaryError({ code: 'DATA_FILE_ENCODER_FAILED', message: `the Parquet encoder thread failed: ${cause.message}; nothing of the file was committed, run the load again`, retriable: true, cause }));
    }
  }
}

const WORKER_SOURCE = new URL('./parquet-encoder-worker.ts', import.meta.url);

/** A row group closes after the row that reaches its size: the last row may pass it. */
const ROW_SLACK_BYTES = 16 * 1024 * 1024;

let shared: WorkerEncoder | undefined;

/** The process's encoder thread, its heap sized for row groups of `rowGroupBytes` (the first caller's). */
export function workerEncoder(rowGroupBytes: number): RowGroupEncoder {
  return (shared ??= new WorkerEncoder(rowGroupBytes));
}

