/**
 * Loader benchmark (`npm run bench:etl`, issue #9): a benchmark, not a test — it asserts nothing
 * about speed and exits 0 unless something throws (a load that did not land all N records throws,
 * since its figure would be meaningless).
 *
 * What it measures, over the same N records in the same run:
 *
 *   bare loop  the in-run reference: the records' framed bytes, already in memory, decoded with
 *              avsc straight from the bytes after the 5-byte header (reader Type + resolver from
 *              the writer schema, as the loader resolves them), bucketed by partition and event
 *              hour, and each bucket encoded as an Avro container file in memory with the load's
 *              codec (deflate, 64 KiB blocks, the same container writer the loader uses, with its
 *              offset metadata). No network, no disk, no registry, no checks.
 *   local      `runLoad` (src/etl/load/run.ts) of a fresh load into a local folder warehouse: plan,
 *              fetch from the broker, decode, bucket, encode, stage, commit — one whole run.
 *   HDFS       the same `runLoad` into real HDFS through WebHDFS (test/services' NameNode and
 *              DataNode, replication 1).
 *
 * Set-up, untimed: a standalone Tributary broker as a child process (test/support/brokers.ts,
 * `log.visible.on.append=true`), the schema registry in this process (file store), PageViewEvent
 * (schemas/PageViewEvent.avsc) registered under `<topic>-value`; N page views (src/demo's sample
 * generator: event times over BENCH_HOURS whole hours, growing traffic) framed as schema id + Avro
 * and produced round-robin over BENCH_PARTITIONS partitions with acks=1. Each round loads the same
 * topic from offset 0 under a new load name into a new warehouse folder, so every round writes all
 * N records; the folder is deleted after the round. The load is avro + deflate with
 * `timeField: header.time`, as the demo's; runLoad runs with its default concurrency (4 tasks).
 * HDFS: the services named by TRIBUTARY_TEST_SERVICES (a state file of `npm run services -- start`),
 * else a NameNode and DataNode started here and stopped at the end.
 *
 * Each runLoad round also prints where its time went: plan (lease, recovery, offsets), tasks
 * (fetch, decode, stage the files; 4 partitions at once) and commit (claim, renames, publish).
 *
 * Figures: records/s and MB/s (MB = 10^6 bytes of framed record values, the input payload),
 * min / median / max over BENCH_ROUNDS, and each contender's median ÷ the bare loop's median
 * against the issue's target of ≥ 0.5× for the local folder. Rounds alternate the contenders
 * (bare, local, HDFS), after one untimed warm-up load of each kind on a slice of the records.
 *
 * Options (environment):
 *   BENCH_RECORDS=1000000     records (N)
 *   BENCH_ROUNDS=3            rounds of each contender
 *   BENCH_PARTITIONS=8        partitions of the topic
 *   BENCH_HOURS=6             event hours the records span
 *   BENCH_TARGETS=bare,local,hdfs
 *   TRIBUTARY_TEST_SERVICES   reuse running test services for HDFS
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import avro from 'avsc';
import type { Resolver, Type } from 'avsc';
import { Producer, type ProducerRecord } from '../../src/client/producer.js';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../src/client/simple-consumer.js';
import { createLogger } from '../../src/common/logger.js';
import { MemoryCoordination } from '../../src/coordination/memory-store.js';
import { samplePageViews } from '../../src/demo/sample-events.js';
import { compactOffsets } from '../../src/etl/load/extract.js';
import { writeAvroContainer } from '../../src/etl/files/avro-container.js';
import { syncMarkerFor } from '../../src/etl/files/data-files.js';
import { dataFilePath, HOUR_MS, hourOf } from '../../src/etl/layout.js';
import { parseLoadFile, type LoadDefinition } from '../../src/etl/load-file.js';
import type { LoadProgress } from '../../src/etl/status/progress.js';
import { runLoad } from '../../src/etl/load/run.js';
import { KafkaLoadSource } from '../../src/etl/load/source.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { RegistryClient } from '../../src/registry/client.js';
import { FRAME_HEADER_BYTES } from '../../src/registry/serde/framing.js';
import { AvroSerializer } from '../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../src/registry/server.js';
import { startBrokerProcess } from '../support/brokers.js';
import { createTemporaryRun, startGuardian, stopRun, type ServiceRun } from '../services/run-dir.js';
import type { ServiceAddresses } from '../services/stack.js';
import { startStack } from '../services/stack.js';
import { envInt, fmt, fmtInt, say } from './bench-output.js';

const MB = 1_000_000;
const TARGET = 0.5;
const TOPIC = 'bench-page-views';
/** Event hours start here: a fixed past hour, so the records are the same in every run. */
const FIRST_HOUR = Date.UTC(2026, 0, 5, 0);
const PRODUCE_CHUNK = 10_000;

const RECORDS = envInt('BENCH_RECORDS', 1_000_000);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const PARTITIONS = envInt('BENCH_PARTITIONS', 8);
const HOURS = envInt('BENCH_HOURS', 6);
const TARGETS = new Set((process.env['BENCH_TARGETS'] ?? 'bare,local,hdfs').split(',').map((t) => t.trim()));
const WARMUP_RECORDS = Math.min(RECORDS, Math.max(10_000, Math.floor(RECORDS / 10)));
const PAGE_VIEW = readFileSync(join(import.meta.dirname, '..', '..', 'schemas', 'PageViewEvent.avsc'), 'utf8');

type Contender = 'bare' | 'local' | 'hdfs';
const LABELS: Readonly<Record<Contender, string>> = { bare: 'bare decode+encode loop (no I/O)', local: 'runLoad → local folder', hdfs: 'runLoad → HDFS (WebHDFS)' };

interface Measurement {
  readonly records: number;
  readonly bytes: number;
  readonly ms: number;
  /** Bytes of the data files written. */
  readonly outputBytes: number;
  readonly files: number;
  /** runLoad only: seconds to the plan, of the tasks (fetch, decode, stage), and of the commit. */
  readonly phases?: { readonly plan: number; readonly tasks: number; readonly commit: number };
}

const load = (): string => loadavg().map((n) => fmt(n, 2)).join(' ');
const recordsPerSecond = (m: Measurement): number => m.records / (m.ms / 1000);
const mbPerSecond = (m: Measurement): number => m.bytes / MB / (m.ms / 1000);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

// ---- data ---------------------------------------------------------------------------------

/** The produced records of one partition, in offset order (offsets 0, 1, 2, …). */
interface PartitionData {
  readonly partition: number;
  readonly values: Buffer[];
}

async function createTopic(bootstrap: string): Promise<void> {
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], clientId: 'bench-etl' });
  try {
    const broker = cluster.knownBrokers()[0];
    if (broker === undefined) throw new Error('the broker named no brokers');
    const connection = await cluster.connectionTo(broker.nodeId);
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: -1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    if (response.topics[0]?.errorCode !== 0) throw new Error(`could not create ${TOPIC}: error ${response.topics[0]?.errorCode}`);
    await cluster.leaderConnection(TOPIC, 0);
  } finally {
    cluster.close();
  }
}

/** Frames N page views and produces them round-robin over the partitions; returns what each partition holds. */
async function produce(bootstrap: string, registry: RegistryClient): Promise<PartitionData[]> {
  const serializer = new AvroSerializer(registry, { autoRegister: false });
  const events = samplePageViews(RECORDS, { from: FIRST_HOUR, to: FIRST_HOUR + HOURS * HOUR_MS });
  const partitions: PartitionData[] = Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, values: [] }));
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: 1, lingerMs: 5, batchSize: 256 * 1024, clientId: 'bench-etl-producer' });
  try {
    for (let from = 0; from < events.length; from += PRODUCE_CHUNK) {
      const chunk: ProducerRecord[] = [];
      for (let index = from; index < Math.min(events.length, from + PRODUCE_CHUNK); index += 1) {
        const event = events[index]!;
        const value = await serializer.encode(`${TOPIC}-value`, event, PAGE_VIEW);
        const partition = index % PARTITIONS;
        partitions[partition]!.values.push(value);
        chunk.push({ key: null, value, timestamp: event.header.time, partition });
      }
      await producer.send(TOPIC, chunk);
    }
  } finally {
    await producer.close();
  }
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], clientId: 'bench-etl' });
  try {
    const consumer = new SimpleConsumer(cluster);
    for (const data of partitions) {
      const end = await consumer.listOffset(TOPIC, data.partition, 'latest');
      if (end !== BigInt(data.values.length)) throw new Error(`partition ${data.partition} ends at ${end}, but ${data.values.length} records were produced to it`);
    }
  } finally {
    cluster.close();
  }
  return partitions;
}

// ---- the bare loop ------------------------------------------------------------------------

interface BareLoop {
  run(partitions: readonly PartitionData[], limit: number): Measurement;
}

function bareLoop(): BareLoop {
  const writer = avro.Type.forSchema(JSON.parse(PAGE_VIEW) as avro.Schema, { registry: {} });
  const reader: Type = avro.Type.forSchema(JSON.parse(PAGE_VIEW) as avro.Schema, { registry: {} });
  const resolver: Resolver = reader.createResolver(writer, { ignoreNamespaces: true });
  return {
    run(partitions, limit) {
      const start = performance.now();
      let records = 0;
      let bytes = 0;
      let outputBytes = 0;
      let files = 0;
      for (const { partition, values } of partitions) {
        const end = Math.min(values.length, limit);
        const buckets = new Map<number, { values: unknown[]; offsets: number[] }>();
        for (let offset = 0; offset < end; offset += 1) {
          const message = values[offset]!;
          const value = reader.decode(message, FRAME_HEADER_BYTES, resolver).value as { header: { time: number } };
          const hour = hourOf(value.header.time);
          let bucket = buckets.get(hour);
          if (bucket === undefined) buckets.set(hour, (bucket = { values: [], offsets: [] }));
          bucket.values.push(value);
          bucket.offsets.push(offset);
          bytes += message.length;
        }
        records += end;
        for (const [hour, bucket] of [...buckets].sort(([a], [b]) => a - b)) {
          const identity = dataFilePath('bench', TOPIC, hour, partition, 0, end, 'avro', 'hourly');
          const file = writeAvroContainer(reader, bucket.values, {
            codec: 'deflate',
            syncMarker: syncMarkerFor(identity),
            metadata: { 'tributary.offsets': compactOffsets(bucket.offsets), 'tributary.partition': String(partition), 'tributary.range': `0-${end}`, 'tributary.topic': TOPIC },
          });
          outputBytes += file.length;
          files += 1;
        }
      }
      return { records, bytes, ms: performance.now() - start, outputBytes, files };
    },
  };
}

// ---- runLoad ------------------------------------------------------------------------------

interface Environment {
  readonly bootstrap: string;
  readonly registry: RunningRegistry;
  readonly folder: string;
  readonly hdfs: ServiceAddresses['hdfs'];
  readonly coordination: MemoryCoordination;
  /** Records among the first `limit` of each partition. */
  readonly recordsUpTo: (limit: number) => number;
  /** Payload bytes of the first `limit` records of each partition. */
  readonly bytesUpTo: (limit: number) => number;
}

let loads = 0;

function loadDefinition(env: Environment, name: string, warehouseUrl: string, maxRecordsPerRun: number): LoadDefinition {
  const text = [
    `name: ${name}`,
    `source: { bootstrap: [${env.bootstrap}] }`,
    `topics: [${TOPIC}]`,
    `registry: ${env.registry.url}`,
    `warehouse: { url: '${warehouseUrl}', root: data }`,
    'format: avro',
    'codec: deflate',
    'timeField: header.time',
    `maxRecordsPerRun: ${maxRecordsPerRun}`,
    'quarantine: { maxRecords: 0 }',
    'latenessHorizon: 2h',
  ].join('\n');
  return parseLoadFile(text, join(env.folder, `${name}.yaml`));
}

const silent = createLogger({ name: 'bench-etl', level: 'silent' });

/** One whole runLoad of the topic's first `limit` records per partition into a fresh warehouse folder. */
async function measureLoad(env: Environment, kind: 'local' | 'hdfs', limit: number): Promise<Measurement> {
  loads += 1;
  const name = `bench-${kind}-${loads}`;
  let url: string;
  let cleanup: () => Promise<void>;
  if (kind === 'local') {
    url = join(env.folder, `warehouse-${loads}`);
    await mkdir(url, { recursive: true });
    cleanup = () => rm(url, { recursive: true, force: true });
  } else {
    const { webHdfsUrl, user } = env.hdfs!;
    const base = `tributary-bench/etl-${process.pid}-${randomBytes(3).toString('hex')}-${loads}`;
    url = `${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/${base}?user=${user}`;
    const top = openWarehouse(`${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/?user=${user}`, { logger: silent });
    cleanup = async () => {
      await top.delete(base, { recursive: true });
    };
  }
  const definition = loadDefinition(env, name, url, limit);
  const store = env.coordination.session();
  try {
    const start = performance.now();
    let planned = start;
    let finishing = start;
    const progress: LoadProgress = {
      planned: () => void (planned = performance.now()),
      fetched: () => {},
      partitionDone: () => {},
      finishing: () => void (finishing = performance.now()),
    };
    const warehouse = openWarehouse(definition.warehouse.url, { baseDirectory: definition.warehouse.baseDirectory, logger: silent });
    const registry = new RegistryClient({ url: definition.registry });
    const source = await KafkaLoadSource.connect(definition.source.bootstrap, silent);
    let report;
    try {
      report = await runLoad({ load: definition, warehouse, source, registry, logger: silent, acceptGap: false, store, numberRuns: false, progress });
    } finally {
      source.close();
    }
    const ms = performance.now() - start;
    const phases = { plan: (planned - start) / 1000, tasks: (finishing - planned) / 1000, commit: (performance.now() - finishing) / 1000 };
    const files = report.manifest?.files ?? [];
    const records = files.reduce((sum, file) => sum + file.records, 0);
    const expected = env.recordsUpTo(limit);
    if (report.outcome !== 'committed' || records !== expected || report.problems.length > 0) {
      throw new Error(`${name} landed ${records} records in ${report.outcome} (problems: ${report.problems.map((p) => p.message).join('; ') || 'none'}), expected ${expected}`);
    }
    return { records, bytes: env.bytesUpTo(limit), ms, outputBytes: files.reduce((sum, file) => sum + file.bytes, 0), files: files.length, phases };
  } finally {
    await store.close();
    await cleanup();
  }
}

// ---- main ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const totalStart = performance.now();
  const loadAtStart = load();
  const run: ServiceRun = createTemporaryRun('tributary-bench-etl-');
  startGuardian(run);
  process.once('SIGINT', () => {
    void stopRun(run).finally(() => process.exit(130));
  });
  let registry: RunningRegistry | undefined;
  let stopHdfs: (() => Promise<void>) | undefined;
  try {
    say('tributary loader benchmark (issue #9) — runLoad into a local folder and into HDFS, beside a bare decode+encode loop over the same records');
    say(`node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPU(s), load average ${loadAtStart}`);
    say(`${fmtInt(RECORDS)} PageViewEvent records (schema id + Avro) over ${PARTITIONS} partitions and ${HOURS} event hours; avro + deflate; ${ROUNDS} rounds; targets ${[...TARGETS].join(', ')}`);

    const broker = await startBrokerProcess({ run, id: 0, settings: { 'log.visible.on.append': 'true' } });
    registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: join(run.dir, 'registry'), logger: silent });
    const registryClient = new RegistryClient({ url: registry.url });
    const schemaId = (await registryClient.register(`${TOPIC}-value`, PAGE_VIEW)).id;
    say(`broker: separate process on ${broker.bootstrap} (log ${broker.logFile}); registry in this process at ${registry.url}, PageViewEvent id ${schemaId}`);

    let hdfs: ServiceAddresses['hdfs'];
    if (TARGETS.has('hdfs')) {
      const reuse = process.env['TRIBUTARY_TEST_SERVICES'];
      if (reuse !== undefined && reuse !== '') {
        hdfs = (JSON.parse(readFileSync(reuse, 'utf8')) as ServiceAddresses).hdfs;
        if (hdfs === undefined) throw new Error(`${reuse} names no HDFS`);
        say(`HDFS: reusing ${hdfs.webHdfsUrl} from ${reuse}`);
      } else {
        const began = performance.now();
        const stack = await startStack(run, ['hdfs']);
        stopHdfs = () => stack.stop();
        hdfs = stack.addresses.hdfs;
        say(`HDFS: started here in ${fmt((performance.now() - began) / 1000)} s, WebHDFS ${hdfs?.webHdfsUrl}`);
      }
    }

    await createTopic(broker.bootstrap);
    const produceStart = performance.now();
    const partitions = await produce(broker.bootstrap, registryClient);
    const totalBytes = partitions.reduce((sum, p) => sum + p.values.reduce((s, v) => s + v.length, 0), 0);
    say(`produced ${fmtInt(RECORDS)} records, ${fmt(totalBytes / MB)} MB of framed values (${fmt(totalBytes / RECORDS, 0)} B each) in ${fmt((performance.now() - produceStart) / 1000)} s (untimed)`);

    const limitBytes = new Map<number, number>();
    const env: Environment = {
      bootstrap: broker.bootstrap,
      registry,
      folder: join(run.dir, 'loads'),
      hdfs,
      coordination: new MemoryCoordination(),
      recordsUpTo: (limit) => partitions.reduce((sum, p) => sum + Math.min(p.values.length, limit), 0),
      bytesUpTo: (limit) => {
        let bytes = limitBytes.get(limit);
        if (bytes === undefined) limitBytes.set(limit, (bytes = partitions.reduce((sum, p) => sum + p.values.slice(0, limit).reduce((s, v) => s + v.length, 0), 0)));
        return bytes;
      },
    };
    await mkdir(env.folder, { recursive: true });
    const bare = bareLoop();
    const all = Math.max(...partitions.map((p) => p.values.length));
    const contenders = (['bare', 'local', 'hdfs'] as const).filter((c) => TARGETS.has(c));
    const measure = async (contender: Contender, limit: number): Promise<Measurement> =>
      contender === 'bare' ? bare.run(partitions, limit) : await measureLoad(env, contender, limit);

    // Untimed warm-up on a slice: JIT of the loader, the serde, the warehouses' connections.
    const warmLimit = Math.ceil(WARMUP_RECORDS / PARTITIONS);
    for (const contender of contenders) await measure(contender, warmLimit);
    say(`warm-up done (${fmtInt(warmLimit * PARTITIONS)} records through each contender, untimed)`);
    say('');

    const results = new Map<Contender, Measurement[]>(contenders.map((c) => [c, []]));
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const contender of contenders) {
        const m = await measure(contender, all);
        results.get(contender)!.push(m);
        say(`[round ${round}/${ROUNDS}] ${LABELS[contender].padEnd(34)} ${fmtInt(recordsPerSecond(m)).padStart(10)} records/s, ${fmt(mbPerSecond(m)).padStart(6)} MB/s, ` +
          `${fmt(m.ms / 1000, 2)} s${m.phases === undefined ? '' : ` (plan ${fmt(m.phases.plan, 2)} s, tasks ${fmt(m.phases.tasks, 2)} s, commit ${fmt(m.phases.commit, 2)} s)`}, ` +
          `${m.files} files, ${fmt(m.outputBytes / MB)} MB written; load ${load()}`);
      }
    }
    printTable(results, loadAtStart, (performance.now() - totalStart) / 1000);
  } finally {
    await registry?.close();
    await stopHdfs?.().catch(() => undefined);
    await stopRun(run);
  }
}

function printTable(results: ReadonlyMap<Contender, Measurement[]>, loadAtStart: string, seconds: number): void {
  const bare = results.get('bare');
  const bareRate = bare === undefined ? undefined : median(bare.map(recordsPerSecond));
  const rows: string[][] = [['contender', 'records/s min', 'median', 'max', 'MB/s min', 'median', 'max', '÷ bare loop', `≥ ${TARGET}×?`]];
  const verdicts: string[] = [];
  for (const [contender, measurements] of results) {
    const rps = measurements.map(recordsPerSecond);
    const mbs = measurements.map(mbPerSecond);
    const ratio = bareRate === undefined || contender === 'bare' ? undefined : median(rps) / bareRate;
    rows.push([
      LABELS[contender],
      fmtInt(Math.min(...rps)), fmtInt(median(rps)), fmtInt(Math.max(...rps)),
      fmt(Math.min(...mbs)), fmt(median(mbs)), fmt(Math.max(...mbs)),
      ratio === undefined ? '' : `${fmt(ratio, 3)}×`,
      ratio === undefined || contender !== 'local' ? '' : ratio >= TARGET ? 'MET' : 'NOT MET',
    ]);
    if (ratio !== undefined) {
      verdicts.push(`${LABELS[contender]}: ${fmt(ratio, 3)}× the bare loop (median records/s)${contender === 'local' ? ` — target ≥ ${TARGET}× ${ratio >= TARGET ? 'MET' : 'NOT MET'}` : ''}`);
    }
  }
  say(`\n==== results: ${ROUNDS} rounds, ${fmtInt(RECORDS)} records per run; MB = 10^6 bytes of framed record values (the input payload) ====`);
  say('');
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((r) => (r[column] ?? '').length))) ?? [];
  const line = (r: readonly string[]): string => r.map((cell, column) => (column < 1 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ');
  say(line(rows[0] ?? []));
  say(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const r of rows.slice(1)) say(line(r));
  say('');
  for (const verdict of verdicts) say(verdict);
  say(`load average at start ${loadAtStart}, at end ${load()} (${cpus().length} CPUs); total run time ${fmt(seconds, 0)} s`);
}

await main();
