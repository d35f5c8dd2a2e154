/**
 * Client throughput benchmark (`npm run bench:clients`): a benchmark, not a test — it asserts
 * nothing about speed and exits 0 unless something throws (a run that did not move all N records
 * throws, since its figure would be meaningless).
 *
 * Tributary's own TypeScript client against librdkafka (Debian's kcat, librdkafka 2.0.2), both
 * talking to the same Tributary broker in the same run, 200-byte records, null keys:
 *
 *   broker   one `tributary broker start` child process (test/support/brokers.ts), so neither
 *            client shares a CPU thread with it; settings `log.visible.on.append=true` (the high
 *            watermark moves on append, so consuming does not wait on the flush timer). Every
 *            topic has one partition and is created (Metadata auto-creation) before it is timed.
 *   records  N values of 200 random bytes, generated once into one buffer as N lines of 200 bytes
 *            plus '\n' (byte 0x0a never occurs inside a value, so kcat's line splitting is exact);
 *            our producer sends subarrays of the very same bytes.
 *   produce  ours:  Producer.connect({ bootstrap, lingerMs: 5, batchSize: 65536 }) — the defaults,
 *                   so idempotent with acks −1 — then send() of BENCH_SEND_RECORDS records per call
 *                   for all N records to partition 0 of a fresh topic, every send awaited, then
 *                   close(); timed connect (InitProducerId included) → closed.
 *            ours, idempotent: false: the same with `idempotent: false` (acks −1 still), to show
 *                   what idempotence costs.
 *            kcat:  kcat -P -b B -t T -p 0 -X enable.idempotence=true -X acks=all -X linger.ms=5
 *                   -X batch.size=65536, the N lines piped to its stdin; timed spawn → exit, minus
 *                   kcat's fixed cost (the median spawn → exit time of a 1-record produce,
 *                   measured up front).
 *            Each run writes to its own topic; its high watermark is checked to be N afterwards.
 *   consume  both read the same topic (the one kcat filled in round 1) from offset 0 to its end:
 *            ours:  ClusterClient.connect + SimpleConsumer.fetch(topic, 0, offset, { maxBytes:
 *                   1 MiB }) in a loop until the high watermark, records decoded and counted;
 *                   timed connect → closed.
 *            kcat:  kcat -C -b B -t T -p 0 -o beginning -e -q -f '%s\n', stdout lines counted;
 *                   timed spawn → exit, minus the fixed cost of the same command on a 1-record
 *                   topic (librdkafka's final fetch at the end of the partition is in both).
 *   rounds   an untimed warm-up of both clients (JIT of our client and of the broker), then
 *            BENCH_ROUNDS rounds alternating ours, (ours idempotent: false,) kcat … per phase.
 * Figures: records/s and MB/s (MB = 10^6 bytes of record values), min / median / max over rounds,
 * and ours ÷ librdkafka as the ratio of the medians, against the target of ≥ 0.7×.
 *
 * Options (environment):
 *   BENCH_RECORDS=1000000   records per run (N)
 *   BENCH_ROUNDS=5          rounds per phase (≥ 3 for min/median/max)
 *   BENCH_SEND_RECORDS=1000 records per Producer.send() call
 *   BENCH_PHASES=produce,consume
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { Producer, type ProducerRecord } from '../../src/client/producer.js';
import { SimpleConsumer } from '../../src/client/simple-consumer.js';
import { startBrokerProcess, type BrokerProcess } from '../support/brokers.js';
import { createTemporaryRun, startGuardian, stopRun, type ServiceRun } from '../services/run-dir.js';
import { envInt, fmt, fmtInt, say } from './bench-output.js';

const MiB = 1024 * 1024;
const MB = 1_000_000;
const VALUE_BYTES = 200;
const TARGET = 0.7;
const FIXED_COST_SAMPLES = 3;

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const ROUNDS = envInt('BENCH_ROUNDS', 5);
const SEND_RECORDS = envInt('BENCH_SEND_RECORDS', 1000);
const PHASES = new Set((process.env.BENCH_PHASES ?? 'produce,consume').split(',').map((p) => p.trim()));
const WARMUP_RECORDS = Math.min(RECORDS, Math.max(10_000, Math.floor(RECORDS / 10)));
const KCAT_TIMEOUT_MS = 300_000;

type Phase = 'produce' | 'consume';
/** `ours-plain`: our producer with idempotent: false (produce phase only). */
type Side = 'ours' | 'ours-plain' | 'kcat';
const SIDE_NAMES: Record<Side, string> = { ours: 'Tributary TS client', 'ours-plain': 'Tributary, idempotent: false', kcat: 'kcat (librdkafka 2.0.2)' };

interface Run {
  readonly records: number;
  readonly bytes: number;
  /** Timed milliseconds (kcat: after subtracting its fixed cost). */
  readonly ms: number;
  /** kcat only: spawn → exit before the subtraction. */
  readonly rawMs?: number;
}

const recordsPerSecond = (r: Run): number => r.records / (r.ms / 1000);
const mbPerSecond = (r: Run): number => r.bytes / MB / (r.ms / 1000);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

// ---- data ---------------------------------------------------------------------------------

/** N lines of VALUE_BYTES random bytes + '\n'; no value contains '\n'. */
function generateLines(count: number): Buffer {
  const stride = VALUE_BYTES + 1;
  const lines = randomBytes(count * stride);
  for (let i = 0; i < lines.length; i += 1) if (lines[i] === 0x0a) lines[i] = 0x0b;
  for (let i = VALUE_BYTES; i < lines.length; i += stride) lines[i] = 0x0a;
  return lines;
}

function recordsOf(lines: Buffer, count: number): ProducerRecord[] {
  const stride = VALUE_BYTES + 1;
  const records = new Array<ProducerRecord>(count);
  for (let i = 0; i < count; i += 1) records[i] = { key: null, value: lines.subarray(i * stride, i * stride + VALUE_BYTES), partition: 0 };
  return records;
}

// ---- topics -------------------------------------------------------------------------------

let topicSequence = 0;
const newTopicName = (label: string): string => `bench-clients-${label}-${process.pid}-${(topicSequence += 1)}`;

/** Creates a one-partition topic (Metadata auto-creation, num.partitions = 1) and waits for its leader. */
async function createTopic(admin: ClusterClient, label: string): Promise<string> {
  const topic = newTopicName(label);
  const { partitions } = await admin.topicMetadata(topic);
  if (partitions.length !== 1) throw new Error(`topic ${topic} has ${partitions.length} partitions, expected 1`);
  await admin.leaderConnection(topic, 0);
  return topic;
}

async function highWatermark(admin: ClusterClient, topic: string): Promise<bigint> {
  return new SimpleConsumer(admin).listOffset(topic, 0, 'latest');
}

// ---- our client ---------------------------------------------------------------------------

async function produceOurs(bootstrap: string, topic: string, records: readonly ProducerRecord[], idempotent = true): Promise<Run> {
  const start = performance.now();
  const producer = await Producer.connect({ bootstrap: [bootstrap], lingerMs: 5, batchSize: 65536, idempotent });
  try {
    const sends: Promise<unknown>[] = [];
    for (let i = 0; i < records.length; i += SEND_RECORDS) sends.push(producer.send(topic, records.slice(i, i + SEND_RECORDS)));
    await Promise.all(sends);
  } finally {
    await producer.close();
  }
  const ms = performance.now() - start;
  return { records: records.length, bytes: records.length * VALUE_BYTES, ms };
}

async function consumeOurs(bootstrap: string, topic: string): Promise<Run> {
  const start = performance.now();
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap] });
  let records = 0;
  let bytes = 0;
  try {
    const consumer = new SimpleConsumer(cluster);
    let offset = 0n;
    let end = 1n;
    while (offset < end) {
      const result = await consumer.fetch(topic, 0, offset, { maxBytes: MiB });
      end = result.highWatermark;
      if (result.records.length === 0) {
        if (offset < end) throw new Error(`fetch at ${offset} returned no records before the high watermark ${end}`);
        break;
      }
      for (const record of result.records) bytes += record.value?.length ?? 0;
      records += result.records.length;
      offset = result.nextOffset;
    }
  } finally {
    cluster.close();
  }
  return { records, bytes, ms: performance.now() - start };
}

// ---- kcat ---------------------------------------------------------------------------------

interface KcatRun {
  readonly ms: number;
  readonly lines: number;
}

/** Runs kcat, piping `input` to stdin; times spawn → exit and counts the lines it printed. */
function runKcat(args: readonly string[], input: Buffer | undefined): Promise<KcatRun> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn('kcat', [...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let lines = 0;
    const stderr: Buffer[] = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kcat ${args.join(' ')} did not finish in ${KCAT_TIMEOUT_MS / 1000} s; stderr: ${Buffer.concat(stderr).toString()}`));
    }, KCAT_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
    });
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not run kcat (apt-get install kcat): ${error.message}`));
    });
    child.once('close', (status) => {
      const ms = performance.now() - start;
      clearTimeout(timer);
      if (status !== 0) reject(new Error(`kcat ${args.join(' ')} exited with ${String(status)}: ${Buffer.concat(stderr).toString()}`));
      else resolve({ ms, lines });
    });
    child.stdin.on('error', () => {}); // reported through the exit status
    child.stdin.end(input ?? '');
  });
}

const kcatProduceArgs = (bootstrap: string, topic: string): string[] =>
  ['-P', '-b', bootstrap, '-t', topic, '-p', '0', '-X', 'enable.idempotence=true', '-X', 'acks=all', '-X', 'linger.ms=5', '-X', 'batch.size=65536'];
const kcatConsumeArgs = (bootstrap: string, topic: string): string[] =>
  ['-C', '-b', bootstrap, '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%s\\n'];

async function produceKcat(bootstrap: string, topic: string, lines: Buffer, count: number, fixedMs: number): Promise<Run> {
  const run = await runKcat(kcatProduceArgs(bootstrap, topic), lines);
  return { records: count, bytes: count * VALUE_BYTES, ms: Math.max(1, run.ms - fixedMs), rawMs: run.ms };
}

async function consumeKcat(bootstrap: string, topic: string, fixedMs: number): Promise<Run> {
  const run = await runKcat(kcatConsumeArgs(bootstrap, topic), undefined);
  return { records: run.lines, bytes: run.lines * VALUE_BYTES, ms: Math.max(1, run.ms - fixedMs), rawMs: run.ms };
}

// ---- main ---------------------------------------------------------------------------------

type PhaseResult = Record<Side, Run[]> & { fixedMs: number };

async function main(): Promise<void> {
  const totalStart = performance.now();
  const run: ServiceRun = createTemporaryRun('tributary-bench-clients-');
  startGuardian(run);
  let admin: ClusterClient | undefined;
  process.once('SIGINT', () => {
    void stopRun(run).finally(() => process.exit(130));
  });
  try {
    say(`tributary client benchmark — Tributary TypeScript client vs librdkafka (kcat), same broker, same run`);
    say(`node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPU(s), load average ${loadavg().map((n) => fmt(n, 2)).join(' ')}`);
    say(`${fmtInt(RECORDS)} records of ${VALUE_BYTES} B (${fmt((RECORDS * VALUE_BYTES) / MB)} MB) per run, null keys, partition 0; ${ROUNDS} rounds per phase; ` +
      `our producer sends ${fmtInt(SEND_RECORDS)} records per send() call`);

    const broker: BrokerProcess = await startBrokerProcess({ run, id: 0, settings: { 'log.visible.on.append': 'true' } });
    const bootstrap = broker.bootstrap;
    say(`broker: separate process (pid group in ${run.pidDir}), ${bootstrap}, log.visible.on.append=true; log ${broker.logFile}`);
    admin = await ClusterClient.connect({ bootstrap: [bootstrap] });

    const lines = generateLines(RECORDS);
    const records = recordsOf(lines, RECORDS);

    // Untimed warm-up: our client's JIT and the broker's, through both clients.
    const warmLines = lines.subarray(0, WARMUP_RECORDS * (VALUE_BYTES + 1));
    const warmRecords = records.slice(0, WARMUP_RECORDS);
    const warmTopic = await createTopic(admin, 'warm-ours');
    await produceOurs(bootstrap, warmTopic, warmRecords);
    await produceOurs(bootstrap, await createTopic(admin, 'warm-ours-plain'), warmRecords, false);
    await produceKcat(bootstrap, await createTopic(admin, 'warm-kcat'), warmLines, WARMUP_RECORDS, 0);
    await consumeOurs(bootstrap, warmTopic);
    await consumeKcat(bootstrap, warmTopic, 0);
    say(`warm-up done (${fmtInt(WARMUP_RECORDS)} records produced and consumed by each client, untimed)`);

    // kcat's fixed cost: process start, librdkafka init, metadata, connect, teardown.
    const oneLine = lines.subarray(0, VALUE_BYTES + 1);
    const produceFixed: number[] = [];
    const consumeFixed: number[] = [];
    const tinyTopic = await createTopic(admin, 'tiny');
    await runKcat(kcatProduceArgs(bootstrap, tinyTopic), oneLine);
    for (let i = 0; i < FIXED_COST_SAMPLES; i += 1) {
      produceFixed.push((await runKcat(kcatProduceArgs(bootstrap, await createTopic(admin, 'tiny-p')), oneLine)).ms);
      const tiny = await runKcat(kcatConsumeArgs(bootstrap, tinyTopic), undefined);
      if (tiny.lines !== 1) throw new Error(`kcat read ${tiny.lines} lines from the 1-record topic ${tinyTopic}`);
      consumeFixed.push(tiny.ms);
    }
    say(`kcat fixed cost (1-record run, median of ${FIXED_COST_SAMPLES}): produce ${fmt(median(produceFixed), 0)} ms [${produceFixed.map((ms) => fmt(ms, 0)).join(', ')}], ` +
      `consume ${fmt(median(consumeFixed), 0)} ms [${consumeFixed.map((ms) => fmt(ms, 0)).join(', ')}]`);

    const results: Record<Phase, PhaseResult> = {
      produce: { ours: [], 'ours-plain': [], kcat: [], fixedMs: median(produceFixed) },
      consume: { ours: [], 'ours-plain': [], kcat: [], fixedMs: median(consumeFixed) },
    };
    const report = (phase: Phase, side: Side, round: number, r: Run): void => {
      const raw = r.rawMs === undefined ? '' : ` (spawn→exit ${fmt(r.rawMs / 1000, 2)} s − fixed ${fmt(results[phase].fixedMs, 0)} ms)`;
      say(`[${phase} ${round}/${ROUNDS}] ${SIDE_NAMES[side]}: ${fmtInt(recordsPerSecond(r))} records/s, ${fmt(mbPerSecond(r))} MB/s, ` +
        `${fmt(r.ms / 1000, 2)} s${raw}; load ${loadavg().map((n) => fmt(n, 2)).join(' ')}`);
    };

    // One topic filled by kcat is what both clients consume (identical bytes and batches).
    let consumeTopic: string | undefined;
    if (PHASES.has('produce')) {
      say('');
      for (let round = 1; round <= ROUNDS; round += 1) {
        for (const side of ['ours', 'ours-plain', 'kcat'] as const) {
          const topic = await createTopic(admin, `p-${side}-${round}`);
          const r = side === 'kcat'
            ? await produceKcat(bootstrap, topic, lines, RECORDS, results.produce.fixedMs)
            : await produceOurs(bootstrap, topic, records, side === 'ours');
          const stored = await highWatermark(admin, topic);
          if (stored !== BigInt(RECORDS)) throw new Error(`${side} produced to ${topic}, but its high watermark is ${stored}, not ${RECORDS}`);
          results.produce[side].push(r);
          report('produce', side, round, r);
          if (side === 'kcat') consumeTopic ??= topic;
        }
      }
    }
    if (PHASES.has('consume')) {
      if (consumeTopic === undefined) {
        consumeTopic = await createTopic(admin, 'c-source');
        await produceKcat(bootstrap, consumeTopic, lines, RECORDS, 0);
      }
      say('');
      say(`consuming ${consumeTopic} (filled by kcat) each time`);
      for (let round = 1; round <= ROUNDS; round += 1) {
        for (const side of ['ours', 'kcat'] as const) {
          const r = side === 'ours' ? await consumeOurs(bootstrap, consumeTopic) : await consumeKcat(bootstrap, consumeTopic, results.consume.fixedMs);
          if (r.records !== RECORDS) throw new Error(`${side} consumed ${r.records} records from ${consumeTopic}, not ${RECORDS}`);
          results.consume[side].push(r);
          report('consume', side, round, r);
        }
      }
    }
    printTable(results, (performance.now() - totalStart) / 1000);
  } finally {
    admin?.close();
    await stopRun(run);
  }
}

function printTable(results: Record<Phase, PhaseResult>, seconds: number): void {
  const rows: string[][] = [['phase', 'client', 'records/s min', 'median', 'max', 'MB/s min', 'median', 'max', 'ours ÷ librdkafka', `≥ ${TARGET}×?`]];
  const verdicts: string[] = [];
  for (const phase of ['produce', 'consume'] as const) {
    const result = results[phase];
    if (result.ours.length === 0) continue;
    const kcatMedian = median(result.kcat.map(recordsPerSecond));
    const ratio = median(result.ours.map(recordsPerSecond)) / kcatMedian;
    for (const side of ['ours', 'ours-plain', 'kcat'] as const) {
      if (result[side].length === 0) continue;
      const rps = result[side].map(recordsPerSecond);
      const mbs = result[side].map(mbPerSecond);
      const sideRatio = median(rps) / kcatMedian;
      rows.push([
        phase,
        SIDE_NAMES[side],
        fmtInt(Math.min(...rps)), fmtInt(median(rps)), fmtInt(Math.max(...rps)),
        fmt(Math.min(...mbs)), fmt(median(mbs)), fmt(Math.max(...mbs)),
        side === 'kcat' ? '' : `${fmt(sideRatio, 3)}×`,
        side === 'kcat' ? '' : sideRatio >= TARGET ? 'MET' : 'NOT MET',
      ]);
    }
    verdicts.push(`${phase}: ours (default${phase === 'produce' ? ', idempotent' : ''}) ÷ librdkafka = ${fmt(ratio, 3)}× (median records/s) — target ≥ ${TARGET}× ${ratio >= TARGET ? 'MET' : 'NOT MET'}`);
  }
  say(`\n==== results: ${ROUNDS} rounds per client, ${fmtInt(RECORDS)} records × ${VALUE_BYTES} B per run; MB = 10^6 bytes of record values ====`);
  say(`kcat rows: spawn→exit minus kcat's fixed cost (produce ${fmt(results.produce.fixedMs, 0)} ms, consume ${fmt(results.consume.fixedMs, 0)} ms); ours: connect→close`);
  say('');
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((r) => (r[column] ?? '').length))) ?? [];
  const line = (r: readonly string[]): string => r.map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ');
  say(line(rows[0] ?? []));
  say(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows.slice(1)) say(line(r));
  say('');
  for (const verdict of verdicts) say(verdict);
  say(`total run time ${fmt(seconds, 0)} s`);
}

await main();
