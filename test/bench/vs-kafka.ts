/**
 * Tributary beside Apache Kafka 3.9.1 on the 2011 paper's workloads (`npm run bench:vs-kafka`,
 * issue #6). A benchmark, not a test: it asserts nothing about speed and prints ratios measured in
 * the same run; it exits non-zero only when it could not measure (a scenario that failed is
 * reported as a note and its rows are missing).
 *
 * Each round starts Kafka (single-node KRaft) and a standalone Tributary broker one after the
 * other — never both at once — each with a fresh data folder in the same run folder, and runs the
 * same clients against each (vs-kafka/clients.ts has the details, vs-kafka/systems.ts the
 * settings); then, for the replication scenario, a 3-broker cluster of each, in the same order:
 *
 *   produce-b1, produce-b50   Java ProducerPerformance, 200-byte records, acks=1, no idempotence,
 *                             batches of 1 and of 50 records
 *   produce-default           Java ProducerPerformance with the Java producer's DEFAULT settings
 *                             (idempotent, acks=all, batch.size 16384, linger 0), 200-byte records (issue #17)
 *   produce-idempotence       the same client with enable.idempotence=false (acks=all), and the
 *                             ratio idempotent ÷ non-idempotent records/s on each broker (the
 *                             idempotent figure is produce-default's when that ran in the session)
 *   produce-kcat              librdkafka (kcat -P) with its default batching, and at batch 1
 *   produce-codecs            ProducerPerformance with the batch-50 settings plus compression.type=gzip,
 *                             lz4, zstd (BENCH_CODECS), and kcat -P default batching with lz4; the log is
 *                             checked to hold every record, in batches of that codec (kcat: or uncompressed,
 *                             when lz4 did not make a batch smaller), readable by kcat with check.crcs
 *   consume-kcat, consume-java  kcat -C -e and the Java console consumer (assign mode), ~200 KB per fetch
 *   storage                   bytes on disk per message at batch 1 and 50 (sum of .log files ÷ records)
 *   latency                   Java EndToEndLatency p50/p99, and a TS-client probe on both
 *   partitions                ProducerPerformance + kcat -C over 1/10/100/1000 partitions
 *   prefill                   produce + consume with 1 GB and 10 GB already in the log
 *   replication               on THREE brokers of each system (vs-kafka/cluster.ts: Kafka KRaft with 3
 *                             combined broker+controller nodes, Tributary ZooKeeper + 3 brokers), topics with
 *                             replication factor 3 and min.insync.replicas=2: Java ProducerPerformance with
 *                             its default settings (idempotent, acks=all), kcat -P acks=all, kcat -C, Java
 *                             EndToEndLatency acks=all p50/p99, and the failover time — a leader SIGKILLed
 *                             under a small acks=all producer, until the new leader acknowledges a write
 *                             (vs-kafka/failover.ts), 3 times per session, the killed broker restarted in
 *                             between — with the same session timeout on both. Kafka keeps
 *                             its default flush settings (no fsync on the write path); Tributary answers
 *                             acks=-1 once the record is fsynced on every in-sync replica.
 *   security                  (issue #21) one broker of each with a PLAINTEXT and a SASL_SSL listener
 *                             (TLS from PEM files, SCRAM-SHA-512, vs-kafka/security.ts): ProducerPerformance
 *                             batch 50 and default settings, kcat -C and the Java console consumer over each
 *                             listener; Tributary ÷ Kafka over SASL_SSL and each system's TLS cost
 *                             (SASL_SSL ÷ PLAINTEXT), also written to docs/benchmarks-security.md
 *   compaction                (issue #34) a fresh broker of each with log.cleaner.backoff.ms=100 (vs-kafka/compaction.ts):
 *                             a keyed data set (10 M records, 1 M keys, 10% tombstones; kcat -K -Z) on a compacted
 *                             topic held from the cleaner, then made cleanable: MB/s of closed segments cleaned
 *                             (until cleaner-offset-checkpoint reaches the active segment), the broker's peak RSS
 *                             meanwhile, and produce / fetch records/s while a second copy is cleaned ÷ with the
 *                             cleaner idle
 *
 * Output: a table on stdout (min / median / max per broker, Tributary ÷ Kafka per round and of
 * the medians), the README headline table, and — except in smoke mode — docs/benchmarks.md,
 * docs/charts/vs-kafka.json and docs/charts/*.png (vs-kafka/charts.ts), plus
 * docs/benchmarks-security.md when the security scenario ran (a run of that scenario alone writes
 * only that page, docs/charts/vs-kafka-security.json and docs/charts/security.png).
 *
 * Usage:
 *   npm run bench:vs-kafka                      the full run (hours; a quiet machine)
 *   npm run bench:vs-kafka -- --smoke           tiny sizes, results under $TMPDIR/tributary-bench-vs-kafka-smoke
 *   npm run bench:vs-kafka -- --profile         the Tributary broker runs under node --cpu-prof
 *   BENCH_SCENARIOS=security npm run bench:vs-kafka
 *                                               only the SASL_SSL comparison (its own broker sessions)
 *   BENCH_TRIBUTARY_DIR=/work/wt-before npm run bench:vs-kafka
 *                                               the broker of another checkout (e.g. the commit before a
 *                                               change: git worktree add /work/wt-before <commit>, then
 *                                               ln -s <this checkout>/node_modules /work/wt-before/node_modules)
 *                                               with this checkout's clients, checks and report; results
 *                                               under $TMPDIR/tributary-bench-vs-kafka-<commit> unless BENCH_OUT
 * Environment (see vs-kafka/options.ts): BENCH_RECORDS, BENCH_ROUNDS, BENCH_SCENARIOS (comma list of
 * the names above), BENCH_PARTITIONS, BENCH_PARTITION_RECORDS, BENCH_PREFILL (e.g. 1GB,10GB),
 * BENCH_SCALE_RECORDS, BENCH_CODECS (e.g. gzip,lz4,zstd), BENCH_LATENCY_MESSAGES, BENCH_WARMUP_RECORDS, BENCH_STORAGE_RECORDS,
 * BENCH_COMPACTION_RECORDS, BENCH_COMPACTION_KEYS, BENCH_COMPACTION_SEGMENT_BYTES, BENCH_COMPACTION_PASS_RECORDS,
 * BENCH_REPLICATION_RECORDS, BENCH_SESSION_TIMEOUT_MS (replication; default 6000), BENCH_FAILOVERS (leader kills per
 * replication session, default 3),
 * BENCH_FLUSH=paper|os, BENCH_HEAP_MB, BENCH_FETCH_BYTES, BENCH_OUT (docs folder to write),
 * BENCH_DIR (parent of the run folder = the brokers' disk), BENCH_KEEP=1, BENCH_SMOKE=1, BENCH_PROFILE=1,
 * BENCH_TRIBUTARY_DIR (the checkout whose bin/tributary.js is the Tributary broker; default this one).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { openRun, startGuardian, stopRun, type ServiceRun } from '../services/run-dir.js';
import { ensureJars, KAFKA_SERVER_JARS, KAFKA_TOOLS_JARS, KAFKA_VERSION } from '../services/service-jars.js';
import { createReplicatedTopic, createTopic, expectStored, logBytes, scanLog, storedRecords, type LogScan } from './vs-kafka/admin.js';
import { FSYNC_NOTE, replicationSettings, startCluster, type ClusterBroker, type RunningCluster } from './vs-kafka/cluster.js';
import { SECURITY_PAGE, SECURITY_RESULTS_FILE, securityOnly, writeDocs } from './vs-kafka/charts.js';
import { compactionSession, compactionSettings } from './vs-kafka/compaction.js';
import { measureFailover } from './vs-kafka/failover.js';
import {
  clientContext, CODEC_IDS, consoleConsume, consumerPerformanceGroup, endToEndLatency, kcatConsume, kcatGroupConsume, kcatRebalanceAfterLeave, kcatFixedCost, kcatProduce, latencyProbe, producerPerformance, producerPerformanceDefaults,
  type ClientContext, type ProducerPerformanceResult,
} from './vs-kafka/clients.js';
import { currentLoad, describeCheckout, describeMachine } from './vs-kafka/machine.js';
import { formatSize, needsSingleBroker, parseOptions, reductions, THIS_CHECKOUT, type BenchOptions, type Codec, type ScenarioName } from './vs-kafka/options.js';
import { summarizeProfiles } from './vs-kafka/profile.js';
import { headlineTable } from './vs-kafka/report.js';
import { prepareSecurity, securitySession, securitySettings, type SecurityMaterial } from './vs-kafka/security.js';
import { securityConsole } from './vs-kafka/security-report.js';
import { consoleTable, median, type Figure, type Results, type Sample } from './vs-kafka/results.js';
import { brokerSettings, startSystem, type RunningSystem, type SystemName } from './vs-kafka/systems.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
/** Stored bytes per 200-byte record in a batch of many (kcat fills): 209 + a share of the 61-byte header. */
const FILL_BYTES_PER_RECORD = 210;

type FigureSpec = Omit<Figure, 'samples' | 'id'>;

class Recorder {
  constructor(private readonly results: Results) {}

  add(id: string, spec: FigureSpec, sample: Sample): void {
    let figure = this.results.figures.find((f) => f.id === id);
    if (figure === undefined) {
      figure = { id, ...spec, samples: [] };
      this.results.figures.push(figure);
    }
    figure.samples.push(sample);
  }
}

const sizeKey = (bytes: number): string => formatSize(bytes).replace(' ', '');

/**
 * Throws unless the log of `topic` holds `records` records in batches of `codec`; with
 * `orUncompressed` (librdkafka, which sends a batch uncompressed when the codec does not make it
 * smaller) uncompressed batches may sit beside them, but at least one must be of `codec`.
 * Returns the share of batches that are of `codec`.
 */
function expectScan(scan: LogScan, topic: string, records: number, codec: Codec, orUncompressed = false): number {
  if (scan.records !== records) throw new Error(`the log of ${topic} holds ${scan.records} records, expected ${records}`);
  const wanted = CODEC_IDS[codec];
  const allowed = orUncompressed ? [wanted, CODEC_IDS.none] : [wanted];
  const compressed = scan.batchesByCodec.get(wanted) ?? 0;
  if ([...scan.batchesByCodec.keys()].some((id) => !allowed.includes(id)) || compressed === 0) {
    throw new Error(`the log of ${topic} should hold ${codec} batches (codec ${wanted})${orUncompressed ? ' or uncompressed ones' : ' only'}; it holds ${[...scan.batchesByCodec].map(([id, n]) => `${n} of codec ${id}`).join(', ')}`);
  }
  return compressed / scan.batches;
}

async function session(round: number, system: SystemName, options: BenchOptions, run: ServiceRun, context: ClientContext, kafkaServerJars: string, results: Results, recorder: Recorder, profileDir: string): Promise<void> {
  const dir = join(run.dir, `round-${round}-${system}`);
  mkdirSync(dir, { recursive: true });
  say(`\n== round ${round}/${options.rounds}: ${system} — load ${currentLoad().join(' ')}`);
  const broker: RunningSystem = await startSystem(system, {
    run, dir, heapMb: options.heapMb, flush: options.flush, kafkaServerJars, tributaryDir: options.tributaryDir,
    cpuProfileDir: options.profile && system === 'tributary' ? profileDir : undefined,
  });
  results.startSeconds.push({ system, round, seconds: Math.round(broker.startSeconds * 10) / 10 });
  say(`${system} up at ${broker.bootstrap} in ${fmt(broker.startSeconds, 1)} s (log ${broker.logFile})`);
  const b = broker.bootstrap;
  const sample = (value: number, detail?: Record<string, number | string>): Sample => (detail === undefined ? { round, system, value } : { round, system, value, detail });
  const record = (id: string, spec: FigureSpec, value: number, detail?: Record<string, number | string>): void => {
    recorder.add(id, spec, sample(value, detail));
    say(`  ${id.padEnd(26)} ${fmt(value, value < 100 ? 2 : 0).padStart(12)} ${spec.unit}${detail === undefined ? '' : `  ${JSON.stringify(detail)}`}`);
  };
  /** Runs a client and says what the broker's process spent on it: CPU seconds per million records. */
  const measured = async <T>(records: number, body: () => Promise<T>): Promise<[T, Record<string, number>]> => {
    const before = broker.cpuSeconds();
    const result = await body();
    const spent = broker.cpuSeconds() - before;
    return [result, Number.isFinite(spent) ? { 'broker CPU s per 1M records': Math.round((spent / records) * 1e8) / 100 } : {}];
  };
  const topic = async (name: string, partitions = 1): Promise<string> => {
    await createTopic(b, name, partitions);
    return name;
  };
  const attempt = async (scenario: ScenarioName, body: () => Promise<void>): Promise<void> => {
    if (!options.scenarios.includes(scenario)) return;
    const started = performance.now();
    try {
      await body();
    } catch (error) {
      const message = `${scenario} failed on ${system} in round ${round}: ${(error as Error).message.split('\n').slice(0, 6).join(' ⏎ ')}`;
      results.notes.push(message);
      say(`  !! ${scenario} failed on ${system} in round ${round}: ${(error as Error).stack ?? String(error)}`);
    }
    say(`  (${scenario}: ${fmt((performance.now() - started) / 1000, 1)} s)`);
  };

  /** kcat's fixed cost, measured once per session when a kcat produce figure first needs it. */
  let kcatFixed: Promise<number> | undefined;
  const kcatFixedMs = async (): Promise<number> => {
    kcatFixed ??= topic('kcat-fixed').then((t) => kcatFixedCost(context, b, t));
    return kcatFixed;
  };

  try {
    if (options.warmupRecords > 0) {
      const warm = await topic('warmup');
      await producerPerformance(context, b, warm, options.warmupRecords, 50);
      await kcatConsume(context, b, warm, options.warmupRecords);
      say(`  warm-up: ${fmt(options.warmupRecords)} records produced and consumed, untimed`);
    }
    const N = options.records;
    const produced: Partial<Record<1 | 50, { topic: string; records: number }>> = {};
    for (const batch of [1, 50] as const) {
      await attempt(batch === 1 ? 'produce-b1' : 'produce-b50', async () => {
        const t = await topic(`b${batch}`);
        const n = batch === 1 ? options.batch1Records : N;
        const [r, cpu] = await measured(n, () => producerPerformance(context, b, t, n, batch));
        await expectStored(b, t, 1, n);
        produced[batch] = { topic: t, records: n };
        record(`produce.b${batch}`, { scenario: batch === 1 ? 'produce-b1' : 'produce-b50', label: `produce, batch ${batch} (Java ProducerPerformance)`, unit: 'records/s', better: 'higher', chart: 'producer' },
          r.recordsPerSecond, { 'MB/s': r.mbPerSecond, 'avg latency ms': r.avgLatencyMs, 'p99 latency ms': r.p99LatencyMs, ...cpu });
      });
    }
    // Idempotent produce (issue #17): the Java producer as it comes, and what idempotence costs.
    let defaultRun: ProducerPerformanceResult | undefined;
    const defaultSpec = (idempotent: boolean): FigureSpec => ({
      scenario: idempotent ? 'produce-default' : 'produce-idempotence',
      label: idempotent ? 'produce, default settings: idempotent, acks=all (Java ProducerPerformance)' : 'produce, default settings but enable.idempotence=false, acks=all (Java ProducerPerformance)',
      unit: 'records/s', better: 'higher', chart: 'idempotence',
    });
    const defaultsRun = async (idempotent: boolean, name: string): Promise<ProducerPerformanceResult> => {
      const t = await topic(name);
      const [r, cpu] = await measured(N, () => producerPerformanceDefaults(context, b, t, N, idempotent));
      await expectStored(b, t, 1, N);
      record(idempotent ? 'produce.default' : 'produce.default.no-idempotence', defaultSpec(idempotent), r.recordsPerSecond,
        { 'MB/s': r.mbPerSecond, 'avg latency ms': r.avgLatencyMs, 'p99 latency ms': r.p99LatencyMs, ...cpu });
      return r;
    };
    await attempt('produce-default', async () => {
      defaultRun = await defaultsRun(true, 'default');
    });
    await attempt('produce-idempotence', async () => {
      const without = await defaultsRun(false, 'default-no-idempotence');
      const withIt = defaultRun ?? await defaultsRun(true, 'default-idempotence');
      const ratio = withIt.recordsPerSecond / without.recordsPerSecond;
      say(`  idempotent ÷ non-idempotent produce on ${system}: ${fmt(withIt.recordsPerSecond)} ÷ ${fmt(without.recordsPerSecond)} records/s = ${fmt(ratio, 2)}×`);
      record('produce.idempotence.ratio', { scenario: 'produce-idempotence', label: 'idempotent ÷ non-idempotent records/s (Java, default settings, acks=all)', unit: '×', better: 'higher', chart: 'idempotence' },
        ratio, { 'idempotent records/s': withIt.recordsPerSecond, 'non-idempotent records/s': without.recordsPerSecond });
    });
    await attempt('storage', async () => {
      for (const batch of [1, 50] as const) {
        let source = produced[batch];
        if (source === undefined) {
          const t = await topic(`storage-b${batch}`);
          await producerPerformance(context, b, t, options.storageRecords, batch);
          await expectStored(b, t, 1, options.storageRecords);
          source = { topic: t, records: options.storageRecords };
        }
        const scan = scanLog(broker.dataDir, source.topic);
        if (scan.records !== source.records) throw new Error(`the log of ${source.topic} holds ${scan.records} records, expected ${source.records}`);
        record(`storage.b${batch}`, { scenario: 'storage', label: `log bytes per message, batch ${batch}`, unit: 'B/msg', better: 'lower', chart: 'storage' },
          scan.bytes / scan.records, { 'records per batch': scan.records / scan.batches, 'log bytes': scan.bytes, records: scan.records });
      }
    });
    await attempt('produce-kcat', async () => {
      const fixedMs = await kcatFixedMs();
      const t = await topic('kcat');
      const [rawMs, cpu] = await measured(N, () => kcatProduce(context, b, t, N));
      await expectStored(b, t, 1, N);
      const ms = Math.max(1, rawMs - fixedMs);
      const scan = scanLog(broker.dataDir, t);
      record('produce.kcat', { scenario: 'produce-kcat', label: 'produce, librdkafka default batching (kcat -P)', unit: 'records/s', better: 'higher', chart: 'producer' },
        N / (ms / 1000), { 'spawn→exit s': rawMs / 1000, 'fixed cost ms': fixedMs, 'records per batch': scan.records / scan.batches, ...cpu });
      // librdkafka at batch 1: one record per request, with up to 1,000,000 requests in flight
      // where the Java producer keeps 5, so it shows what the broker does with one-record requests.
      const t1 = await topic('kcat-b1');
      const n1 = options.batch1Records;
      const [rawMs1, cpu1] = await measured(n1, () => kcatProduce(context, b, t1, n1, 0, { 'batch.num.messages': '1', 'linger.ms': '0' }));
      await expectStored(b, t1, 1, n1);
      const scan1 = scanLog(broker.dataDir, t1);
      if (scan1.batches !== scan1.records) throw new Error(`kcat batch.num.messages=1 stored ${scan1.records} records in ${scan1.batches} batches`);
      record('produce.kcat.b1', { scenario: 'produce-kcat', label: 'produce, batch 1 (kcat -P, batch.num.messages=1)', unit: 'records/s', better: 'higher', chart: 'producer' },
        n1 / (Math.max(1, rawMs1 - fixedMs) / 1000), { 'spawn→exit s': rawMs1 / 1000, 'fixed cost ms': fixedMs, ...cpu1 });
    });
    await attempt('produce-codecs', async () => {
      // What was stored is what was sent: every record, each batch with the producer's codec, and
      // the whole topic read back by kcat with CRC checks (untimed; it decompresses every batch).
      const readBack = (t: string): Promise<unknown> => kcatConsume(context, b, t, N, { partition: 0, offset: 0 }, { 'check.crcs': 'true' });
      const spec = (label: string): FigureSpec => ({ scenario: 'produce-codecs', label, unit: 'records/s', better: 'higher', chart: 'codecs' });
      for (const codec of options.codecs) {
        const t = await topic(`b50-${codec}`);
        const [r, cpu] = await measured(N, () => producerPerformance(context, b, t, N, 50, codec));
        await expectStored(b, t, 1, N);
        const scan = scanLog(broker.dataDir, t);
        expectScan(scan, t, N, codec);
        await readBack(t);
        record(`produce.b50.${codec}`, spec(`produce, batch-50 settings, ${codec} (Java ProducerPerformance)`), r.recordsPerSecond, {
          'MB/s': r.mbPerSecond, 'avg latency ms': r.avgLatencyMs, 'p99 latency ms': r.p99LatencyMs,
          'records per batch': Math.round(scan.records / scan.batches), 'log bytes per record': Math.round((scan.bytes / scan.records) * 10) / 10, ...cpu,
        });
      }
      const fixedMs = await kcatFixedMs();
      const t = await topic('kcat-lz4');
      const [rawMs, cpu] = await measured(N, () => kcatProduce(context, b, t, N, 0, { 'compression.codec': 'lz4' }));
      await expectStored(b, t, 1, N);
      const scan = scanLog(broker.dataDir, t);
      const lz4Share = expectScan(scan, t, N, 'lz4', true);
      await readBack(t);
      record('produce.kcat.lz4', spec('produce, librdkafka default batching, lz4 (kcat -P, compression.codec=lz4)'), N / (Math.max(1, rawMs - fixedMs) / 1000), {
        'spawn→exit s': rawMs / 1000, 'fixed cost ms': fixedMs, 'records per batch': Math.round(scan.records / scan.batches), 'lz4 share of batches': Math.round(lz4Share * 100) / 100,
        'log bytes per record': Math.round((scan.bytes / scan.records) * 10) / 10, ...cpu,
      });
    });
    if (options.scenarios.includes('consume-kcat') || options.scenarios.includes('consume-java') || options.scenarios.includes('consume-group')) {
      let source = produced[50]?.topic;
      if (source === undefined) {
        source = await topic('consume-source');
        await producerPerformance(context, b, source, N, 50);
        await expectStored(b, source, 1, N);
      }
      const from = source;
      await attempt('consume-kcat', async () => {
        const [r, cpu] = await measured(N, () => kcatConsume(context, b, from, N));
        record('consume.kcat', { scenario: 'consume-kcat', label: 'consume, ~200 KB fetches (kcat -C)', unit: 'records/s', better: 'higher', chart: 'consumer' },
          r.recordsPerSecond, { 'MB/s': r.mbPerSecond, seconds: r.seconds, ...cpu });
      });
      await attempt('consume-java', async () => {
        const [r, cpu] = await measured(N, () => consoleConsume(context, b, from, N));
        record('consume.java', { scenario: 'consume-java', label: 'consume, ~200 KB fetches (Java ConsoleConsumer, assign)', unit: 'records/s', better: 'higher', chart: 'consumer' },
          r.recordsPerSecond, { 'MB/s': r.mbPerSecond, seconds: r.seconds, ...cpu });
      });
      await attempt('consume-group', async () => {
        const [java, javaCpu] = await measured(N, () => consumerPerformanceGroup(context, b, from, N, `bench-perf-${round}`));
        record('consume.group.java', { scenario: 'consume-group', label: 'consume in a group (Java ConsumerPerformance --group)', unit: 'records/s', better: 'higher', chart: 'consumer' },
          java.recordsPerSecond, { 'MB/s': java.mbPerSecond, seconds: java.seconds, 'join ms': java.rebalanceMs, ...javaCpu });
        const [kcat, kcatCpu] = await measured(N, () => kcatGroupConsume(context, b, from, N, `bench-kcat-${round}`));
        record('consume.group.kcat', { scenario: 'consume-group', label: 'consume in a group (kcat -G)', unit: 'records/s', better: 'higher', chart: 'consumer' },
          kcat.recordsPerSecond, { 'MB/s': kcat.mbPerSecond, seconds: kcat.seconds, ...kcatCpu });
      });
    }
    await attempt('rebalance', async () => {
      const t = await topic('rebalance', 6);
      const ms = await kcatRebalanceAfterLeave(b, t, `bench-rebalance-${round}`);
      record('rebalance.leave', { scenario: 'rebalance', label: 'rebalance of a 3-member group after one leaves (kcat -G, heartbeat 3 s)', unit: 'ms', better: 'lower', chart: 'latency' }, ms);
    });
    await attempt('latency', async () => {
      const m = options.latencyMessages;
      const java = await endToEndLatency(context, b, await topic('e2e-java'), m);
      const spec = (p: string, client: string): FigureSpec => ({ scenario: 'latency', label: `end-to-end latency ${p} (${client})`, unit: 'ms', better: 'lower', chart: 'latency' });
      record('latency.java.p50', spec('p50', 'Java EndToEndLatency, whole ms'), java.p50);
      record('latency.java.p99', spec('p99', 'Java EndToEndLatency, whole ms'), java.p99, { 'p99.9 ms': java.p999, 'avg ms': java.avg });
      const probe = await latencyProbe(b, await topic('e2e-probe'), m);
      record('latency.probe.p50', spec('p50', 'TS-client probe'), probe.p50);
      record('latency.probe.p99', spec('p99', 'TS-client probe'), probe.p99, { 'p99.9 ms': probe.p999, 'avg ms': probe.avg });
    });
    await attempt('partitions', async () => {
      const n = options.partitionRecords;
      for (const count of options.partitionCounts) {
        const t = await topic(`partitions-${count}`, count);
        const [p, produceCpu] = await measured(n, () => producerPerformance(context, b, t, n, 50));
        await expectStored(b, t, count, n);
        record(`partitions.${count}.produce`, { scenario: 'partitions', label: `produce, ${count} partition${count === 1 ? '' : 's'} (ProducerPerformance, batch 50)`, unit: 'records/s', better: 'higher', chart: 'partitions' },
          p.recordsPerSecond, { 'MB/s': p.mbPerSecond, ...produceCpu });
        const [c, consumeCpu] = await measured(n, () => kcatConsume(context, b, t, n, 'all-partitions'));
        record(`partitions.${count}.consume`, { scenario: 'partitions', label: `consume, ${count} partition${count === 1 ? '' : 's'} (kcat -C)`, unit: 'records/s', better: 'higher', chart: 'partitions' },
          c.recordsPerSecond, { 'MB/s': c.mbPerSecond, ...consumeCpu });
      }
    });
    await attempt('prefill', async () => {
      const t = await topic('prefill');
      for (const size of options.prefillBytes) {
        const missing = size - logBytes(broker.dataDir, t);
        if (missing > 0) {
          const fillStart = performance.now();
          const before = await storedRecords(b, t, 1);
          const count = Math.ceil(missing / FILL_BYTES_PER_RECORD);
          await kcatProduce(context, b, t, count);
          await expectStored(b, t, 1, before + count);
          say(`  filled ${t} to ${formatSize(logBytes(broker.dataDir, t))} in ${fmt((performance.now() - fillStart) / 1000, 1)} s (untimed)`);
        }
        const start = await storedRecords(b, t, 1);
        const logSize = logBytes(broker.dataDir, t);
        const n = options.scaleRecords;
        const [p, produceCpu] = await measured(n, () => producerPerformance(context, b, t, n, 50));
        await expectStored(b, t, 1, start + n);
        const key = sizeKey(size);
        record(`prefill.${key}.produce`, { scenario: 'prefill', label: `produce with ${formatSize(size)} in the log (ProducerPerformance, batch 50)`, unit: 'records/s', better: 'higher', chart: 'prefill' },
          p.recordsPerSecond, { 'log GB before': logSize / 1e9, ...produceCpu });
        const [c, consumeCpu] = await measured(n, () => kcatConsume(context, b, t, n, { partition: 0, offset: start }));
        record(`prefill.${key}.consume`, { scenario: 'prefill', label: `consume the newest records with ${formatSize(size)} in the log (kcat -C)`, unit: 'records/s', better: 'higher', chart: 'prefill' },
          c.recordsPerSecond, { 'log GB before': logSize / 1e9, ...consumeCpu });
      }
    });
  } finally {
    const stopStart = performance.now();
    await broker.stop();
    say(`${system} stopped in ${fmt((performance.now() - stopStart) / 1000, 1)} s`);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The replication scenario on three brokers of `system` (vs-kafka/cluster.ts): acks=all produce
 * (Java with its default settings, kcat), consume, acks=all latency, and the failover time after a
 * leader SIGKILL. Each step that fails is noted and the next one still runs; the failover runs
 * last (it leaves the cluster a broker short).
 */
async function replicationSession(round: number, system: SystemName, options: BenchOptions, run: ServiceRun, context: ClientContext, kafkaServerJars: string, results: Results, recorder: Recorder, profileDir: string): Promise<void> {
  const dir = join(run.dir, `round-${round}-${system}-cluster`);
  mkdirSync(dir, { recursive: true });
  say(`\n== round ${round}/${options.rounds}: ${system}, 3 brokers (replication) — load ${currentLoad().join(' ')}`);
  const scenarioStart = performance.now();
  const fail = (what: string, error: unknown): void => {
    results.notes.push(`replication (${what}) failed on ${system} in round ${round}: ${(error as Error).message.split('\n').slice(0, 6).join(' ⏎ ')}`);
    say(`  !! replication (${what}) failed on ${system} in round ${round}: ${(error as Error).stack ?? String(error)}`);
  };
  let cluster: RunningCluster;
  try {
    cluster = await startCluster(system, {
      run, dir, heapMb: options.heapMb, kafkaServerJars, tributaryDir: options.tributaryDir, sessionTimeoutMs: options.sessionTimeoutMs,
      cpuProfileDir: options.profile && system === 'tributary' ? profileDir : undefined,
    });
  } catch (error) {
    fail('start of the 3-broker cluster', error);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
    return;
  }
  results.startSeconds.push({ system, round, seconds: Math.round(cluster.startSeconds * 10) / 10, setup: '3 brokers' });
  say(`${system}: 3 brokers at ${cluster.bootstrap} with ${cluster.coordinator}, up in ${fmt(cluster.startSeconds, 1)} s`);
  say(`  ${system === 'kafka' ? 'Kafka: no fsync on the write path (default flush settings)' : 'Tributary: acks=-1 answered once fsynced on every in-sync replica'}; replication factor 3, min.insync.replicas=2, session timeout ${options.sessionTimeoutMs} ms`);
  const b = cluster.bootstrap;
  const ports = cluster.brokers.map((broker) => broker.port);
  const record = (id: string, spec: FigureSpec, value: number, detail?: Record<string, number | string>): void => {
    recorder.add(id, spec, detail === undefined ? { round, system, value } : { round, system, value, detail });
    say(`  ${id.padEnd(26)} ${fmt(value, value < 100 ? 2 : 0).padStart(12)} ${spec.unit}${detail === undefined ? '' : `  ${JSON.stringify(detail)}`}`);
  };
  const spec = (label: string, unit: string, better: 'higher' | 'lower'): FigureSpec => ({ scenario: 'replication', label, unit, better, chart: 'replication' });
  /** Runs a client and says what the three brokers spent on it: CPU seconds per million records. */
  const measured = async <T>(records: number, body: () => Promise<T>): Promise<[T, Record<string, number>]> => {
    const before = cluster.cpuSeconds();
    const result = await body();
    const spent = cluster.cpuSeconds() - before;
    return [result, Number.isFinite(spent) ? { '3 brokers CPU s per 1M records': Math.round((spent / records) * 1e8) / 100 } : {}];
  };
  const step = async (what: string, body: () => Promise<void>): Promise<void> => {
    const started = performance.now();
    try {
      await body();
    } catch (error) {
      fail(what, error);
    }
    say(`  (replication ${what}: ${fmt((performance.now() - started) / 1000, 1)} s)`);
  };
  const R = options.replicationRecords;
  let refusalNoted = false;
  /** Creates an RF 3 topic; a refused min.insync.replicas topic config is said once (the broker default of 2 applies). */
  const replicatedTopic = async (name: string, replicas?: readonly number[]): Promise<string> => {
    const { refusedConfig } = await createReplicatedTopic(b, ports, name, replicas === undefined ? {} : { replicas });
    if (refusedConfig !== undefined && !refusalNoted) {
      refusalNoted = true;
      const note = `${system} ${refusedConfig}; its topics were created without it and have the brokers' min.insync.replicas=2`;
      results.notes.push(`replication, round ${round}: ${note}`);
      say(`  note: ${note}`);
    }
    return name;
  };
  try {
    if (options.warmupRecords > 0) {
      await step('warm-up', async () => {
        await replicatedTopic('warmup');
        await producerPerformanceDefaults(context, b, 'warmup', options.warmupRecords, true);
        await kcatConsume(context, b, 'warmup', options.warmupRecords);
        say(`  warm-up: ${fmt(options.warmupRecords)} records produced (acks=all) and consumed, untimed`);
      });
    }
    let javaTopic: string | undefined;
    await step('Java produce', async () => {
      const t = await replicatedTopic('repl-java');
      const [r, cpu] = await measured(R, () => producerPerformanceDefaults(context, b, t, R, true));
      await expectStored(b, t, 1, R);
      javaTopic = t;
      record('replication.produce.java', spec('produce acks=all, RF 3 (Java ProducerPerformance, default settings: idempotent)', 'records/s', 'higher'), r.recordsPerSecond,
        { 'MB/s': r.mbPerSecond, 'avg latency ms': r.avgLatencyMs, 'p50 latency ms': r.p50LatencyMs, 'p99 latency ms': r.p99LatencyMs, ...cpu });
    });
    await step('kcat produce', async () => {
      const acksAll = { acks: 'all' };
      const fixedMs = await kcatFixedCost(context, b, await replicatedTopic('repl-kcat-fixed'), 3, acksAll);
      const t = await replicatedTopic('repl-kcat');
      const [rawMs, cpu] = await measured(R, () => kcatProduce(context, b, t, R, 0, acksAll));
      await expectStored(b, t, 1, R);
      record('replication.produce.kcat', spec('produce acks=all, RF 3 (kcat -P, librdkafka default batching)', 'records/s', 'higher'), R / (Math.max(1, rawMs - fixedMs) / 1000),
        { 'spawn→exit s': rawMs / 1000, 'fixed cost ms': fixedMs, ...cpu });
    });
    await step('consume', async () => {
      let source = javaTopic;
      if (source === undefined) {
        source = await replicatedTopic('repl-consume-source');
        await kcatProduce(context, b, source, R, 0, { acks: 'all' });
        await expectStored(b, source, 1, R);
      }
      const from = source;
      const [r, cpu] = await measured(R, () => kcatConsume(context, b, from, R));
      record('replication.consume.kcat', spec('consume from the leader of an RF 3 partition, ~200 KB fetches (kcat -C)', 'records/s', 'higher'), r.recordsPerSecond,
        { 'MB/s': r.mbPerSecond, seconds: r.seconds, ...cpu });
    });
    await step('latency', async () => {
      const t = await replicatedTopic('repl-e2e');
      const latency = await endToEndLatency(context, b, t, options.latencyMessages, 'all');
      const label = (p: string): string => `end-to-end latency ${p}, acks=all, RF 3 (Java EndToEndLatency, whole ms)`;
      record('replication.latency.p50', spec(label('p50'), 'ms', 'lower'), latency.p50);
      record('replication.latency.p99', spec(label('p99'), 'ms', 'lower'), latency.p99, { 'p99.9 ms': latency.p999, 'avg ms': latency.avg });
    });
    await step('failover', async () => {
      // Each failover on a fresh topic led by a broker that is not the controller (taking turns);
      // the broker killed last is started again first, and the next one waits until all three are back.
      const each: { ms: number; seenMs: number | undefined; failed: number; killed: number; newLeader: number; controller: number | undefined }[] = [];
      let killed: ClusterBroker | undefined;
      for (let i = 1; i <= options.failovers; i += 1) {
        if (killed !== undefined) {
          const restartStart = performance.now();
          killed.restart();
          await cluster.waitForAll();
          say(`  broker ${killed.id} restarted and listed by every broker in ${fmt((performance.now() - restartStart) / 1000, 1)} s`);
          killed = undefined;
        }
        const controller = await cluster.controllerBroker();
        const candidates = cluster.brokers.filter((broker) => broker.id !== controller);
        const leader = candidates[(i - 1) % candidates.length];
        if (leader === undefined) throw new Error('no broker that is not the controller');
        if (controller === undefined) say(`  (the controller of ${system} could not be told; broker ${leader.id} may be it)`);
        const replicas = [leader.id, ...cluster.brokers.filter((broker) => broker !== leader).map((broker) => broker.id)];
        const t = await replicatedTopic(`repl-failover-${i}`, replicas);
        const result = await measureFailover(cluster.brokers, t, leader.id, () => leader.kill(), { warmupAcks: options.smoke ? 20 : 100 });
        killed = leader;
        const failed = Object.values(result.failures).reduce((a, n) => a + n, 0);
        each.push({ ms: result.ms, seenMs: result.leaderSeenMs, failed, killed: leader.id, newLeader: result.newLeader, controller });
        say(`  failover ${i}/${options.failovers}: broker ${leader.id} killed${controller === undefined ? '' : ` (controller: ${controller})`}, broker ${result.newLeader} acknowledged a write after ${fmt(result.ms)} ms` +
          ` (named leader in Metadata after ${result.leaderSeenMs === undefined ? '?' : fmt(result.leaderSeenMs)} ms; ${failed} failed attempts: ${JSON.stringify(result.failures)})`);
      }
      const list = (f: (e: (typeof each)[number]) => number | undefined): string => each.map((e) => {
        const v = f(e);
        return v === undefined ? '?' : String(Math.round(v));
      }).join(' ');
      record('replication.failover', spec(`leader SIGKILL → first acks=all write acknowledged by the new leader (session timeout ${fmt(options.sessionTimeoutMs / 1000, 0)} s)`, 'ms', 'lower'),
        median(each.map((e) => e.ms)), {
          failovers: each.length,
          'each ms': list((e) => e.ms),
          'new leader in Metadata after ms, each': list((e) => e.seenMs),
          'killed → new leader, each': each.map((e) => `${e.killed}→${e.newLeader}`).join(' '),
          'controller (never killed), each': list((e) => e.controller),
          'failed attempts, each': list((e) => e.failed),
        });
    });
  } finally {
    const stopStart = performance.now();
    await cluster.stop();
    say(`${system} (3 brokers) stopped in ${fmt((performance.now() - stopStart) / 1000, 1)} s; replication scenario ${fmt((performance.now() - scenarioStart) / 1000, 1)} s in all`);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const totalStart = performance.now();
  const run = openRun(mkdtempSync(join(options.baseDir ?? tmpdir(), 'tributary-bench-vs-kafka-')));
  startGuardian(run);
  process.once('SIGINT', () => {
    void stopRun(run).finally(() => process.exit(130));
  });
  const checkout = describeCheckout(options.tributaryDir);
  const otherCheckout = options.tributaryDir !== THIS_CHECKOUT;
  // docs/ describes this checkout's broker: a smoke run or another checkout's broker writes elsewhere.
  const docsDir = options.outDir ?? (options.smoke ? join(tmpdir(), 'tributary-bench-vs-kafka-smoke')
    : otherCheckout ? join(tmpdir(), `tributary-bench-vs-kafka-${checkout.commit.slice(0, 12)}`) : join(root, 'docs'));
  const profileDir = join(options.baseDir ?? tmpdir(), 'tributary-bench-vs-kafka-profiles');
  if (options.profile) rmSync(profileDir, { recursive: true, force: true });
  try {
    const reduced = reductions(options);
    const security: SecurityMaterial | undefined = options.scenarios.includes('security') ? await prepareSecurity(run) : undefined;
    const results: Results = {
      version: 1,
      startedAt: new Date().toISOString(),
      kafkaVersion: KAFKA_VERSION,
      machine: describeMachine(run.dir),
      options,
      reduced,
      settings: { kafka: brokerSettings('kafka', options.flush), tributary: brokerSettings('tributary', options.flush) },
      ...(options.scenarios.includes('replication')
        ? { replicationSettings: { kafka: replicationSettings('kafka', options.sessionTimeoutMs), tributary: replicationSettings('tributary', options.sessionTimeoutMs) } }
        : {}),
      ...(security === undefined ? {} : { securitySettings: securitySettings(security.certificatesFrom) }),
      ...(options.scenarios.includes('compaction') ? { compactionSettings: { kafka: compactionSettings(), tributary: compactionSettings() } } : {}),
      tributaryCheckout: checkout,
      figures: [],
      notes: [],
      startSeconds: [],
    };
    const m = results.machine;
    say(`Tributary vs Apache Kafka ${KAFKA_VERSION} — ${options.smoke ? 'SMOKE run (tiny sizes)' : reduced.length > 0 ? 'REDUCED run' : 'full run'}`);
    say(`machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, disk ${m.disk}; load ${m.loadAtStart.join(' ')}; node ${m.node}; ${m.java}; ${m.kcat}`);
    if (reduced.length > 0) say(`reduced: ${reduced.join('; ')}`);
    say(`tributary broker: ${checkout.dir} at ${checkout.commit.slice(0, 12)} "${checkout.subject}"${checkout.modified ? ' (with uncommitted changes)' : ''}${otherCheckout ? ' — not this checkout' : ''}`);
    say(`scenarios: ${options.scenarios.join(', ')}; ${fmt(options.records)} records; ${options.rounds} round(s); flush ${options.flush}; run folder ${run.dir}`);
    if (security !== undefined) say(`security: one broker of each with PLAINTEXT and SASL_SSL (SCRAM-SHA-512) listeners; certificates from ${security.certificatesFrom}`);
    if (options.scenarios.includes('compaction')) {
      say(`compaction: a fresh broker of each; ${fmt(options.compactionRecords)} keyed records, ${fmt(options.compactionKeys)} keys, 10% tombstones, segment.bytes ${fmt(options.compactionSegmentBytes)}; produce/fetch passes of ${fmt(options.compactionPassRecords)} records`);
    }
    if (options.scenarios.includes('replication')) {
      say(`replication: 3 brokers of each (Kafka: KRaft, 3 combined broker+controller nodes; Tributary: ZooKeeper + 3 brokers), RF 3, min.insync.replicas=2, ${fmt(options.replicationRecords)} records per run, session timeout ${options.sessionTimeoutMs} ms on both. ${FSYNC_NOTE}.`);
    }

    const log = (line: string): void => say(`[jars] ${line}`);
    const kafkaServerJars = await ensureJars(KAFKA_SERVER_JARS, log);
    const toolsJars = await ensureJars(KAFKA_TOOLS_JARS, log);
    const context = clientContext(run, toolsJars, options.fetchBytes);
    const recorder = new Recorder(results);

    for (let round = 1; round <= options.rounds; round += 1) {
      const order: SystemName[] = round % 2 === 1 ? ['kafka', 'tributary'] : ['tributary', 'kafka'];
      if (needsSingleBroker(options)) for (const system of order) await session(round, system, options, run, context, kafkaServerJars, results, recorder, profileDir);
      if (security !== undefined) {
        for (const system of order) {
          await securitySession(round, system, options, run, context, kafkaServerJars, security, results, {
            say,
            record: (id, spec, value, detail) => {
              recorder.add(id, spec, detail === undefined ? { round, system, value } : { round, system, value, detail });
              say(`  ${id.padEnd(34)} ${fmt(value, value < 100 ? 2 : 0).padStart(12)} ${spec.unit}${detail === undefined ? '' : `  ${JSON.stringify(detail)}`}`);
            },
            fail: (what, error) => {
              results.notes.push(`security (${what}) failed on ${system} in round ${round}: ${(error as Error).message.split('\n').slice(0, 6).join(' ⏎ ')}`);
              say(`  !! security (${what}) failed on ${system} in round ${round}: ${(error as Error).stack ?? String(error)}`);
            },
          });
        }
      }
      if (options.scenarios.includes('compaction')) {
        for (const system of order) {
          await compactionSession(round, system, options, run, context, kafkaServerJars, results, {
            say,
            record: (id, spec, value, detail) => {
              recorder.add(id, spec, detail === undefined ? { round, system, value } : { round, system, value, detail });
              say(`  ${id.padEnd(26)} ${fmt(value, value < 100 ? 2 : 0).padStart(12)} ${spec.unit}${detail === undefined ? '' : `  ${JSON.stringify(detail)}`}`);
            },
            fail: (what, error) => {
              results.notes.push(`compaction (${what}) failed on ${system} in round ${round}: ${(error as Error).message.split('\n').slice(0, 6).join(' ⏎ ')}`);
              say(`  !! compaction (${what}) failed on ${system} in round ${round}: ${(error as Error).stack ?? String(error)}`);
            },
          });
        }
      }
      if (options.scenarios.includes('replication')) {
        for (const system of order) await replicationSession(round, system, options, run, context, kafkaServerJars, results, recorder, profileDir);
      }
    }

    results.finishedAt = new Date().toISOString();
    results.machine.loadAtEnd = currentLoad();
    if (options.profile) {
      const profile = summarizeProfiles(profileDir, options.tributaryDir);
      if (profile !== undefined) results.profile = profile;
    }

    say(`\n==== Tributary ÷ Apache Kafka ${KAFKA_VERSION} — ${options.rounds} round(s), alternated; ratio = Tributary ÷ Kafka of the medians ====`);
    if (reduced.length > 0) say(`REDUCED RUN — not the benchmark's result: ${reduced.join('; ')}; load at start ${m.loadAtStart.join(' ')}, at end ${(m.loadAtEnd ?? []).join(' ')}`);
    say(`Tributary = ${checkout.dir} at ${checkout.commit.slice(0, 12)}${checkout.modified ? ' (with uncommitted changes)' : ''}`);
    say('');
    for (const line of consoleTable(results)) say(line);
    if (results.figures.some((f) => f.scenario === 'replication')) say(`replication: ${FSYNC_NOTE}.`);
    const securityLines = securityConsole(results);
    if (securityLines.length > 0) say(['', ...securityLines].join('\n'));
    if (results.profile !== undefined) {
      say('\nTributary broker CPU profile, top self time (idle left out):');
      for (const f of results.profile.topFunctions.slice(0, 10)) say(`  ${f.selfPercent.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}  ← ${f.calledFrom ?? ''}`);
    }
    say('\nREADME headline table:\n');
    for (const line of headlineTable(results)) say(line);
    for (const note of results.notes) say(`note: ${note}`);

    const chartNote = await writeDocs(results, docsDir);
    const written = securityOnly(results) ? [join(docsDir, SECURITY_PAGE), join(docsDir, SECURITY_RESULTS_FILE)]
      : [join(docsDir, 'benchmarks.md'), ...(security === undefined ? [] : [join(docsDir, SECURITY_PAGE)]), join(docsDir, 'charts')];
    say(`\nwrote ${written.join(', ')}${chartNote === undefined ? '' : ` — ${chartNote}`}`);
    say(`total run time ${fmt((performance.now() - totalStart) / 1000)} s`);
  } finally {
    await stopRun(run, { keepDir: options.keep });
  }
}

await main();
// Exit now rather than when the event loop drains: a daemon's stop (test/services/process.ts)
// leaves its grace-period timer pending, which kept the process idle for up to a minute after
// the report. Everything is written and every daemon of the run is stopped by now.
process.exit(process.exitCode ?? 0);
