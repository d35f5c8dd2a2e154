/**
 * The compaction scenario (issue #34's performance item): the same keyed data set on a fresh single
 * broker of each system, and three figures.
 *
 *   data set     `compactionRecords` records (default 10 M) produced by kcat -P -K: -Z, keys K0..K(n-1)
 *                (n = `compactionKeys`, default 1 M) drawn by a seeded generator, so both brokers get
 *                the same sequence; 200-byte values; a tenth of the records are tombstones (an empty
 *                value, sent as NULL by -Z). Topic: one partition, cleanup.policy=compact,
 *                segment.bytes=`compactionSegmentBytes` (64 MiB), and min.cleanable.dirty.ratio=1.0
 *                while producing: a dirty ratio is never above 1, so neither cleaner touches the log
 *                before the clock starts.
 *   cleaner      the log's closed segments (every .log file but the active one) are summed, the
 *                broker's peak-RSS mark is reset (/proc/<pid>/clear_refs 5), and IncrementalAlterConfigs
 *                sets min.cleanable.dirty.ratio=0.01. The clock runs from that answer until the
 *                broker's cleaner-offset-checkpoint (same file name and text on both) names an offset
 *                at or past the active segment's base: every closed segment cleaned once. MB/s =
 *                closed-segment bytes ÷ that time. Both brokers poll for work every 100 ms
 *                (log.cleaner.backoff.ms=100) with Kafka's default 128 MiB dedupe buffer, which
 *                holds the 1 M keys in one pass. Each cleaner's own account is kept beside it: Kafka's
 *                "MB of log processed in … seconds" line (kafka.log.LogCleaner at INFO), Tributary's
 *                'cleaned log' lines (bytesRead).
 *   peak RSS     VmHWM of the broker process at the end of that first cleaning (the mark reset just
 *                before it), and the RSS before it: the growth should be bounded by the dedupe buffer,
 *                not by the log.
 *   beside it    Java ProducerPerformance (batch-50 settings) then kcat -C of `compactionPassRecords`
 *                records on a plain topic, twice: once with the cleaner idle (nothing cleanable), once
 *                just after a second copy of the data set was made cleanable, so the cleaner works
 *                through it during the pass. The figures are busy ÷ idle records/s for produce and for
 *                fetch (goal ≥ 0.9×); the share of each busy pass the cleaner was still running is
 *                given (below 1: the cleaner finished first, and the pass measured it only in part).
 *                The idle pass runs in the same broker process as the busy one, with the cleaner on
 *                but without work: one start per system, the same page cache and warm code, and no
 *                difference from log.cleaner.enable=false but the idle cleaner's 100 ms check.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceRun } from '../../services/run-dir.js';
import { alterTopicConfigs, createTopic, expectStored, scanLog } from './admin.js';
import { kcatConsume, kcatProduceArgs, producerPerformance, VALUE_BYTES, writeOrDrain, type ClientContext } from './clients.js';
import { currentLoad } from './machine.js';
import type { BenchOptions } from './options.js';
import { expectSuccess, runProcess } from './process.js';
import type { Figure, Results } from './results.js';
import { startSystem, type RunningSystem, type SystemName } from './systems.js';

type FigureSpec = Omit<Figure, 'samples' | 'id'>;

export interface CompactionSessionIo {
  readonly say: (line: string) => void;
  /** Adds this session's sample of figure `id` (and prints it). */
  readonly record: (id: string, spec: FigureSpec, value: number, detail?: Record<string, number | string>) => void;
  /** A step that failed: noted, and the next step still runs. */
  readonly fail: (what: string, error: unknown) => void;
}

/** Kafka's default log.cleaner.dedupe.buffer.size, stated on both. */
export const DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024;
export const TOMBSTONE_SHARE = 0.1;
const MiB = 1024 * 1024;
const MB = 1_000_000;
const POLL_MS = 50;

/** Broker settings of the compaction sessions beyond brokerSettings() (same names on both). */
export function compactionSettings(): Record<string, string> {
  return { 'log.cleaner.backoff.ms': '100', 'log.cleaner.dedupe.buffer.size': String(DEDUPE_BUFFER_BYTES) };
}

const spec = (label: string, unit: string, better: 'higher' | 'lower'): FigureSpec => ({ scenario: 'compaction', label, unit, better, chart: 'compaction' });

// ---- the keyed data set -----------------------------------------------------------------------

/** xorshift32: the same sequence on both brokers for the same seed. */
function generator(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/**
 * `count` lines `K<key>:<200 letters>` (or `K<key>:` — a tombstone under kcat -Z) for kcat -K:,
 * keys uniform over `keys`, one line in ten a tombstone; written in ~1 MiB chunks with back-pressure.
 */
export function feedKeyedLines(count: number, keys: number, seed = 34): (stdin: Writable) => Promise<void> {
  return async (stdin) => {
    const next = generator(seed);
    const letters = Buffer.alloc(64 * 1024);
    for (let i = 0; i < letters.length; i += 1) letters[i] = 0x41 + (next() % 26);
    const chunk = Buffer.allocUnsafe(MiB + 64 + VALUE_BYTES);
    let at = 0;
    const flush = async (): Promise<void> => {
      const part = Buffer.from(chunk.subarray(0, at));
      at = 0;
      await writeOrDrain(stdin, part);
    };
    for (let i = 0; i < count; i += 1) {
      const key = next() % keys;
      const tombstone = next() % 1000 < TOMBSTONE_SHARE * 1000;
      at += chunk.write(`K${key}:`, at, 'latin1');
      if (!tombstone) {
        const from = next() % (letters.length - VALUE_BYTES);
        at += letters.copy(chunk, at, from, from + VALUE_BYTES);
      }
      chunk[at] = 0x0a;
      at += 1;
      if (at >= MiB) await flush();
    }
    if (at > 0) await flush();
  };
}

/** kcat -P -K: -Z of the keyed data set into partition 0 of `topic` (acks=1, librdkafka's default batching). */
async function produceKeyed(context: ClientContext, bootstrap: string, topic: string, options: BenchOptions): Promise<number> {
  const label = `kcat -P -K: -Z → ${topic}`;
  const run = expectSuccess(label, await runProcess('kcat', [...kcatProduceArgs(bootstrap, topic, 0), '-K', ':', '-Z'], {
    run: context.run, label, timeoutMs: Math.max(600_000, options.compactionRecords * 2), feed: feedKeyedLines(options.compactionRecords, options.compactionKeys),
  }));
  return run.exitedAt - run.spawnedAt;
}

// ---- what the broker's disk and /proc say -----------------------------------------------------

interface Segments {
  /** Base offset of the active (last) segment: the cleaner stops below it. */
  readonly activeBase: number;
  readonly closedBytes: number;
  readonly closedCount: number;
}

function segmentsOf(dataDir: string, topic: string, partition = 0): Segments {
  const dir = join(dataDir, `${topic}-${partition}`);
  const logs = readdirSync(dir).filter((f) => /^\d{20}\.log$/.test(f)).map((f) => ({ base: Number(f.slice(0, 20)), size: statSync(join(dir, f)).size }))
    .sort((a, b) => a.base - b.base);
  const active = logs.at(-1);
  if (active === undefined) throw new Error(`${dir} holds no segment`);
  const closed = logs.slice(0, -1);
  return { activeBase: active.base, closedBytes: closed.reduce((sum, s) => sum + s.size, 0), closedCount: closed.length };
}

/** The first dirty offset of `topic`-`partition` in `<data>/cleaner-offset-checkpoint` (Kafka's text on both); -1 when absent. */
export function cleanerCheckpoint(dataDir: string, topic: string, partition = 0): number {
  let text: string;
  try {
    text = readFileSync(join(dataDir, 'cleaner-offset-checkpoint'), 'utf8');
  } catch {
    return -1;
  }
  for (const line of text.split('\n')) {
    const fields = line.trim().split(' ');
    if (fields.length === 3 && fields[0] === topic && fields[1] === String(partition)) return Number(fields[2]);
  }
  return -1;
}

/** Reads a zigzag varint at `at`: [value, next position]. */
function varint(buffer: Buffer, at: number): [number, number] {
  let raw = 0;
  let shift = 0;
  let position = at;
  for (;;) {
    const byte = buffer[position] ?? 0;
    position += 1;
    raw += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) break;
  }
  return [raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2, position];
}

/**
 * Records and tombstones (null values) in the uncompressed batches of partition 0 of `topic`, and
 * distinct keys among them: what the cleaner kept (kcat -Z sent the tombstones as null values).
 */
export function countKept(dataDir: string, topic: string): { records: number; tombstones: number; keys: number } {
  const dir = join(dataDir, `${topic}-0`);
  let records = 0;
  let tombstones = 0;
  const keys = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => /^\d{20}\.log$/.test(f)).sort()) {
    const bytes = readFileSync(join(dir, file));
    let batch = 0;
    while (batch + 61 <= bytes.length) {
      const length = bytes.readInt32BE(batch + 8);
      if ((bytes.readInt16BE(batch + 21) & 0x07) !== 0) throw new Error(`${file}: a compressed batch at ${batch} (the data set is sent uncompressed)`);
      const count = bytes.readInt32BE(batch + 57);
      let at = batch + 61;
      for (let i = 0; i < count; i += 1) {
        const [recordLength, bodyAt] = varint(bytes, at);
        const end = bodyAt + recordLength;
        let [, p] = varint(bytes, bodyAt + 1); // attributes (1 byte), timestamp delta
        [, p] = varint(bytes, p); // offset delta
        const [keyLength, keyAt] = varint(bytes, p);
        keys.add(bytes.toString('latin1', keyAt, keyAt + Math.max(0, keyLength)));
        const [valueLength] = varint(bytes, keyAt + Math.max(0, keyLength));
        records += 1;
        if (valueLength === -1) tombstones += 1;
        at = end;
      }
      batch += 12 + length;
    }
  }
  return { records, tombstones, keys: keys.size };
}

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const kilobytes = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes === undefined ? undefined : Number(kilobytes) * 1024;
  } catch {
    return undefined;
  }
}

/** Resets the process's peak-RSS mark (VmHWM) to its current RSS; false where the kernel does not let us. */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Watches the cleaner of one topic until its checkpoint reaches `target`, sampling the broker's RSS meanwhile. */
class CleaningWatch {
  doneAt: number | undefined;
  maxRss = 0;
  private stopped = false;
  readonly finished: Promise<void>;

  constructor(private readonly broker: RunningSystem, topic: string, target: number, timeoutMs: number) {
    const deadline = performance.now() + timeoutMs;
    this.finished = (async () => {
      for (;;) {
        this.maxRss = Math.max(this.maxRss, procStatus(broker.pid, 'VmRSS') ?? 0);
        if (cleanerCheckpoint(broker.dataDir, topic) >= target) {
          this.doneAt = performance.now();
          return;
        }
        if (this.stopped) return;
        if (performance.now() > deadline) throw new Error(`the ${broker.name} cleaner did not reach offset ${target} of ${topic} in ${timeoutMs / 1000} s (checkpoint: ${cleanerCheckpoint(broker.dataDir, topic)})`);
        await sleep(POLL_MS);
      }
    })();
  }

  stop(): void {
    this.stopped = true;
  }
}

/** The cleaner's own account of its passes over `topic`, from the broker's log. */
function cleanerOwnAccount(broker: RunningSystem, topic: string): Record<string, number | string> {
  let text: string;
  try {
    text = readFileSync(broker.logFile, 'utf8');
  } catch {
    return {};
  }
  if (broker.name === 'kafka') {
    // "Log cleaner thread 0 cleaned log <topic>-0 (dirty section = [a, b])" then "\t<x> MB of log processed in <s> seconds (<r> MB/sec)." (MB = MiB there).
    const pattern = new RegExp(`cleaned log ${topic.replace(/[.-]/g, '\\$&')}-0 \\(dirty section = \\[\\d+, \\d+\\]\\)\\s+([\\d,.]+) MB of log processed in ([\\d,.]+) seconds`, 'g');
    let mib = 0;
    let seconds = 0;
    let passes = 0;
    for (const match of text.matchAll(pattern)) {
      mib += Number((match[1] ?? '').replace(/,/g, ''));
      seconds += Number((match[2] ?? '').replace(/,/g, ''));
      passes += 1;
    }
    return passes === 0 ? {} : { 'cleaner passes': passes, 'cleaner says MB read': Math.round(mib * MiB / MB), 'cleaner says seconds': seconds };
  }
  let bytesRead = 0;
  let bytesWritten = 0;
  let passes = 0;
  for (const line of text.split('\n')) {
    if (!line.includes('"cleaned log"') || !line.includes(`"topic":"${topic}"`)) continue;
    try {
      const entry = JSON.parse(line) as { bytesRead?: number; bytesWritten?: number };
      bytesRead += entry.bytesRead ?? 0;
      bytesWritten += entry.bytesWritten ?? 0;
      passes += 1;
    } catch {
      // not a JSON line
    }
  }
  return passes === 0 ? {} : { 'cleaner passes': passes, 'cleaner says MB read': Math.round(bytesRead / MB), 'cleaner says MB written': Math.round(bytesWritten / MB) };
}

// ---- the session ------------------------------------------------------------------------------

/** Starts a fresh single broker of `system` for the compaction scenario, measures, stops it. */
export async function compactionSession(round: number, system: SystemName, options: BenchOptions, run: ServiceRun, context: ClientContext, kafkaServerJars: string,
  results: Results, io: CompactionSessionIo): Promise<void> {
  const dir = join(run.dir, `round-${round}-${system}-compaction`);
  mkdirSync(dir, { recursive: true });
  io.say(`\n== round ${round}/${options.rounds}: ${system}, compaction — load ${currentLoad().join(' ')}`);
  const started = performance.now();
  let broker: RunningSystem;
  try {
    broker = await startSystem(system, {
      run, dir, heapMb: options.heapMb, flush: options.flush, kafkaServerJars, tributaryDir: options.tributaryDir,
      extraSettings: compactionSettings(), kafkaInfoLoggers: ['kafka.log.LogCleaner'],
    });
  } catch (error) {
    io.fail('start', error);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
    return;
  }
  results.startSeconds.push({ system, round, seconds: Math.round(broker.startSeconds * 10) / 10, setup: 'compaction' });
  io.say(`${system} up at ${broker.bootstrap} in ${broker.startSeconds.toFixed(1)} s (log ${broker.logFile})`);
  try {
    await measureCompaction(broker, options, context, io);
  } finally {
    await broker.stop();
    io.say(`${system} stopped; compaction scenario ${((performance.now() - started) / 1000).toFixed(1)} s in all`);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  }
}

interface PassResult {
  readonly produce: number;
  readonly fetch: number;
  readonly startedAt: number;
  readonly endedAt: number;
}

async function measureCompaction(broker: RunningSystem, options: BenchOptions, context: ClientContext, io: CompactionSessionIo): Promise<void> {
  const b = broker.bootstrap;
  // Kafka refuses a batch larger than segment.bytes (RECORD_BATCH_TOO_LARGE); librdkafka's batches reach 1 MB.
  const held = { 'cleanup.policy': 'compact', 'segment.bytes': String(options.compactionSegmentBytes), 'min.cleanable.dirty.ratio': '1.0' };
  const cleanable = { 'min.cleanable.dirty.ratio': '0.01' };
  const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const timeoutMs = (bytes: number): number => Math.max(300_000, (bytes / MB) * 1000); // ≥ 1 MB/s
  /** A keyed topic filled with the data set and held from the cleaner; its closed segments. */
  const keyedTopic = async (name: string): Promise<Segments> => {
    await createTopic(b, name, 1, held);
    const ms = await produceKeyed(context, b, name, options);
    await expectStored(b, name, 1, options.compactionRecords);
    const segments = segmentsOf(broker.dataDir, name);
    io.say(`  ${name}: ${fmt(options.compactionRecords)} keyed records (${fmt(options.compactionKeys)} keys, ${TOMBSTONE_SHARE * 100}% tombstones) produced by kcat in ${fmt(ms / 1000, 1)} s (untimed); ` +
      `${segments.closedCount} closed segments, ${fmt(segments.closedBytes / MB, 1)} MB, active segment from offset ${segments.activeBase}`);
    return segments;
  };
  /** Produce then fetch `compactionPassRecords` records on a fresh plain topic. */
  const pass = async (name: string): Promise<PassResult> => {
    await createTopic(b, name, 1);
    const n = options.compactionPassRecords;
    const startedAt = performance.now();
    const produced = await producerPerformance(context, b, name, n, 50);
    await expectStored(b, name, 1, n);
    const fetched = await kcatConsume(context, b, name, n);
    return { produce: produced.recordsPerSecond, fetch: fetched.recordsPerSecond, startedAt, endedAt: performance.now() };
  };
  const step = async (what: string, body: () => Promise<void>): Promise<void> => {
    const started = performance.now();
    try {
      await body();
    } catch (error) {
      io.fail(what, error);
    }
    io.say(`  (compaction ${what}: ${fmt((performance.now() - started) / 1000, 1)} s)`);
  };

  await step('cleaner throughput and RSS', async () => {
    const topic = 'keyed';
    const segments = await keyedTopic(topic);
    if (segments.closedCount === 0) throw new Error(`${topic} has no closed segment to clean (segment.bytes ${options.compactionSegmentBytes} too large for the data set)`);
    const rssBefore = procStatus(broker.pid, 'VmRSS');
    const peakReset = resetPeakRss(broker.pid);
    await alterTopicConfigs(b, topic, cleanable);
    const startedAt = performance.now();
    const watch = new CleaningWatch(broker, topic, segments.activeBase, timeoutMs(segments.closedBytes));
    await watch.finished;
    const seconds = ((watch.doneAt ?? performance.now()) - startedAt) / 1000;
    const peak = peakReset ? procStatus(broker.pid, 'VmHWM') ?? watch.maxRss : watch.maxRss;
    await sleep(500); // the cleaner logs its pass just after the checkpoint
    const after = scanLog(broker.dataDir, topic);
    const kept = countKept(broker.dataDir, topic);
    io.record('compaction.cleaner', spec('log cleaner: closed segments of the keyed log cleaned once (MB ÷ s, cleanable → checkpoint at the active segment)', 'MB/s', 'higher'),
      segments.closedBytes / MB / seconds, {
        'closed MB': Math.round(segments.closedBytes / MB), segments: segments.closedCount, seconds: Math.round(seconds * 100) / 100,
        'log MB after': Math.round(after.bytes / MB), 'records kept': kept.records, 'tombstones kept': kept.tombstones, 'distinct keys': kept.keys, ...cleanerOwnAccount(broker, topic),
      });
    io.record('compaction.rss.peak', spec(`broker peak RSS while cleaning (dedupe buffer ${DEDUPE_BUFFER_BYTES / MiB} MiB)`, 'MiB', 'lower'), peak / MiB, {
      'RSS before cleaning MiB': Math.round((rssBefore ?? NaN) / MiB), 'growth MiB': Math.round((peak - (rssBefore ?? NaN)) / MiB),
      'closed MB cleaned': Math.round(segments.closedBytes / MB), 'peak from': peakReset ? 'VmHWM (reset before)' : `RSS sampled every ${POLL_MS} ms`,
    });
  });

  await step('produce and fetch beside the cleaner', async () => {
    const idle = await pass('plain-idle');
    io.say(`  cleaner idle: produce ${fmt(idle.produce)} records/s, fetch ${fmt(idle.fetch)} records/s`);
    const topic = 'keyed-busy';
    const segments = await keyedTopic(topic);
    await alterTopicConfigs(b, topic, cleanable);
    const cleaningFrom = performance.now();
    const watch = new CleaningWatch(broker, topic, segments.activeBase, timeoutMs(segments.closedBytes));
    let busy: PassResult;
    try {
      busy = await pass('plain-busy');
    } catch (error) {
      watch.stop();
      await watch.finished.catch(() => undefined);
      throw error;
    }
    await watch.finished;
    const cleaningEnd = watch.doneAt ?? performance.now();
    const share = Math.max(0, Math.min(1, (Math.min(cleaningEnd, busy.endedAt) - busy.startedAt) / (busy.endedAt - busy.startedAt)));
    const cleanerSeconds = (cleaningEnd - cleaningFrom) / 1000;
    io.say(`  cleaner busy: produce ${fmt(busy.produce)} records/s, fetch ${fmt(busy.fetch)} records/s; the cleaner ran ${fmt(share * 100)}% of the pass, ` +
      `and cleaned ${fmt(segments.closedBytes / MB, 1)} MB in ${fmt(cleanerSeconds, 2)} s beside it`);
    const detail = (which: 'produce' | 'fetch'): Record<string, number | string> => ({
      'with cleaner records/s': Math.round(busy[which]), 'idle cleaner records/s': Math.round(idle[which]), 'share of the pass with the cleaner running': Math.round(share * 100) / 100,
      'cleaner MB/s meanwhile': Math.round((segments.closedBytes / MB / cleanerSeconds) * 10) / 10,
    });
    io.record('compaction.produce.ratio', spec('produce while the cleaner runs ÷ with it idle (Java ProducerPerformance, batch 50, plain topic)', '×', 'higher'), busy.produce / idle.produce, detail('produce'));
    io.record('compaction.fetch.ratio', spec('fetch while the cleaner runs ÷ with it idle (kcat -C, plain topic)', '×', 'higher'), busy.fetch / idle.fetch, detail('fetch'));
  });
}
