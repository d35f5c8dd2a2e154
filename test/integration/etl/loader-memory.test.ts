/**
 * Acceptance (issue #32): the loader's memory is bounded by its budget, not by the data. A topic
 * of 8 partitions holds RECORDS wide events (16 fields, about 530 bytes each in Avro: see
 * wide-events.ts) whose event times are spread over 24 hours and interleaved, so that any stretch
 * of a partition falls in every hour: each partition's range keeps 24 hour files open at once,
 * and a run at the default concurrency (4 partitions at a time) has about 96 open. One
 * `tributary etl run` loads all of it as its own process, so the peak resident set the test
 * reads from /proc (VmHWM, sampled as the limits suite and loader-scale do) is the loader's
 * alone: once writing Parquet (zstd) and once writing Avro (deflate), each into a fresh local
 * folder warehouse.
 *
 * The load files leave `memoryBudget` out: the default budget (16 MiB of waiting bytes over every
 * open file of the process) must keep the whole process within PEAK_RSS_GOAL_MB. After the run,
 * every record must be in the data files exactly once, at the partition and offset it was
 * produced at, in the folder of its event hour (and a sample of them unchanged, field by field),
 * and the manifests must count each hour as produced.
 */
import { isDeepStrictEqual } from 'node:util';
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer, type ProducerRecord } from '../../../src/client/producer.js';
import { decodeDataFile, type DataFileCodec, type DataFileFormat } from '../../../src/etl/files/data-files.js';
import { hourKey, hourOf } from '../../../src/etl/layout.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { frame } from '../../../src/registry/serde/framing.js';
import {
  createTopic,
  dataFilesOf,
  FIRST_HOUR,
  makeWarehouse,
  manifestsPerHour,
  runEtlMeasured,
  silent,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type TestWarehouse,
} from './loader-support.js';
import { comparable, WIDE_EVENT_SCHEMA, wideEvent, wideEventTime } from './wide-events.js';

/** "A few hundred thousand": enough that the old Parquet path held far more (987 MB), few enough for CI. */
const RECORDS = 300_000;
const PARTITIONS = 8;
const HOURS = 24;
/**
 * Issue #32's goal for the default `memoryBudget`: the peak resident set of the whole `etl run`
 * process stays within 300 MB, for either format.
 */
const PEAK_RSS_GOAL_MB = 300;
/** The two loads; zstd is the Parquet codec issue #32 added. */
const CASES: readonly { readonly format: DataFileFormat; readonly codec: DataFileCodec }[] = [
  { format: 'parquet', codec: 'zstd' },
  { format: 'avro', codec: 'deflate' },
];
/** Records per `send` (round-robin over the partitions), and sends awaiting their acknowledgement at once. */
const PER_SEND = 8_000;
const SENDS_IN_FLIGHT = 4;
/**
 * Every CONTENT_SAMPLE-th record is also compared, field by field, with the event it was made
 * from; remaking and comparing every one would cost more than the load (the fidelity of each
 * type is the readers' tests' business, this one is about memory).
 */
const CONTENT_SAMPLE = 10;
const TOPIC = 'wide-events';
const SLOW = 300_000;

let env: LoaderEnvironment;
/** Records per event hour (hourKey), as produced. */
let producedPerHour: Record<string, number>;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  // Appended records are readable at once, and fsyncs come seldom: production is not held up by the disk.
  env = await startLoaderEnvironment({ 'log.visible.on.append': 'true', 'log.flush.interval.messages': '1000000', 'log.flush.interval.ms': '5000' });
  await createTopic(env.broker.bootstrap, TOPIC, PARTITIONS);
  const { id } = await env.registryClient.register(`${TOPIC}-value`, WIDE_EVENT_SCHEMA);
  producedPerHour = expectedHours();
  const started = Date.now();
  const bytes = await produceAll(id);
  const seconds = (Date.now() - started) / 1000;
  console.info(
    `produced ${RECORDS.toLocaleString('en')} wide records (${megabytes(bytes)} MB of framed values, ${Math.round(bytes / RECORDS)} bytes each) to ${PARTITIONS} partitions in ${seconds.toFixed(1)} s`,
  );
}, 240_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await env?.close();
}, 120_000);

function megabytes(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

/** Record `index` goes to partition index mod PARTITIONS, at offset index div PARTITIONS. */
function indexAt(partition: number, offset: number): number {
  return partition + PARTITIONS * offset;
}

/**
 * Records per event hour; also checks the data is what this test means: every partition's
 * records fall in all HOURS hours, and already its first 1% does (the hours are interleaved, not
 * in order), so a partition's range opens every hour file at once.
 */
function expectedHours(): Record<string, number> {
  const perHour: Record<string, number> = {};
  const hoursOf = Array.from({ length: PARTITIONS }, () => new Set<number>());
  const earlyHoursOf = Array.from({ length: PARTITIONS }, () => new Set<number>());
  for (let index = 0; index < RECORDS; index += 1) {
    const hour = hourOf(wideEventTime(index, FIRST_HOUR, HOURS));
    const key = hourKey(hour);
    perHour[key] = (perHour[key] ?? 0) + 1;
    hoursOf[index % PARTITIONS]?.add(hour);
    if (index < RECORDS / 100) earlyHoursOf[index % PARTITIONS]?.add(hour);
  }
  expect(hoursOf.map((hours) => hours.size), 'event hours of each partition').toEqual(Array<number>(PARTITIONS).fill(HOURS));
  expect(earlyHoursOf.map((hours) => hours.size), 'event hours of the first 1% of each partition').toEqual(Array<number>(PARTITIONS).fill(HOURS));
  return perHour;
}

/**
 * Produces every record (acks=1), PER_SEND at a time, each framed with the registry's schema id;
 * fails if a record is not at its partition and offset (indexAt). Answers the bytes produced.
 */
async function produceAll(schemaId: number): Promise<number> {
  const type = avro.Type.forSchema(JSON.parse(WIDE_EVENT_SCHEMA) as avro.Schema);
  const producer = await Producer.connect({ bootstrap: [env.broker.bootstrap], acks: 1, lingerMs: 5, batchSize: 512 * 1024, logger: silent });
  const misplaced: string[] = [];
  let bytes = 0;
  try {
    const inFlight: Promise<void>[] = [];
    for (let first = 0; first < RECORDS; first += PER_SEND) {
      const records: ProducerRecord[] = [];
      for (let index = first; index < Math.min(first + PER_SEND, RECORDS); index += 1) {
        const event = wideEvent(index, FIRST_HOUR, HOURS);
        const value = frame(schemaId, type.toBuffer(event));
        bytes += value.length;
        records.push({ value, timestamp: event.eventTime, partition: index % PARTITIONS });
      }
      inFlight.push(
        producer.send(TOPIC, records).then((acknowledged) => {
          acknowledged.forEach((metadata, position) => {
            const index = first + position;
            if (indexAt(metadata.partition, Number(metadata.offset)) !== index && misplaced.length < 5) misplaced.push(`record ${index} at ${metadata.partition}/${metadata.offset}`);
          });
        }),
      );
      if (inFlight.length >= SENDS_IN_FLIGHT) await inFlight.shift();
    }
    await Promise.all(inFlight);
  } finally {
    await producer.close();
  }
  expect(misplaced, 'records not at their partition and offset').toEqual([]);
  return bytes;
}

interface WarehouseCheck {
  readonly files: number;
  readonly bytes: number;
  readonly seconds: number;
}

/**
 * Every produced record is in the topic's data files exactly once: at the partition and offset
 * it was produced at (the file's provenance metadata), in the folder of its event hour, and (one
 * in CONTENT_SAMPLE) with the values it was produced with. One file is decoded at a time.
 */
async function expectEveryRecordOnceInItsHour(target: TestWarehouse, format: DataFileFormat): Promise<WarehouseCheck> {
  const started = Date.now();
  const seen = new Uint8Array(RECORDS);
  const counts = { unknown: 0, duplicated: 0, misplaced: 0, wrongHour: 0, changed: 0 };
  const examples: string[] = [];
  const note = (kind: keyof typeof counts, what: string): void => {
    counts[kind] += 1;
    if (examples.length < 10) examples.push(`${kind}: ${what}`);
  };
  let files = 0;
  let bytes = 0;
  for (const { path, hour } of await dataFilesOf(target.warehouse, target.root, TOPIC)) {
    const contents = await target.warehouse.open(path);
    files += 1;
    bytes += contents.length;
    const decoded = await decodeDataFile(contents, format);
    const partition = Number(decoded.metadata['tributary.partition']);
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    expect(offsets, `the offsets named by ${path}`).toHaveLength(decoded.records.length);
    decoded.records.forEach((value, position) => {
      const record = comparable(value) as { readonly id?: unknown };
      const index = record.id;
      if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0 || index >= RECORDS) {
        note('unknown', `record ${position} of ${path} has id ${String(index)}`);
        return;
      }
      if (seen[index] === 1) note('duplicated', `record ${index} again in ${path}`);
      seen[index] = 1;
      const offset = offsets[position] ?? -1;
      if (indexAt(partition, offset) !== index) note('misplaced', `record ${index} named as ${partition}/${offset} in ${path}`);
      const time = wideEventTime(index, FIRST_HOUR, HOURS);
      if (hourOf(time) !== hour) note('wrongHour', `record ${index} of hour ${hourKey(hourOf(time))} in ${path}`);
      if (index % CONTENT_SAMPLE === 0 && !isDeepStrictEqual(record, comparable(wideEvent(index, FIRST_HOUR, HOURS)))) {
        note('changed', `record ${index} in ${path}: ${JSON.stringify(record).slice(0, 300)}`);
      }
    });
  }
  let missing = 0;
  for (const [index, flag] of seen.entries()) {
    if (flag === 1) continue;
    missing += 1;
    if (examples.length < 10) examples.push(`missing: record ${index}`);
  }
  expect({ missing, ...counts }, examples.join('; ')).toEqual({ missing: 0, unknown: 0, duplicated: 0, misplaced: 0, wrongHour: 0, changed: 0 });
  return { files, bytes, seconds: (Date.now() - started) / 1000 };
}

describe(`the loader over ${RECORDS.toLocaleString('en')} wide records in ${PARTITIONS} partitions and ${HOURS} event hours`, () => {
  for (const { format, codec } of CASES) {
    it(
      `${format} (${codec}), the default memoryBudget: one run stays within ${PEAK_RSS_GOAL_MB} MB of peak RSS and loads every record exactly once, in its hour`,
      async () => {
        const name = `memory-${format}`;
        const warehouse = makeWarehouse('local folder', env, name);
        cleanups.push(() => warehouse.cleanup());
        // No memoryBudget: the default is what the goal is about.
        const load = await writeLoadFile(env, { name, topic: TOPIC, warehouse, format, codec, timeField: 'eventTime' });
        const run = await runEtlMeasured(['run', '--load', load, '--no-progress']);
        expect(run.status, `tributary etl run (${format}, ${codec}) failed:\n${run.stdout}\n${run.stderr.slice(-4000)}`).toBe(0);
        expect(run.samples, 'memory samples of the run').toBeGreaterThan(0);
        console.info(
          `${format} (${codec}): loader peak RSS ${megabytes(run.peakBytes)} MB (VmHWM; highest VmRSS sampled ${megabytes(run.residentBytes)} MB) for ${RECORDS.toLocaleString('en')} records; the run took ${run.seconds.toFixed(1)} s`,
        );
        // Soft: a run over its budget still has its records checked, and both failures are told.
        expect.soft(megabytes(run.peakBytes), `peak resident memory of tributary etl run (${format}, ${codec}), MB`).toBeLessThanOrEqual(PEAK_RSS_GOAL_MB);

        const check = await expectEveryRecordOnceInItsHour(warehouse, format);
        expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, TOPIC), 'records per hour in the manifests').toEqual(producedPerHour);
        console.info(`${format} (${codec}): ${check.files} data files, ${megabytes(check.bytes)} MB, every record once and in its hour (checked in ${check.seconds.toFixed(1)} s)`);
      },
      SLOW,
    );
  }
});
