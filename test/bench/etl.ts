/**
 * Loader benchmark (`npm run bench:etl`, issues #9 and #19): a benchmark, not a test — it asserts
 * nothing about speed and exits 0 unless something throws (a load that did not land all N records
 * throws, since its figure would be meaningless).
 *
 * What it measures, over the same records in the same run:
 *
 *   bare loop  the in-run reference: the records' framed bytes, already in memory, decoded with
 *              avsc straight from the bytes after the 5-byte header (reader Type + resolver from
 *              the writer schema, as the loader resolves them), bucketed by partition and event
 *              hour, and each bucket encoded as an Avro container file in memory with the load's
 *              codec (deflate, 64 KiB blocks, the same container writer the loader uses, with its
 *              offset metadata). No network, no disk, no registry, no checks. It runs over the
 *              first BENCH_BARE_RECORDS records (default: all of them, at most 1,000,000), since it
 *              holds its input in memory; its figure is a rate, records/s.
 *   local      `runLoad` (src/etl/load/run.ts) of a fresh load into a local folder warehouse: plan,
 *              fetch from the broker, decode, bucket, encode, stage, commit — one whole run.
 *   HDFS       the same `runLoad` into real HDFS through WebHDFS (test/services' NameNode and
 *              DataNode, replication 1).
 *   workers    the same load run by 1, 2 and 4 `tributary worker` processes (BullMQ, jobs/): a run
 *              job enqueued as `enqueueRun` does, fanned out as one task per partition, committed
 *              by a commit job; timed from the run job's enqueue to the commit job's finish.
 *
 * The loader does not run in this process: `runLoad` runs in a child process of this script
 * (forked with `--loader-child`, warmed up once, then given every load over IPC), so its memory is
 * its own and the figures are not disturbed by the records this process holds. Peak RSS is the
 * child's VmHWM, reset before each load (`/proc/self/clear_refs`), so each figure has its own
 * peak; for workers, each worker process's VmHWM at the end of the run.
 *
 * Set-up, untimed: a standalone Tributary broker as a child process (test/support/brokers.ts,
 * `log.visible.on.append=true`), the schema registry in this process (file store), PageViewEvent
 * (schemas/PageViewEvent.avsc) registered under `<topic>-value`; N page views (the demo's shape,
 * generated here batch by batch from the record index: event times over BENCH_HOURS whole hours,
 * growing traffic) framed as schema id + Avro and produced round-robin over BENCH_PARTITIONS
 * partitions with acks=1, PRODUCE_BATCH records at a time: only the bare loop's slice is kept, so
 * `--records 10000000` fits in memory. Each round loads the same topic from offset 0 under a new
 * load name into a new warehouse folder, so every round writes all N records; the folder is
 * deleted after the round. The load is avro + deflate with `timeField: header.time`, as the
 * demo's; runLoad runs with its default concurrency (4 tasks). HDFS and Redis: the services named
 * by TRIBUTARY_TEST_SERVICES (a state file of `npm run services -- start`), else started here and
 * stopped at the end.
 *
 * Each runLoad round also prints where its time went: plan (lease, recovery, offsets), tasks
 * (fetch, decode, stage the files; 4 partitions at once) and commit (claim, renames, publish);
 * HDFS rounds also print the WebHDFS requests the load made (NameNode by op, DataNode uploads).
 *
 * Figures: records/s and MB/s (MB = 10^6 bytes of framed record values, the input payload),
 * min / median / max over the rounds, peak RSS, and each contender's median ÷ the bare loop's
 * median against the targets of issue #19: ≥ 0.8× for the local folder, ≥ 0.7× for HDFS. Rounds
 * alternate the contenders (bare, local, HDFS), after one untimed warm-up load of each kind on a
 * slice of the records. Worker figures come after, one run per worker count, each after an untimed
 * warm-up run of the same workers on a slice.
 *
 * Options: flags after `--` (`npm run bench:etl -- --records 50000 --workers 1,2`), or the
 * environment variables beside them; a flag wins.
 *   --records N        BENCH_RECORDS=1000000     records (N)
 *   --rounds N         BENCH_ROUNDS=3            rounds of each contender
 *   --partitions N     BENCH_PARTITIONS=8        partitions of the topic
 *   --hours N          BENCH_HOURS=6             event hours the records span
 *   --targets LIST     BENCH_TARGETS=bare,local,hdfs
 *   --bare-records N   BENCH_BARE_RECORDS        records of the bare loop (default min(N, 1000000))
 *   --workers LIST     BENCH_WORKERS=1,2,4       worker counts to measure; 0 for none
 *   --worker-concurrency N  BENCH_WORKER_CONCURRENCY=4   `tributary worker --concurrency`
 *   --workers-warehouse hdfs|local  BENCH_WORKERS_WAREHOUSE   default hdfs when HDFS is a target
 *                      TRIBUTARY_TEST_SERVICES   reuse running test services (HDFS, Redis)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dc from 'node:diagnostics_channel';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import avro from 'avsc';
import type { Resolver, Type } from 'avsc';
import { Queue, type Job } from 'bullmq';
import { Producer, type ProducerRecord } from '../../src/client/producer.js';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../src/client/simple-consumer.js';
import { createLogger } from '../../src/common/logger.js';
import { MemoryCoordination } from '../../src/coordination/memory-store.js';
import { DEMO_SERVERS, type PageViewEvent } from '../../src/demo/sample-events.js';
import { compactOffsets } from '../../src/etl/load/extract.js';
import { writeAvroContainer } from '../../src/etl/files/avro-container.js';
import { syncMarkerFor } from '../../src/etl/files/data-files.js';
import { dataFilePath, HOUR_MS, hourOf } from '../../src/etl/layout.js';
import { parseLoadFile } from '../../src/etl/load-file.js';
import type { LoadProgress } from '../../src/etl/status/progress.js';
import { runLoad } from '../../src/etl/load/run.js';
import { KafkaLoadSource } from '../../src/etl/load/source.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import { enqueueRun } from '../../jobs/src/enqueue.js';
import type { CommitJobResult } from '../../jobs/src/job-data.js';
import { QUEUE_NAMES } from '../../jobs/src/queues.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { RegistryClient } from '../../src/registry/client.js';
import { FRAME_HEADER_BYTES } from '../../src/registry/serde/framing.js';
import { AvroSerializer } from '../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../src/registry/server.js';
import { startBrokerProcess } from '../support/brokers.js';
import { startDaemon, waitUntil, type Daemon } from '../services/process.js';
import { createTemporaryRun, startGuardian, stopRun, type ServiceRun } from '../services/run-dir.js';
import type { ServiceAddresses, ServiceName } from '../services/stack.js';
import { startStack } from '../services/stack.js';
import { envInt, fmt, fmtInt, say } from './bench-output.js';
import { seededRandom } from '../support/seeded-random.js';

const MB = 1_000_000;
const TARGETS_OF: Readonly<Record<'local' | 'hdfs', number>> = { local: 0.8, hdfs: 0.7 };
const TOPIC = 'bench-page-views';
/** Event hours start here: a fixed past hour, so the records are the same in every run. */
const FIRST_HOUR = Date.UTC(2026, 0, 5, 0);
const PRODUCE_BATCH = 10_000;
const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url));
const PAGE_VIEW = readFileSync(join(REPOSITORY, 'schemas', 'PageViewEvent.avsc'), 'utf8');

type Contender = 'bare' | 'local' | 'hdfs';
const LABELS: Readonly<Record<Contender, string>> = { bare: 'bare decode+encode loop (no I/O)', local: 'runLoad → local folder', hdfs: 'runLoad → HDFS (WebHDFS)' };

// ---- options ------------------------------------------------------------------------------

interface Options {
  readonly records: number;
  readonly rounds: number;
  readonly partitions: number;
  readonly hours: number;
  readonly targets: ReadonlySet<string>;
  readonly bareRecords: number;
  readonly workers: readonly number[];
  readonly workerConcurrency: number;
  readonly workersWarehouse: 'hdfs' | 'local';
}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not "${raw}"`);
  return value;
}

function readOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      records: { type: 'string' },
      rounds: { type: 'string' },
      partitions: { type: 'string' },
      hours: { type: 'string' },
      targets: { type: 'string' },
      'bare-records': { type: 'string' },
      workers: { type: 'string' },
      'worker-concurrency': { type: 'string' },
      'workers-warehouse': { type: 'string' },
    },
    strict: true,
  });
  const records = positive('--records', values.records, envInt('BENCH_RECORDS', 1_000_000));
  const targets = new Set((values.targets ?? process.env['BENCH_TARGETS'] ?? 'bare,local,hdfs').split(',').map((t) => t.trim()).filter((t) => t !== ''));
  for (const target of targets) if (!['bare', 'local', 'hdfs'].includes(target)) throw new Error(`--targets: unknown contender "${target}" (bare, local, hdfs)`);
  const workerList = (values.workers ?? process.env['BENCH_WORKERS'] ?? '1,2,4').split(',').map((n) => n.trim());
  const workers = workerList.includes('0') ? [] : workerList.map((n) => positive('--workers', n, 1));
  const warehouse = values['workers-warehouse'] ?? process.env['BENCH_WORKERS_WAREHOUSE'] ?? (targets.has('hdfs') ? 'hdfs' : 'local');
  if (warehouse !== 'hdfs' && warehouse !== 'local') throw new Error(`--workers-warehouse must be hdfs or local, not "${warehouse}"`);
  return {
    records,
    rounds: positive('--rounds', values.rounds, envInt('BENCH_ROUNDS', 3)),
    partitions: positive('--partitions', values.partitions, envInt('BENCH_PARTITIONS', 8)),
    hours: positive('--hours', values.hours, envInt('BENCH_HOURS', 6)),
    targets,
    bareRecords: Math.min(records, positive('--bare-records', values['bare-records'], envInt('BENCH_BARE_RECORDS', 1_000_000))),
    workers,
    workerConcurrency: positive('--worker-concurrency', values['worker-concurrency'], envInt('BENCH_WORKER_CONCURRENCY', 4)),
    workersWarehouse: warehouse,
  };
}

interface Measurement {
  readonly records: number;
  readonly bytes: number;
  readonly ms: number;
  /** Bytes of the data files written. */
  readonly outputBytes: number;
  readonly files: number;
  /** runLoad only: seconds to the plan, of the tasks (fetch, decode, stage), and of the commit. */
  readonly phases?: { readonly plan: number; readonly tasks: number; readonly commit: number };
  /** Peak resident memory of the process that loaded, bytes (the loader child, or the largest worker). */
  readonly peakRss?: number;
  /** WebHDFS requests of the load, `NameNode OP` / `DataNode OP` → count. */
  readonly requests?: Readonly<Record<string, number>>;
}

const load = (): string => loadavg().map((n) => fmt(n, 2)).join(' ');
const recordsPerSecond = (m: Measurement): number => m.records / (m.ms / 1000);
const mbPerSecond = (m: Measurement): number => m.bytes / MB / (m.ms / 1000);
const megabytes = (bytes: number | undefined): string => (bytes === undefined ? '?' : fmt(bytes / 2 ** 20, 0));

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

// ---- data ---------------------------------------------------------------------------------

/** What was produced to one partition: its record count and payload bytes, and the bare loop's slice. */
interface PartitionData {
  readonly partition: number;
  records: number;
  bytes: number;
  /** Payload bytes of the first `warmLimit` records. */
  warmBytes: number;
  /** The first `bareLimit` framed values, offsets 0, 1, 2, … */
  readonly values: Buffer[];
}

async function createTopic(bootstrap: string, partitions: number): Promise<void> {
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], clientId: 'bench-etl' });
  try {
    const broker = cluster.knownBrokers()[0];
    if (broker === undefined) throw new Error('the broker named no brokers');
    const connection = await cluster.connectionTo(broker.nodeId);
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: TOPIC, numPartitions: partitions, replicationFactor: -1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    if (response.topics[0]?.errorCode !== 0) throw new Error(`could not create ${TOPIC}: error ${response.topics[0]?.errorCode}`);
    await cluster.leaderConnection(TOPIC, 0);
  } finally {
    cluster.close();
  }
}


const PAGES = ['home', 'profile', 'job-view', 'search', 'feed', 'company'] as const;
const AGENTS = ['Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', 'Mozilla/5.0 (Macintosh) Safari/605.1.15', 'Mozilla/5.0 (Windows NT 10.0) Chrome/126.0'] as const;
const pick = <T>(items: readonly T[], random: () => number): T => items[Math.floor(random() * items.length)] as T;

/**
 * Page views `from` … `from + count - 1` of `total`, shaped as the demo's (src/demo/sample-events.ts),
 * made from the index alone so production can go batch by batch: event times grow with the index
 * over the hours, with traffic rising from weight 1 to 2 across them.
 */
function pageViews(from: number, count: number, total: number, hours: number, random: () => number): PageViewEvent[] {
  const span = hours * HOUR_MS;
  return Array.from({ length: count }, (_, offset) => {
    const index = from + offset;
    const quantile = (index + 0.5) / total;
    const time = FIRST_HOUR + Math.floor(span * (Math.sqrt(1 + 3 * quantile) - 1));
    const page = pick(PAGES, random);
    const id = Math.floor(random() * 100_000);
    const hex = (index * 2_654_435_761 + 0x1234_5678).toString(16).padStart(12, '0').slice(-12);
    return {
      header: { eventId: `00000000-0000-4000-8000-${hex}`, time, server: pick(DEMO_SERVERS, random), service: 'frontend' },
      memberId: random() < 0.7 ? 1000 + Math.floor(random() * 5000) : null,
      pageKey: page,
      url: page === 'home' ? '/' : `/${page}/${id}`,
      referrer: random() < 0.4 ? `https://www.example.com/${pick(PAGES, random)}` : null,
      userAgent: random() < 0.9 ? pick(AGENTS, random) : null,
    };
  });
}

/** Frames N page views and produces them round-robin over the partitions, a batch at a time. */
async function produce(options: Options, bootstrap: string, registry: RegistryClient, warmLimit: number): Promise<PartitionData[]> {
  const serializer = new AvroSerializer(registry, { autoRegister: false });
  const bareLimit = Math.ceil(options.bareRecords / options.partitions);
  const partitions: PartitionData[] = Array.from({ length: options.partitions }, (_, partition) => ({ partition, records: 0, bytes: 0, warmBytes: 0, values: [] }));
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: 1, lingerMs: 5, batchSize: 256 * 1024, clientId: 'bench-etl-producer' });
  const random = seededRandom(0x7f1b_0010);
  try {
    for (let from = 0; from < options.records; from += PRODUCE_BATCH) {
      const events = pageViews(from, Math.min(PRODUCE_BATCH, options.records - from), options.records, options.hours, random);
      const batch: ProducerRecord[] = [];
      for (const [offset, event] of events.entries()) {
        const value = await serializer.encode(`${TOPIC}-value`, event, PAGE_VIEW);
        const partition = (from + offset) % options.partitions;
        const data = partitions[partition]!;
        if (data.records < bareLimit) data.values.push(value);
        if (data.records < warmLimit) data.warmBytes += value.length;
        data.records += 1;
        data.bytes += value.length;
        batch.push({ key: null, value, timestamp: event.header.time, partition });
      }
      await producer.send(TOPIC, batch);
    }
  } finally {
    await producer.close();
  }
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], clientId: 'bench-etl' });
  try {
    const consumer = new SimpleConsumer(cluster);
    for (const data of partitions) {
      const end = await consumer.listOffset(TOPIC, data.partition, 'latest');
      if (end !== BigInt(data.records)) throw new Error(`partition ${data.partition} ends at ${end}, but ${data.records} records were produced to it`);
    }
  } finally {
    cluster.close();
  }
  return partitions;
}

// ---- the bare loop ------------------------------------------------------------------------

function bareLoop(): (partitions: readonly PartitionData[], limit: number) => Measurement {
  const writer = avro.Type.forSchema(JSON.parse(PAGE_VIEW) as avro.Schema, { registry: {} });
  const reader: Type = avro.Type.forSchema(JSON.parse(PAGE_VIEW) as avro.Schema, { registry: {} });
  const resolver: Resolver = reader.createResolver(writer, { ignoreNamespaces: true });
  return (partitions, limit) => {
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
  };
}

// ---- the loader child ---------------------------------------------------------------------

/** One load for the child: a load file's text, and the records it must land. */
interface LoadRequest {
  readonly id: number;
  readonly loadText: string;
  readonly loadFile: string;
  readonly expected: number;
}

type LoadAnswer =
  | { readonly id: number; readonly ok: true; readonly measurement: Omit<Measurement, 'bytes'> }
  | { readonly id: number; readonly ok: false; readonly error: string };

const silent = createLogger({ name: 'bench-etl', level: 'silent' });

/** VmHWM (peak RSS) of a process, bytes; undefined where /proc cannot say. */
function peakRssOf(pid: number | 'self'): number | undefined {
  try {
    const kilobytes = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes === undefined ? undefined : Number(kilobytes) * 1024;
  } catch {
    return undefined;
  }
}

/** Counts this process's WebHDFS requests: fetch (undici) to the NameNode, node:http to the DataNode. */
function countWebHdfsRequests(): { take(): Record<string, number> } {
  let counts: Record<string, number> = {};
  const count = (side: string, path: string): void => {
    if (!path.startsWith('/webhdfs/')) return;
    const key = `${side} ${/[?&]op=([A-Z_]+)/.exec(path)?.[1] ?? '?'}`;
    counts[key] = (counts[key] ?? 0) + 1;
  };
  dc.subscribe('undici:request:create', (message) => count('NameNode', (message as { request: { path: string } }).request.path));
  dc.subscribe('http.client.request.start', (message) => count('DataNode', (message as { request: { path: string } }).request.path));
  return {
    take() {
      const taken = counts;
      counts = {};
      return taken;
    },
  };
}

/** The child's side: runs each load it is sent, as `tributary etl run` does, and answers its figures. */
function serveLoads(): void {
  const requests = countWebHdfsRequests();
  const coordination = new MemoryCoordination();
  process.on('disconnect', () => process.exit(0));
  process.on('message', (message: LoadRequest) => {
    void (async (): Promise<LoadAnswer> => {
      try {
        // Resets VmHWM to the current RSS, so the peak read after the load is this load's.
        try {
          writeFileSync('/proc/self/clear_refs', '5');
        } catch {
          // Without it the peak is the process's so far.
        }
        requests.take();
        const definition = parseLoadFile(message.loadText, message.loadFile);
        const store = coordination.session();
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
          await store.close();
        }
        const ms = performance.now() - start;
        const files = report.manifest?.files ?? [];
        const records = files.reduce((sum, file) => sum + file.records, 0);
        if (report.outcome !== 'committed' || records !== message.expected || report.problems.length > 0) {
          throw new Error(`${definition.name} landed ${records} records in ${report.outcome} (problems: ${report.problems.map((p) => p.message).join('; ') || 'none'}), expected ${message.expected}`);
        }
        const peakRss = peakRssOf('self') ?? process.resourceUsage().maxRSS * 1024;
        return {
          id: message.id,
          ok: true,
          measurement: {
            records,
            ms,
            outputBytes: files.reduce((sum, file) => sum + file.bytes, 0),
            files: files.length,
            phases: { plan: (planned - start) / 1000, tasks: (finishing - planned) / 1000, commit: (performance.now() - finishing) / 1000 },
            peakRss,
            requests: requests.take(),
          },
        };
      } catch (error) {
        return { id: message.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
      }
    })().then((answer) => process.send?.(answer));
  });
  process.send?.({ ready: true });
}

interface LoaderChild {
  run(request: Omit<LoadRequest, 'id'>): Promise<Omit<Measurement, 'bytes'>>;
  stop(): Promise<void>;
}

async function startLoaderChild(run: ServiceRun): Promise<LoaderChild> {
  // The same script under the same tsx loader; detached, so the run's guardian can stop its group.
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--loader-child'], { execArgv: process.execArgv, detached: true, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (child.pid === undefined) throw new Error('the loader child did not start');
  writeFileSync(join(run.pidDir, 'loader-child.pid'), `${child.pid}\n`);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the loader child exited with ${code} before it was ready`)));
  });
  let requests = 0;
  const waiting = new Map<number, { resolve: (m: Omit<Measurement, 'bytes'>) => void; reject: (e: Error) => void }>();
  child.on('message', (answer: LoadAnswer) => {
    const waiter = waiting.get(answer.id);
    waiting.delete(answer.id);
    if (answer.ok) waiter?.resolve(answer.measurement);
    else waiter?.reject(new Error(`the load failed in the loader child: ${answer.error}`));
  });
  child.once('exit', (code, signal) => {
    for (const waiter of waiting.values()) waiter.reject(new Error(`the loader child exited (${code ?? signal}) during a load`));
  });
  return {
    run(request) {
      requests += 1;
      const id = requests;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        child.send({ ...request, id });
      });
    },
    async stop() {
      child.disconnect();
      await exited;
    },
  };
}

// ---- loads --------------------------------------------------------------------------------

interface Environment {
  readonly options: Options;
  readonly bootstrap: string;
  readonly registry: RunningRegistry;
  readonly folder: string;
  readonly hdfs: ServiceAddresses['hdfs'];
  readonly redis: ServiceAddresses['redis'];
  readonly partitions: readonly PartitionData[];
  readonly warmLimit: number;
}

let loads = 0;

function loadText(env: Environment, name: string, warehouseUrl: string, maxRecordsPerRun: number): string {
  return [
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
    '',
  ].join('\n');
}

/** A fresh warehouse folder of `kind`, and how to delete it. */
async function freshWarehouse(env: Environment, kind: 'local' | 'hdfs'): Promise<{ url: string; cleanup: () => Promise<void> }> {
  loads += 1;
  if (kind === 'local') {
    const url = join(env.folder, `warehouse-${loads}`);
    await mkdir(url, { recursive: true });
    return { url, cleanup: () => rm(url, { recursive: true, force: true }) };
  }
  const { webHdfsUrl, user } = env.hdfs!;
  const base = `tributary-bench/etl-${process.pid}-${randomBytes(3).toString('hex')}-${loads}`;
  const top = openWarehouse(`${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/?user=${user}`, { logger: silent });
  return {
    url: `${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/${base}?user=${user}`,
    cleanup: async () => {
      await top.delete(base, { recursive: true });
    },
  };
}

const recordsUpTo = (env: Environment, limit: number): number => env.partitions.reduce((sum, p) => sum + Math.min(p.records, limit), 0);
const bytesUpTo = (env: Environment, limit: number): number =>
  env.partitions.reduce((sum, p) => sum + (limit >= p.records ? p.bytes : limit === env.warmLimit ? p.warmBytes : NaN), 0);

/** One whole runLoad, in the loader child, of the topic's first `limit` records per partition into a fresh warehouse folder. */
async function measureLoad(env: Environment, child: LoaderChild, kind: 'local' | 'hdfs', limit: number): Promise<Measurement> {
  const { url, cleanup } = await freshWarehouse(env, kind);
  const name = `bench-${kind}-${loads}`;
  try {
    const measured = await child.run({ loadText: loadText(env, name, url, limit), loadFile: join(env.folder, `${name}.yaml`), expected: recordsUpTo(env, limit) });
    return { ...measured, bytes: bytesUpTo(env, limit) };
  } finally {
    await cleanup();
  }
}

// ---- BullMQ workers -----------------------------------------------------------------------

interface WorkerSet {
  readonly daemons: readonly Daemon[];
  readonly prefix: string;
  stop(): Promise<void>;
}

async function startWorkers(env: Environment, run: ServiceRun, count: number): Promise<WorkerSet> {
  const prefix = `tributary-bench-${process.pid}-${randomBytes(3).toString('hex')}`;
  const daemons = Array.from({ length: count }, (_, index) => {
    const name = `bench-worker-${prefix}-${index + 1}`;
    return startDaemon({
      run,
      name,
      command: process.execPath,
      args: [join(REPOSITORY, 'bin', 'tributary.js'), 'worker', '--redis', env.redis!.url, '--prefix', prefix, '--concurrency', String(env.options.workerConcurrency), '--id', name, '--log-level', 'warn'],
      logFile: join(run.dir, `${name}.log`),
      cwd: REPOSITORY,
    });
  });
  const logOf = (daemon: Daemon): string => {
    try {
      return readFileSync(daemon.logFile, 'utf8');
    } catch {
      return '';
    }
  };
  await waitUntil(async () => daemons.every((daemon) => logOf(daemon).includes('working on')), { what: `${count} workers to be ready`, timeoutMs: 120_000, daemons: [...daemons] });
  return { daemons, prefix, stop: async () => void (await Promise.all(daemons.map((daemon) => daemon.stop(30_000)))) };
}

/** One run of a fresh load by the workers: enqueue ▸ commit job finished. */
async function measureWorkerRun(env: Environment, workers: WorkerSet, limit: number): Promise<Measurement> {
  const { url, cleanup } = await freshWarehouse(env, env.options.workersWarehouse);
  const name = `bench-workers-${workers.daemons.length}-${loads}`;
  const loadFile = join(env.folder, `${name}.yaml`);
  await writeFile(loadFile, loadText(env, name, url, limit));
  const connection = { url: env.redis!.url, maxRetriesPerRequest: null };
  const runs = new Queue(QUEUE_NAMES.runs, { connection, prefix: workers.prefix });
  const tasks = new Queue(QUEUE_NAMES.tasks, { connection, prefix: workers.prefix });
  const commits = new Queue(QUEUE_NAMES.commits, { connection, prefix: workers.prefix });
  try {
    for (const daemon of workers.daemons) {
      try {
        writeFileSync(`/proc/${daemon.pid}/clear_refs`, '5');
      } catch {
        // The peak is then the worker's so far.
      }
    }
    const runJob = await enqueueRun(runs, loadFile);
    const ofLoad = (job: Job): boolean => (job.data as { plan?: { load?: string } }).plan?.load === name;
    let commit: Job | undefined;
    for (;;) {
      const failed = (await commits.getJobs(['failed'])).find(ofLoad);
      if (failed !== undefined) throw new Error(`the commit job of ${name} failed: ${failed.failedReason}`);
      const failedRun = await runs.getJob(runJob.id ?? '');
      if ((await failedRun?.getState()) === 'failed') throw new Error(`the run job of ${name} failed: ${failedRun?.failedReason}`);
      commit = (await commits.getJobs(['completed'])).find(ofLoad);
      if (commit !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const result = commit.returnvalue as CommitJobResult;
    const expected = recordsUpTo(env, limit);
    if (result.records !== expected) throw new Error(`${name} committed ${result.records} records, expected ${expected}`);
    const peaks = workers.daemons.map((daemon) => peakRssOf(daemon.pid)).filter((peak): peak is number => peak !== undefined);
    return {
      records: result.records,
      bytes: bytesUpTo(env, limit),
      ms: (commit.finishedOn ?? Date.now()) - runJob.timestamp,
      outputBytes: 0,
      files: result.files,
      ...(peaks.length === 0 ? {} : { peakRss: Math.max(...peaks) }),
    };
  } finally {
    for (const queue of [runs, tasks, commits]) {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
    await cleanup();
  }
}

// ---- main ---------------------------------------------------------------------------------

async function main(options: Options): Promise<void> {
  const totalStart = performance.now();
  const loadAtStart = load();
  const run: ServiceRun = createTemporaryRun('tributary-bench-etl-');
  startGuardian(run);
  process.once('SIGINT', () => {
    void stopRun(run).finally(() => process.exit(130));
  });
  let registry: RunningRegistry | undefined;
  let stopServices: (() => Promise<void>) | undefined;
  let child: LoaderChild | undefined;
  try {
    say('tributary loader benchmark (issues #9, #19) — runLoad into a local folder and into HDFS, and BullMQ workers, beside a bare decode+encode loop over the same records');
    say(`node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPU(s), load average ${loadAtStart}`);
    say(
      `${fmtInt(options.records)} PageViewEvent records (schema id + Avro) over ${options.partitions} partitions and ${options.hours} event hours; avro + deflate; ${options.rounds} rounds; ` +
        `targets ${[...options.targets].join(', ')}; workers ${options.workers.length === 0 ? 'none' : `${options.workers.join(', ')} (--concurrency ${options.workerConcurrency}, into ${options.workersWarehouse})`}`,
    );

    const broker = await startBrokerProcess({ run, id: 0, settings: { 'log.visible.on.append': 'true' } });
    registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: join(run.dir, 'registry'), logger: silent });
    const registryClient = new RegistryClient({ url: registry.url });
    const schemaId = (await registryClient.register(`${TOPIC}-value`, PAGE_VIEW)).id;
    say(`broker: separate process on ${broker.bootstrap} (log ${broker.logFile}); registry in this process at ${registry.url}, PageViewEvent id ${schemaId}`);

    const needed: ServiceName[] = [];
    if (options.targets.has('hdfs') || (options.workers.length > 0 && options.workersWarehouse === 'hdfs')) needed.push('hdfs');
    if (options.workers.length > 0) needed.push('redis');
    let services: ServiceAddresses = {} as ServiceAddresses;
    if (needed.length > 0) {
      const reuse = process.env['TRIBUTARY_TEST_SERVICES'];
      if (reuse !== undefined && reuse !== '') {
        services = JSON.parse(readFileSync(reuse, 'utf8')) as ServiceAddresses;
        for (const name of needed) if (services[name] === undefined) throw new Error(`${reuse} names no ${name}`);
        say(`${needed.join(' and ')}: reusing ${needed.map((name) => (name === 'hdfs' ? services.hdfs?.webHdfsUrl : services.redis?.url)).join(', ')} from ${reuse}`);
      } else {
        const began = performance.now();
        const stack = await startStack(run, needed);
        stopServices = () => stack.stop();
        services = stack.addresses;
        say(`${needed.join(' and ')}: started here in ${fmt((performance.now() - began) / 1000)} s`);
      }
    }

    await createTopic(broker.bootstrap, options.partitions);
    const warmLimit = Math.ceil(Math.min(options.records, Math.max(10_000, Math.floor(options.records / 10))) / options.partitions);
    const produceStart = performance.now();
    const partitions = await produce(options, broker.bootstrap, registryClient, warmLimit);
    const totalBytes = partitions.reduce((sum, p) => sum + p.bytes, 0);
    say(
      `produced ${fmtInt(options.records)} records, ${fmt(totalBytes / MB)} MB of framed values (${fmt(totalBytes / options.records, 0)} B each) in ${fmt((performance.now() - produceStart) / 1000)} s ` +
        `(untimed); peak RSS of this process ${megabytes(peakRssOf('self'))} MiB`,
    );

    const env: Environment = { options, bootstrap: broker.bootstrap, registry, folder: join(run.dir, 'loads'), hdfs: services.hdfs, redis: services.redis, partitions, warmLimit };
    await mkdir(env.folder, { recursive: true });
    const bare = bareLoop();
    const all = Math.max(...partitions.map((p) => p.records));
    const contenders = (['bare', 'local', 'hdfs'] as const).filter((c) => options.targets.has(c));
    if (contenders.some((c) => c !== 'bare')) child = await startLoaderChild(run);
    const measure = async (contender: Contender, limit: number): Promise<Measurement> => (contender === 'bare' ? bare(partitions, limit) : await measureLoad(env, child!, contender, limit));

    // Untimed warm-up on a slice: JIT of the loader, the serde, the warehouses' connections.
    for (const contender of contenders) await measure(contender, warmLimit);
    if (contenders.length > 0) say(`warm-up done (${fmtInt(recordsUpTo(env, warmLimit))} records through each contender, untimed)`);
    say('');

    const results = new Map<string, Measurement[]>(contenders.map((c) => [LABELS[c], []]));
    for (let round = 1; round <= options.rounds && contenders.length > 0; round += 1) {
      for (const contender of contenders) {
        const m = await measure(contender, contender === 'bare' ? Math.ceil(options.bareRecords / options.partitions) : all);
        results.get(LABELS[contender])!.push(m);
        say(`[round ${round}/${options.rounds}] ${LABELS[contender].padEnd(34)} ${describe(m)}`);
        if (m.requests !== undefined && Object.keys(m.requests).length > 0) say(`    WebHDFS requests: ${describeRequests(m.requests, m.files)}`);
      }
    }
    await child?.stop();
    child = undefined;

    const workerResults = new Map<number, Measurement>();
    for (const count of options.workers) {
      const workers = await startWorkers(env, run, count);
      try {
        await measureWorkerRun(env, workers, warmLimit);
        const m = await measureWorkerRun(env, workers, all);
        workerResults.set(count, m);
        say(`[workers ${count}] ${`${count} × tributary worker → ${options.workersWarehouse}`.padEnd(34)} ${describe(m)}; ${fmtInt(recordsPerSecond(m) / count)} records/s per worker`);
      } finally {
        await workers.stop();
      }
    }
    printTable(options, results, workerResults, loadAtStart, (performance.now() - totalStart) / 1000);
  } finally {
    await child?.stop().catch(() => undefined);
    await registry?.close();
    await stopServices?.().catch(() => undefined);
    await stopRun(run);
  }
}

function describe(m: Measurement): string {
  return (
    `${fmtInt(recordsPerSecond(m)).padStart(10)} records/s, ${fmt(mbPerSecond(m)).padStart(6)} MB/s, ${fmt(m.ms / 1000, 2)} s` +
    `${m.phases === undefined ? '' : ` (plan ${fmt(m.phases.plan, 2)} s, tasks ${fmt(m.phases.tasks, 2)} s, commit ${fmt(m.phases.commit, 2)} s)`}, ` +
    `${m.files} files${m.outputBytes > 0 ? `, ${fmt(m.outputBytes / MB)} MB written` : ''}${m.peakRss === undefined ? '' : `, peak RSS ${megabytes(m.peakRss)} MiB`}; load ${load()}`
  );
}

function describeRequests(requests: Readonly<Record<string, number>>, files: number): string {
  const total = Object.values(requests).reduce((sum, n) => sum + n, 0);
  const parts = Object.entries(requests).sort(([a], [b]) => a.localeCompare(b)).map(([key, n]) => `${key} ${n}`);
  return `${total} in all (${fmt(total / Math.max(1, files), 1)} per data file): ${parts.join(', ')}`;
}

function printTable(options: Options, results: ReadonlyMap<string, Measurement[]>, workers: ReadonlyMap<number, Measurement>, loadAtStart: string, seconds: number): void {
  const bare = results.get(LABELS.bare);
  const bareRate = bare === undefined ? undefined : median(bare.map(recordsPerSecond));
  const rows: string[][] = [['contender', 'records/s min', 'median', 'max', 'MB/s min', 'median', 'max', 'peak RSS MiB', '÷ bare loop', 'target', 'met?']];
  const verdicts: string[] = [];
  const row = (label: string, measurements: readonly Measurement[], target: number | undefined, isBare: boolean): void => {
    const rps = measurements.map(recordsPerSecond);
    const mbs = measurements.map(mbPerSecond);
    const peaks = measurements.map((m) => m.peakRss).filter((peak): peak is number => peak !== undefined);
    const ratio = bareRate === undefined || isBare ? undefined : median(rps) / bareRate;
    rows.push([
      label,
      fmtInt(Math.min(...rps)), fmtInt(median(rps)), fmtInt(Math.max(...rps)),
      fmt(Math.min(...mbs)), fmt(median(mbs)), fmt(Math.max(...mbs)),
      peaks.length === 0 ? '' : megabytes(Math.max(...peaks)),
      ratio === undefined ? '' : `${fmt(ratio, 3)}×`,
      target === undefined ? '' : `≥ ${target}×`,
      ratio === undefined || target === undefined ? '' : ratio >= target ? 'MET' : 'NOT MET',
    ]);
    if (ratio !== undefined) verdicts.push(`${label}: ${fmt(ratio, 3)}× the bare loop (median records/s)${target === undefined ? '' : ` — target ≥ ${target}× ${ratio >= target ? 'MET' : 'NOT MET'}`}`);
  };
  for (const contender of ['bare', 'local', 'hdfs'] as const) {
    const measurements = results.get(LABELS[contender]);
    if (measurements !== undefined && measurements.length > 0) row(LABELS[contender], measurements, contender === 'bare' ? undefined : TARGETS_OF[contender], contender === 'bare');
  }
  for (const [count, m] of workers) row(`${count} worker${count === 1 ? '' : 's'} → ${options.workersWarehouse} (${fmtInt(recordsPerSecond(m) / count)}/s each)`, [m], undefined, false);
  say(`\n==== results: ${options.rounds} rounds, ${fmtInt(options.records)} records per run (bare loop: ${fmtInt(options.bareRecords)}); MB = 10^6 bytes of framed record values (the input payload) ====`);
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

if (process.argv.includes('--loader-child')) serveLoads();
else await main(readOptions(process.argv.slice(2)));
