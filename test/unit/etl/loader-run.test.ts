/**
 * Whole runs (src/etl/load/run.ts) against in-process fakes of the cluster and the warehouse and a
 * real registry server in this process: records land once each in the hour of their event time,
 * later runs continue where the last commit ends, undecodable records are quarantined with their
 * reasons, crashes at every commit step are rolled forward to the same bytes, and a stale run
 * cannot commit.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import type { FailpointName } from '../../../src/etl/load/failpoints.js';
import { decodeDataFile } from '../../../src/etl/files/data-files.js';
import { claimPath, publishedPath } from '../../../src/etl/layout.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { parseManifest, type Manifest } from '../../../src/etl/load/manifest.js';
import { decodeQuarantine } from '../../../src/etl/load/quarantine.js';
import { runLoad, type RunOptions, type RunReport } from '../../../src/etl/load/run.js';
import type { LoadSource } from '../../../src/etl/load/source.js';
import { FakeSource, MemoryWarehouse, quietLogger } from './loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from './loader-world.js';

const TOPIC = 'views';
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 29, 13, 0, 0);
const V1 = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'url', type: 'string' },
  ],
});
const V2 = JSON.stringify({ ...(JSON.parse(V1) as object), fields: [...(JSON.parse(V1) as { fields: unknown[] }).fields, { name: 'referrer', type: ['null', 'string'], default: null }] });

const world = useLoaderRegistry(`${TOPIC}-value`, [V1, V2]);

function load(overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  return memoryLoad(TOPIC, world.url, overrides);
}

interface Produced {
  readonly partition: number;
  readonly offset: number;
  readonly value: Record<string, unknown>;
}

/** `count` records over `partitions`, events spread over 3 hours, alternating schema versions. */
async function produce(source: FakeSource, count: number, partitions: number, firstId = 0): Promise<Produced[]> {
  const produced: Produced[] = [];
  for (let index = 0; index < count; index += 1) {
    const id = firstId + index;
    const partition = id % partitions;
    const time = T0 + ((id * 2_654_435) % (3 * HOUR));
    const v2 = id % 2 === 1;
    const value = { id, time, url: `/page/${id}`, ...(v2 ? { referrer: id % 3 === 0 ? null : `/from/${id}` } : {}) };
    const bytes = await world.serializer.encode(`${TOPIC}-value`, value, v2 ? V2 : V1);
    const offset = source.append(TOPIC, partition, bytes, time);
    // Read back in the reader schema (V2): V1 records get the default.
    produced.push({ partition, offset, value: { referrer: null, ...value } });
  }
  return produced;
}

function options(warehouse: MemoryWarehouse, source: LoadSource, extra: Partial<RunOptions> = {}): RunOptions {
  return {
    load: load(),
    warehouse,
    source,
    registry: world.client,
    logger: quietLogger,
    acceptGap: false,
    store: new MemoryCoordination().session(),
    numberRuns: false,
    now: () => new Date('2026-11-29T17:00:00Z'),
    ...extra,
  };
}

/** Every record in the warehouse's data files, keyed `partition/offset`, with the file it is in. */
async function readBack(warehouse: MemoryWarehouse): Promise<Map<string, { value: unknown; file: string; hour: string }>> {
  const found = new Map<string, { value: unknown; file: string; hour: string }>();
  for (const file of warehouse.filesUnder(`wh/${TOPIC}/hourly/`)) {
    const decoded = await decodeDataFile(warehouse.files.get(file)!, 'avro');
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    expect(offsets).toHaveLength(decoded.records.length);
    decoded.records.forEach((value, index) => {
      const key = `${decoded.metadata['tributary.partition']}/${offsets[index]}`;
      if (found.has(key)) throw new Error(`record ${key} is in ${found.get(key)?.file} and in ${file}`);
      found.set(key, { value: { ...(value as object) }, file, hour: file.split('/').slice(3, 7).join('-') });
    });
  }
  return found;
}

async function manifestOf(warehouse: MemoryWarehouse, seq: number): Promise<Manifest> {
  return parseManifest(await warehouse.open(publishedPath('wh', 'views', seq)), 'test');
}

function hourOfTime(time: number): string {
  return new Date(Math.floor(time / HOUR) * HOUR).toISOString().slice(0, 13);
}

/** A view of `source` whose fetches wait until `release()`; `entered` resolves at the first fetch. */
function pausedSource(source: FakeSource): { source: LoadSource; entered: Promise<void>; release: () => void } {
  let release: () => void = () => {};
  let enter: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const paused = Object.assign(Object.create(source) as FakeSource, {
    fetch: async (...args: Parameters<FakeSource['fetch']>) => {
      enter();
      await gate;
      return source.fetch(...args);
    },
  });
  return { source: paused, entered, release };
}

describe('loader runs', () => {
  let warehouse: MemoryWarehouse;
  let source: FakeSource;
  beforeEach(() => {
    warehouse = new MemoryWarehouse();
    source = new FakeSource();
    source.addTopic(TOPIC, 4);
  });

  it('puts every record, of either schema version, in exactly one file of its event hour, with per-hour counts', async () => {
    const produced = await produce(source, 400, 4);
    const report = await runLoad(options(warehouse, source));
    expect(report.outcome).toBe('committed');
    const manifest = await manifestOf(warehouse, 1);
    expect(manifest.readerSchemas).toEqual({ views: { subject: 'views-value', version: 2, id: expect.any(Number) as unknown } });

    const found = await readBack(warehouse);
    expect(found.size).toBe(produced.length);
    const expectedHours: Record<string, number> = {};
    for (const record of produced) {
      const stored = found.get(`${record.partition}/${record.offset}`);
      expect(stored?.value).toEqual(record.value);
      const hour = hourOfTime(record.value['time'] as number);
      expect(stored?.hour).toBe(hour.replace('T', '-'));
      expectedHours[hour] = (expectedHours[hour] ?? 0) + 1;
    }
    expect(Object.keys(expectedHours)).toHaveLength(3);
    expect(manifest.hours).toEqual({ views: expectedHours });
    expect(manifest.nextOffsets).toEqual({ views: { '0': 100, '1': 100, '2': 100, '3': 100 } });
    // One file per partition and hour, named for the run's range.
    expect(manifest.files).toHaveLength(12);
    expect(manifest.files.map((file) => file.path.split('/').at(-1))).toContain('views+0+0+100.avro');
    expect(warehouse.filesUnder('wh/_etl/views/staging/')).toEqual([]);
  });

  it('writes Parquet files that read back to the same records, with their offsets', async () => {
    const produced = await produce(source, 120, 4);
    await runLoad(options(warehouse, source, { load: load({ format: 'parquet', codec: 'snappy' }) }));
    const files = warehouse.filesUnder(`wh/${TOPIC}/hourly/`);
    expect(files.every((file) => file.endsWith('.parquet'))).toBe(true);
    const found = new Map<string, unknown>();
    for (const file of files) {
      const decoded = await decodeDataFile(warehouse.files.get(file)!, 'parquet');
      const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
      decoded.records.forEach((value, index) => found.set(`${decoded.metadata['tributary.partition']}/${offsets[index]}`, { ...(value as object) }));
    }
    expect(found.size).toBe(produced.length);
    for (const record of produced) expect(found.get(`${record.partition}/${record.offset}`)).toEqual(record.value);
  });

  it('continues where the last commit ends and has nothing to do when nothing is new', async () => {
    await produce(source, 80, 4);
    await runLoad(options(warehouse, source));
    const later = await produce(source, 40, 4, 80);
    const second = await runLoad(options(warehouse, source));
    expect(second.outcome).toBe('committed');
    const manifest = await manifestOf(warehouse, 2);
    expect(manifest.ranges.map((range) => [range.partition, range.start, range.end])).toEqual([
      [0, 20, 30],
      [1, 20, 30],
      [2, 20, 30],
      [3, 20, 30],
    ]);
    expect(manifest.ranges.reduce((sum, range) => sum + range.records, 0)).toBe(later.length);
    expect((await readBack(warehouse)).size).toBe(120);
    const third = await runLoad(options(warehouse, source));
    expect(third.outcome).toBe('nothing-to-load');
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([1, 2]);
  });

  it('reads at most maxRecordsPerRun per partition and run', async () => {
    await produce(source, 80, 4);
    await runLoad(options(warehouse, source, { load: load({ maxRecordsPerRun: 15 }) }));
    expect((await manifestOf(warehouse, 1)).nextOffsets).toEqual({ views: { '0': 15, '1': 15, '2': 15, '3': 15 } });
    await runLoad(options(warehouse, source, { load: load({ maxRecordsPerRun: 15 }) }));
    expect((await manifestOf(warehouse, 2)).nextOffsets).toEqual({ views: { '0': 20, '1': 20, '2': 20, '3': 20 } });
    expect((await readBack(warehouse)).size).toBe(80);
  });

  it('quarantines undecodable records with their reasons, commits them with the run, and counts them', async () => {
    await produce(source, 40, 4);
    const bad = [
      source.append(TOPIC, 1, Buffer.from('{"not":"avro"}'), T0),
      source.append(TOPIC, 1, Buffer.from([0, 0, 0, 0x7f, 0x7f, 1, 2]), T0),
      source.append(TOPIC, 2, null, T0),
      source.append(TOPIC, 2, await world.serializer.encode(`${TOPIC}-value`, { id: 1, time: 1, url: 'x' }, V1).then((bytes) => bytes.subarray(0, 7)), T0),
    ];
    expect(bad).toEqual([10, 11, 10, 11]);
    const report = await runLoad(options(warehouse, source, { load: load({ quarantine: { maxRecords: 4 } }) }));
    expect(report.outcome).toBe('committed');
    const manifest = await manifestOf(warehouse, 1);
    expect(manifest.quarantine.records).toBe(4);
    expect(manifest.quarantine.reasons).toEqual({ SERDE_NOT_FRAMED: 1, REGISTRY_SCHEMA_NOT_FOUND: 1, ETL_NULL_VALUE: 1, SERDE_DECODE_FAILED: 1 });
    expect(manifest.ranges.find((range) => range.partition === 1)).toMatchObject({ records: 10, quarantined: 2, end: 12 });
    expect(manifest.quarantine.files.map((file) => file.path)).toEqual(['wh/_etl/views/quarantine/0000000001/views+1+0+12.jsonl', 'wh/_etl/views/quarantine/0000000001/views+2+0+12.jsonl']);
    const lines = decodeQuarantine(await warehouse.open('wh/_etl/views/quarantine/0000000001/views+1+0+12.jsonl'));
    expect(lines.map((line) => [line.offset, line.code])).toEqual([
      [10, 'SERDE_NOT_FRAMED'],
      [11, 'REGISTRY_SCHEMA_NOT_FOUND'],
    ]);
    expect(lines[0]?.payload?.toString()).toBe('{"not":"avro"}');
    expect(lines[0]?.reason).toContain('not the magic byte');
    expect((await readBack(warehouse)).size).toBe(40);
  });

  it('fails before committing anything when quarantined records exceed the threshold', async () => {
    await produce(source, 40, 4);
    source.append(TOPIC, 0, Buffer.from('junk!'), T0);
    source.append(TOPIC, 3, Buffer.from('junk!'), T0);
    const run = runLoad(options(warehouse, source, { load: load({ quarantine: { maxRecords: 1 } }) }));
    await expect(run).rejects.toMatchObject({
      code: 'ETL_QUARANTINE_THRESHOLD',
      message: expect.stringContaining('load views: 2 records could not be loaded (2 SERDE_NOT_FRAMED; by partition views-0: 1, views-3: 1), more than quarantine.maxRecords = 1') as unknown,
    });
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([]);
    expect(warehouse.filesUnder('wh/views/')).toEqual([]);
  });

  it('quarantines records without a usable event time', async () => {
    source.append(TOPIC, 0, await world.serializer.encode(`${TOPIC}-value`, { id: 1, time: T0, url: 'x' }, V1), -1);
    const { timeField: _timeField, ...byRecordTimestamp } = load({ quarantine: { maxRecords: 1 } });
    const report = await runLoad(options(warehouse, source, { load: byRecordTimestamp }));
    expect(report.manifest?.quarantine.reasons).toEqual({ ETL_NO_EVENT_TIME: 1 });
  });

  it('leaves a partition whose offsets retention deleted out of the commit, and records the gap with --accept-gap', async () => {
    await produce(source, 40, 4);
    await runLoad(options(warehouse, source));
    await produce(source, 40, 4, 40);
    source.deleteBefore(TOPIC, 2, 15);

    const report: RunReport = await runLoad(options(warehouse, source));
    expect(report.problems.map((problem) => problem.message)).toEqual([expect.stringContaining('partition views-2 of load views: offsets [10, 15) (at most 5 records) were deleted by retention')]);
    const second = await manifestOf(warehouse, 2);
    expect(second.ranges.map((range) => range.partition)).toEqual([0, 1, 3]);
    expect(second.nextOffsets['views']).toEqual({ '0': 20, '1': 20, '2': 10, '3': 20 });

    const accepted = await runLoad(options(warehouse, source, { acceptGap: true }));
    expect(accepted.problems).toEqual([]);
    const third = await manifestOf(warehouse, 3);
    expect(third.ranges).toEqual([{ topic: 'views', partition: 2, start: 15, end: 20, records: 5, quarantined: 0, gap: { from: 10, to: 15 } }]);
    expect(third.nextOffsets['views']?.['2']).toBe(20);
  });

  const crashPoints: [FailpointName, number][] = [
    ['after-stage', 3],
    ['after-claim', 1],
    ['after-rename', 1],
    ['after-rename', 7],
    ['before-publish', 1],
    ['after-publish', 1],
  ];
  for (const [point, pass] of crashPoints) {
    it(`after a crash at ${point}:${pass} the next run ends with the same files, bytes and manifest as a run without crash`, async () => {
      await produce(source, 200, 4);
      const clean = new MemoryWarehouse();
      await runLoad(options(clean, source));

      let passes = 0;
      const crashing = runLoad(
        options(warehouse, source, {
          failpoint: (at) => {
            if (at === point && (passes += 1) === pass) throw new Error(`crash at ${at}`);
          },
        }),
      );
      await expect(crashing).rejects.toThrow(`crash at ${point}`);
      const after = await runLoad(options(warehouse, source));
      const rolled = after.recovery.rolledForward;
      expect(rolled).toEqual(point === 'after-stage' || point === 'after-publish' ? [] : [1]);

      const finals = (w: MemoryWarehouse): Map<string, string> =>
        new Map(w.filesUnder('wh/views/').map((path) => [path, w.files.get(path)!.toString('base64')]));
      expect(finals(warehouse)).toEqual(finals(clean));
      const published = await manifestOf(warehouse, 1);
      const reference = await manifestOf(clean, 1);
      // Only the attempt (and the staging names it is part of) may differ.
      const comparable = (manifest: Manifest): unknown => ({ ...manifest, attempt: '', files: manifest.files.map((file) => ({ ...file, staged: '' })) });
      expect(comparable(published)).toEqual(comparable(reference));
      expect((await readBack(warehouse)).size).toBe(200);
      expect(warehouse.filesUnder('wh/_etl/views/staging/')).toEqual([]);
      const log = await readCommitLog(warehouse, 'wh', 'views');
      expect(log.claimed).toEqual([1]);
      expect(after.outcome).toBe(point === 'after-stage' ? 'committed' : 'nothing-to-load');
    });
  }

  it('refuses a second run of the load while the first holds the lease', async () => {
    await produce(source, 20, 4);
    const tree = new MemoryCoordination();
    const paused = pausedSource(source);
    const first = runLoad(options(warehouse, paused.source, { store: tree.session() }));
    await paused.entered;
    await expect(runLoad(options(warehouse, source, { store: tree.session() }))).rejects.toMatchObject({ code: 'ETL_LOAD_BUSY', message: expect.stringContaining('load views is being run by run') as unknown });
    paused.release();
    await expect(first).resolves.toMatchObject({ outcome: 'committed' });
  });

  it('stops without committing when its coordination session expired during the run (lease lost)', async () => {
    await produce(source, 40, 4);
    const store = new MemoryCoordination().session();
    const paused = pausedSource(source);
    const run = runLoad(options(warehouse, paused.source, { store }));
    await paused.entered;
    await store.expireSession();
    paused.release();
    await expect(run).rejects.toMatchObject({ code: 'ETL_LEASE_LOST', message: expect.stringContaining('lost its lease /etl/locks/views') as unknown });
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([]);
    expect(warehouse.filesUnder('wh/views/')).toEqual([]);
  });

  it('numbers runs in the coordination store and records the number in the manifest', async () => {
    await produce(source, 8, 4);
    const tree = new MemoryCoordination();
    await runLoad(options(warehouse, source, { store: tree.session(), numberRuns: true }));
    await produce(source, 8, 4, 8);
    await runLoad(options(warehouse, source, { store: tree.session(), numberRuns: true }));
    expect([(await manifestOf(warehouse, 1)).runNumber, (await manifestOf(warehouse, 2)).runNumber]).toEqual([1, 2]);
    expect(await tree.session().get('/etl/locks/views')).toBeUndefined();
  });

  it('fences a stale run: one that lost its lease while paused cannot commit after another run did', async () => {
    await produce(source, 40, 4);
    const paused = pausedSource(source);
    // Separate coordination trees: the stale run still believes it holds the lease.
    const stale = runLoad(options(warehouse, paused.source, { store: new MemoryCoordination().session() }));
    await paused.entered;
    const fresh = await runLoad(options(warehouse, source, { store: new MemoryCoordination().session() }));
    expect(fresh.manifest?.seq).toBe(1);
    const committed = new Map(warehouse.filesUnder('wh/views/').map((path) => [path, warehouse.files.get(path)!]));

    paused.release();
    await expect(stale).rejects.toMatchObject({ code: 'ETL_COMMIT_FENCED' });
    expect(new Map(warehouse.filesUnder('wh/views/').map((path) => [path, warehouse.files.get(path)!]))).toEqual(committed);
    expect(warehouse.files.get(claimPath('wh', 'views', 1))?.equals(warehouse.files.get(publishedPath('wh', 'views', 1))!)).toBe(true);
    expect(JSON.parse(warehouse.files.get(claimPath('wh', 'views', 1))!.toString()) as Manifest).toMatchObject({ attempt: fresh.manifest?.attempt });
    expect((await readBack(warehouse)).size).toBe(40);
  });
});
