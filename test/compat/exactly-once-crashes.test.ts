/**
 * Idempotent produce end to end (issue #17): real clients with idempotence on send numbered
 * records (value = sequence number) through a fault proxy (test/support/fault-proxy.ts) that drops
 * connections in place of Produce responses — after the broker appended the batch, before the
 * client heard of it — and in the middle of Produce requests, while a standalone broker process
 * with a persistent data dir is SIGKILLed and restarted. Then the whole topic is read back with
 * kcat: every number acknowledged must be stored exactly once, and each partition must hold its
 * numbers in send order.
 *
 * - Apache Kafka 3.9's Java producer with its DEFAULT settings (idempotence on, acks=all, retries
 *   on, 5 in flight), 1,000,000 records over 4 partitions, 5 broker kills. Only the test's
 *   tolerance for 5 restarts is configured: delivery.timeout.ms and max.block.ms (how long the
 *   producer keeps trying), neither of which bears on idempotence.
 * - The same run with enable.idempotence=false (acks=all, retries on) is the control: it must
 *   store duplicates, which shows the faults are sharp enough for the first run to fail if the
 *   broker did not deduplicate.
 * - librdkafka (kcat -P -X enable.idempotence=true, 100,000 records) and kafkajs (idempotent: true,
 *   60,000 records) through the same kinds of proxy faults (more often for kcat, which sends few,
 *   large requests) and two broker kills. A record reported failed may or may not be stored; a
 *   record reported delivered must be stored exactly once; no record may be stored twice. kcat
 *   without idempotence is a second control.
 *
 * Sizes can be lowered for a quick look with EXACTLY_ONCE_RECORDS (Java runs) — the default is
 * the acceptance figure.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import { openRun } from '../services/run-dir.js';
import { NO_FAULTS, type FaultRules, type FaultStats } from '../support/fault-proxy.js';
import { runNumberedProducer, type NumberedProducerResult } from '../support/java-producer/numbered-producer.js';
import { describeTally, readNumbers, tally, type StoredNumber, type Tally } from '../support/numbered-records.js';
import { startProxiedBroker, type ProxiedBroker } from '../support/proxied-broker.js';

const { runDir, kafkaToolsDir } = inject('compat');
const run = openRun(runDir);

const JAVA_RECORDS = Number(process.env['EXACTLY_ONCE_RECORDS'] ?? 1_000_000);
const JAVA_KILLS = 5;
const PARTITIONS = 4;
const BROKER_SETTINGS = { 'num.partitions': String(PARTITIONS) };
/**
 * Every 15th Produce response is replaced by a dropped connection, every 37th Produce request is
 * cut in half (both counted over all connections; the numbers are coprime so the two faults do
 * not line up).
 */
const FAULTS: FaultRules = { dropProduceResponseEvery: 15, cutProduceRequestEvery: 37 };
/** How long the Java producer keeps trying a record (and blocks in send when its buffer is full). */
const JAVA_TOLERANCE_MS = 600_000;

interface Figures {
  readonly kills: number;
  readonly faults: FaultStats;
  readonly seconds: number;
  /** What the broker logged at error level or above (messages, counted). */
  readonly brokerErrors: Record<string, number>;
}

function brokerErrors(broker: ProxiedBroker): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of broker.logLines(50)) {
    const msg = String(line['msg']);
    counts[msg] = (counts[msg] ?? 0) + 1;
  }
  return counts;
}

const say = (line: string): void => void process.stdout.write(`[exactly-once] ${line}\n`);

function describeFaults(f: Figures): string {
  return `${f.kills} broker SIGKILLs, ${f.faults.droppedProduceResponses} connections dropped in place of a Produce response, ` +
    `${f.faults.cutProduceRequests} cut mid-request, ${f.faults.upstreamFailures} lost to the broker going down, ` +
    `${f.faults.connections} connections, ${f.faults.produceRequests} Produce requests; ${f.seconds.toFixed(1)} s; broker errors logged: ${JSON.stringify(f.brokerErrors)}`;
}

/**
 * Kills the broker (and restarts it at once) each time `progress` first reaches the next of
 * `thresholds`; one kill at a time, in order. `settled()` resolves when the last one is done.
 */
function killer(broker: ProxiedBroker, thresholds: readonly number[]): { progress(n: number): void; settled(): Promise<void> } {
  let next = 0;
  let chain = Promise.resolve();
  return {
    progress(n) {
      while (next < thresholds.length && n >= (thresholds[next] ?? Infinity)) {
        next += 1;
        chain = chain.then(async () => {
          await broker.kill();
          await broker.restart();
        });
      }
    },
    settled: () => chain,
  };
}

interface JavaRun extends Figures {
  readonly producer: NumberedProducerResult;
  readonly tally: Tally;
}

async function javaRun(name: string, settings: Record<string, string>): Promise<JavaRun> {
  const broker = await startProxiedBroker({ run, name, settings: BROKER_SETTINGS, rules: FAULTS });
  try {
    const thresholds = Array.from({ length: JAVA_KILLS }, (_, i) => Math.floor((JAVA_RECORDS * (i + 1)) / (JAVA_KILLS + 1)));
    const kills = killer(broker, thresholds);
    const started = performance.now();
    const producer = await runNumberedProducer({
      kafkaToolsDir, runDir, name, bootstrap: broker.bootstrap, topic: name, count: JAVA_RECORDS,
      settings: { ...settings, 'delivery.timeout.ms': String(JAVA_TOLERANCE_MS), 'max.block.ms': String(JAVA_TOLERANCE_MS) },
      onAcked: (acked) => kills.progress(acked),
      timeoutMs: 900_000,
    });
    await kills.settled();
    const seconds = (performance.now() - started) / 1000;
    const faults = { ...broker.proxy.stats };
    broker.proxy.setRules(NO_FAULTS);
    const stored = await readNumbers(broker.bootstrap, name);
    return { producer, tally: tally(stored, JAVA_RECORDS, (n) => n % producer.partitions), kills: broker.kills, faults, seconds, brokerErrors: brokerErrors(broker) };
  } finally {
    await broker.stop();
  }
}

describe('Java producer 3.9, default settings (idempotent, acks=all), through dropped connections and 5 broker kills', () => {
  it(`stores each of ${JAVA_RECORDS.toLocaleString('en-US')} numbered records exactly once, in send order per partition`, { timeout: 1_000_000 }, async () => {
    const r = await javaRun('java-idempotent', {});
    say(`Java default settings: ${r.producer.acked} acknowledged, ${r.producer.failed.length} failed in ${r.producer.ms} ms, retried ${JSON.stringify(r.producer.retriedErrors)}; ${describeTally(r.tally)}; ${describeFaults(r)}`);
    const context = `${describeTally(r.tally)}; ${describeFaults(r)}; producer log ${r.producer.logFile}; ${r.producer.failures.join(' | ')}`;
    expect(r.producer.done, context).toBe(true);
    expect(r.producer.status, context).toBe(0);
    expect(r.kills).toBe(JAVA_KILLS);
    expect(r.faults.droppedProduceResponses, context).toBeGreaterThan(0);
    expect(r.producer.failed, context).toEqual([]);
    expect(r.producer.acked, context).toBe(JAVA_RECORDS);
    expect(r.tally.duplicated, context).toEqual([]);
    expect(r.tally.duplicates, context).toBe(0);
    expect(r.tally.missing.slice(0, 10), context).toEqual([]);
    expect(r.tally.unexpected, context).toEqual([]);
    expect(r.tally.misplaced.first, context).toEqual([]);
    expect(r.tally.outOfOrder.first, context).toEqual([]);
    expect(r.tally.stored, context).toBe(JAVA_RECORDS);
  });

  it('control: the same run with enable.idempotence=false (acks=all, retries on) stores duplicates', { timeout: 1_000_000 }, async () => {
    const r = await javaRun('java-not-idempotent', { 'enable.idempotence': 'false', acks: 'all' });
    say(`Java enable.idempotence=false: ${r.producer.acked} acknowledged, ${r.producer.failed.length} failed in ${r.producer.ms} ms, retried ${JSON.stringify(r.producer.retriedErrors)}; ${describeTally(r.tally)}; ${describeFaults(r)}`);
    const context = `${describeTally(r.tally)}; ${describeFaults(r)}; producer log ${r.producer.logFile}`;
    expect(r.producer.done, context).toBe(true);
    expect(r.kills).toBe(JAVA_KILLS);
    // What the first test would have missed: records stored more than once.
    expect(r.tally.duplicates, context).toBeGreaterThan(0);
    // Nothing acknowledged was lost on the way: retries make it at-least-once.
    expect(r.tally.missing.filter((n) => !r.producer.failed.includes(n)).slice(0, 10), context).toEqual([]);
  });
});

const CLIENT_KILLS = 2;

interface KcatRun extends Figures {
  readonly status: number | null;
  /** Where kcat said each delivered record went, `partition:offset`. */
  readonly delivered: string[];
  /** Records kcat reported as failed. */
  readonly failed: number;
  readonly stored: StoredNumber[];
  readonly tally: Tally;
  readonly stderrTail: string;
}

const KCAT_RECORDS = 100_000;
/** librdkafka packs up to 10,000 records in a batch, so it sends few requests: fault more of them. */
const KCAT_FAULTS: FaultRules = { dropProduceResponseEvery: 4, cutProduceRequestEvery: 11 };

/**
 * kcat -P with `-E` (kcat otherwise exits on librdkafka's "all brokers down", which a single
 * broker's restart is) and `-vv`, which prints one line per delivery report: delivered with its
 * partition and offset, or failed. Record n is sent as key n, value n; librdkafka's default
 * partitioner hashes the key, so each partition gets its numbers in send order.
 */
async function kcatRun(name: string, settings: Record<string, string>): Promise<KcatRun> {
  const broker = await startProxiedBroker({ run, name, settings: BROKER_SETTINGS, rules: KCAT_FAULTS });
  try {
    const thresholds = Array.from({ length: CLIENT_KILLS }, (_, i) => Math.floor((KCAT_RECORDS * (i + 1)) / (CLIENT_KILLS + 1)));
    const kills = killer(broker, thresholds);
    const started = performance.now();
    const config = Object.entries(settings).flatMap(([key, value]) => ['-X', `${key}=${value}`]);
    const child = spawn('kcat', ['-b', broker.bootstrap, '-P', '-t', name, '-K', ':', '-E', '-vv', ...config], { stdio: ['pipe', 'ignore', 'pipe'] });
    const delivered: string[] = [];
    let failed = 0;
    let pending = '';
    let tail = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString('utf8')).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const match = /^% Message delivered to partition (\d+) \(offset (\d+)\)/.exec(line);
        if (match !== null) delivered.push(`${match[1]}:${match[2]}`);
        else if (line.includes('Delivery failed for message')) failed += 1;
        else tail = `${tail}\n${line}`.slice(-3000);
      }
      kills.progress(delivered.length);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(Array.from({ length: KCAT_RECORDS }, (_, n) => `${n}:${n}\n`).join(''));
    const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
    await kills.settled();
    const seconds = (performance.now() - started) / 1000;
    const faults = { ...broker.proxy.stats };
    broker.proxy.setRules(NO_FAULTS);
    const stored = await readNumbers(broker.bootstrap, name);
    return { status, delivered, failed, stored, tally: tally(stored, KCAT_RECORDS), kills: broker.kills, faults, seconds, brokerErrors: brokerErrors(broker), stderrTail: tail };
  } finally {
    await broker.stop();
  }
}

describe('librdkafka (kcat -P -X enable.idempotence=true) through dropped connections and 2 broker kills', () => {
  it('stores every delivered record exactly once, no record twice, in send order per partition', { timeout: 600_000 }, async () => {
    const r = await kcatRun('kcat-idempotent', { 'enable.idempotence': 'true' });
    say(`kcat enable.idempotence=true: exit ${String(r.status)}, ${r.delivered.length} delivered, ${r.failed} failed; ${describeTally(r.tally)}; ${describeFaults(r)}`);
    const context = `${describeTally(r.tally)}; ${describeFaults(r)}; kcat said: ${r.stderrTail}`;
    expect(r.kills).toBe(CLIENT_KILLS);
    expect(r.faults.droppedProduceResponses, context).toBeGreaterThan(0);
    // Every record got a delivery report, one way or the other.
    expect(r.delivered.length + r.failed, context).toBe(KCAT_RECORDS);
    // No record stored twice; nothing stored that was not sent; send order kept per partition.
    expect(r.tally.duplicated, context).toEqual([]);
    expect(r.tally.duplicates, context).toBe(0);
    expect(r.tally.unexpected, context).toEqual([]);
    expect(r.tally.outOfOrder.first, context).toEqual([]);
    // Each delivery report names its own stored record: distinct offsets, each holding a record.
    expect(new Set(r.delivered).size, context).toBe(r.delivered.length);
    const storedAt = new Set(r.stored.map((s) => `${s.partition}:${s.offset}`));
    expect(r.delivered.filter((at) => !storedAt.has(at)).slice(0, 10), context).toEqual([]);
    // Only records reported failed may be missing.
    expect(r.tally.missing.length, context).toBeLessThanOrEqual(r.failed);
  });

  it('control: without idempotence (acks=all, retries on) the same faults store duplicates', { timeout: 600_000 }, async () => {
    const r = await kcatRun('kcat-not-idempotent', { acks: 'all' });
    say(`kcat enable.idempotence=false: exit ${String(r.status)}, ${r.delivered.length} delivered, ${r.failed} failed; ${describeTally(r.tally)}; ${describeFaults(r)}`);
    expect(r.kills).toBe(CLIENT_KILLS);
    expect(r.tally.duplicates, `${describeTally(r.tally)}; ${describeFaults(r)}`).toBeGreaterThan(0);
  });
});

const KAFKAJS_RECORDS = 60_000;
const KAFKAJS_BATCH = 200;

describe('kafkajs 2.2.4 (idempotent: true) through dropped connections and 2 broker kills', () => {
  it('stores every acknowledged record exactly once, no record twice, in send order per partition', { timeout: 600_000 }, async () => {
    const name = 'kafkajs-idempotent';
    const broker = await startProxiedBroker({ run, name, settings: BROKER_SETTINGS, rules: FAULTS });
    const kafka = new Kafka({ clientId: 'exactly-once', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    // kafkajs's defaults for an idempotent producer: retries = Number.MAX_SAFE_INTEGER, acks -1.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5 });
    const acknowledged = new Set<number>();
    const failed = new Set<number>();
    const errors = new Map<string, number>();
    try {
      await producer.connect();
      const thresholds = Array.from({ length: CLIENT_KILLS }, (_, i) => Math.floor((KAFKAJS_RECORDS * (i + 1)) / (CLIENT_KILLS + 1)));
      const kills = killer(broker, thresholds);
      const started = performance.now();
      // One send at a time: kafkajs numbers a partition's batches when it sends them, so two
      // concurrent sends could reach the broker in either order.
      for (let from = 0; from < KAFKAJS_RECORDS; from += KAFKAJS_BATCH) {
        const numbers = Array.from({ length: Math.min(KAFKAJS_BATCH, KAFKAJS_RECORDS - from) }, (_, i) => from + i);
        try {
          await producer.send({ topic: name, acks: -1, messages: numbers.map((n) => ({ value: String(n), partition: n % PARTITIONS })) });
          for (const n of numbers) acknowledged.add(n);
        } catch (error) {
          for (const n of numbers) failed.add(n);
          const key = `${(error as Error).name}: ${(error as Error).message}`;
          errors.set(key, (errors.get(key) ?? 0) + 1);
        }
        kills.progress(acknowledged.size + failed.size);
      }
      await kills.settled();
      const seconds = (performance.now() - started) / 1000;
      const faults = { ...broker.proxy.stats };
      broker.proxy.setRules(NO_FAULTS);
      const stored = await readNumbers(broker.bootstrap, name);
      const t = tally(stored, KAFKAJS_RECORDS, (n) => n % PARTITIONS);
      const figures = { kills: broker.kills, faults, seconds, brokerErrors: brokerErrors(broker) };
      say(`kafkajs idempotent: ${acknowledged.size} acknowledged, ${failed.size} failed (${[...errors].map(([e, c]) => `${c}× ${e}`).join('; ')}); ${describeTally(t)}; ${describeFaults(figures)}`);
      const context = `${describeTally(t)}; ${describeFaults(figures)}; errors: ${[...errors].map(([e, c]) => `${c}× ${e}`).join('; ')}`;
      expect(broker.kills).toBe(CLIENT_KILLS);
      expect(faults.droppedProduceResponses, context).toBeGreaterThan(0);
      expect(t.duplicated, context).toEqual([]);
      expect(t.duplicates, context).toBe(0);
      expect(t.unexpected, context).toEqual([]);
      expect(t.misplaced.first, context).toEqual([]);
      expect(t.outOfOrder.first, context).toEqual([]);
      // Every acknowledged record is stored; only records whose send failed may be missing.
      expect(t.missing.filter((n) => !failed.has(n)).slice(0, 10), context).toEqual([]);
    } finally {
      await producer.disconnect().catch(() => undefined);
      await broker.stop();
    }
  });
});
