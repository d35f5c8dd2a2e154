/**
 * What the loader's integration and chaos tests share: a real broker process, a real registry
 * server holding two compatible PageViewEvent versions, the two warehouses (a local folder and
 * the real HDFS of the test services), load files, a producer of page views spread over several
 * event hours, a reader that checks the warehouse holds every produced record exactly once, and
 * `tributary etl` runs as processes of their own (with their peak resident memory, if asked).
 */
import { securityOption, type ClientSecurity } from '../../../src/client/security-config.js';
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { KafkaConnection } from '../../../src/client/connection.js';
import { parseAddress } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { decodeDataFile, type DataFileCodec, type DataFileFormat } from '../../../src/etl/files/data-files.js';
import { hourKey, isHiddenName, parseTopicHourFolder, publishedPath, topicDir, type HourLayout } from '../../../src/etl/layout.js';
import { parseManifest, type Manifest } from '../../../src/etl/load/manifest.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';
import { parseAvroSchema, type ParsedSchema } from '../../../src/registry/avro-schema.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { openRun, type ServiceRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { peakResidentBytes, residentBytes } from '../../support/process-memory.js';
import { hdfsAddress, services } from '../services.js';

export const HOUR = 3_600_000;
/** Event times start here; the loader never looks at the wall clock, so any past hour will do. */
export const FIRST_HOUR = Date.UTC(2026, 10, 29, 10);
export const silent = createLogger({ name: 'loader-test', level: 'silent' });

export const PAGE_VIEW_V1 = await readFile(new URL('../../../schemas/PageViewEvent.avsc', import.meta.url), 'utf8');
/** Version 2: a new optional field with a default, so version-1 records read into it. */
export const PAGE_VIEW_V2 = (() => {
  const schema = JSON.parse(PAGE_VIEW_V1) as { fields: unknown[] };
  schema.fields.push({ name: 'experiment', type: ['null', 'string'], default: null, doc: 'A/B test arm, if any.' });
  return JSON.stringify(schema);
})();

export interface LoaderEnvironment {
  readonly broker: BrokerProcess;
  readonly registry: RunningRegistry;
  readonly registryClient: RegistryClient;
  /** A tmp folder for load files and local warehouses. */
  readonly folder: string;
  close(): Promise<void>;
}

/** A broker process and a registry beside the services of `run` (the integration tests' own by default). */
export async function startLoaderEnvironment(brokerSettings: Record<string, string> = {}, run: ServiceRun = openRun(services().runDir)): Promise<LoaderEnvironment> {
  const folder = await mkdtemp(join(tmpdir(), 'tributary-loader-'));
  // Records carry event times and timestamps of fixed past hours (FIRST_HOUR): without this the
  // broker's default 7-day retention would delete them mid-test once those hours are a week old.
  const settings = { 'log.retention.ms': '-1', ...brokerSettings };
  const broker = await startBrokerProcess({ run, id: 900 + Math.floor(Math.random() * 99), settings });
  const registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: join(folder, 'registry'), logger: silent });
  return {
    broker,
    registry,
    registryClient: new RegistryClient({ url: registry.url }),
    folder,
    async close() {
      await registry.close();
      await broker.stop();
      await rm(folder, { recursive: true, force: true });
    },
  };
}

export async function createTopic(bootstrap: string, topic: string, partitions: number, configs: Record<string, string> = {}): Promise<void> {
  const { host, port } = parseAddress(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'loader-test' });
  try {
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: topic, numPartitions: partitions, replicationFactor: -1, assignments: [], configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    expect(response.topics[0]?.errorCode, `create topic ${topic}`).toBe(0);
  } finally {
    connection.close();
  }
}

/** Registers both PageViewEvent versions under `<topic>-value` (v2 is the latest: the reader schema). */
export async function registerPageViews(client: RegistryClient, topic: string): Promise<void> {
  await client.register(`${topic}-value`, PAGE_VIEW_V1);
  await client.register(`${topic}-value`, PAGE_VIEW_V2);
}

export interface ProducedRecord {
  readonly partition: number;
  readonly offset: number;
  /** sha256 of the record as the reader schema reads it (JSON of the decoded value). */
  readonly hash: string;
  readonly hour: string;
  /** The record as the reader schema decodes it. */
  readonly value?: unknown;
}

export interface ProduceOptions {
  readonly count: number;
  readonly partitions: number;
  /** Distinct event hours, from FIRST_HOUR. */
  readonly hours: number;
  readonly firstId?: number;
  /** Send every record to this partition instead of spreading them. */
  readonly partition?: number;
  /** Records per send, each awaited: separate batches, so small segments roll between them. */
  readonly perSend?: number;
  /** The Kafka record timestamp; default the event time. */
  readonly timestamp?: (eventTime: number) => number;
  /** TLS and SASL of the producer's connections (a secured broker). */
  readonly security?: ClientSecurity;
}

export function hourKeyOf(time: number): string {
  return new Date(Math.floor(time / HOUR) * HOUR).toISOString().slice(0, 13);
}

export function hashValue(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/** Produces page views (alternating v1 and v2) over partitions and hours; returns what was acknowledged where. */
export async function producePageViews(env: LoaderEnvironment, topic: string, options: ProduceOptions): Promise<ProducedRecord[]> {
  const serializer = new AvroSerializer(env.registryClient);
  const reader = await readerSchemaOf(env.registryClient, topic);
  const deserializer = new AvroDeserializer(env.registryClient);
  const producer = await Producer.connect({ bootstrap: [env.broker.bootstrap], acks: -1, lingerMs: 2, logger: silent, ...securityOption(options.security) });
  try {
    const batches = new Map<number, { value: Buffer; timestamp: number }[]>();
    for (let index = 0; index < options.count; index += 1) {
      const id = (options.firstId ?? 0) + index;
      const time = FIRST_HOUR + ((id * 2_654_435) % (options.hours * HOUR));
      const v2 = id % 2 === 1;
      const value = {
        header: { eventId: randomUUID(), time, server: `web-${id % 5}`, service: 'frontend' },
        memberId: id % 3 === 0 ? null : id,
        pageKey: `page-${id % 17}`,
        url: `/p/${id}?q=${randomBytes(4).toString('hex')}`,
        referrer: null,
        userAgent: id % 4 === 0 ? null : 'test-agent',
        ...(v2 ? { experiment: `arm-${id % 2}` } : {}),
      };
      const bytes = await serializer.encode(`${topic}-value`, value, v2 ? PAGE_VIEW_V2 : PAGE_VIEW_V1);
      const partition = options.partition ?? id % options.partitions;
      const list = batches.get(partition) ?? [];
      list.push({ value: bytes, timestamp: options.timestamp?.(time) ?? time });
      batches.set(partition, list);
    }
    const produced: ProducedRecord[] = [];
    for (const [partition, records] of batches) {
      const acknowledged = [];
      const perSend = options.perSend ?? records.length;
      for (let from = 0; from < records.length; from += perSend) {
        acknowledged.push(...(await producer.send(topic, records.slice(from, from + perSend).map((record) => ({ ...record, partition })))));
      }
      for (const [index, metadata] of acknowledged.entries()) {
        const record = records[index]!;
        const decoded = await deserializer.decode(record.value, reader);
        produced.push({ partition, offset: Number(metadata.offset), hash: hashValue(decoded), hour: hourKeyOf((decoded as { header: { time: number } }).header.time), value: decoded });
      }
    }
    return produced;
  } finally {
    await producer.close();
  }
}

/** Produces raw values (for quarantine tests); returns their offsets. */
export async function produceRaw(env: LoaderEnvironment, topic: string, partition: number, values: (Buffer | null)[]): Promise<number[]> {
  const producer = await Producer.connect({ bootstrap: [env.broker.bootstrap], acks: -1, logger: silent });
  try {
    const acknowledged = await producer.send(topic, values.map((value) => ({ value, partition, timestamp: FIRST_HOUR })));
    return acknowledged.map((metadata) => Number(metadata.offset));
  } finally {
    await producer.close();
  }
}

async function readerSchemaOf(client: RegistryClient, topic: string): Promise<ParsedSchema> {
  return parseAvroSchema((await client.version(`${topic}-value`, 'latest')).schema);
}

export type WarehouseKind = 'local folder' | 'HDFS';

export interface TestWarehouse {
  /** For the load file's warehouse.url. */
  readonly url: string;
  readonly root: string;
  readonly warehouse: WarehouseFileSystem;
  cleanup(): Promise<void>;
}

const hdfsBase = `tributary-test/loader-${process.pid}-${randomBytes(3).toString('hex')}`;

/** Removes this test file's HDFS folder, once its warehouses are cleaned up. */
export async function removeHdfsBase(): Promise<void> {
  const { webHdfsUrl, user } = hdfsAddress();
  await openWarehouse(`${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/?user=${user}`, { logger: silent }).delete(hdfsBase, { recursive: true });
}

export function makeWarehouse(kind: WarehouseKind, env: LoaderEnvironment, name: string): TestWarehouse {
  if (kind === 'local folder') {
    const url = join(env.folder, `warehouse-${name}`);
    return { url, root: 'data', warehouse: openWarehouse(url), cleanup: () => rm(url, { recursive: true, force: true }) };
  }
  const { webHdfsUrl, user } = hdfsAddress();
  const url = `${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/${hdfsBase}/${name}?user=${user}`;
  const top = openWarehouse(`${webHdfsUrl.replace(/^http:/, 'webhdfs:')}/?user=${user}`, { logger: silent });
  return {
    url,
    root: 'data',
    warehouse: openWarehouse(url, { logger: silent }),
    cleanup: async () => {
      await top.delete(`${hdfsBase}/${name}`, { recursive: true });
    },
  };
}

export interface LoadFileOptions {
  readonly name: string;
  /** The load's topic, or its list of topics. */
  readonly topic: string | readonly string[];
  readonly warehouse: TestWarehouse;
  readonly maxRecordsPerRun?: number;
  readonly quarantineMax?: number;
  readonly timeField?: string | null;
  readonly format?: DataFileFormat | 'iceberg';
  readonly codec?: DataFileCodec;
}

export async function writeLoadFile(env: LoaderEnvironment, options: LoadFileOptions): Promise<string> {
  const file = join(env.folder, `${options.name}.yaml`);
  await writeFile(file, loadFileText({ ...options, bootstrap: [env.broker.bootstrap], registryUrl: env.registry.url }));
  return file;
}

/** A load file's YAML for `options`, against the given brokers and registry (the defaults the loader tests share). */
export function loadFileText(
  options: Omit<LoadFileOptions, 'warehouse'> & { readonly warehouse: Pick<TestWarehouse, 'url' | 'root'>; readonly bootstrap: readonly string[]; readonly registryUrl: string },
): string {
  const lines = [
    `name: ${options.name}`,
    `source: { bootstrap: [${options.bootstrap.join(', ')}] }`,
    `topics: [${[options.topic].flat().join(', ')}]`,
    `registry: ${options.registryUrl}`,
    `warehouse: { url: '${options.warehouse.url}', root: ${options.warehouse.root} }`,
    `format: ${options.format ?? 'avro'}`,
    `codec: ${options.codec ?? 'deflate'}`,
    ...(options.timeField === null ? [] : [`timeField: ${options.timeField ?? 'header.time'}`]),
    `maxRecordsPerRun: ${options.maxRecordsPerRun ?? 1_000_000}`,
    `quarantine: { maxRecords: ${options.quarantineMax ?? 0} }`,
    'latenessHorizon: 2h',
  ];
  return `${lines.join('\n')}\n`;
}

export interface StoredRecord {
  readonly hash: string;
  readonly hour: string;
  readonly file: string;
}

/** The topic's data files: every file of its hour folders but hidden names (`_COMPLETE`, `_SUCCESS`, …), with their hour. */
export async function dataFilesOf(warehouse: WarehouseFileSystem, root: string, topic: string, layout: HourLayout = 'hourly'): Promise<{ path: string; hour: number }[]> {
  const top = topicDir(root, topic);
  const walk = async (path: string): Promise<string[]> => {
    const entries = await warehouse.list(path).catch(() => []);
    const files: string[] = [];
    for (const entry of entries) {
      if (isHiddenName(entry.name)) continue;
      files.push(...(entry.type === 'directory' ? await walk(entry.path) : [entry.path]));
    }
    return files;
  };
  return (await walk(top)).map((path) => {
    const folder = path.slice(top.length + 1, path.lastIndexOf('/'));
    const hour = parseTopicHourFolder(folder, layout);
    if (hour === undefined) throw new Error(`${path} is not in an hour folder of the ${layout} layout`);
    return { path, hour };
  });
}

/** Every record in the topic's data files, by `partition/offset`; fails on any record found twice. */
export async function readWarehouse(warehouse: WarehouseFileSystem, root: string, topic: string, layout: HourLayout = 'hourly', format: DataFileFormat = 'avro'): Promise<Map<string, StoredRecord>> {
  const found = new Map<string, StoredRecord>();
  for (const { path: file, hour } of await dataFilesOf(warehouse, root, topic, layout)) {
    const decoded = await decodeDataFile(await warehouse.open(file), format);
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    expect(offsets, file).toHaveLength(decoded.records.length);
    decoded.records.forEach((value, index) => {
      const key = `${decoded.metadata['tributary.partition']}/${offsets[index]}`;
      const earlier = found.get(key);
      if (earlier !== undefined) throw new Error(`record ${key} is in ${earlier.file} and again in ${file}`);
      found.set(key, { hash: hashValue(value), hour: hourKey(hour), file });
    });
  }
  return found;
}

/** The warehouse holds exactly the produced records: same (partition, offset) multiset, same payload hashes, right hour folders. */
export function expectExactlyOnce(found: ReadonlyMap<string, StoredRecord>, produced: readonly ProducedRecord[]): void {
  const missing: string[] = [];
  const wrong: string[] = [];
  for (const record of produced) {
    const stored = found.get(`${record.partition}/${record.offset}`);
    if (stored === undefined) missing.push(`${record.partition}/${record.offset}`);
    else if (stored.hash !== record.hash || stored.hour !== record.hour) wrong.push(`${record.partition}/${record.offset} in ${stored.file}`);
  }
  expect(missing, 'produced records missing from the warehouse').toEqual([]);
  expect(wrong, 'records with other contents or in another hour').toEqual([]);
  expect(found.size, 'records in the warehouse that were not produced').toBe(produced.length);
}

/** Records per event hour, as produced. */
export function producedPerHour(produced: readonly ProducedRecord[]): Record<string, number> {
  const hours: Record<string, number> = {};
  for (const record of produced) hours[record.hour] = (hours[record.hour] ?? 0) + 1;
  return Object.fromEntries(Object.entries(hours).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Per-hour counts summed over every published manifest of the load. */
export async function manifestsPerHour(warehouse: WarehouseFileSystem, root: string, load: string, topic: string): Promise<Record<string, number>> {
  const hours: Record<string, number> = {};
  for (const manifest of await publishedManifests(warehouse, root, load)) {
    for (const [hour, count] of Object.entries(manifest.hours[topic] ?? {})) hours[hour] = (hours[hour] ?? 0) + count;
  }
  return Object.fromEntries(Object.entries(hours).sort(([a], [b]) => (a < b ? -1 : 1)));
}

export async function publishedManifests(warehouse: WarehouseFileSystem, root: string, load: string): Promise<Manifest[]> {
  const log = await readCommitLog(warehouse, root, load);
  const manifests: Manifest[] = [];
  for (const seq of [...log.published].sort((a, b) => a - b)) manifests.push(parseManifest(await warehouse.open(publishedPath(root, load, seq)), `commit ${seq}`));
  return manifests;
}

export interface EtlProcessResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

const tributaryBin = fileURLToPath(new URL('../../../bin/tributary.js', import.meta.url));

/** Runs `tributary etl …` as a real process (with extra environment, e.g. a failpoint). */
export function runEtl(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<EtlProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tributaryBin, 'etl', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

export interface MeasuredEtlRun extends EtlProcessResult {
  /** The process's peak resident set, bytes: the highest VmHWM (the kernel's high-water mark) sampled from /proc. */
  readonly peakBytes: number;
  /** The highest VmRSS sampled, bytes. */
  readonly residentBytes: number;
  /** Samples that found the process alive. */
  readonly samples: number;
  readonly seconds: number;
}

/**
 * Runs `tributary etl …` as its own process, as runEtl does, and samples its memory every 100 ms
 * (test/support/process-memory.ts). VmHWM is the kernel's own high-water mark, so a sample holds
 * every peak before it: only the last 100 ms go unseen.
 */
export function runEtlMeasured(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<MeasuredEtlRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tributaryBin, 'etl', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const pid = child.pid;
    if (pid === undefined) {
      reject(new Error('tributary etl did not start'));
      return;
    }
    let stdout = '';
    let stderr = '';
    let peakBytes = 0;
    let highestResident = 0;
    let samples = 0;
    const sample = (): void => {
      // 0 once the process is gone, or a zombie whose /proc entry has no memory left.
      const peak = peakResidentBytes(pid);
      if (peak === 0) return;
      samples += 1;
      peakBytes = Math.max(peakBytes, peak);
      highestResident = Math.max(highestResident, residentBytes(pid));
    };
    const timer = setInterval(sample, 100);
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // 'exit' comes before the pipes close; the process may still be a zombie with its /proc entry, without memory.
    child.once('exit', () => clearInterval(timer));
    child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr, peakBytes, residentBytes: highestResident, samples, seconds: (Date.now() - started) / 1000 }));
  });
}

/** The stderr of a run without its JSON log lines: what the command itself said. */
export function messagesOf(result: EtlProcessResult): string {
  return result.stderr
    .split('\n')
    .filter((line) => !line.startsWith('{'))
    .join('\n');
}
