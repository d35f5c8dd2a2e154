/**
 * Acceptance (issue #19): the loader at scale, in bounded memory. One partition holds 2,000,000
 * PageViewEvents spread over four event hours (produced once, in batches, never all held here).
 * `tributary etl run` loads all of it in one run as a real process while the test samples the
 * process's /proc status: into real HDFS as one range, and into a local folder cut into tasks of
 * 500,000 records with files rolled at 1 MiB. Its peak resident set must stay below 300 MB each
 * time, and every record must land exactly once, in its hour, unchanged. Two BullMQ workers
 * sharing the tasks of the same cut must write the same files, byte for byte, as the one run.
 *
 * Records are checked by content, not through the loader's own provenance: each event id carries
 * the record's index, every record's bytes follow from its index (see TemplateBatch), and each
 * data file's raw records are streamed out of it by avsc's block decoder.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRun } from '../../../jobs/src/enqueue.js';
import type { CommitJobResult } from '../../../jobs/src/job-data.js';
import { Producer } from '../../../src/client/producer.js';
import { pastHours, samplePageViews } from '../../../src/demo/sample-events.js';
import { FRAME_HEADER_BYTES } from '../../../src/registry/serde/framing.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import type { WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import { peakResidentBytes } from '../../support/process-memory.js';
import { finishedCommitOf, openTestQueues, startWorkerProcess, testPrefix, type TributaryProcess } from '../jobs/jobs-support.js';
import {
  createTopic,
  HOUR,
  hourKeyOf,
  makeWarehouse,
  PAGE_VIEW_V1,
  removeHdfsBase,
  runEtlMeasured,
  silent,
  startLoaderEnvironment,
  type LoaderEnvironment,
  type MeasuredEtlRun,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const RECORDS = 2_000_000;
/** Records per `send`: each batch is a copy of the template batch, handed to the producer and dropped. */
const PER_SEND = 10_000;
/** Sends awaiting their acknowledgement at once: the broker always has work, and memory stays bounded. */
const SENDS_IN_FLIGHT = 4;
const HOURS = 4;
const PEAK_RSS_LIMIT_MB = 300;
const RECORDS_PER_TASK = 500_000;
/** Small enough that most hour files of a 500,000-record task (about 2 MB each) roll over into parts. */
const MAX_FILE_BYTES = 1024 * 1024;
/** The Avro block (64 KiB of records before compression) that reaches maxFileBytes still ends in the file. */
const FILE_BYTES_SLACK = 256 * 1024;
const TOPIC = 'page-views-at-scale';
const SLOW = 300_000;
const EVENT_ID_PREFIX = '00000000-0000-4000-8000-';

let env: LoaderEnvironment;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  // Appended records are readable at once, and fsyncs come seldom: production is not held up by the disk.
  env = await startLoaderEnvironment({ 'log.visible.on.append': 'true', 'log.flush.interval.messages': '1000000', 'log.flush.interval.ms': '5000' });
  await createTopic(env.broker.bootstrap, TOPIC, 1);
  // One schema version: the reader schema is the writer schema, so a loaded record's bytes equal the produced ones.
  await env.registryClient.register(`${TOPIC}-value`, PAGE_VIEW_V1);
  template = await encodeTemplate();
  const started = Date.now();
  await produceAll();
  const seconds = (Date.now() - started) / 1000;
  console.info(`produced ${RECORDS.toLocaleString('en')} records to one partition in ${seconds.toFixed(1)} s (${Math.round(RECORDS / seconds).toLocaleString('en')} records/s)`);
}, 240_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await env?.close();
}, 120_000);

/** Event ids carry the record's index (its offset, as production checks) in their last 12 hex digits. */
function eventIdOf(index: number): string {
  return `${EVENT_ID_PREFIX}${index.toString(16).padStart(12, '0')}`;
}

/**
 * Where the index digits of the event id sit in a record's Avro bytes: the event id is the first
 * field, a length byte (72, zigzag of 36) and then its 36 characters.
 */
const ID_LENGTH_BYTE = 72;
const INDEX_DIGITS_AT = 1 + EVENT_ID_PREFIX.length;
const ID_END = 1 + 36;

/**
 * One send's worth of page views, encoded once through the registry: batch n is this batch with
 * the index digits of every event id rewritten to n·PER_SEND + position. So the test knows each
 * record's exact bytes from its index alone, and producing costs a copy per batch, not an encode
 * per record.
 */
interface TemplateBatch {
  /** The framed values back to back, as Kafka gets them. */
  readonly frames: Buffer;
  /** frames.subarray(starts[p], starts[p + 1]) is the value at position p. */
  readonly starts: readonly number[];
  readonly hours: readonly string[];
  readonly times: readonly number[];
}

let template: TemplateBatch;

async function encodeTemplate(): Promise<TemplateBatch> {
  const serializer = new AvroSerializer(env.registryClient, { autoRegister: false });
  // Every batch spans all the hours, so a partition range keeps all four hour files growing at once.
  const events = samplePageViews(PER_SEND, pastHours(Date.now(), HOURS, 3 * HOUR));
  const frames: Buffer[] = [];
  for (const [position, event] of events.entries()) {
    frames.push(await serializer.encode(`${TOPIC}-value`, { ...event, header: { ...event.header, eventId: eventIdOf(position) } }, PAGE_VIEW_V1));
  }
  const starts = [0];
  for (const frame of frames) starts.push((starts.at(-1) ?? 0) + frame.length);
  return { frames: Buffer.concat(frames), starts, hours: events.map((event) => hourKeyOf(event.header.time)), times: events.map((event) => event.header.time) };
}

/** The Avro bytes (without the frame header) of the record produced at offset `index`. */
function expectedRecord(index: number): Buffer {
  const position = index % PER_SEND;
  const record = Buffer.from(template.frames.subarray((template.starts[position] ?? 0) + FRAME_HEADER_BYTES, template.starts[position + 1]));
  record.write(index.toString(16).padStart(12, '0'), INDEX_DIGITS_AT, 'latin1');
  return record;
}

/** Produces every record (acks=1); fails if an offset is not the record's index. */
async function produceAll(): Promise<void> {
  const producer = await Producer.connect({ bootstrap: [env.broker.bootstrap], acks: 1, lingerMs: 5, batchSize: 512 * 1024, logger: silent });
  const misplaced: string[] = [];
  try {
    const inFlight: Promise<void>[] = [];
    for (let first = 0; first < RECORDS; first += PER_SEND) {
      const frames = Buffer.from(template.frames);
      const records = [];
      for (let position = 0; position < PER_SEND && first + position < RECORDS; position += 1) {
        const start = template.starts[position] ?? 0;
        frames.write((first + position).toString(16).padStart(12, '0'), start + FRAME_HEADER_BYTES + INDEX_DIGITS_AT, 'latin1');
        records.push({ value: frames.subarray(start, template.starts[position + 1]), timestamp: template.times[position] ?? 0, partition: 0 });
      }
      inFlight.push(
        producer.send(TOPIC, records).then((acknowledged) => {
          acknowledged.forEach((metadata, position) => {
            if (Number(metadata.offset) !== first + position && misplaced.length < 5) misplaced.push(`record ${first + position} at offset ${metadata.offset}`);
          });
        }),
      );
      if (inFlight.length >= SENDS_IN_FLIGHT) await inFlight.shift();
    }
    await Promise.all(inFlight);
  } finally {
    await producer.close();
  }
  expect(misplaced, 'records whose offset is not their index').toEqual([]);
}

interface LoadFileSettings {
  readonly name: string;
  readonly warehouse: TestWarehouse;
  /** Cut each partition range into tasks of RECORDS_PER_TASK records, and roll files at MAX_FILE_BYTES. */
  readonly split: boolean;
}

/** A load of the whole topic; no maxRecordsPerRun: a run reads up to the high watermark it planned against. */
async function writeScaleLoadFile(settings: LoadFileSettings): Promise<string> {
  const file = join(env.folder, `${settings.name}.yaml`);
  const lines = [
    `name: ${settings.name}`,
    `source: { bootstrap: [${env.broker.bootstrap}] }`,
    `topics: [${TOPIC}]`,
    `registry: ${env.registry.url}`,
    `warehouse: { url: '${settings.warehouse.url}', root: ${settings.warehouse.root} }`,
    'format: avro',
    'codec: deflate',
    'timeField: header.time',
    'quarantine: { maxRecords: 0 }',
    ...(settings.split ? [`maxRecordsPerTask: ${RECORDS_PER_TASK}`, `maxFileBytes: ${MAX_FILE_BYTES}`] : []),
  ];
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}

let loads = 0;
function freshWarehouse(kind: WarehouseKind, what: string): { name: string; warehouse: TestWarehouse } {
  loads += 1;
  const name = `scale-${what}-${kind === 'HDFS' ? 'hdfs' : 'local'}-${loads}`;
  const warehouse = makeWarehouse(kind, env, name);
  cleanups.push(() => warehouse.cleanup());
  return { name, warehouse };
}

function megabytes(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

/** Data file paths under `folder`, walked one directory at a time. */
async function* dataFilesUnder(warehouse: WarehouseFileSystem, folder: string): AsyncGenerator<string> {
  const entries = await warehouse.list(folder).catch(() => []);
  for (const entry of [...entries].sort((a, b) => (a.path < b.path ? -1 : 1))) {
    if (entry.type === 'directory') yield* dataFilesUnder(warehouse, entry.path);
    else if (!(entry.path.split('/').at(-1) ?? '').startsWith('_')) yield entry.path;
  }
}

/** The record's index, from the digits of its event id; undefined for a record this test did not produce. */
function indexOf(raw: Buffer): number | undefined {
  if (raw.length < ID_END || raw[0] !== ID_LENGTH_BYTE || raw.toString('latin1', 1, INDEX_DIGITS_AT) !== EVENT_ID_PREFIX) return undefined;
  const index = Number.parseInt(raw.toString('latin1', INDEX_DIGITS_AT, ID_END), 16);
  return Number.isInteger(index) && index < RECORDS ? index : undefined;
}

/**
 * Calls `each` with the Avro bytes of every record of a container file, in order. The decoder
 * flows ('data' events), so each chunk is exactly one record; a read() of the paused stream
 * could join several.
 */
function forEachRecord(contents: Buffer, each: (raw: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const decoder = new avro.streams.BlockDecoder({ noDecode: true });
    decoder.on('data', each);
    decoder.once('end', resolve);
    decoder.once('error', reject);
    decoder.end(contents);
  });
}

interface WarehouseCheck {
  readonly files: number;
  readonly bytes: number;
  readonly largestFile: number;
  readonly seconds: number;
}

/**
 * Every produced record is in the topic's data files exactly once, in the folder of its event
 * hour, with the bytes it was produced with. One file is in memory at a time, and its records
 * are streamed out of it.
 */
async function expectEveryRecordOnce(warehouse: WarehouseFileSystem, root: string): Promise<WarehouseCheck> {
  const started = Date.now();
  const seen = new Uint8Array(RECORDS);
  const problems = { duplicated: [] as string[], unknown: [] as string[], changed: [] as string[] };
  const note = (list: string[], what: string): void => void (list.length < 5 && list.push(what));
  let files = 0;
  let bytes = 0;
  let largestFile = 0;
  const counts = { duplicated: 0, unknown: 0, changed: 0 };
  for await (const file of dataFilesUnder(warehouse, `${root}/${TOPIC}/hourly`)) {
    const contents = await warehouse.open(file);
    files += 1;
    bytes += contents.length;
    largestFile = Math.max(largestFile, contents.length);
    const [year, month, day, hour] = file.split('/').slice(-5, -1);
    const hourKey = `${year}-${month}-${day}T${hour}`;
    let position = 0;
    await forEachRecord(contents, (raw) => {
      position += 1;
      const index = indexOf(raw);
      if (index === undefined) {
        counts.unknown += 1;
        note(problems.unknown, `record ${position} of ${file}`);
        return;
      }
      if (seen[index] === 1) {
        counts.duplicated += 1;
        note(problems.duplicated, `offset ${index} again in ${file}`);
      }
      seen[index] = 1;
      if (template.hours[index % PER_SEND] !== hourKey || !raw.equals(expectedRecord(index))) {
        counts.changed += 1;
        note(problems.changed, `offset ${index} in ${file}`);
      }
    });
  }
  const missing: number[] = [];
  let missingCount = 0;
  seen.forEach((flag, index) => {
    if (flag === 1) return;
    missingCount += 1;
    if (missing.length < 5) missing.push(index);
  });
  expect({ missing: missingCount, ...counts }, `first missing offsets ${missing.join(', ')}; ${JSON.stringify(problems)}`).toEqual({ missing: 0, duplicated: 0, unknown: 0, changed: 0 });
  return { files, bytes, largestFile, seconds: (Date.now() - started) / 1000 };
}

/** Relative path → sha256 of every data file under the topic's folder of a local warehouse (markers left out). */
async function fileHashesUnder(folder: string): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  for (const entry of entries.filter((candidate) => candidate.isFile() && !candidate.name.startsWith('_') && !candidate.name.startsWith('.'))) {
    const path = join(entry.parentPath, entry.name);
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    hashes.set(relative(folder, path), hash.digest('hex'));
  }
  return new Map([...hashes].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Runs `etl run` on a load file; reports and returns its memory and time. */
async function measuredRun(load: string, name: string, into: string): Promise<MeasuredEtlRun> {
  const run = await runEtlMeasured(['run', '--load', load, '--no-progress']);
  expect(run.status, run.stderr.slice(-4000)).toBe(0);
  expect(run.stdout).toMatch(new RegExp(`load ${name}: commit 1: ${RECORDS} records in \\d+ files`));
  expect(run.samples, 'memory samples of the run').toBeGreaterThan(0);
  console.info(
    `loader peak RSS ${megabytes(run.peakBytes)} MB for ${RECORDS.toLocaleString('en')} records into ${into} (VmHWM; highest VmRSS sampled ${megabytes(run.residentBytes)} MB); the run took ${run.seconds.toFixed(1)} s`,
  );
  return run;
}

function reportCheck(what: string, check: WarehouseCheck): void {
  console.info(`${what}: ${check.files} data files, ${megabytes(check.bytes)} MB (largest ${megabytes(check.largestFile)} MB), every record once (checked in ${check.seconds.toFixed(1)} s)`);
}

describe(`the loader over one partition of ${RECORDS.toLocaleString('en')} records`, () => {
  it(
    `loads it into HDFS in one run and one range, below ${PEAK_RSS_LIMIT_MB} MB of resident memory, every record exactly once`,
    async () => {
      const { name, warehouse } = freshWarehouse('HDFS', 'whole');
      const run = await measuredRun(await writeScaleLoadFile({ name, warehouse, split: false }), name, 'HDFS');
      reportCheck('HDFS', await expectEveryRecordOnce(warehouse.warehouse, warehouse.root));
      expect(megabytes(run.peakBytes), 'peak resident memory of tributary etl run into HDFS').toBeLessThan(PEAK_RSS_LIMIT_MB);
    },
    SLOW,
  );

  it(
    `cut into tasks of ${RECORDS_PER_TASK.toLocaleString('en')} records: one run into a local folder stays below ${PEAK_RSS_LIMIT_MB} MB and loads every record exactly once; two BullMQ workers sharing the tasks write the same files byte for byte`,
    async () => {
      const single = freshWarehouse('local folder', 'single');
      const run = await measuredRun(await writeScaleLoadFile({ name: single.name, warehouse: single.warehouse, split: true }), single.name, 'a local folder, in tasks');
      const check = await expectEveryRecordOnce(single.warehouse.warehouse, single.warehouse.root);
      reportCheck('local folder, one run', check);
      expect(megabytes(run.peakBytes), 'peak resident memory of tributary etl run into a local folder').toBeLessThan(PEAK_RSS_LIMIT_MB);
      expect(check.files, 'hour files rolled over at maxFileBytes: more files than tasks × hours').toBeGreaterThan((RECORDS / RECORDS_PER_TASK) * HOURS);
      expect(check.largestFile, 'the largest data file').toBeLessThanOrEqual(MAX_FILE_BYTES + FILE_BYTES_SLACK);

      const shared = freshWarehouse('local folder', 'workers');
      const sharedLoad = await writeScaleLoadFile({ name: shared.name, warehouse: shared.warehouse, split: true });
      const queues = openTestQueues(testPrefix());
      cleanups.push(() => queues.dispose());
      const workerIds = ['scale-worker-a', 'scale-worker-b'];
      const workers: TributaryProcess[] = [];
      cleanups.push(() => Promise.all(workers.map((worker) => worker.daemon.stop())));
      workers.push(...(await Promise.all(workerIds.map((id) => startWorkerProcess({ id, prefix: queues.prefix, concurrency: 1 })))));
      const started = Date.now();
      await enqueueRun(queues.queues.runs, sharedLoad);
      const commit = await finishedCommitOf(queues, shared.name, 240_000, workers);
      const seconds = (Date.now() - started) / 1000;
      const result = commit.returnvalue as CommitJobResult;
      expect(result).toMatchObject({ outcome: 'committed', load: shared.name, seq: 1, records: RECORDS });
      const ranges = Array.from({ length: RECORDS / RECORDS_PER_TASK }, (_, task) => [task * RECORDS_PER_TASK, (task + 1) * RECORDS_PER_TASK]);
      expect(result.tasks.map((task) => [task.start, task.end]).sort(([a], [b]) => (a ?? 0) - (b ?? 0))).toEqual(ranges);
      // Each worker takes one task at a time and a task takes seconds: while one works, the other takes the next.
      expect(new Set(result.tasks.map((task) => task.worker))).toEqual(new Set(workerIds));
      const workerPeaks = workers.map((worker, index) => `${workerIds[index]} ${megabytes(peakResidentBytes(worker.daemon.pid))} MB`);
      console.info(`two workers: ${result.tasks.length} tasks committed ${seconds.toFixed(1)} s after the run was queued; peak RSS ${workerPeaks.join(', ')}`);

      const singleFiles = await fileHashesUnder(join(single.warehouse.url, single.warehouse.root, TOPIC));
      const sharedFiles = await fileHashesUnder(join(shared.warehouse.url, shared.warehouse.root, TOPIC));
      expect(singleFiles.size, 'data files of the one run').toBe(check.files);
      expect(Object.fromEntries(sharedFiles)).toEqual(Object.fromEntries(singleFiles));
      console.info(`split equals unsplit: ${sharedFiles.size} files, the same relative paths and sha256`);
      for (const worker of workers) expect(await worker.terminate()).toBe(0);
    },
    SLOW,
  );
});
