/**
 * The clients, run identically against either broker:
 *
 *   ProducerPerformance  org.apache.kafka.tools.ProducerPerformance (Kafka 3.9.1), 200-byte records,
 *                        acks=1, enable.idempotence=false. Its own final line is the figure
 *                        (records/s from its first send to its last acknowledgement).
 *                        batch 1:  batch.size=1, linger.ms=0 — a batch never holds a second record.
 *                        batch 50: batch.size=10,600, linger.ms=10. A v2 batch of n such records
 *                        (null key, no headers, offset and timestamp deltas < 64) takes
 *                        61 + 209·n bytes, and the Java producer's room check is exact without
 *                        compression: 50 fit (10,511, or up to 10,561 with 2-byte time deltas),
 *                        51 (10,720) do not. The records per batch are counted in the log after.
 *                        compressed: the batch-50 settings plus compression.type=<codec>; batch.size
 *                        then bounds the producer's estimate of the compressed size, so a batch
 *                        holds more than 50 records (counted in the log after, with its codec).
 *                        default settings: only bootstrap.servers — the Java producer's defaults
 *                        (Kafka 3.9: enable.idempotence=true, acks=all, batch.size=16384,
 *                        linger.ms=0, 5 in flight); and the same with enable.idempotence=false
 *                        (acks=all stated), to price idempotence on each broker.
 *   kcat -P              librdkafka 2.0.2 with its default batching (linger 5 ms, up to 10,000
 *                        messages / 1 MB per batch), -X acks=1; 200-byte lines on stdin (random
 *                        letters, a 1 MiB block repeated). Timed spawn → exit, minus kcat's fixed
 *                        cost (median 1-record run of the session). Compressed: -X compression.codec=<codec>.
 *   kcat -C -e           -X max.partition.fetch.bytes=<fetch bytes>, prints offsets only ('%o\n').
 *   ConsoleConsumer      org.apache.kafka.tools.consumer.ConsoleConsumer in assign mode
 *                        (--partition 0 --offset earliest|N --max-messages N), the same
 *                        max.partition.fetch.bytes, print.value=false print.offset=true.
 *                        Both consumers are timed from their first to their last output chunk
 *                        (records after the first chunk ÷ that time): start-up, connection and
 *                        metadata are outside the figure for both.
 *   group consumers      in a consumer group served by the broker's group coordinator:
 *                        ConsumerPerformance (org.apache.kafka.tools.ConsumerPerformance --group,
 *                        its fetch.nMsg.sec: records ÷ time after the group's join, so the join
 *                        is outside the figure) and kcat -G -e (timed as kcat -C). Rebalance:
 *                        three kcat -G members of one group on a 6-partition topic, one stopped
 *                        with SIGTERM (it sends LeaveGroup); the figure is the time from the
 *                        signal to the moment both others have printed their new assignment.
 *   EndToEndLatency      org.apache.kafka.tools.EndToEndLatency <bootstrap> <topic> <n> 1 200 (acks=1;
 *                        `all` instead of 1 in the replication scenario): one
 *                        record at a time, sent and then polled by an assigned consumer; it prints
 *                        whole-millisecond percentiles. It is stopped once it has printed them:
 *                        the offset commit it does afterwards is not part of the measure.
 *   latency probe        the same loop with Tributary's TypeScript client on both brokers, with
 *                        microsecond resolution: a long-poll Fetch (max wait 1 s) is in flight at
 *                        the next offset, one record is sent (acks=1), and the latency is send
 *                        start → fetch answered with that record.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Writable } from 'node:stream';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import type { ServiceRun } from '../../services/run-dir.js';
import type { Codec } from './options.js';
import { describeProcess, expectSuccess, runJava, runProcess, TOOLS_LOG4J, type ProcessRun } from './process.js';
import { median } from './results.js';

export const VALUE_BYTES = 200;
export const BATCH_50_BYTES = 10_600;
const MB = 1_000_000;

export interface ClientContext {
  readonly run: ServiceRun;
  readonly toolsJars: string;
  readonly log4jFile: string;
  readonly fetchBytes: number;
  /**
   * The SASL_SSL listener's client settings (security scenario), as files so no secret is on a
   * command line: Java `--producer.config`/`--consumer.config`, kcat `-F`. Absent: PLAINTEXT.
   */
  readonly security?: { readonly javaConfig: string; readonly kcatConfig: string };
}

export function clientContext(run: ServiceRun, toolsJars: string, fetchBytes: number): ClientContext {
  const log4jFile = join(run.dir, 'tools-log4j.properties');
  writeFileSync(log4jFile, TOOLS_LOG4J);
  return { run, toolsJars, log4jFile, fetchBytes };
}

/** Generous timeouts: a client run fails only when something is stuck (10M batch-1 records take long). */
function timeoutFor(records: number): number {
  return Math.max(300_000, records * 2);
}

function tool(context: ClientContext, mainClass: string, args: readonly string[], label: string, timeoutMs: number, extra: { stopWhen?: (s: string) => boolean; keepStdout?: boolean } = {}): Promise<ProcessRun> {
  return runJava(mainClass, args, {
    run: context.run, label, timeoutMs, classpathDir: context.toolsJars, heap: '512m', log4jFile: context.log4jFile, ...extra,
  });
}

// ---- producers ------------------------------------------------------------------------------

export type JavaBatch = 1 | 50;

/** The codec number in a RecordBatch v2's attributes (bits 0–2). */
export const CODEC_IDS: Readonly<Record<Codec | 'none', number>> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };

export function producerProps(batch: JavaBatch, compression: Codec | 'none' = 'none'): string[] {
  return ['acks=1', 'enable.idempotence=false', ...(batch === 1 ? ['batch.size=1', 'linger.ms=0'] : [`batch.size=${BATCH_50_BYTES}`, 'linger.ms=10']),
    ...(compression === 'none' ? [] : [`compression.type=${compression}`])];
}

export interface ProducerPerformanceResult {
  readonly recordsPerSecond: number;
  readonly mbPerSecond: number;
  readonly avgLatencyMs: number;
  readonly p50LatencyMs: number;
  readonly p99LatencyMs: number;
}

const PERF_TOTAL = /^(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\./m;

export async function producerPerformance(context: ClientContext, bootstrap: string, topic: string, records: number, batch: JavaBatch,
  compression: Codec | 'none' = 'none'): Promise<ProducerPerformanceResult> {
  const label = `ProducerPerformance batch ${batch}${compression === 'none' ? '' : ` ${compression}`} → ${topic}`;
  return producerPerformanceWith(context, bootstrap, topic, records, producerProps(batch, compression), label);
}

/**
 * The Java producer's own defaults (Kafka 3.9: enable.idempotence=true, acks=all, batch.size=16384,
 * linger.ms=0, 5 requests in flight), or the same with idempotence off (enable.idempotence=false,
 * acks=all stated, everything else default).
 */
export function defaultProducerProps(idempotent: boolean): string[] {
  return idempotent ? [] : ['enable.idempotence=false', 'acks=all'];
}

/** ProducerPerformance with the Java producer's default settings (`idempotent`) or those minus idempotence. */
export async function producerPerformanceDefaults(context: ClientContext, bootstrap: string, topic: string, records: number, idempotent: boolean): Promise<ProducerPerformanceResult> {
  const label = `ProducerPerformance default settings${idempotent ? '' : ', enable.idempotence=false'} → ${topic}`;
  return producerPerformanceWith(context, bootstrap, topic, records, defaultProducerProps(idempotent), label);
}

async function producerPerformanceWith(context: ClientContext, bootstrap: string, topic: string, records: number, props: readonly string[], label: string): Promise<ProducerPerformanceResult> {
  const run = expectSuccess(label, await tool(context, 'org.apache.kafka.tools.ProducerPerformance', [
    '--topic', topic, '--num-records', String(records), '--record-size', String(VALUE_BYTES), '--throughput', '-1',
    ...(context.security === undefined ? [] : ['--producer.config', context.security.javaConfig]),
    '--producer-props', `bootstrap.servers=${bootstrap}`, ...props,
  ], label, timeoutFor(records), { keepStdout: true }));
  const match = PERF_TOTAL.exec(run.stdout);
  if (match === null || Number(match[1]) !== records) throw new Error(`${label}: no total line for ${records} records\n${describeProcess(label, run)}`);
  return { recordsPerSecond: Number(match[2]), mbPerSecond: Number(match[3]), avgLatencyMs: Number(match[4]), p50LatencyMs: Number(match[6]), p99LatencyMs: Number(match[8]) };
}

/** `count` lines of 200 uppercase letters + '\n', written in 1 MiB chunks with back-pressure. */
export function feedLines(count: number): (stdin: Writable) => Promise<void> {
  const perChunk = Math.floor((1024 * 1024) / (VALUE_BYTES + 1));
  const chunk = Buffer.allocUnsafe(perChunk * (VALUE_BYTES + 1));
  const letters = randomBytes(chunk.length);
  for (let i = 0; i < chunk.length; i += 1) chunk[i] = (i + 1) % (VALUE_BYTES + 1) === 0 ? 0x0a : 0x41 + ((letters[i] ?? 0) % 26);
  return async (stdin) => {
    for (let left = count; left > 0; left -= perChunk) {
      const part = left >= perChunk ? chunk : chunk.subarray(0, left * (VALUE_BYTES + 1));
      await writeOrDrain(stdin, part);
    }
  };
}

/** Writes `part`; when the stream's buffer is full, resolves once it drained (or rejects on its error). */
export async function writeOrDrain(stdin: Writable, part: Buffer): Promise<void> {
  if (stdin.write(part)) return;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    stdin.once('error', onError);
    stdin.once('drain', () => {
      stdin.off('error', onError);
      resolve();
    });
  });
}

export function kcatProduceArgs(bootstrap: string, topic: string, partition: number | undefined, settings: Readonly<Record<string, string>> = {}): string[] {
  const extra = Object.entries(settings).flatMap(([key, value]) => ['-X', `${key}=${value}`]);
  return ['-P', '-b', bootstrap, '-t', topic, ...(partition === undefined ? [] : ['-p', String(partition)]), '-X', 'acks=1', ...extra];
}

/** kcat's security settings file (-F), when the context is a SASL_SSL listener's. */
function kcatConfigArgs(context: ClientContext): string[] {
  return context.security === undefined ? [] : ['-F', context.security.kcatConfig];
}

/** kcat -P of `records` lines (librdkafka `settings` on top of acks=1); raw spawn → exit milliseconds. */
export async function kcatProduce(context: ClientContext, bootstrap: string, topic: string, records: number, partition: number | undefined = 0,
  settings: Readonly<Record<string, string>> = {}): Promise<number> {
  const label = `kcat -P → ${topic}`;
  const run = expectSuccess(label, await runProcess('kcat', [...kcatConfigArgs(context), ...kcatProduceArgs(bootstrap, topic, partition, settings)], {
    run: context.run, label, timeoutMs: timeoutFor(records), feed: feedLines(records),
  }));
  return run.exitedAt - run.spawnedAt;
}

/** Median spawn → exit of a 1-record kcat -P into `topic` (start-up, metadata, connect, teardown). */
export async function kcatFixedCost(context: ClientContext, bootstrap: string, topic: string, samples = 3, settings: Readonly<Record<string, string>> = {}): Promise<number> {
  await kcatProduce(context, bootstrap, topic, 1, 0, settings);
  const times: number[] = [];
  for (let i = 0; i < samples; i += 1) times.push(await kcatProduce(context, bootstrap, topic, 1, 0, settings));
  return median(times);
}

// ---- consumers ------------------------------------------------------------------------------

export interface ConsumeResult {
  readonly records: number;
  readonly recordsPerSecond: number;
  readonly mbPerSecond: number;
  /** Seconds from the first to the last output chunk. */
  readonly seconds: number;
}

function consumeRate(label: string, run: ProcessRun, expected: number): ConsumeResult {
  if (run.lines !== expected) throw new Error(`${label} printed ${run.lines} records, expected ${expected}\n${describeProcess(label, run)}`);
  const first = run.firstOutputAt ?? run.spawnedAt;
  const last = run.lastOutputAt ?? run.exitedAt;
  // One chunk only (tiny runs): fall back to spawn → exit.
  const [records, ms] = last > first ? [expected - run.firstChunkLines, last - first] : [expected, run.exitedAt - run.spawnedAt];
  const recordsPerSecond = records / (ms / 1000);
  return { records: expected, recordsPerSecond, mbPerSecond: (recordsPerSecond * VALUE_BYTES) / MB, seconds: ms / 1000 };
}

/** kcat -C -e of a topic (all partitions, or one from `offset`), expecting `expected` records; librdkafka `settings` on top. */
export async function kcatConsume(context: ClientContext, bootstrap: string, topic: string, expected: number, from: { partition: number; offset: number } | 'all-partitions' = { partition: 0, offset: 0 },
  settings: Readonly<Record<string, string>> = {}): Promise<ConsumeResult> {
  const label = `kcat -C ← ${topic}`;
  const where = from === 'all-partitions' ? ['-o', 'beginning'] : ['-p', String(from.partition), '-o', from.offset === 0 ? 'beginning' : String(from.offset)];
  const run = expectSuccess(label, await runProcess('kcat', [
    '-C', ...kcatConfigArgs(context), '-b', bootstrap, '-t', topic, ...where, '-e', '-q', '-f', '%o\\n', '-X', `max.partition.fetch.bytes=${context.fetchBytes}`,
    ...Object.entries(settings).flatMap(([key, value]) => ['-X', `${key}=${value}`]),
  ], { run: context.run, label, timeoutMs: timeoutFor(expected) }));
  return consumeRate(label, run, expected);
}

/** The Java console consumer in assign mode from `offset` of partition 0, `expected` records. */
export async function consoleConsume(context: ClientContext, bootstrap: string, topic: string, expected: number, offset = 0): Promise<ConsumeResult> {
  const label = `ConsoleConsumer ← ${topic}`;
  const run = expectSuccess(label, await tool(context, 'org.apache.kafka.tools.consumer.ConsoleConsumer', [
    '--bootstrap-server', bootstrap, '--topic', topic, '--partition', '0', '--offset', offset === 0 ? 'earliest' : String(offset),
    '--max-messages', String(expected), '--timeout-ms', '60000',
    '--property', 'print.value=false', '--property', 'print.offset=true',
    '--consumer-property', `max.partition.fetch.bytes=${context.fetchBytes}`,
    ...(context.security === undefined ? [] : ['--consumer.config', context.security.javaConfig]),
  ], label, timeoutFor(expected)));
  return consumeRate(label, run, expected);
}

// ---- consumer groups ------------------------------------------------------------------------

/** start.time, end.time (dates with a space inside), MB, MB.sec, nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec */
const CONSUMER_PERFORMANCE_FIELDS = /^[^,\n]+, [^,\n]+, ([\d.]+), ([\d.]+), (\d+), ([\d.]+), (\d+), (\d+), ([\d.]+), ([\d.]+)\s*$/m;

/** Java ConsumerPerformance in group `group`: records/s after the join (its fetch.nMsg.sec). */
export async function consumerPerformanceGroup(context: ClientContext, bootstrap: string, topic: string, expected: number, group: string): Promise<ConsumeResult & { rebalanceMs: number }> {
  const label = `ConsumerPerformance --group ${group} ← ${topic}`;
  const run = expectSuccess(label, await tool(context, 'org.apache.kafka.tools.ConsumerPerformance', [
    '--bootstrap-server', bootstrap, '--topic', topic, '--group', group, '--messages', String(expected), '--timeout', '60000',
    '--fetch-size', String(context.fetchBytes),
  ], label, timeoutFor(expected), { keepStdout: true }));
  const fields = CONSUMER_PERFORMANCE_FIELDS.exec(run.stdout);
  if (fields === null) throw new Error(`${label}: no result line\n${describeProcess(label, run)}`);
  const consumed = Number(fields[3]);
  if (consumed !== expected) throw new Error(`${label} consumed ${consumed} records, expected ${expected}\n${describeProcess(label, run)}`);
  const recordsPerSecond = Number(fields[8]);
  const fetchMs = Number(fields[6]);
  return { records: consumed, recordsPerSecond, mbPerSecond: Number(fields[7]), seconds: fetchMs / 1000, rebalanceMs: Number(fields[5]) };
}

/** kcat -G (librdkafka's balanced consumer) over every partition until their ends, timed as kcat -C. */
export async function kcatGroupConsume(context: ClientContext, bootstrap: string, topic: string, expected: number, group: string): Promise<ConsumeResult> {
  const label = `kcat -G ${group} ← ${topic}`;
  const run = expectSuccess(label, await runProcess('kcat', [
    '-b', bootstrap, '-G', group, topic, '-o', 'beginning', '-e', '-q', '-f', '%o\\n', '-X', `max.partition.fetch.bytes=${context.fetchBytes}`, '-X', 'auto.offset.reset=earliest',
  ], { run: context.run, label, timeoutMs: timeoutFor(expected) }));
  return consumeRate(label, run, expected);
}

const ASSIGNED = /rebalanced \(memberid [^)]*\): assigned:/;

/**
 * Three kcat -G members of `group` on `topic`; once each has an assignment, one gets SIGTERM
 * (librdkafka sends LeaveGroup on close). Returns the milliseconds from the signal until both
 * others printed a new assignment.
 */
export async function kcatRebalanceAfterLeave(bootstrap: string, topic: string, group: string, timeoutMs = 120_000): Promise<number> {
  const members = [0, 1, 2].map(() => {
    const child = spawn('kcat', ['-b', bootstrap, '-G', group, topic, '-o', 'end', '-f', '', '-X', 'heartbeat.interval.ms=3000', '-X', 'session.timeout.ms=45000'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const member = { child, assignments: [] as number[], stderr: '', partial: '' };
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      member.stderr += chunk;
      // A line may arrive in two chunks: only whole lines count.
      const lines = (member.partial + chunk).split('\n');
      member.partial = lines.pop() ?? '';
      for (const line of lines) if (ASSIGNED.test(line)) member.assignments.push(performance.now());
    });
    return member;
  });
  const waitFor = async (condition: () => boolean, what: string): Promise<void> => {
    const deadline = performance.now() + timeoutMs;
    while (!condition()) {
      if (performance.now() > deadline) throw new Error(`kcat rebalance: timed out waiting for ${what}\n${members.map((m, i) => `member ${i}: ${m.stderr.slice(-600)}`).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  try {
    // Settled: the last of the three joins makes the others rejoin, so wait for quiet too.
    await waitFor(() => members.every((m) => m.assignments.length > 0), 'every member to get an assignment');
    let last = Math.max(...members.flatMap((m) => m.assignments));
    await waitFor(() => {
      last = Math.max(...members.flatMap((m) => m.assignments));
      return performance.now() - last > 8000;
    }, 'the group to settle');
    const [leaving, ...staying] = members;
    const before = staying.map((m) => m.assignments.length);
    const stoppedAt = performance.now();
    leaving?.child.kill('SIGTERM');
    await waitFor(() => staying.every((m, i) => m.assignments.length > (before[i] ?? 0)), 'the other two members to be assigned again');
    return Math.max(...staying.map((m) => m.assignments.at(-1) ?? stoppedAt)) - stoppedAt;
  } finally {
    for (const member of members) member.child.kill('SIGTERM');
  }
}

// ---- latency --------------------------------------------------------------------------------

export interface LatencyResult {
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly avg: number;
}

const E2E_PERCENTILES = /Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99\.9th = ([\d.]+)/;

/** EndToEndLatency with the producer's `acks` ('1', or 'all' for the replication scenario). */
export async function endToEndLatency(context: ClientContext, bootstrap: string, topic: string, messages: number, acks: '1' | 'all' = '1'): Promise<LatencyResult> {
  const label = `EndToEndLatency acks=${acks} ${topic}`;
  const run = expectSuccess(label, await tool(context, 'org.apache.kafka.tools.EndToEndLatency', [bootstrap, topic, String(messages), acks, String(VALUE_BYTES)],
    label, timeoutFor(messages * 50), { stopWhen: (stdout) => E2E_PERCENTILES.test(stdout) }));
  const percentiles = E2E_PERCENTILES.exec(run.stdout);
  const avg = /Avg latency: ([\d.]+) ms/.exec(run.stdout);
  if (percentiles === null || avg === null) throw new Error(`${label}: no percentiles printed\n${describeProcess(label, run)}`);
  return { p50: Number(percentiles[1]), p99: Number(percentiles[2]), p999: Number(percentiles[3]), avg: Number(avg[1]) };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** The TypeScript-client probe (see the header); the first 5% of messages are a warm-up and not counted. */
export async function latencyProbe(bootstrap: string, topic: string, messages: number): Promise<LatencyResult> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: 1, lingerMs: 0, allowAutoTopicCreation: false });
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], allowAutoTopicCreation: false });
  const consumer = new SimpleConsumer(cluster);
  const value = randomBytes(VALUE_BYTES);
  const warmup = Math.floor(messages / 20);
  const latencies: number[] = [];
  try {
    let offset = await consumer.listOffset(topic, 0, 'latest');
    for (let i = 0; i < warmup + messages; i += 1) {
      const fetched = consumer.fetch(topic, 0, offset, { maxWaitMs: 1000, minBytes: 1, maxBytes: 64 * 1024 });
      const start = performance.now();
      const sent = producer.send(topic, [{ key: null, value, partition: 0 }]);
      let result = await fetched;
      while (result.records.length === 0) result = await consumer.fetch(topic, 0, offset, { maxWaitMs: 1000, minBytes: 1, maxBytes: 64 * 1024 });
      const elapsed = performance.now() - start;
      await sent;
      if (result.records.length !== 1) throw new Error(`latency probe: fetch at ${offset} returned ${result.records.length} records, expected 1`);
      offset = result.nextOffset;
      if (i >= warmup) latencies.push(elapsed);
    }
  } finally {
    await producer.close();
    cluster.close();
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), p999: percentile(sorted, 0.999), avg: sorted.reduce((a, b) => a + b, 0) / sorted.length };
}
