/**
 * Avro payload fuzzing end to end through the loader (issue #22, hostile input): the payloads of
 * test/chaos/avro-fuzz.ts (valid and broken framed Avro, test/support/avro-mutations.ts) produced
 * into topics of a real broker process, one topic per writer schema (the loader decodes a topic
 * into its latest `<topic>-value` schema), over several partitions each, with record timestamps
 * spread over a few hours; then `tributary etl run` as a real process into a local-folder
 * warehouse, twice.
 *
 * Each payload's fate is predicted in this process by the loader's own decoder (AvroDeserializer
 * with the topic's reader schema, isRecordFailure deciding quarantine): loaded with that value,
 * or quarantined with that code. Invariants, checked from the warehouse files only: every payload
 * predicted to load is in the data files exactly once, with that value, in the hour folder of its
 * timestamp; every other one is in a quarantine file exactly once with the predicted code and its
 * exact key and bytes; nothing else is stored (no record that was not produced, no staging or
 * pending claim left over, no file of another kind); the manifests count the quarantine and the
 * hours as found; the run exits 0 and says how many records it committed and quarantined; a
 * second run commits nothing; the loader's peak RSS (kernel high-water mark) stays under a bound
 * (a 2^31 declared count that allocated would take gigabytes).
 */
import avro from 'avsc';
import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { decodeDataFile } from '../../src/etl/files/data-files.js';
import { readCommitLog } from '../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../src/etl/load/extract.js';
import { decodeQuarantine } from '../../src/etl/load/quarantine.js';
import { isRecordFailure } from '../../src/etl/load/quarantine.js';
import { registryReaderSchemas } from '../../src/etl/load/run.js';
import { hourKey, loadDir } from '../../src/etl/layout.js';
import type { ReaderSchema } from '../../src/etl/load-types.js';
import { Producer } from '../../src/client/producer.js';
import { AvroDeserializer } from '../../src/registry/serde/deserializer.js';
import { FRAME_HEADER_BYTES } from '../../src/registry/serde/framing.js';
import type { WarehouseFileSystem } from '../../src/etl/warehouse/warehouse.js';
import type { ServiceRun } from '../services/run-dir.js';
import { drawPayload, MUTATIONS, newPayloadTally, type Mutation } from '../support/avro-mutations.js';
import { seededRandom } from '../support/seeded-random.js';
import {
  createTopic,
  dataFilesOf,
  FIRST_HOUR,
  HOUR,
  hourKeyOf,
  makeWarehouse,
  publishedManifests,
  silent,
  startLoaderEnvironment,
  writeLoadFile,
} from '../integration/etl/loader-support.js';
import { FUZZ_SCHEMAS, normalize } from './avro-fuzz.js';
import { runEtlProcess, type EtlRunResult } from './loader-world.js';

/** The loader's peak RSS above which memory counts as unbounded: a 2^31 count that allocated takes gigabytes. */
export const LOADER_RSS_BOUND_BYTES = 1024 * 1024 * 1024;

export interface AvroLoaderFuzzOptions {
  /** The service run the broker process belongs to. */
  readonly run: ServiceRun;
  readonly payloads: number;
  readonly seed: number;
  /** Of the payloads, how many are broken (0..1); default 0.7. */
  readonly brokenShare?: number;
  /** Partitions of each topic; default 4. */
  readonly partitions?: number;
  /** Record timestamps spread over this many hours from FIRST_HOUR; default 3. */
  readonly hours?: number;
  readonly say?: (line: string) => void;
  /**
   * Where a run with violations leaves its evidence: every payload with its topic, partition,
   * offset, mutation, predicted fate and bytes (payloads.jsonl), and a copy of the warehouse.
   * avsc draws random values from its own generator, not the seed: a seed reproduces which
   * mutation hits which byte, not the values, so the payloads themselves are the evidence.
   */
  readonly evidenceFolder?: string;
}

export interface AvroLoaderFuzzResult {
  readonly payloads: number;
  readonly valid: number;
  readonly broken: number;
  readonly byMutation: Readonly<Record<Mutation, number>>;
  readonly topics: number;
  readonly partitions: number;
  /** Payloads predicted to load (valid ones and still-valid broken ones) found exactly once, right value and hour. */
  readonly loadedOnce: number;
  /** Of those, broken payloads that are still valid Avro. */
  readonly stillValidLoaded: number;
  /** Payloads found in quarantine files exactly once with the predicted code, by code. */
  readonly quarantined: Readonly<Record<string, number>>;
  /** What the first run said it committed: records and quarantined (undefined when it said nothing parseable). */
  readonly summary: { readonly records: number; readonly quarantined: number; readonly files: number } | undefined;
  readonly lost: number;
  readonly duplicates: number;
  /** Records stored (data or quarantine) that no produced payload predicts there. */
  readonly foreign: number;
  readonly commits: number;
  readonly peakRssBytes: number;
  readonly secondPeakRssBytes: number;
  readonly loaderSeconds: number;
  readonly seconds: number;
  readonly violations: readonly string[];
}

type Fate = { readonly kind: 'data'; readonly value: string } | { readonly kind: 'quarantine'; readonly code: string };

interface ProducedPayload {
  readonly index: number;
  readonly topic: string;
  readonly partition: number;
  readonly timestamp: number;
  readonly key: Buffer;
  readonly bytes: Buffer;
  readonly mutation: Mutation | undefined;
  readonly fate: Fate;
  offset: number;
}

export async function runAvroLoaderFuzz(options: AvroLoaderFuzzOptions): Promise<AvroLoaderFuzzResult> {
  const started = Date.now();
  const random = seededRandom(options.seed);
  const int = (below: number): number => Math.floor(random() * below);
  const partitions = options.partitions ?? 4;
  const hours = options.hours ?? 3;
  const violations: string[] = [];
  const violation = (text: string): void => {
    if (violations.length < 200) violations.push(text);
  };
  const tally = newPayloadTally();
  const env = await startLoaderEnvironment({}, options.run);
  try {
    const tag = `${options.seed}-${Date.now().toString(36)}`;
    const name = `fuzz-avro-loader-${tag}`;
    // One topic per writer schema: a topic's records are decoded into its latest schema.
    const writers: { topic: string; id: number; type: avro.Type; reader: ReaderSchema }[] = [];
    for (const [index, schema] of FUZZ_SCHEMAS.entries()) {
      const topic = `fuzz-avro-${index}-${tag}`;
      await createTopic(env.broker.bootstrap, topic, partitions);
      const { id } = await env.registryClient.register(`${topic}-value`, JSON.stringify(schema));
      writers.push({ topic, id, type: avro.Type.forSchema(schema as avro.Schema, { registry: {} }), reader: await registryReaderSchemas(env.registryClient)(topic) });
    }
    const unknownId = Math.max(...writers.map((writer) => writer.id)) + 1000;
    const deserializer = new AvroDeserializer(env.registryClient);
    for (const writer of writers) await deserializer.prefetch(writer.id);

    // Generate and predict, as the loader's decode loop will decode each one.
    const brokenShare = options.brokenShare ?? 0.7;
    const produced: ProducedPayload[] = [];
    for (let index = 0; index < options.payloads; index += 1) {
      const { writer, value, bytes, mutation } = drawPayload(random, writers, { brokenShare, unknownId, tally });
      const fate = await predict(deserializer, writer, bytes, mutation, violation);
      if (mutation === undefined && fate.kind === 'data' && fate.value !== JSON.stringify(normalize(value))) violation(`valid payload ${index} decodes to another value than it was written from`);
      produced.push({ index, topic: writer.topic, partition: int(partitions), timestamp: FIRST_HOUR + int(hours * HOUR), key: Buffer.from(`payload-${index}`), bytes, mutation, fate, offset: -1 });
    }
    options.say?.(`  ${produced.length} payloads generated and predicted in ${((Date.now() - started) / 1000).toFixed(0)} s; producing into ${writers.length} topics × ${partitions} partitions`);
    await produceAll(env.broker.bootstrap, produced);
    options.say?.(`  produced in ${((Date.now() - started) / 1000).toFixed(0)} s; loading`);

    const warehouse = makeWarehouse('local folder', env, name);
    const file = await writeLoadFile(env, { name, topic: writers.map((writer) => writer.topic), warehouse, quarantineMax: options.payloads, timeField: null, maxRecordsPerRun: Math.max(1_000_000, options.payloads) });
    const loaderStarted = Date.now();
    const first = await runEtlProcess(file);
    const loaderSeconds = Math.round((Date.now() - loaderStarted) / 1000);
    if (first.status !== 0) violation(`the first etl run exited ${first.status ?? first.signal}: ${first.said.trim().slice(-600)}`);
    const summary = summaryOf(first);
    if (summary === undefined) violation(`the first etl run did not say what it committed: ${first.stdout.trim().slice(-300)}`);
    const stored = await readStored(warehouse.warehouse, warehouse.root, name, writers.map((writer) => writer.topic), violation);
    const check = checkFates(produced, stored, violation);
    if (summary !== undefined && (summary.records !== check.expectedData || summary.quarantined !== check.expectedQuarantine)) {
      violation(`the run said ${summary.records} records and ${summary.quarantined} quarantined; ${check.expectedData} and ${check.expectedQuarantine} were predicted`);
    }
    const manifests = await publishedManifests(warehouse.warehouse, warehouse.root, name);
    checkManifests(manifests, produced, stored, violation);
    if (first.peakRssBytes > LOADER_RSS_BOUND_BYTES) violation(`the loader's peak RSS was ${mib(first.peakRssBytes)}, over ${mib(LOADER_RSS_BOUND_BYTES)}`);

    const second = await runEtlProcess(file);
    if (second.status !== 0) violation(`the second etl run exited ${second.status ?? second.signal}: ${second.said.trim().slice(-600)}`);
    if (!second.stdout.includes('nothing new to load')) violation(`the second etl run did not say "nothing new to load": ${second.stdout.trim().slice(-300)}`);
    const after = await publishedManifests(warehouse.warehouse, warehouse.root, name);
    if (after.length !== manifests.length) violation(`the second run committed: ${manifests.length} commits before it, ${after.length} after`);
    const listing = (await walk(warehouse.warehouse, warehouse.root)).join('\n');
    if (listing !== stored.listing.join('\n')) violation('the second run changed the warehouse\'s files');
    if (violations.length > 0 && options.evidenceFolder !== undefined) await keepEvidence(options.evidenceFolder, produced, warehouse.url);
    return {
      payloads: produced.length,
      valid: tally.valid,
      broken: tally.broken,
      byMutation: tally.byMutation,
      topics: writers.length,
      partitions: writers.length * partitions,
      loadedOnce: check.loadedOnce,
      stillValidLoaded: check.stillValidLoaded,
      quarantined: check.quarantined,
      summary,
      lost: check.lost,
      duplicates: check.duplicates,
      foreign: check.foreign,
      commits: after.length,
      peakRssBytes: first.peakRssBytes,
      secondPeakRssBytes: second.peakRssBytes,
      loaderSeconds,
      seconds: Math.round((Date.now() - started) / 1000),
      violations,
    };
  } finally {
    await env.close();
  }
}

async function keepEvidence(folder: string, produced: readonly ProducedPayload[], warehouseFolder: string): Promise<void> {
  await mkdir(folder, { recursive: true });
  const lines = produced.map((payload) =>
    JSON.stringify({ index: payload.index, topic: payload.topic, partition: payload.partition, offset: payload.offset, timestamp: payload.timestamp, mutation: payload.mutation ?? null, fate: payload.fate, bytes: payload.bytes.toString('hex') }),
  );
  await writeFile(join(folder, 'payloads.jsonl'), `${lines.join('\n')}\n`);
  // A run that failed before writing anything has no warehouse folder: the payloads still tell.
  await cp(warehouseFolder, join(folder, 'warehouse'), { recursive: true }).catch(() => undefined);
}

/** What the loader will do with `bytes`: the decode of src/etl/load/extract.ts, in this process. */
async function predict(
  deserializer: AvroDeserializer,
  writer: { readonly id: number; readonly type: avro.Type; readonly reader: ReaderSchema },
  bytes: Buffer,
  mutation: Mutation | undefined,
  violation: (text: string) => void,
): Promise<Fate> {
  let decoded: unknown;
  try {
    try {
      decoded = deserializer.decodeSync(bytes, writer.reader.schema);
    } catch (error) {
      if ((error as { code?: string }).code !== 'SERDE_SCHEMA_NOT_CACHED') throw error;
      decoded = await deserializer.decode(bytes, writer.reader.schema);
    }
  } catch (error) {
    if (!isRecordFailure(error)) {
      violation(`${mutation ?? 'valid'} payload ${bytes.subarray(0, 48).toString('hex')}: not a record failure (the loader's task would fail): ${(error as Error).message}`);
      return { kind: 'quarantine', code: `not a record failure: ${(error as { code?: string }).code ?? '?'}` };
    }
    if (mutation === undefined) violation(`a valid payload was refused: ${error.message}`);
    return { kind: 'quarantine', code: error.code };
  }
  if (mutation !== undefined) {
    // A mutation that still decodes must read as avsc reads the same bytes (avsc refuses a 10-byte
    // long varint beyond 2^53 that Avro Java reads as we do: not compared then).
    let expected: { value: unknown; offset: number } | undefined;
    try {
      expected = writer.type.decode(bytes, FRAME_HEADER_BYTES);
    } catch {
      expected = undefined;
    }
    if (expected !== undefined && expected.offset === bytes.length && !isDeepStrictEqual(normalize(decoded), normalize(expected.value))) {
      violation(`${mutation} payload decoded to a value avsc does not read from it`);
    }
  }
  return { kind: 'data', value: JSON.stringify(normalize(decoded)) };
}

/** Produces every payload with acks=-1, partitions in parallel, each in chunks; records its offset. */
async function produceAll(bootstrap: string, produced: ProducedPayload[]): Promise<void> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1, lingerMs: 2, logger: silent });
  try {
    const byPartition = new Map<string, ProducedPayload[]>();
    for (const payload of produced) {
      const key = `${payload.topic}/${payload.partition}`;
      const list = byPartition.get(key) ?? [];
      list.push(payload);
      byPartition.set(key, list);
    }
    await Promise.all(
      [...byPartition.values()].map(async (list) => {
        for (let from = 0; from < list.length; from += 500) {
          const chunk = list.slice(from, from + 500);
          const acknowledged = await producer.send(
            chunk[0]!.topic,
            chunk.map((payload) => ({ key: payload.key, value: payload.bytes, partition: payload.partition, timestamp: payload.timestamp })),
          );
          acknowledged.forEach((metadata, index) => (chunk[index]!.offset = Number(metadata.offset)));
        }
      }),
    );
  } finally {
    await producer.close();
  }
}

const SUMMARY = /commit 1: (\d+) records in (\d+) files from \d+ partitions, (\d+) quarantined/;

function summaryOf(result: EtlRunResult): AvroLoaderFuzzResult['summary'] {
  const match = SUMMARY.exec(result.stdout);
  return match === null ? undefined : { records: Number(match[1]), files: Number(match[2]), quarantined: Number(match[3]) };
}

interface StoredData {
  readonly value: string;
  readonly hour: string;
  readonly file: string;
}

interface StoredQuarantine {
  readonly code: string;
  readonly key: Buffer | null;
  readonly payload: Buffer | null;
  readonly file: string;
}

interface Stored {
  /** By `topic/partition/offset`, every copy. */
  readonly data: Map<string, StoredData[]>;
  readonly quarantine: Map<string, StoredQuarantine[]>;
  /** Every file under the warehouse root, sorted, with its size. */
  readonly listing: readonly string[];
}

/** Every file under `path`, as `path size`, sorted. */
async function walk(warehouse: WarehouseFileSystem, path: string): Promise<string[]> {
  const entries = await warehouse.list(path).catch(() => []);
  const files: string[] = [];
  for (const entry of entries) files.push(...(entry.type === 'directory' ? await walk(warehouse, entry.path) : [`${entry.path} ${entry.length}`]));
  return files.sort();
}

/** The warehouse's data and quarantine records; any other file is a violation. */
async function readStored(warehouse: WarehouseFileSystem, root: string, load: string, topics: readonly string[], violation: (text: string) => void): Promise<Stored> {
  const data = new Map<string, StoredData[]>();
  const known = new Set<string>();
  for (const topic of topics) {
    for (const { path, hour } of await dataFilesOf(warehouse, root, topic)) {
      known.add(path);
      const decoded = await decodeDataFile(await warehouse.open(path), 'avro');
      const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
      if (offsets.length !== decoded.records.length) violation(`${path}: ${decoded.records.length} records but ${offsets.length} offsets in its metadata`);
      decoded.records.forEach((value, index) => {
        const key = `${topic}/${decoded.metadata['tributary.partition']}/${offsets[index]}`;
        const list = data.get(key) ?? [];
        list.push({ value: JSON.stringify(normalize(value)), hour: hourKey(hour), file: path });
        data.set(key, list);
      });
    }
  }
  const quarantine = new Map<string, StoredQuarantine[]>();
  const quarantineRoot = `${loadDir(root, load)}/quarantine`;
  for (const line of await walk(warehouse, quarantineRoot)) {
    const path = line.slice(0, line.lastIndexOf(' '));
    known.add(path);
    for (const record of decodeQuarantine(await warehouse.open(path))) {
      const key = `${record.topic}/${record.partition}/${record.offset}`;
      const list = quarantine.get(key) ?? [];
      list.push({ code: record.code, key: record.key, payload: record.payload, file: path });
      quarantine.set(key, list);
    }
  }
  const listing = await walk(warehouse, root);
  // A claim (`<seq>.pending`) is kept forever beside its publication (commit-log.ts).
  const commits = new RegExp(`^${escape(loadDir(root, load))}/commits/\\d+\\.(json|pending)$`);
  const audited = new RegExp(`^${escape(loadDir(root, load))}/audited/`);
  const hidden = /\/_[A-Z]+$/; // _COMPLETE, _SUCCESS markers of hour folders
  const log = await readCommitLog(warehouse, root, load);
  if (log.pending.length > 0) violation(`claims left unpublished: ${log.pending.join(', ')}`);
  for (const line of listing) {
    const path = line.slice(0, line.lastIndexOf(' '));
    if (known.has(path) || commits.test(path) || audited.test(path) || hidden.test(path)) continue;
    violation(`a file the run should not leave: ${path}`);
  }
  return { data, quarantine, listing };
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface FateCheck {
  readonly loadedOnce: number;
  readonly stillValidLoaded: number;
  readonly quarantined: Record<string, number>;
  readonly expectedData: number;
  readonly expectedQuarantine: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly foreign: number;
}

/** Each produced payload against what the warehouse holds at its topic/partition/offset. */
function checkFates(produced: readonly ProducedPayload[], stored: Stored, violation: (text: string) => void): FateCheck {
  let loadedOnce = 0;
  let stillValidLoaded = 0;
  let expectedData = 0;
  let lost = 0;
  let duplicates = 0;
  const quarantined: Record<string, number> = {};
  const seen = new Set<string>();
  for (const payload of produced) {
    const key = `${payload.topic}/${payload.partition}/${payload.offset}`;
    seen.add(key);
    const data = stored.data.get(key) ?? [];
    const held = stored.quarantine.get(key) ?? [];
    const copies = data.length + held.length;
    if (copies === 0) {
      lost += 1;
      violation(`payload ${payload.index} (${payload.mutation ?? 'valid'}, ${key}) is neither in the data nor in quarantine`);
      continue;
    }
    if (copies > 1) {
      duplicates += copies - 1;
      violation(`payload ${payload.index} (${key}) is stored ${copies} times: ${[...data, ...held].map((copy) => copy.file).join(', ')}`);
    }
    const what = `payload ${payload.index} (${payload.mutation ?? 'valid'}, ${key})`;
    if (payload.fate.kind === 'data') {
      expectedData += 1;
      const copy = data[0];
      if (copy === undefined) violation(`${what} was predicted to load but is in quarantine: ${held[0]?.code}`);
      else if (copy.value !== payload.fate.value) violation(`${what} is stored with another value: ${copy.value.slice(0, 160)} instead of ${payload.fate.value.slice(0, 160)}`);
      else if (copy.hour !== hourKeyOf(payload.timestamp)) violation(`${what} is in hour ${copy.hour}, its timestamp is in ${hourKeyOf(payload.timestamp)}`);
      else if (copies === 1) {
        loadedOnce += 1;
        if (payload.mutation !== undefined) stillValidLoaded += 1;
      }
      continue;
    }
    const copy = held[0];
    if (copy === undefined) violation(`${what} was predicted to be quarantined (${payload.fate.code}) but is in the data: ${data[0]?.file}`);
    else if (copy.code !== payload.fate.code) violation(`${what} is quarantined as ${copy.code}, predicted ${payload.fate.code}`);
    else if (copy.payload === null || !copy.payload.equals(payload.bytes) || copy.key === null || !copy.key.equals(payload.key)) violation(`${what}: its quarantine line holds other key or payload bytes`);
    else if (copies === 1) quarantined[copy.code] = (quarantined[copy.code] ?? 0) + 1;
  }
  let foreign = 0;
  for (const key of new Set([...stored.data.keys(), ...stored.quarantine.keys()])) {
    if (seen.has(key)) continue;
    foreign += 1;
    violation(`record ${key} is stored but was never produced`);
  }
  return { loadedOnce, stillValidLoaded, quarantined, expectedData, expectedQuarantine: produced.length - expectedData, lost, duplicates, foreign };
}

/** The manifests' quarantine counts and reasons and per-hour counts equal what the files hold. */
function checkManifests(manifests: Awaited<ReturnType<typeof publishedManifests>>, produced: readonly ProducedPayload[], stored: Stored, violation: (text: string) => void): void {
  let records = 0;
  const reasons: Record<string, number> = {};
  const hours: Record<string, number> = {};
  for (const manifest of manifests) {
    records += manifest.quarantine.records;
    for (const [code, count] of Object.entries(manifest.quarantine.reasons)) reasons[code] = (reasons[code] ?? 0) + count;
    for (const [topic, perHour] of Object.entries(manifest.hours)) for (const [hour, count] of Object.entries(perHour)) hours[`${topic} ${hour}`] = (hours[`${topic} ${hour}`] ?? 0) + count;
  }
  const foundReasons: Record<string, number> = {};
  let found = 0;
  for (const copies of stored.quarantine.values()) {
    for (const copy of copies) {
      found += 1;
      foundReasons[copy.code] = (foundReasons[copy.code] ?? 0) + 1;
    }
  }
  if (records !== found) violation(`the manifests count ${records} quarantined records, the quarantine files hold ${found}`);
  if (!isDeepStrictEqual(sorted(reasons), sorted(foundReasons))) violation(`the manifests' quarantine reasons ${JSON.stringify(sorted(reasons))} differ from the files' ${JSON.stringify(sorted(foundReasons))}`);
  const wanted: Record<string, number> = {};
  for (const payload of produced) if (payload.fate.kind === 'data') wanted[`${payload.topic} ${hourKeyOf(payload.timestamp)}`] = (wanted[`${payload.topic} ${hourKeyOf(payload.timestamp)}`] ?? 0) + 1;
  if (!isDeepStrictEqual(sorted(hours), sorted(wanted))) violation(`the manifests' hour counts ${JSON.stringify(sorted(hours))} differ from the predicted ${JSON.stringify(sorted(wanted))}`);
}

const sorted = (counts: Record<string, number>): Record<string, number> => Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(0)} MiB`;

export function formatAvroLoaderFuzzLine(result: AvroLoaderFuzzResult): string {
  const mutations = MUTATIONS.map((mutation) => `${mutation} ${result.byMutation[mutation]}`).join(', ');
  const codes = Object.entries(result.quarantined)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([code, count]) => `${code} ${count}`)
    .join(', ');
  const quarantined = Object.values(result.quarantined).reduce((sum, count) => sum + count, 0);
  const said = result.summary === undefined ? 'said nothing parseable' : `said ${result.summary.records} records in ${result.summary.files} files, ${result.summary.quarantined} quarantined`;
  return (
    `fuzz-avro-loader: ${result.payloads} payloads into ${result.topics} topics × ${result.partitions / Math.max(result.topics, 1)} partitions: ${result.valid} valid, ${result.broken} broken (${mutations}); ` +
    `\`etl run\` ${said}; loaded exactly once ${result.loadedOnce} (${result.stillValidLoaded} of them still-valid broken ones), quarantined ${quarantined} (${codes}); ` +
    `lost ${result.lost}, duplicates ${result.duplicates}, foreign ${result.foreign}; ${result.commits} commit(s) after the second run; ` +
    `loader peak RSS ${mib(result.peakRssBytes)} (second run ${mib(result.secondPeakRssBytes)}), loader ${result.loaderSeconds} s; ${result.violations.length} violations in ${result.seconds} s`
  );
}
