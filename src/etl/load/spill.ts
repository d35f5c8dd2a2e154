/**
 * Where a data file's bytes wait between being encoded and being staged. An Avro file's header
 * names every offset the file holds, so it is known only after the last record, while its blocks
 * are ready long before: they wait here, in memory up to MEMORY_LIMIT_BYTES, then in a local
 * temporary file, so a task's memory is bounded by its open files, not by its range. Staging then
 * streams header + these bytes into the warehouse, as often as a retry needs (`chunks` replays).
 *
 * The memory part counts against the run's memory budget (memory-budget.ts): when the budget is
 * used up, the buffers holding the most go to disk early.
 *
 * Spill files live under `<tmpdir>/tributary-spill/<pid>-<random>.spill` and are removed when the
 * file is staged or the task fails; those of processes that are gone (SIGKILL) are removed by the
 * next task that starts on the machine.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etlError } from '../errors.js';
import type { BudgetHolder, MemoryBudget } from './memory-budget.js';

/** Bytes a file keeps in memory before it spills to disk. */
export const MEMORY_LIMIT_BYTES = 1024 * 1024;
/** Writes to the spill file are gathered up to this size. */
const WRITE_BYTES = 1024 * 1024;

export class SpillBuffer implements BudgetHolder {
  private memory: Buffer[] = [];
  /** Bytes waiting in memory that could go to the spill file. */
  memoryBytes = 0;
  /** Bytes handed to the spill file but not written yet. */
  private inFlightBytes = 0;
  private file: { readonly path: string; readonly handle: Promise<FileHandle> } | undefined;
  /** Disk writes in flight, chained so they land in order; the first failure sticks. */
  private writing: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  length = 0;

  constructor(
    private readonly directory: string = spillDirectory(),
    private readonly budget?: MemoryBudget,
  ) {
    budget?.register(this);
  }

  /** Takes a chunk the caller will not change again. */
  write(chunk: Buffer): void {
    this.length += chunk.length;
    this.budget?.take(chunk.length);
    this.memory.push(chunk);
    this.memoryBytes += chunk.length;
    if (this.file === undefined && this.memoryBytes < MEMORY_LIMIT_BYTES) return;
    if (this.memoryBytes >= WRITE_BYTES) this.toDisk();
  }

  /** Resolves once no more than a write's worth waits in memory (back-pressure for the encoder). */
  async drain(): Promise<void> {
    await this.writing;
    if (this.failure !== undefined) throw this.failure;
  }

  /** The bytes written, in order; callable again (a retried upload reads them anew). */
  async *chunks(): AsyncGenerator<Buffer, void, undefined> {
    if (this.file !== undefined) {
      if (this.memory.length > 0) this.toDisk();
      await this.drain();
      const stream = createReadStream(this.file.path, { highWaterMark: WRITE_BYTES });
      for await (const chunk of stream) yield chunk as Buffer;
      return;
    }
    yield* this.memory;
  }

  /** Moves what waits in memory to the spill file (the budget is used up). */
  spill(): void {
    if (this.memory.length > 0) this.toDisk();
  }

  /** Removes the spill file, if any. */
  async dispose(): Promise<void> {
    this.budget?.release(this.memoryBytes);
    this.budget?.unregister(this);
    this.memory = [];
    this.memoryBytes = 0;
    if (this.file === undefined) return;
    const { path, handle } = this.file;
    this.file = undefined;
    await this.writing.catch(() => undefined); // releases what was in flight
    await (await handle.catch(() => undefined))?.close().catch(() => undefined);
    await rm(path, { force: true });
  }

  private toDisk(): void {
    if (this.file === undefined) {
      const path = join(this.directory, `${process.pid}-${randomBytes(6).toString('hex')}.spill`);
      this.file = { path, handle: prepare(this.directory).then(() => open(path, 'wx')) };
    }
    const { path, handle } = this.file;
    // Written as they are (writev): a copy into one Buffer would be one more for the GC to find.
    const chunks = this.memory;
    this.memory = [];
    // Still in memory until written: the budget counts the bytes until then (not spillable any more,
    // so the writers wait for them between fetches: MemoryBudget.drain).
    const inFlight = this.memoryBytes;
    this.memoryBytes = 0;
    this.inFlightBytes += inFlight;
    this.writing = this.writing.then(async () => {
      try {
        if (this.failure !== undefined) return;
        await writeAll(await handle, chunks);
      } catch (error) {
        this.failure = etlError('ETL_SPILL_FAILED', `could not write ${inFlight} bytes to the local spill file ${path}: ${(error as Error).message}. Free space under ${this.directory} or point TMPDIR elsewhere, then run again`, {
          retriable: true,
          cause: error,
          details: { path },
        });
      } finally {
        this.inFlightBytes -= inFlight;
        this.budget?.release(inFlight);
      }
    });
  }
}

/** Writes every chunk, in order, however much one writev call takes. */
async function writeAll(handle: FileHandle, chunks: Buffer[]): Promise<void> {
  let pending = chunks;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending);
    let written = bytesWritten;
    const rest: Buffer[] = [];
    for (const chunk of pending) {
      if (written >= chunk.length) written -= chunk.length;
      else {
        rest.push(written === 0 ? chunk : chunk.subarray(written));
        written = 0;
      }
    }
    pending = rest;
  }
}

/** `<tmpdir>/tributary-spill`, unless TRIBUTARY_SPILL_DIR names another folder. */
export function spillDirectory(): string {
  return process.env['TRIBUTARY_SPILL_DIR'] ?? join(tmpdir(), 'tributary-spill');
}

const prepared = new Map<string, Promise<void>>();

/** Makes the folder once per process and removes the spill files of processes that no longer run. */
function prepare(directory: string): Promise<void> {
  let ready = prepared.get(directory);
  if (ready === undefined) {
    ready = (async () => {
      await mkdir(directory, { recursive: true });
      for (const name of await readdir(directory)) {
        const pid = Number(/^(\d+)-/.exec(name)?.[1]);
        if (Number.isSafeInteger(pid) && pid !== process.pid && !isRunning(pid)) await rm(join(directory, name), { force: true });
      }
    })();
    prepared.set(directory, ready);
  }
  return ready;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
