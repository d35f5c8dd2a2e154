/**
 * Fetch send-path benchmark (`npm run bench:fetch`): a benchmark, not a test — it asserts nothing
 * and exits 0 unless something throws.
 *
 * The broker sends fetched record batches straight from segment files, one of two ways (broker
 * setting `fetch.send.mode`, src/broker/response-writer.ts):
 *   stream — read each file range in 256 KiB chunks, write each chunk as the socket drains;
 *   buffer — read each partition's whole range into one Buffer, then write it.
 *
 * Each round:
 *   1. a standalone in-process broker on a fresh data dir; CreateTopics (1 partition) over a
 *      KafkaConnection; then BENCH_MB MB of RecordBatch v2 (50 records of 200 random bytes, null
 *      keys) appended straight to the partition log (PartitionLog.append of pre-built batches,
 *      base offset reset to 0 before each re-use), then log.flush();
 *   2. each client case below consumes the whole partition from offset 0 once per mode, the two
 *      runs back to back so a stream/buffer pair sees the same machine state (other load on a
 *      shared VM moves throughput a lot over a minute). Order ABBA ABBA… within a round, A = stream
 *      in odd rounds and buffer in even ones; the broker is restarted on the same data dir with
 *      the other `fetch.send.mode` whenever the mode changes, followed by a small untimed warm-up
 *      read (16 MB through the Tributary client). Client cases:
 *        - kcat (librdkafka 2.0.2, a separate process): -C -o beginning -e -f '%o\n', with
 *          fetch.wait.max.ms=10 (so the end-of-partition fetch does not wait 500 ms) and
 *          max.partition.fetch.bytes 1 MiB (librdkafka's default) or 8 MiB; timed from spawn to
 *          exit, so it includes process start, metadata and the final empty fetch;
 *        - Tributary's KafkaConnection in this process: Fetch v11, one request in flight,
 *          MaxBytes 50 MiB, PartitionMaxBytes 1 MiB or 8 MiB, the next offset found by walking
 *          the returned batch headers.
 *      While each client consumes, process.memoryUsage() is sampled every 50 ms. The broker runs
 *      in this process, so these are the broker's figures — plus, for the Tributary client rows,
 *      that client's (it reassembles every response frame in this process too); the kcat rows
 *      are the broker alone. A forced GC precedes each consume so the baselines are comparable.
 * Every read is served from the page cache: the data was just written and fits in RAM.
 *
 * Options (environment):
 *   BENCH_MB=200       MB (10^6 bytes) of record batches to load per round
 *   BENCH_ROUNDS=6     rounds (≥ 3 for min/median/max; an even count puts each mode first equally often)
 *   BENCH_CLIENTS=...  comma list of client cases to run (default all: kcat-1m,kcat-8m,tributary-1m,tributary-8m)
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { KafkaConnection } from '../../src/client/connection.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { FetchApi } from '../../src/protocol/apis/fetch.js';
import { encodeRecordBatch, type RecordInput } from '../../src/protocol/records.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { envInt, fmt, fmtInt, say } from './bench-output.js';

const MiB = 1024 * 1024;
const MB = 1_000_000;
const MODES = ['stream', 'buffer'] as const;
type Mode = (typeof MODES)[number];

const LOAD_BYTES = envInt('BENCH_MB', 200) * MB;
const ROUNDS = envInt('BENCH_ROUNDS', 6);
const RECORDS_PER_BATCH = 50;
const VALUE_BYTES = 200;
/** Distinct pre-built batches cycled through while loading (~8 MiB of them). */
const POOL_BYTES = 8 * MiB;
const APPENDS_IN_FLIGHT = 64;
const WARMUP_BYTES = 16 * MB;
const SAMPLE_MS = 50;
const FETCH_MAX_BYTES = 50 * MiB;
const TOPIC = 'bench-fetch';

// RecordBatch v2 header fields.
const LOG_OVERHEAD = 12;
const BATCH_LENGTH_OFFSET = 8;
const LAST_OFFSET_DELTA_OFFSET = 23;
const RECORDS_COUNT_OFFSET = 57;

interface ClientCase {
  readonly key: string;
  readonly label: string;
  readonly run: (bootstrap: string, endOffset: number) => Promise<Consumed>;
}

interface Consumed {
  readonly bytes: number;
  readonly records: number;
}

interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly arrayBuffers: number;
}

interface Measurement extends Consumed {
  readonly ms: number;
  readonly base: Memory;
  readonly peak: Memory;
}

const CLIENTS: readonly ClientCase[] = [
  { key: 'kcat-1m', label: 'kcat, partition max 1 MiB', run: (bootstrap, end) => consumeWithKcat(bootstrap, end, MiB) },
  { key: 'kcat-8m', label: 'kcat, partition max 8 MiB', run: (bootstrap, end) => consumeWithKcat(bootstrap, end, 8 * MiB) },
  { key: 'tributary-1m', label: 'Tributary Fetch v11, partition max 1 MiB', run: (bootstrap, end) => consumeWithTributary(bootstrap, end, MiB) },
  { key: 'tributary-8m', label: 'Tributary Fetch v11, partition max 8 MiB', run: (bootstrap, end) => consumeWithTributary(bootstrap, end, 8 * MiB) },
];
const SELECTED = process.env.BENCH_CLIENTS === undefined || process.env.BENCH_CLIENTS === ''
  ? CLIENTS
  : process.env.BENCH_CLIENTS.split(',').map((key) => {
    const found = CLIENTS.find((c) => c.key === key.trim());
    if (found === undefined) throw new Error(`BENCH_CLIENTS: unknown client case "${key}" (known: ${CLIENTS.map((c) => c.key).join(', ')})`);
    return found;
  });

const mbps = (m: Measurement): number => m.bytes / MB / (m.ms / 1000);
const recordsPerSecond = (m: Measurement): number => m.records / (m.ms / 1000);
const fmtMiB = (bytes: number): string => `${fmt(bytes / MiB, 1)}`;

// A forced GC before each consume makes the memory baselines comparable.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// ---- loading ------------------------------------------------------------------------------

function buildPool(): Buffer[] {
  const make = (): Buffer => {
    const timestamp = Date.now();
    const values = randomBytes(RECORDS_PER_BATCH * VALUE_BYTES);
    const records: RecordInput[] = [];
    for (let i = 0; i < RECORDS_PER_BATCH; i += 1) records.push({ key: null, value: values.subarray(i * VALUE_BYTES, (i + 1) * VALUE_BYTES), timestamp });
    return encodeRecordBatch(records);
  };
  const first = make();
  const pool = [first];
  const size = Math.max(APPENDS_IN_FLIGHT * 2, Math.floor(POOL_BYTES / first.length));
  while (pool.length < size) pool.push(make());
  return pool;
}

function hostPort(bootstrap: string): { host: string; port: number } {
  const colon = bootstrap.lastIndexOf(':');
  return { host: bootstrap.slice(0, colon), port: Number(bootstrap.slice(colon + 1)) };
}

async function createTopic(bootstrap: string): Promise<void> {
  const { host, port } = hostPort(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'bench-fetch' });
  try {
    const response = await connection.request(CreateTopicsApi, 1, {
      topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const result = response.topics[0];
    if (result === undefined || result.errorCode !== 0) throw new Error(`CreateTopics ${TOPIC} failed: ${JSON.stringify(result)}`);
  } finally {
    connection.close();
  }
}

/** Appends pre-built batches until LOAD_BYTES, then flushes. Returns the log end offset and bytes. */
async function load(broker: InProcessBroker, pool: Buffer[]): Promise<{ endOffset: number; bytes: number; ms: number }> {
  await createTopic(broker.bootstrap);
  const log = await broker.broker.logManager.getOrCreateLog(TOPIC, 0);
  const window = new Array<Promise<unknown> | undefined>(APPENDS_IN_FLIGHT);
  let bytes = 0;
  let appends = 0;
  const start = performance.now();
  while (bytes < LOAD_BYTES) {
    const slot = appends % APPENDS_IN_FLIGHT;
    const previous = window[slot];
    if (previous !== undefined) await previous;
    const batch = pool[appends % pool.length];
    if (batch === undefined) throw new Error('empty batch pool');
    // append() rewrote the base offset in place last time; producers send base offset 0.
    batch.fill(0, 0, 8);
    window[slot] = log.append(batch);
    bytes += batch.length;
    appends += 1;
  }
  await Promise.all(window.filter((p) => p !== undefined));
  await log.flush();
  const ms = performance.now() - start;
  if (log.highWatermark !== appends * RECORDS_PER_BATCH) throw new Error(`loaded ${appends * RECORDS_PER_BATCH} records but the high watermark is ${log.highWatermark}`);
  return { endOffset: log.highWatermark, bytes, ms };
}

// ---- clients ------------------------------------------------------------------------------

async function consumeWithKcat(bootstrap: string, endOffset: number, partitionMaxBytes: number): Promise<Consumed> {
  const args = [
    '-C', '-b', bootstrap, '-t', TOPIC, '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%o\\n',
    '-X', 'fetch.wait.max.ms=10',
    '-X', `max.partition.fetch.bytes=${partitionMaxBytes}`,
    '-X', `fetch.max.bytes=${FETCH_MAX_BYTES}`,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('kcat', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let lines = 0;
    let tail = '';
    const stderr: Buffer[] = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kcat did not finish in 120 s; stderr: ${Buffer.concat(stderr).toString()}`));
    }, 120_000);
    child.stdout.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
      tail = (tail + chunk.subarray(Math.max(0, chunk.length - 32)).toString('latin1')).slice(-32);
    });
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not run kcat (apt-get install kcat): ${error.message}`));
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      const last = Number(tail.trim().split('\n').pop());
      if (status !== 0) reject(new Error(`kcat exited ${status}: ${Buffer.concat(stderr).toString()}`));
      else if (lines !== endOffset || last !== endOffset - 1) reject(new Error(`kcat printed ${lines} records ending at offset ${last}; expected ${endOffset} ending at ${endOffset - 1}`));
      else resolve({ bytes: -1, records: lines }); // bytes filled in by the caller (the whole log)
    });
  });
}

async function consumeWithTributary(bootstrap: string, endOffset: number, partitionMaxBytes: number): Promise<Consumed> {
  const { host, port } = hostPort(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'bench-fetch', requestTimeoutMs: 60_000 });
  let offset = 0n;
  const end = BigInt(endOffset);
  let bytes = 0;
  let records = 0;
  try {
    while (offset < end) {
      const response = await connection.request(FetchApi, 11, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: FETCH_MAX_BYTES,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [{ topic: TOPIC, partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes }] }],
        forgottenTopicsData: [],
        rackId: '',
      });
      const partition = response.responses[0]?.partitions[0];
      if (response.errorCode !== 0 || partition === undefined || partition.errorCode !== 0) {
        throw new Error(`Fetch at offset ${offset} failed: error ${response.errorCode}/${partition?.errorCode ?? 'no partition'}`);
      }
      const data = partition.records;
      if (!Buffer.isBuffer(data) || data.length === 0) throw new Error(`Fetch at offset ${offset} returned no records before the end (${endOffset})`);
      let position = 0;
      let next = offset;
      while (position + LOG_OVERHEAD <= data.length) {
        const size = data.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        if (position + size > data.length) break; // a partial batch at the end: fetched again next time
        next = data.readBigInt64BE(position) + BigInt(data.readInt32BE(position + LAST_OFFSET_DELTA_OFFSET)) + 1n;
        records += data.readInt32BE(position + RECORDS_COUNT_OFFSET);
        position += size;
      }
      if (next <= offset) throw new Error(`Fetch at offset ${offset} made no progress (${data.length} bytes)`);
      bytes += position;
      offset = next;
    }
  } finally {
    connection.close();
  }
  if (records !== endOffset) throw new Error(`Tributary client read ${records} records, expected ${endOffset}`);
  return { bytes, records };
}

/** Untimed: the first WARMUP_BYTES through the Tributary client, so each broker start's first case is not also its JIT warm-up. */
async function warmUp(bootstrap: string, endOffset: number, loadedBytes: number): Promise<void> {
  const upTo = Math.max(1, Math.min(endOffset, Math.floor((endOffset * WARMUP_BYTES) / loadedBytes)));
  const { host, port } = hostPort(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'bench-fetch-warmup' });
  try {
    let offset = 0n;
    while (offset < BigInt(upTo)) {
      const response = await connection.request(FetchApi, 11, {
        replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: FETCH_MAX_BYTES, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
        topics: [{ topic: TOPIC, partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes: MiB }] }],
        forgottenTopicsData: [], rackId: '',
      });
      const data = response.responses[0]?.partitions[0]?.records;
      if (!Buffer.isBuffer(data) || data.length < LOG_OVERHEAD) throw new Error(`warm-up fetch at ${offset} returned nothing`);
      let position = 0;
      let next = offset;
      while (position + LOG_OVERHEAD <= data.length) {
        const size = data.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        if (position + size > data.length) break;
        next = data.readBigInt64BE(position) + BigInt(data.readInt32BE(position + LAST_OFFSET_DELTA_OFFSET)) + 1n;
        position += size;
      }
      offset = next;
    }
  } finally {
    connection.close();
  }
}

// ---- measuring ----------------------------------------------------------------------------

function memoryNow(): Memory {
  const usage = process.memoryUsage();
  return { rss: usage.rss, heapUsed: usage.heapUsed, arrayBuffers: usage.arrayBuffers };
}

async function measure(client: ClientCase, bootstrap: string, endOffset: number, loadedBytes: number): Promise<Measurement> {
  gc();
  const base = memoryNow();
  const peak = { ...base };
  const sample = (): void => {
    const now = memoryNow();
    if (now.rss > peak.rss) peak.rss = now.rss;
    if (now.heapUsed > peak.heapUsed) peak.heapUsed = now.heapUsed;
    if (now.arrayBuffers > peak.arrayBuffers) peak.arrayBuffers = now.arrayBuffers;
  };
  const sampler = setInterval(sample, SAMPLE_MS);
  const start = performance.now();
  let consumed: Consumed;
  try {
    consumed = await client.run(bootstrap, endOffset);
  } finally {
    clearInterval(sampler);
  }
  const ms = performance.now() - start;
  sample();
  return { bytes: consumed.bytes < 0 ? loadedBytes : consumed.bytes, records: consumed.records, ms, base, peak };
}

/** A bare kcat run against an empty topic: its fixed cost (start, metadata, one empty fetch), for reading the kcat rows. */
async function kcatFixedCostMs(bootstrap: string): Promise<number> {
  const start = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('kcat', ['-C', '-b', bootstrap, '-t', `${TOPIC}-empty`, '-p', '0', '-o', 'beginning', '-e', '-q', '-X', 'fetch.wait.max.ms=10'], { stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return performance.now() - start;
}

// ---- main ---------------------------------------------------------------------------------

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

const geomean = (values: readonly number[]): number => Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'tributary-bench-fetch-'));
  let running: InProcessBroker | undefined;
  const cleanup = (): void => rmSync(root, { recursive: true, force: true });
  process.once('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  /** results[client][mode] = one measurement per round. */
  const results = new Map<string, Record<Mode, Measurement[]>>();
  for (const client of SELECTED) results.set(client.key, { stream: [], buffer: [] });
  const totalStart = performance.now();
  let kcatFixed: number | undefined;
  let loadedBytes = 0;
  let endOffset = 0;
  try {
    say(`tributary fetch send-mode benchmark — temp dir ${root}`);
    say(`node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPU(s), load average ${loadavg().map((n) => fmt(n, 2)).join(' ')}; ${ROUNDS} round(s); ${LOAD_BYTES / MB} MB per round of ${RECORDS_PER_BATCH}-record batches of ${VALUE_BYTES}-byte values`);
    const pool = buildPool();
    say(`batch: ${fmtInt(pool[0]?.length ?? 0)} B; clients: ${SELECTED.map((c) => c.key).join(', ')}`);

    for (let round = 1; round <= ROUNDS; round += 1) {
      const dataDir = join(root, `round-${round}`);
      // Each client case runs once per mode, back to back, so a pair sees the same machine state
      // (this VM's speed drifts with other load). The order alternates ABBA ABBA… within a round
      // and flips every round; the broker restarts (same data dir) only when the mode changes.
      const first: Mode = round % 2 === 1 ? 'stream' : 'buffer';
      const second: Mode = first === 'stream' ? 'buffer' : 'stream';
      const plan = SELECTED.flatMap((client, i) => (i % 2 === 0 ? [first, second] : [second, first]).map((mode) => ({ client, mode })));
      let current: Mode | undefined;
      for (const { client, mode } of plan) {
        if (running === undefined || current !== mode) {
          if (running !== undefined) await running.stop();
          running = undefined;
          const loadNow = current === undefined;
          running = await startInProcessBroker({ 'fetch.send.mode': mode, 'log.visible.on.append': 'true' }, dataDir);
          current = mode;
          if (loadNow) {
            const loaded = await load(running, pool);
            loadedBytes = loaded.bytes;
            endOffset = loaded.endOffset;
            say(`\n[round ${round}/${ROUNDS}] loaded ${fmt(loaded.bytes / MB)} MB, ${fmtInt(loaded.endOffset)} records in ${fmt(loaded.ms / 1000, 2)} s (${fmt(loaded.bytes / MB / (loaded.ms / 1000))} MB/s, append + flush); load average ${loadavg().map((n) => fmt(n, 2)).join(' ')}`);
          }
          if (kcatFixed === undefined && SELECTED.some((c) => c.key.startsWith('kcat'))) kcatFixed = await kcatFixedCostMs(running.bootstrap);
          await warmUp(running.bootstrap, endOffset, loadedBytes);
        }
        const m = await measure(client, running.bootstrap, endOffset, loadedBytes);
        results.get(client.key)?.[mode].push(m);
        say(`[round ${round}/${ROUNDS} ${mode}] ${client.label}: ${fmt(mbps(m))} MB/s, ${fmtInt(recordsPerSecond(m))} records/s in ${fmt(m.ms / 1000, 2)} s; ` +
          `peak Δ heapUsed +${fmtMiB(m.peak.heapUsed - m.base.heapUsed)} MiB, arrayBuffers +${fmtMiB(m.peak.arrayBuffers - m.base.arrayBuffers)} MiB, rss +${fmtMiB(m.peak.rss - m.base.rss)} MiB (rss peak ${fmtMiB(m.peak.rss)} MiB)`);
      }
      if (running !== undefined) await running.stop();
      running = undefined;
      rmSync(dataDir, { recursive: true, force: true });
    }
    printTables(results, kcatFixed, (performance.now() - totalStart) / 1000);
  } finally {
    if (running !== undefined) await running.stop().catch(() => {});
    cleanup();
  }
}

function printTables(results: Map<string, Record<Mode, Measurement[]>>, kcatFixed: number | undefined, seconds: number): void {
  const throughput: string[][] = [[
    'client', 'stream MB/s med (min–max)', 'buffer MB/s med (min–max)', 'stream÷buffer (per-round min–max)', 'stream won', 'stream rec/s', 'buffer rec/s',
  ]];
  const memory: string[][] = [[
    'client', 'mode', 'peak Δ heapUsed MiB med (max)', 'peak Δ arrayBuffers MiB med (max)', 'peak Δ rss MiB med (max)', 'rss peak MiB (max)',
  ]];
  const ratios: { label: string; median: number; min: number; max: number; wins: number; pairs: number }[] = [];
  const heap: Record<Mode, { heap: number[]; buffers: number[] }> = { stream: { heap: [], buffers: [] }, buffer: { heap: [], buffers: [] } };
  for (const client of SELECTED) {
    const row = results.get(client.key);
    if (row === undefined) continue;
    const speeds = (mode: Mode): number[] => row[mode].map(mbps);
    const cell = (mode: Mode): string => {
      const s = speeds(mode);
      return `${fmt(median(s))} (${fmt(Math.min(...s))}–${fmt(Math.max(...s))})`;
    };
    // Pair each round's stream run with the same round's buffer run (same data, same page cache).
    const perRound = row.stream.map((m, i) => {
      const b = row.buffer[i];
      return b === undefined ? NaN : mbps(m) / mbps(b);
    });
    const r = { label: client.key, median: median(perRound), min: Math.min(...perRound), max: Math.max(...perRound), wins: perRound.filter((x) => x > 1).length, pairs: perRound.length };
    ratios.push(r);
    throughput.push([
      client.label, cell('stream'), cell('buffer'),
      `${fmt(r.median, 3)}× (${fmt(r.min, 3)}–${fmt(r.max, 3)})`,
      `${r.wins}/${r.pairs}`,
      fmtInt(median(row.stream.map(recordsPerSecond))), fmtInt(median(row.buffer.map(recordsPerSecond))),
    ]);
    for (const mode of MODES) {
      const ms = row[mode];
      const dHeap = ms.map((m) => (m.peak.heapUsed - m.base.heapUsed) / MiB);
      const dBuf = ms.map((m) => (m.peak.arrayBuffers - m.base.arrayBuffers) / MiB);
      const dRss = ms.map((m) => (m.peak.rss - m.base.rss) / MiB);
      heap[mode].heap.push(...dHeap);
      heap[mode].buffers.push(...dBuf);
      memory.push([
        client.label, mode,
        `${fmt(median(dHeap))} (${fmt(Math.max(...dHeap))})`,
        `${fmt(median(dBuf))} (${fmt(Math.max(...dBuf))})`,
        `${fmt(median(dRss))} (${fmt(Math.max(...dRss))})`,
        fmt(Math.max(...ms.map((m) => m.peak.rss / MiB))),
      ]);
    }
  }

  say(`\n==== results (${ROUNDS} rounds per mode; medians, min–max over rounds) ====`);
  say('MB = 10^6 bytes of RecordBatch bytes delivered; reads come from the page cache. stream÷buffer > 1 means stream is faster;');
  say('it is the median of per-round ratios (each round\'s stream run against the same round\'s buffer run, same data).');
  if (kcatFixed !== undefined) say(`kcat rows are timed spawn→exit; kcat's fixed cost (start, metadata, one empty fetch) measured once: ${fmt(kcatFixed, 0)} ms.`);
  say('');
  printTable(throughput);
  say('\nMemory of this process during each consume (broker in-process; Tributary-client rows include the client), as the peak');
  say('over 50 ms samples minus the value right after a forced GC before the consume. arrayBuffers = Buffer memory (off the JS heap).');
  say('');
  printTable(memory, 2);

  const overall = geomean(ratios.map((r) => r.median));
  const faster: Mode = overall >= 1 ? 'stream' : 'buffer';
  const margin = overall >= 1 ? overall - 1 : 1 / overall - 1;
  const consistent = ratios.filter((r) => (faster === 'stream' ? r.min > 1 : r.max < 1)).map((r) => r.label);
  const against = ratios.filter((r) => (faster === 'stream' ? r.max < 1 : r.min > 1)).map((r) => r.label);
  const heapLine = (mode: Mode): string =>
    `${mode}: heapUsed +${fmt(median(heap[mode].heap))} MiB median / +${fmt(Math.max(...heap[mode].heap))} max, Buffers +${fmt(median(heap[mode].buffers))} MiB median / +${fmt(Math.max(...heap[mode].buffers))} max`;
  say('');
  say(`total run time ${fmt(seconds, 0)} s`);
  const wins = ratios.reduce((sum, r) => sum + r.wins, 0);
  const pairs = ratios.reduce((sum, r) => sum + r.pairs, 0);
  const p = signTestP(wins, pairs);
  say(`stream beat buffer in ${wins} of ${pairs} back-to-back pairs (two-sided sign test p = ${fmt(p, 3)}; p < 0.05 would say the winner is not a coin flip)`);
  const verdict = consistent.length === ratios.length
    ? `a clear margin: ${faster} won every round in every client case`
    : consistent.length > 0 && against.length === 0
      ? `${faster} won every round in ${consistent.length}/${ratios.length} client case(s) (${consistent.join(', ')}); in the others the rounds disagree`
      : `within the round-to-round noise: ${faster} won every round in only ${consistent.length}/${ratios.length} client case(s)${against.length > 0 ? `, the other mode in ${against.join(', ')}` : ''}`;
  say(`CONCLUSION: on this machine ${faster} mode is faster by ${fmt(margin * 100)}% (geometric mean over client cases of the median stream÷buffer = ${fmt(overall, 3)}×); ` +
    `${verdict}. ` +
    `Peak memory growth during a consume — ${heapLine('stream')}; ${heapLine('buffer')}.`);
}

/** Two-sided sign test: the chance of a split at least this uneven if each pair were a coin flip. */
function signTestP(wins: number, pairs: number): number {
  const k = Math.min(wins, pairs - wins);
  let tail = 0;
  let choose = 1;
  for (let i = 0; i <= k; i += 1) {
    tail += choose;
    choose = (choose * (pairs - i)) / (i + 1);
  }
  return Math.min(1, (2 * tail) / 2 ** pairs);
}

/** Prints rows with the first `textColumns` columns left-aligned and the rest right-aligned. */
function printTable(table: readonly (readonly string[])[], textColumns = 1): void {
  const widths = table[0]?.map((_, column) => Math.max(...table.map((r) => (r[column] ?? '').length))) ?? [];
  const line = (r: readonly string[]): string =>
    r.map((cell, column) => (column < textColumns ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ');
  say(line(table[0] ?? []));
  say(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of table.slice(1)) say(line(r));
}

await main();
