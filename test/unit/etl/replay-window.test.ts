/**
 * Replays and rollbacks end to end on the loader's in-process fakes (memory warehouse, fake
 * cluster) and a real registry server in this process: a replay after a transformation fix
 * rebuilds exactly the window's hours with the same counts and keeps the old version; runs after
 * it neither reload nor lose records and late records land as new files; a rollback restores the
 * old version byte for byte and carries late files; missing offsets, moving records, an empty
 * window and a held lease stop it before anything changes; a stale run is fenced.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { decodeDataFile } from '../../../src/etl/files/data-files.js';
import { acquireLease } from '../../../src/etl/load/lease.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { replayWindow } from '../../../src/etl/replay/replay.js';
import { readLoadHistory } from '../../../src/etl/replay/history.js';
import { readSwapLog } from '../../../src/etl/replay/log.js';
import { formatReplayHistory, formatSwapReport } from '../../../src/etl/replay/report.js';
import { rollbackHours } from '../../../src/etl/replay/rollback.js';
import type { LoadSource } from '../../../src/etl/load/source.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { startTestRegistry, type TestRegistry } from '../registry/serde-registry.js';
import { FakeSource, MemoryWarehouse } from './loader-fakes.js';
import { BUGGY, FIXED, HOURS, ROOT, SCHEMA, TOPIC, hourFolder, loadWith, produce, replayOptions, rollbackOptions, runOnce, snapshot, swappedManifest, versionFolder, type Produced } from './replay-fixture.js';

let registry: TestRegistry;
let client: RegistryClient;

beforeAll(async () => {
  registry = await startTestRegistry();
  client = registry.client();
  await client.register(`${TOPIC}-value`, SCHEMA);
});
afterAll(async () => {
  await registry.close();
});

let warehouse: MemoryWarehouse;
let source: FakeSource;
let buggy: LoadDefinition;
let fixed: LoadDefinition;
let produced: Produced[];

/** Every record of the hour folder: `partition/offset` → its value. */
async function recordsIn(hour: string): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  for (const path of warehouse.filesUnder(`${hourFolder(hour)}/`)) {
    const decoded = await decodeDataFile(warehouse.files.get(path)!, 'avro');
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    decoded.records.forEach((value, index) => {
      const key = `${decoded.metadata['tributary.partition']}/${offsets[index]}`;
      if (found.has(key)) throw new Error(`record ${key} twice in ${hour}`);
      found.set(key, value as Record<string, unknown>);
    });
  }
  return found;
}

function expectedIn(hour: string, records: readonly Produced[], page: (record: Produced) => string): Map<string, Record<string, unknown>> {
  return new Map(records.filter((record) => record.hour === hour).map((record) => [`${record.partition}/${record.offset}`, { id: record.id, page: page(record) }]));
}

function idAndPage(records: Map<string, Record<string, unknown>>): Map<string, Record<string, unknown>> {
  return new Map([...records].map(([key, value]) => [key, { id: value['id'], page: value['page'] }]));
}

const asBuggy = (record: Produced): string => `/u/${record.id}`;
const asFixed = (record: Produced): string => `page-${record.id % 5}`;

async function failure(promise: Promise<unknown>): Promise<TributaryError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('it succeeded');
}

beforeEach(async () => {
  warehouse = new MemoryWarehouse();
  source = new FakeSource();
  source.addTopic(TOPIC, 3);
  buggy = loadWith(registry.url, BUGGY);
  fixed = loadWith(registry.url, FIXED);
  produced = await produce(source, client, 90, 3);
  expect((await runOnce(buggy, warehouse, { registry: client, source })).outcome).toBe('committed');
  produced.push(...(await produce(source, client, 30, 3, 90)));
  expect((await runOnce(buggy, warehouse, { registry: client, source })).outcome).toBe('committed');
});

describe('replay after a transformation fix', () => {
  it('rebuilds exactly the two hours of the window with the fixed records and the same counts, keeping the old version byte for byte', async () => {
    for (const hour of HOURS) expect(idAndPage(await recordsIn(hour))).toEqual(expectedIn(hour, produced, asBuggy));
    const before = Object.fromEntries(HOURS.map((hour) => [hour, snapshot(warehouse, hourFolder(hour))]));

    const report = await replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[2]));

    expect(report.outcome).toBe('swapped');
    const manifest = swappedManifest(report);
    expect(manifest.hours.map((hour) => [hour.hour, hour.fromVersion, hour.toVersion, hour.old.length, hour.new.length])).toEqual([
      [HOURS[0], 1, 2, 6, 6],
      [HOURS[1], 1, 2, 6, 6],
    ]);
    for (const [index, hour] of [HOURS[0], HOURS[1]].entries()) {
      const entry = manifest.hours[index]!;
      const count = produced.filter((record) => record.hour === hour).length;
      expect(entry.old.reduce((sum, file) => sum + file.records, 0)).toBe(count);
      expect(entry.new.reduce((sum, file) => sum + file.records, 0)).toBe(count);
      expect(entry.recordsChanged).toBe(count);
      // page now copies a field with a doc, so the file schema differs too.
      expect(entry.outputSchemaChanged).toBe(true);
      expect(idAndPage(await recordsIn(hour))).toEqual(expectedIn(hour, produced, asFixed));
      expect(snapshot(warehouse, versionFolder(hour, 1))).toEqual(before[hour]);
      expect(Object.keys(snapshot(warehouse, hourFolder(hour)))).toEqual(Object.keys(before[hour]!));
    }
    expect(snapshot(warehouse, hourFolder(HOURS[2]))).toEqual(before[HOURS[2]]);
    expect(manifest).toMatchObject({ kind: 'replay', seq: 3, reason: 'page came from url', transform: '{"id":"id","time":"time","page":"page"}', readerSchemas: { [TOPIC]: { subject: `${TOPIC}-value`, version: 1 } } });
    expect(manifest.ranges.map((range) => `${range.partition}:${range.start}-${range.end}`)).toEqual(['0:0-30', '0:30-40', '1:0-30', '1:30-40', '2:0-30', '2:30-40']);

    // The fence is commit 3, empty; the replay is replays/3; no staging is left.
    const log = await readCommitLog(warehouse, ROOT, 'views');
    expect(log.claimed).toEqual([1, 2, 3]);
    expect([...log.published].sort()).toEqual([1, 2, 3]);
    expect((await readSwapLog(warehouse, ROOT, 'views')).claimed).toEqual([3]);
    expect(warehouse.filesUnder(`${ROOT}/_etl/views/replays/staging/`)).toEqual([]);
    expect(warehouse.filesUnder(`${ROOT}/_etl/views/staging/`)).toEqual([]);

    const text = formatSwapReport(report, 'jobs/views.yaml');
    expect(text).toContain(`replay 3 of load views, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z): page came from url`);
    expect(text).toContain('read 6 offset ranges of 3 partitions again (reader schema views: views-value version 1, id');
    const tenOClock = produced.filter((record) => record.hour === HOURS[0]).length;
    const readerId = manifest.readerSchemas[TOPIC]?.id;
    expect(text).toContain('topic  hour           version  records  files  what changed');
    expect(text).toContain(`views  ${HOURS[0]}  1 → 2    ${tenOClock} → ${tenOClock}  6 → 6  6 rewritten files; ${tenOClock} records changed; output schema changed; reader schema id ${readerId}`);
    expect(text).toContain(`undo an hour with: tributary etl rollback --load jobs/views.yaml --hour ${HOURS[0]}`);
  });

  it('later runs load only new records; late records of a replayed hour land there as a new file', async () => {
    await replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[2]));
    const replayed = snapshot(warehouse, hourFolder(HOURS[1]));
    expect((await runOnce(fixed, warehouse, { registry: client, source })).outcome).toBe('nothing-to-load');

    const late = await produce(source, client, 6, 3, 500, 1);
    const run = await runOnce(fixed, warehouse, { registry: client, source });
    expect(run.manifest?.ranges.map((range) => [range.partition, range.start, range.end])).toEqual([
      [0, 40, 42],
      [1, 40, 42],
      [2, 40, 42],
    ]);
    const now = snapshot(warehouse, hourFolder(HOURS[1]));
    for (const [name, sha] of Object.entries(replayed)) expect(now[name]).toBe(sha);
    expect(Object.keys(now).filter((name) => !(name in replayed)).sort()).toEqual([`${TOPIC}+0+40+42.avro`, `${TOPIC}+1+40+42.avro`, `${TOPIC}+2+40+42.avro`]);
    expect(idAndPage(await recordsIn(HOURS[1]))).toEqual(expectedIn(HOURS[1], [...produced, ...late], asFixed));
  });

  it('rollback restores the old version byte for byte, carries the late files, keeps the replayed version, and goes no further back', async () => {
    const original = snapshot(warehouse, hourFolder(HOURS[1]));
    await replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[2]));
    const replayed = snapshot(warehouse, hourFolder(HOURS[1]));
    const late = await produce(source, client, 3, 3, 700, 1);
    await runOnce(fixed, warehouse, { registry: client, source });
    const lateFiles = Object.keys(snapshot(warehouse, hourFolder(HOURS[1]))).filter((name) => !(name in replayed));
    expect(lateFiles).toHaveLength(3);

    const report = await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[1], { reason: 'the fix broke a report' }));
    expect(swappedManifest(report).hours.map((hour) => [hour.hour, hour.fromVersion, hour.toVersion, [...hour.carried]])).toEqual([[HOURS[1], 2, 1, lateFiles]]);
    const restored = snapshot(warehouse, hourFolder(HOURS[1]));
    expect(Object.fromEntries(Object.entries(restored).filter(([name]) => !lateFiles.includes(name)))).toEqual(original);
    expect(snapshot(warehouse, versionFolder(HOURS[1], 2))).toEqual(Object.fromEntries(Object.entries(replayed)));
    expect(warehouse.filesUnder(`${versionFolder(HOURS[1], 1)}/`)).toEqual([]);
    const lateOnly = new Set(late.map((record) => `${record.partition}/${record.offset}`));
    const expected = expectedIn(HOURS[1], produced, asBuggy);
    for (const record of late) expected.set(`${record.partition}/${record.offset}`, { id: record.id, page: asFixed(record) });
    expect(idAndPage(await recordsIn(HOURS[1]))).toEqual(expected);
    expect(lateOnly.size).toBe(3);
    expect(formatSwapReport(report, 'jobs/views.yaml')).toContain(`rollback 5 of load views, hour 2026-11-29T11:00:00.000Z: the fix broke a report`);

    // The same rollback again (as after a kill) leaves the hour alone and says so; it goes no further back.
    const again = await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[1]));
    expect(again.outcome).toBe('unchanged');
    expect(again.unchanged).toEqual([{ topic: TOPIC, hour: HOURS[1], version: 1, why: 'rolled-back', by: { seq: 5, fromVersion: 2, toVersion: 1 }, further: undefined }]);
    expect(formatSwapReport(again, 'jobs/views.yaml')).toContain(`hour views ${HOURS[1]}: already rolled back by rollback 5 (version 2 → 1); version 1 is live; nothing changed; it has no earlier version`);
    expect(snapshot(warehouse, hourFolder(HOURS[1]))).toEqual(restored);
    // An hour never replayed has nothing to roll back to.
    const never = await failure(rollbackHours(rollbackOptions(fixed, warehouse, HOURS[2])));
    expect(never.code).toBe('ETL_ROLLBACK_NO_VERSION');
    expect(never.message).toContain(`no topic of load views has an earlier version of hour 2026-11-29T12:00:00.000Z: the hour is at version 1, the one runs loaded`);

    // A second replay makes version 3 from the restored one; rolling it back brings version 1 back again.
    const third = await replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[1], HOURS[2]));
    expect(swappedManifest(third).hours.map((hour) => [hour.fromVersion, hour.toVersion])).toEqual([[1, 3]]);
    await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[1]));
    expect(snapshot(warehouse, hourFolder(HOURS[1]))).toEqual(restored);

    const status = formatReplayHistory(await readLoadHistory(warehouse, ROOT, 'views'));
    expect(status).toContain(`3 replay at 2026-11-30T09:00:00.000Z (page came from url): views ${HOURS[0]} 1→2, views ${HOURS[1]} 1→2`);
    expect(status).toContain(`5 rollback at 2026-11-30T10:00:00.000Z (the fix broke a report): views ${HOURS[1]} 2→1`);
    expect(status).toContain(`views ${HOURS[0]}  version 2 live,`);
    expect(status).toContain(`views ${HOURS[1]}  version 1 live, ${produced.filter((record) => record.hour === HOURS[1]).length + 3} records; kept: 2, 3`);
  });

  it('reports its progress: the ranges and offsets planned, the records fetched, each range done', async () => {
    const calls: string[] = [];
    let fetched = 0;
    await replayWindow(
      replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[2], {
        progress: {
          planned: (totals) => calls.push(`planned ${totals.partitions} ${totals.records}`),
          fetched: (records) => (fetched += records),
          partitionDone: () => calls.push('done'),
          finishing: (what) => calls.push(what),
        },
      }),
    );
    expect(calls).toEqual(['planned 6 120', 'done', 'done', 'done', 'done', 'done', 'done', 'swapping hours']);
    expect(fetched).toBe(120);
  });
});

describe('replay refusals change nothing', () => {
  async function unchanged(attempt: () => Promise<unknown>): Promise<TributaryError> {
    const hours = snapshot(warehouse, `${ROOT}/${TOPIC}`);
    const commits = await readCommitLog(warehouse, ROOT, 'views');
    const error = await failure(attempt());
    expect(snapshot(warehouse, `${ROOT}/${TOPIC}`)).toEqual(hours);
    expect(await readCommitLog(warehouse, ROOT, 'views')).toEqual(commits);
    expect((await readSwapLog(warehouse, ROOT, 'views')).claimed).toEqual([]);
    expect(warehouse.filesUnder(`${ROOT}/_etl/views/replays/`)).toEqual([]);
    expect(warehouse.filesUnder(`${ROOT}/_etl/views/versions/`)).toEqual([]);
    return error;
  }

  it('stops before changing anything when retention deleted offsets that fed the window, listing them', async () => {
    source.deleteBefore(TOPIC, 1, 12);
    const operations = warehouse.operations.length;
    const error = await unchanged(() => replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[2])));
    expect(warehouse.operations.slice(operations)).toEqual([]);
    expect(error.code).toBe('ETL_REPLAY_OFFSETS_MISSING');
    expect(error.message).toContain('1 offset range that fed the window is no longer in the log:');
    expect(error.message).toContain(`  ${TOPIC}-1 [0, 12) (12 offsets, deleted by retention; fed ${HOURS[0]}, ${HOURS[1]})`);
  });

  it('refuses a configuration that moves records into hours outside the window (a changed time field)', async () => {
    const moved = loadWith(registry.url, FIXED, { timeField: 'id' });
    const error = await unchanged(() => replayWindow(replayOptions(moved, warehouse, { registry: client, source }, HOURS[0], HOURS[2])));
    expect(error.code).toBe('ETL_REPLAY_RECORDS_MOVE');
    expect(error.message).toContain('in hour 1970-01-01T00 now and would have');
  });

  it('refuses a window without data, and a topic the load never loaded', async () => {
    const empty = await unchanged(() => replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, '2026-11-30T00', '2026-11-30T02')));
    expect(empty.code).toBe('ETL_REPLAY_NOTHING');
    expect(empty.message).toBe(`no hour of [2026-11-30T00:00:00.000Z, 2026-11-30T02:00:00.000Z) holds data of load views; its hours with data run from ${HOURS[0]} to ${HOURS[2]}. Nothing was changed`);
    const topic = await unchanged(() => replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[2], { topic: 'clicks' })));
    expect(topic.message).toBe('load views has loaded nothing of topic clicks; its topics with data are views');
  });

  it('refuses a transformation path the reader schema lacks, naming it', async () => {
    const typo = loadWith(registry.url, 'transform:\n  fields:\n    page: pag\n');
    const error = await unchanged(() => replayWindow(replayOptions(typo, warehouse, { registry: client, source }, HOURS[0], HOURS[2])));
    expect(error.code).toBe('ETL_SCHEMA_PROBLEM');
    expect(error.message).toContain('transform.fields.page of the load reads pag, but the reader schema of topic views');
  });

  it('waits for the lease runs take: while a run holds it, the replay stops with ETL_LOAD_BUSY', async () => {
    const store = new MemoryCoordination().session();
    const lease = await acquireLease(store, 'views', { attempt: 'scheduled', numberRuns: false });
    try {
      const error = await unchanged(() => replayWindow(replayOptions(fixed, warehouse, { registry: client, source, store }, HOURS[0], HOURS[2])));
      expect(error.code).toBe('ETL_LOAD_BUSY');
      const rollback = await failure(rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0], { store })));
      expect(rollback.code).toBe('ETL_LOAD_BUSY');
    } finally {
      await lease.release();
    }
  });
});

describe('staging of a replay that stopped', () => {
  it('after its fence and before its claim, is kept until a later commit shows it can never be claimed, then removed', async () => {
    const stop = (point: string): void => {
      if (point === 'swap-after-fence') throw new Error('stopped (test)');
    };
    await expect(replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[1], { failpoint: stop }))).rejects.toThrow('stopped (test)');
    const staged = warehouse.filesUnder(`${ROOT}/_etl/views/replays/staging/`);
    expect(staged.some((path) => path.startsWith(`${ROOT}/_etl/views/replays/staging/0000000003-`))).toBe(true);
    // The next run cannot tell it from a replay still working: it stays.
    expect((await runOnce(fixed, warehouse, { registry: client, source })).outcome).toBe('nothing-to-load');
    expect(warehouse.filesUnder(`${ROOT}/_etl/views/replays/staging/`)).toEqual(staged);
    // Once a later commit exists it is dead, and the next recovery removes it.
    await produce(source, client, 3, 3, 800);
    expect((await runOnce(fixed, warehouse, { registry: client, source })).outcome).toBe('committed');
    await runOnce(fixed, warehouse, { registry: client, source });
    expect(warehouse.filesUnder(`${ROOT}/_etl/views/replays/staging/`)).toEqual([]);
    expect((await readSwapLog(warehouse, ROOT, 'views')).claimed).toEqual([]);
  });
});

describe('fencing', () => {
  it('a run that planned before the replay and lost its lease cannot commit after it', async () => {
    await produce(source, client, 9, 3, 900);
    let release: () => void = () => {};
    let entered: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const reachedFetch = new Promise<void>((resolve) => (entered = resolve));
    const paused: LoadSource = {
      topics: (selector) => source.topics(selector),
      partitions: (topic) => source.partitions(topic),
      bounds: (topic, partition) => source.bounds(topic, partition),
      fetch: async (topic, partition, offset, maxBytes) => {
        entered();
        await gate;
        return source.fetch(topic, partition, offset, maxBytes);
      },
      close: () => undefined,
    };
    // The stale run has a lease of its own (another in-process store): as far as it knows, it holds it.
    const stale = runOnce(fixed, warehouse, { registry: client, source: paused });
    await reachedFetch;
    const replay = await replayWindow(replayOptions(fixed, warehouse, { registry: client, source }, HOURS[0], HOURS[1]));
    const afterReplay = snapshot(warehouse, `${ROOT}/${TOPIC}`);
    release();
    const error = await failure(stale);
    expect(error.code).toBe('ETL_COMMIT_FENCED');
    expect(error.message).toContain(`commit ${swappedManifest(replay).seq} of load views was claimed by another run`);
    expect(snapshot(warehouse, `${ROOT}/${TOPIC}`)).toEqual(afterReplay);
  });
});
