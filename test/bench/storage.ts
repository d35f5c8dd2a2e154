/**
 * Storage-engine benchmark (`npm run bench:storage`): a benchmark, not a test — it asserts
 * nothing and always exits 0 unless something throws.
 *
 *   1. Raw disk: sequential write of RAW_BYTES with fs.writeSync in 1 MiB chunks + fsync, then a
 *      sequential read back with fs.readSync in 1 MiB chunks (served by the page cache: Node has
 *      no posix_fadvise(DONTNEED), so the read is labelled "page-cache read").
 *   2. Appends through LogManager → PartitionLog.append of pre-built RecordBatch v2 buffers
 *      (200-byte random values, null keys) for batch sizes 1, 50 and 1000, up to 64 appends in
 *      flight, timed including the final log.flush() (fsync).
 *   3. Reads of each log back from offset 0 with log.read(offset, 1 MiB) + slice.readBytes().
 *
 * Two informational raw variants shaped like the engine's I/O are also printed (not targets):
 * 10 KiB writeSync chunks (one syscall per ~50-record batch) and the raw file re-read with a fresh
 * Buffer per MiB through async fs.read (what readBytes does).
 *
 * Everything lives in one temp folder under os.tmpdir(), removed at the end.
 *
 * Options (environment):
 *   BENCH_CASES=1,50,1000   batch sizes to run (default all three)
 *   BENCH_SKIP_RAW=1        skip the raw disk measurement (ratios are then not printed)
 *   BENCH_APPEND_MIB=256    MiB to append per case
 *   BENCH_RAW_MIB=512       MiB for the raw write/read
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdtempSync, openSync, read as readCallback, readSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { createLogger } from '../../src/common/logger.js';
import { logConfigSchema } from '../../src/storage/log-config.js';
import { LogManager } from '../../src/storage/log-manager.js';
import type { PartitionLog } from '../../src/storage/partition-log.js';
import { encodeRecordBatch, type RecordInput } from '../../src/protocol/records.js';

const MiB = 1024 * 1024;
const MB = 1_000_000;
const CHUNK = MiB;
const RAW_BYTES = envInt('BENCH_RAW_MIB', 512) * MiB;
const APPEND_BYTES = envInt('BENCH_APPEND_MIB', 256) * MiB;
const VALUE_BYTES = 200;
/** About the size of a 50-record batch of 200-byte values. */
const SMALL_WRITE = 10 * 1024;
const IN_FLIGHT = 64;
const CASE_TIME_CAP_MS = 30_000;
const READ_MAX_BYTES = MiB;
const BATCH_SIZES = (process.env.BENCH_CASES ?? '1,50,1000').split(',').map((s) => Number(s.trim())).filter((n) => n > 0);
const SKIP_RAW = process.env.BENCH_SKIP_RAW === '1';
const readAsync = promisify(readCallback);

// RecordBatch v2 header fields used when walking read slices.
const BATCH_LENGTH_OFFSET = 8;
const LAST_OFFSET_DELTA_OFFSET = 23;
const LOG_OVERHEAD = 12;

interface Measurement {
  readonly label: string;
  readonly bytes: number;
  readonly records: number;
  readonly ms: number;
  readonly note?: string;
}

interface CaseResult {
  readonly batchSize: number;
  readonly batchBytes: number;
  readonly append: Measurement;
  readonly read: Measurement;
  readonly readLookupMs: number;
  readonly readCopyMs: number;
}

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not "${raw}"`);
  return value;
}

const mbps = (m: Measurement): number => m.bytes / MB / (m.ms / 1000);
const recordsPerSecond = (m: Measurement): number => m.records / (m.ms / 1000);
const fmt = (n: number, digits = 1): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');
const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

// ---- 1. raw disk --------------------------------------------------------------------------

interface RawResults {
  readonly write: Measurement;
  readonly read: Measurement;
  /** Informational variants that explain the gap to the engine, not used for ratios. */
  readonly info: readonly Measurement[];
}

async function measureRawDisk(dir: string): Promise<RawResults> {
  const path = join(dir, 'raw.bin');
  const chunk = randomBytes(CHUNK);
  const chunks = RAW_BYTES / CHUNK;

  const fd = openSync(path, 'w');
  const writeStart = performance.now();
  let written = 0;
  for (let i = 0; i < chunks; i += 1) {
    let done = 0;
    while (done < CHUNK) done += writeSync(fd, chunk, done, CHUNK - done, written + done);
    written += CHUNK;
  }
  const beforeFsync = performance.now();
  fsyncSync(fd);
  const writeEnd = performance.now();
  closeSync(fd);
  const write: Measurement = {
    label: 'raw write',
    bytes: written,
    records: 0,
    ms: writeEnd - writeStart,
    note: `writeSync ${fmt(beforeFsync - writeStart, 0)} ms + fsync ${fmt(writeEnd - beforeFsync, 0)} ms`,
  };

  const readFd = openSync(path, 'r');
  const buffer = Buffer.allocUnsafe(CHUNK);
  const readStart = performance.now();
  let read = 0;
  for (;;) {
    const n = readSync(readFd, buffer, 0, CHUNK, read);
    if (n === 0) break;
    read += n;
  }
  const readEnd = performance.now();
  if (read !== written) throw new Error(`raw read got ${read} bytes, wrote ${written}`);

  // The same file read the way slice.readBytes() reads: a fresh Buffer per 1 MiB, async fs.read.
  const asyncStart = performance.now();
  let asyncRead = 0;
  for (;;) {
    const fresh = Buffer.allocUnsafe(CHUNK);
    const n = await readFully(readFd, fresh, CHUNK, asyncRead);
    if (n === 0) break;
    asyncRead += n;
  }
  const asyncEnd = performance.now();
  closeSync(readFd);
  unlinkSync(path);

  // Small sequential writes, one syscall per ~batch, as the engine does for 50-record batches.
  const smallPath = join(dir, 'raw-small.bin');
  const small = chunk.subarray(0, SMALL_WRITE);
  const smallBytes = Math.min(RAW_BYTES, APPEND_BYTES);
  const smallFd = openSync(smallPath, 'w');
  const smallStart = performance.now();
  let smallWritten = 0;
  while (smallWritten + SMALL_WRITE <= smallBytes) {
    let done = 0;
    while (done < SMALL_WRITE) done += writeSync(smallFd, small, done, SMALL_WRITE - done, smallWritten + done);
    smallWritten += SMALL_WRITE;
  }
  fsyncSync(smallFd);
  const smallEnd = performance.now();
  closeSync(smallFd);
  unlinkSync(smallPath);

  return {
    write,
    read: { label: 'raw page-cache read', bytes: read, records: 0, ms: readEnd - readStart },
    info: [
      { label: `(info) raw write ${fmtInt(SMALL_WRITE)} B chunks (+fsync)`, bytes: smallWritten, records: 0, ms: smallEnd - smallStart },
      { label: '(info) raw read, new Buffer/MiB, async', bytes: asyncRead, records: 0, ms: asyncEnd - asyncStart },
    ],
  };
}

async function readFully(fd: number, buffer: Buffer, length: number, position: number): Promise<number> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await readAsync(fd, buffer, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

// ---- 2. appends ---------------------------------------------------------------------------

function buildPool(batchSize: number): Buffer[] {
  // Enough distinct buffers to cover the in-flight window several times over, capped at ~32 MiB.
  const sample = encodeRecordBatch(makeRecords(batchSize));
  const poolSize = Math.max(IN_FLIGHT * 2, Math.min(4096, Math.floor((32 * MiB) / sample.length)));
  const pool = [sample];
  while (pool.length < poolSize) pool.push(encodeRecordBatch(makeRecords(batchSize)));
  return pool;
}

function makeRecords(count: number): RecordInput[] {
  const timestamp = Date.now();
  const values = randomBytes(count * VALUE_BYTES);
  const records: RecordInput[] = [];
  for (let i = 0; i < count; i += 1) {
    records.push({ key: null, value: values.subarray(i * VALUE_BYTES, (i + 1) * VALUE_BYTES), timestamp });
  }
  return records;
}

async function measureAppends(log: PartitionLog, batchSize: number, pool: Buffer[]): Promise<Measurement> {
  const batchBytes = pool[0]?.length ?? 0;
  const targetAppends = Math.max(1, Math.floor(APPEND_BYTES / batchBytes));
  const window: Promise<unknown>[] = new Array<Promise<unknown>>(IN_FLIGHT);
  let appends = 0;
  let bytes = 0;
  let capped = false;
  const start = performance.now();
  for (; appends < targetAppends; appends += 1) {
    if ((appends & 1023) === 0 && appends > 0 && performance.now() - start > CASE_TIME_CAP_MS) {
      capped = true;
      break;
    }
    const slot = appends % IN_FLIGHT;
    const previous = window[slot];
    if (previous !== undefined) await previous;
    const batch = pool[appends % pool.length];
    if (batch === undefined) throw new Error('empty batch pool');
    // append() rewrote the base offset in place last time; producers must send base offset 0.
    batch.fill(0, 0, 8);
    window[slot] = log.append(batch);
    bytes += batch.length;
  }
  await Promise.all(window.filter((p) => p !== undefined));
  const beforeFlush = performance.now();
  await log.flush();
  const end = performance.now();
  return {
    label: `append batch=${batchSize}`,
    bytes,
    records: appends * batchSize,
    ms: end - start,
    note: `${fmtInt(appends)} appends of ${fmtInt(batchBytes)} B; flush ${fmt(end - beforeFlush, 0)} ms${capped ? `; capped at ${CASE_TIME_CAP_MS / 1000} s` : ''}`,
  };
}

// ---- 3. reads -----------------------------------------------------------------------------

async function measureReads(log: PartitionLog, batchSize: number): Promise<{ read: Measurement; lookupMs: number; copyMs: number }> {
  const end = log.highWatermark;
  let offset = log.logStartOffset;
  let bytes = 0;
  let records = 0;
  let lookupMs = 0;
  let copyMs = 0;
  let capped = false;
  const start = performance.now();
  while (offset < end) {
    if (performance.now() - start > CASE_TIME_CAP_MS) {
      capped = true;
      break;
    }
    const t0 = performance.now();
    const { slice } = await log.read(offset, READ_MAX_BYTES);
    const t1 = performance.now();
    if (slice === undefined) break;
    let data: Buffer;
    try {
      data = await slice.readBytes();
    } finally {
      slice.release();
    }
    copyMs += performance.now() - t1;
    lookupMs += t1 - t0;
    // Walk the batch headers to find the slice's last offset (and count records).
    let position = 0;
    let lastOffset = -1;
    while (position + LOG_OVERHEAD <= data.length) {
      const size = data.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
      const baseOffset = Number(data.readBigInt64BE(position));
      const delta = data.readInt32BE(position + LAST_OFFSET_DELTA_OFFSET);
      lastOffset = baseOffset + delta;
      records += Math.max(0, Math.min(lastOffset + 1, end) - Math.max(baseOffset, offset));
      position += size;
    }
    if (position !== data.length || lastOffset < offset) throw new Error(`slice at offset ${offset} is not whole batches`);
    bytes += data.length;
    offset = lastOffset + 1;
  }
  const ms = performance.now() - start;
  return {
    read: {
      label: `read batch=${batchSize}`,
      bytes,
      records,
      ms,
      note: `log.read ${fmt(lookupMs, 0)} ms + readBytes ${fmt(copyMs, 0)} ms${capped ? `; capped at ${CASE_TIME_CAP_MS / 1000} s` : ''}`,
    },
    lookupMs,
    copyMs,
  };
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'tributary-bench-'));
  const managers: LogManager[] = [];
  const logger = createLogger({ name: 'bench', level: 'warn' });
  const cleanup = (): void => rmSync(root, { recursive: true, force: true });
  process.once('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  try {
    say(`tributary storage benchmark — temp dir ${root}`);
    say(`node ${process.version}, ${process.platform}/${process.arch}`);

    let raw: RawResults | undefined;
    if (!SKIP_RAW) {
      say(`\n[raw] writing ${RAW_BYTES / MiB} MiB with fs.writeSync in 1 MiB chunks, then fsync…`);
      raw = await measureRawDisk(root);
      say(`[raw] sequential write + fsync: ${fmt(mbps(raw.write))} MB/s (${raw.write.note ?? ''})`);
      say(`[raw] sequential read (readSync, 1 MiB chunks): ${fmt(mbps(raw.read))} MB/s — page-cache read: the file was just`);
      say('      written and Node has no posix_fadvise(DONTNEED), so this is memory speed, not the disk.');
      for (const info of raw.info) say(`[raw] ${info.label.replace('(info) ', '')}: ${fmt(mbps(info))} MB/s (informational)`);
    }

    const results: CaseResult[] = [];
    for (const batchSize of BATCH_SIZES) {
      const dataDir = join(root, `logs-batch-${batchSize}`);
      const manager = await LogManager.open({
        dataDir,
        logger,
        configFor: () => logConfigSchema.parse({ flushMessages: Number.MAX_SAFE_INTEGER, flushMs: 1000 }),
      });
      managers.push(manager);
      const log = await manager.getOrCreateLog('bench', 0);
      const pool = buildPool(batchSize);
      const batchBytes = pool[0]?.length ?? 0;
      say(`\n[batch=${batchSize}] ${pool.length} pre-built batches of ${fmtInt(batchBytes)} B; appending up to ${APPEND_BYTES / MiB} MiB, ${IN_FLIGHT} in flight…`);
      const append = await measureAppends(log, batchSize, pool);
      say(`[batch=${batchSize}] append: ${fmt(mbps(append))} MB/s, ${fmtInt(recordsPerSecond(append))} records/s (${append.note ?? ''})`);
      const { read, lookupMs, copyMs } = await measureReads(log, batchSize);
      say(`[batch=${batchSize}] read:   ${fmt(mbps(read))} MB/s, ${fmtInt(recordsPerSecond(read))} records/s (${read.note ?? ''})`);
      if (read.records !== append.records) say(`[batch=${batchSize}] note: read ${read.records} records, appended ${append.records}`);
      results.push({ batchSize, batchBytes, append, read, readLookupMs: lookupMs, readCopyMs: copyMs });
    }

    printTable(raw, results);
  } finally {
    const closing = await Promise.allSettled(managers.map((manager) => manager.close()));
    cleanup();
    for (const outcome of closing) if (outcome.status === 'rejected') say(`closing a log manager failed: ${String(outcome.reason)}`);
  }
}

function printTable(raw: RawResults | undefined, results: readonly CaseResult[]): void {
  const rows: string[][] = [['case', 'MB/s', 'records/s', 'ratio vs raw']];
  const ratio = (m: Measurement, base: Measurement | undefined): number | undefined => (base === undefined ? undefined : mbps(m) / mbps(base));
  const fmtRatio = (r: number | undefined): string => (r === undefined ? 'n/a' : `${fmt(r, 2)}×`);
  if (raw !== undefined) {
    rows.push([raw.write.label + ' (+fsync)', fmt(mbps(raw.write)), '-', '1.00×']);
    rows.push([raw.read.label, fmt(mbps(raw.read)), '-', '1.00×']);
    const [smallWrite, asyncRead] = raw.info;
    if (smallWrite !== undefined) rows.push([smallWrite.label, fmt(mbps(smallWrite)), '-', fmtRatio(ratio(smallWrite, raw.write))]);
    if (asyncRead !== undefined) rows.push([asyncRead.label, fmt(mbps(asyncRead)), '-', fmtRatio(ratio(asyncRead, raw.read))]);
  }
  for (const r of results) rows.push([`${r.append.label} (${fmtInt(r.batchBytes)} B)`, fmt(mbps(r.append)), fmtInt(recordsPerSecond(r.append)), fmtRatio(ratio(r.append, raw?.write))]);
  for (const r of results) rows.push([r.read.label, fmt(mbps(r.read)), fmtInt(recordsPerSecond(r.read)), fmtRatio(ratio(r.read, raw?.read))]);
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  const line = (row: readonly string[]): string =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ');

  say('\n==== results ====');
  if (raw !== undefined) {
    say(`raw sequential write (writeSync 1 MiB + fsync): ${fmt(mbps(raw.write))} MB/s; raw sequential read (readSync 1 MiB, page cache): ${fmt(mbps(raw.read))} MB/s`);
  } else {
    say('raw disk not measured (BENCH_SKIP_RAW=1)');
  }
  say('MB = 10^6 bytes of RecordBatch bytes; appends timed including the final fsync; reads copy each slice into the heap');
  say('(slice.readBytes), whereas the broker will stream slices from the fd — reads here are a lower bound.');
  say('"(info)" rows are raw-disk variants shaped like the engine\'s I/O; they explain ratios and are not targets.');
  say('');
  say(line(rows[0] ?? []));
  say(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows.slice(1)) say(line(row));
  say('');

  if (raw === undefined) {
    say('targets: not evaluated (no raw measurement)');
    return;
  }
  const verdict = (ok: boolean): string => (ok ? 'MET' : 'NOT MET');
  const appendCases = results.filter((r) => r.batchSize >= 50);
  const appendRatios = appendCases.map((r) => `batch=${r.batchSize} ${fmtRatio(ratio(r.append, raw.write))}`);
  const appendsOk = appendCases.length > 0 && appendCases.every((r) => (ratio(r.append, raw.write) ?? 0) >= 0.8);
  const readRatios = results.map((r) => `batch=${r.batchSize} ${fmtRatio(ratio(r.read, raw.read))}`);
  const readsOk = results.length > 0 && results.every((r) => (ratio(r.read, raw.read) ?? 0) >= 0.8);
  say(`target: appends of 50+ record batches ≥ 0.8× raw sequential write — ${appendCases.length === 0 ? 'not evaluated (no 50+ case run)' : verdict(appendsOk)} (${appendRatios.join(', ')})`);
  say(`target: reads ≥ 0.8× raw read — ${results.length === 0 ? 'not evaluated' : verdict(readsOk)} (${readRatios.join(', ')})`);
  const batch1 = results.find((r) => r.batchSize === 1);
  if (batch1 !== undefined) {
    say(`(batch=1 appends are not covered by the target: ${fmtRatio(ratio(batch1.append, raw.write))} of raw write)`);
  }
}

await main();
