/**
 * The phases of a distributed run (src/etl/load/phases.ts) against in-process fakes of the cluster and
 * the warehouse and a real registry server in this process: plan, tasks and commit called one by
 * one write what runLoad writes; duplicated tasks, a commit retried after a crash and a stale
 * commit change nothing twice.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { decodeDataFile } from '../../../src/etl/files/data-files.js';
import { publishedPath } from '../../../src/etl/layout.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { parseManifest, type Manifest } from '../../../src/etl/load/manifest.js';
import { commitPhase, oneResultPerRange, planPhase, taskPhase, type PhaseServices, type PlannedRun, type RangeResult } from '../../../src/etl/load/phases.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { FakeSource, MemoryWarehouse, quietLogger } from '../etl/loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from '../etl/loader-world.js';

const TOPIC = 'views';
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 29, 13, 0, 0);
const VIEW = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'url', type: 'string' },
  ],
});

const world = useLoaderRegistry(`${TOPIC}-value`, [VIEW]);

function load(overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  return memoryLoad(TOPIC, world.url, overrides);
}

/** `count` records over the partitions, event times over 3 hours. */
async function produce(source: FakeSource, count: number, partitions: number, firstId = 0): Promise<void> {
  for (let id = firstId; id < firstId + count; id += 1) {
    const time = T0 + ((id * 2_654_435) % (3 * HOUR));
    source.append(TOPIC, id % partitions, await world.serializer.encode(`${TOPIC}-value`, { id, time, url: `/page/${id}` }, VIEW), time);
  }
}

function services(warehouse: MemoryWarehouse, source: FakeSource, extra: Partial<PhaseServices> = {}): PhaseServices {
  return {
    load: load(),
    warehouse,
    source,
    registry: world.client,
    logger: quietLogger,
    store: new MemoryCoordination().session(),
    numberRuns: false,
    now: () => new Date('2026-11-29T17:00:00Z'),
    ...extra,
  };
}

/** Plans a run; the fan-out just hands the planned run back. */
function plan(phase: PhaseServices, acceptGap = false): Promise<PlannedRun> {
  return planPhase(phase, acceptGap, async (planned) => planned);
}

async function runTasks(phase: PhaseServices, planned: PlannedRun): Promise<RangeResult[]> {
  return Promise.all(planned.tasks.map((task) => taskPhase(phase, task)));
}

async function manifestOf(warehouse: MemoryWarehouse, seq: number): Promise<Manifest> {
  return parseManifest(await warehouse.open(publishedPath('wh', 'views', seq)), 'test');
}

/** The final data files: path → bytes. */
function dataFiles(warehouse: MemoryWarehouse): Map<string, string> {
  return new Map(warehouse.filesUnder('wh/views/').map((path) => [path, warehouse.files.get(path)!.toString('base64')]));
}

/** Every (partition, offset) in the data files, sorted; a record found twice appears twice. */
async function loadedOffsets(warehouse: MemoryWarehouse): Promise<string[]> {
  const keys: string[] = [];
  for (const path of warehouse.filesUnder('wh/views/hourly/')) {
    const decoded = await decodeDataFile(warehouse.files.get(path)!, 'avro');
    for (const offset of expandOffsets(decoded.metadata['tributary.offsets'] ?? '')) keys.push(`${decoded.metadata['tributary.partition']}/${offset}`);
  }
  return keys.sort();
}

function allOffsets(partitions: number, perPartition: number): string[] {
  return Array.from({ length: partitions }, (_, partition) => Array.from({ length: perPartition }, (__, offset) => `${partition}/${offset}`)).flat().sort();
}

/** The manifest without what names an attempt (the attempt, and staging names it is part of). */
const comparable = (manifest: Manifest): unknown => ({ ...manifest, attempt: '', files: manifest.files.map((file) => ({ ...file, staged: '' })) });

describe('distributed run phases', () => {
  let warehouse: MemoryWarehouse;
  let source: FakeSource;
  beforeEach(() => {
    warehouse = new MemoryWarehouse();
    source = new FakeSource();
    source.addTopic(TOPIC, 4);
  });

  it('plan, one task per partition and commit write the same files and manifest as runLoad', async () => {
    await produce(source, 200, 4);
    const reference = new MemoryWarehouse();
    await runLoad({ ...services(reference, source), acceptGap: false });

    const phase = services(warehouse, source);
    const planned = await plan(phase);
    expect(planned.plan.seq).toBe(1);
    expect(planned.tasks.map((task) => [task.partition.partition, task.partition.start, task.partition.end])).toEqual([
      [0, 0, 50],
      [1, 0, 50],
      [2, 0, 50],
      [3, 0, 50],
    ]);
    // Plans and tasks travel as JSON through the queues.
    const travelled = JSON.parse(JSON.stringify(planned)) as PlannedRun;
    const results = (await runTasks(phase, travelled)).map((result) => JSON.parse(JSON.stringify(result)) as RangeResult);
    const report = await commitPhase(phase, travelled.plan, results);

    expect(report.outcome).toBe('committed');
    expect(report.manifest.attempt).toMatch(new RegExp(`^${planned.plan.run}c[0-9a-f]{8}$`));
    expect(dataFiles(warehouse)).toEqual(dataFiles(reference));
    expect(comparable(await manifestOf(warehouse, 1))).toEqual(comparable(await manifestOf(reference, 1)));
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(4, 50));
    expect(warehouse.filesUnder('wh/_etl/views/staging/')).toEqual([]);
  });

  it('slices of a range (maxRecordsPerTask) are tasks of their own, and give the bytes one task over the range gives', async () => {
    await produce(source, 2_000, 2);
    const sliced = load({ maxRecordsPerTask: 300 });
    const reference = new MemoryWarehouse();
    await runLoad({ ...services(reference, source, { load: sliced }), acceptGap: false });

    const phase = services(warehouse, source, { load: sliced });
    const planned = JSON.parse(JSON.stringify(await plan(phase))) as PlannedRun;
    // 1 000 records per partition: slices [0, 300), [300, 600), [600, 900), [900, 1000).
    expect(planned.tasks.map((task) => [task.partition.partition, task.slice?.start, task.slice?.end])).toEqual(
      [0, 1].flatMap((partition) => [[partition, 0, 300], [partition, 300, 600], [partition, 600, 900], [partition, 900, 1000]]),
    );
    // Workers finish in any order.
    const results = (await runTasks(phase, planned)).reverse();
    expect((await commitPhase(phase, planned.plan, results)).outcome).toBe('committed');
    expect(dataFiles(warehouse)).toEqual(dataFiles(reference));
    expect(comparable(await manifestOf(warehouse, 1))).toEqual(comparable(await manifestOf(reference, 1)));
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(2, 1_000));
    // Each slice has files of its own, named by the slice.
    expect([...dataFiles(reference).keys()].some((path) => path.endsWith('views+1+300+600.avro'))).toBe(true);
  });

  it('a commit refuses results that leave a slice out', async () => {
    await produce(source, 400, 1);
    const phase = services(warehouse, source, { load: load({ maxRecordsPerTask: 150 }) });
    const planned = await plan(phase);
    const results = await runTasks(phase, planned);
    const refusal = await commitPhase(phase, planned.plan, results.slice(1)).then(
      () => undefined,
      (error: unknown) => error as { code: string; message: string },
    );
    expect(refusal?.code).toBe('ETL_TASK_RESULT_MISSING');
    expect(refusal?.message).toContain('views-0 [0, 150)');
  });

  it('a task run twice stages under fresh names; the commit uses one result per range and removes the other staging', async () => {
    await produce(source, 80, 4);
    const phase = services(warehouse, source);
    const planned = await plan(phase);
    const first = await runTasks(phase, planned);
    const again = await taskPhase(phase, planned.tasks[2]!);
    expect(again.staged.files.map((file) => file.path)).toEqual(first[2]?.staged.files.map((file) => file.path));
    const stagedNames = new Set([...first.flatMap((result) => result.staged.files), ...again.staged.files].map((file) => file.staged));
    expect(stagedNames.size).toBe(first.flatMap((result) => result.staged.files).length + again.staged.files.length);

    await commitPhase(phase, planned.plan, [...first, again]);
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(4, 20));
    expect(warehouse.filesUnder('wh/_etl/views/staging/')).toEqual([]);
  });

  it('a commit that crashed after its claim is rolled forward by its retry, which reports it already committed', async () => {
    await produce(source, 80, 4);
    const phase = services(warehouse, source);
    const planned = await plan(phase);
    const results = await runTasks(phase, planned);
    const crashing = commitPhase(
      services(warehouse, source, {
        failpoint: (point) => {
          if (point === 'after-claim') throw new Error('crash after claim');
        },
      }),
      planned.plan,
      results,
    );
    await expect(crashing).rejects.toThrow('crash after claim');
    expect((await readCommitLog(warehouse, 'wh', 'views')).pending).toEqual([1]);

    const retried = await commitPhase(phase, planned.plan, results);
    expect(retried.outcome).toBe('already-committed');
    expect(retried.recovery.rolledForward).toEqual([1]);
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([1]);
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(4, 20));
    // Once more, as a second execution of a finished commit would: still nothing twice.
    expect((await commitPhase(phase, planned.plan, results)).outcome).toBe('already-committed');
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(4, 20));
  });

  it('a commit whose seq another run committed since the plan is fenced and commits nothing', async () => {
    await produce(source, 80, 4);
    const phase = services(warehouse, source);
    const planned = await plan(phase);
    const results = await runTasks(phase, planned);
    await runLoad({ ...services(warehouse, source), acceptGap: false });
    const committed = dataFiles(warehouse);

    await expect(commitPhase(phase, planned.plan, results)).rejects.toMatchObject({
      code: 'ETL_COMMIT_FENCED',
      retriable: false,
      message: expect.stringContaining(`commit 1 of load views was made by another run`) as unknown,
    });
    expect(dataFiles(warehouse)).toEqual(committed);
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([1]);
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(4, 20));
  });

  it('holds the lease while fanning out: a second planner of the load is refused, for now', async () => {
    await produce(source, 8, 4);
    const tree = new MemoryCoordination();
    const outcome = await planPhase(services(warehouse, source, { store: tree.session() }), false, async () => {
      await expect(plan(services(warehouse, source, { store: tree.session() }))).rejects.toMatchObject({ code: 'ETL_LOAD_BUSY', retriable: true });
      return 'fanned out';
    });
    expect(outcome).toBe('fanned out');
    await expect(plan(services(warehouse, source, { store: tree.session() }))).resolves.toMatchObject({ plan: { seq: 1 } });
  });

  it('plans nothing to do when nothing is new, and continues from the last commit', async () => {
    await produce(source, 40, 4);
    const phase = services(warehouse, source);
    const first = await plan(phase);
    await commitPhase(phase, first.plan, await runTasks(phase, first));
    expect((await plan(phase)).tasks).toEqual([]);
    await produce(source, 8, 4, 40);
    const second = await plan(phase);
    expect(second.plan.seq).toBe(2);
    expect(second.tasks.map((task) => [task.partition.start, task.partition.end])).toEqual([
      [10, 12],
      [10, 12],
      [10, 12],
      [10, 12],
    ]);
    await commitPhase(phase, second.plan, await runTasks(phase, second));
    expect((await manifestOf(warehouse, 2)).nextOffsets).toEqual({ views: { '0': 12, '1': 12, '2': 12, '3': 12 } });
    expect(await loadedOffsets(warehouse)).toEqual(allOffsets(4, 12));
  });

  it('reports a partition lost to retention as a problem and leaves it out of the tasks', async () => {
    await produce(source, 40, 4);
    const phase = services(warehouse, source);
    const first = await plan(phase);
    await commitPhase(phase, first.plan, await runTasks(phase, first));
    await produce(source, 40, 4, 40);
    source.deleteBefore(TOPIC, 2, 15);
    const planned = await plan(phase);
    expect(planned.problems.map((problem) => problem.code)).toEqual(['ETL_OFFSETS_LOST']);
    expect(planned.tasks.map((task) => task.partition.partition)).toEqual([0, 1, 3]);
    await commitPhase(phase, planned.plan, await runTasks(phase, planned));
    expect((await manifestOf(warehouse, 2)).nextOffsets['views']).toEqual({ '0': 20, '1': 20, '2': 10, '3': 20 });
  });

  it('fails the commit before claiming when the tasks set aside more records than the load allows', async () => {
    await produce(source, 40, 4);
    source.append(TOPIC, 0, Buffer.from('junk!'), T0);
    source.append(TOPIC, 3, Buffer.from('junk!'), T0);
    const phase = services(warehouse, source, { load: load({ quarantine: { maxRecords: 1 } }) });
    const planned = await plan(phase);
    await expect(commitPhase(phase, planned.plan, await runTasks(phase, planned))).rejects.toMatchObject({ code: 'ETL_QUARANTINE_THRESHOLD', retriable: false });
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([]);
    expect(warehouse.filesUnder('wh/views/')).toEqual([]);
  });

  it('refuses a result of another run or range, and a range without a result, naming them', async () => {
    await produce(source, 40, 4);
    const phase = services(warehouse, source);
    const planned = await plan(phase);
    const results = await runTasks(phase, planned);
    const [first, ...rest] = results;
    expect(() => oneResultPerRange(planned.plan, rest)).toThrow(expect.objectContaining({ code: 'ETL_TASK_RESULT_MISSING', message: expect.stringContaining('has no task result for views-0 [0, 10)') as unknown }));
    expect(() => oneResultPerRange(planned.plan, [...results, { ...first!, run: 'abc123' }])).toThrow(expect.objectContaining({ code: 'ETL_TASK_RESULT_FOREIGN' }));
    expect(() => oneResultPerRange(planned.plan, [...rest, { ...first!, end: 9 }])).toThrow(
      expect.objectContaining({ message: expect.stringContaining('a task result for views-0 [0, 9)') as unknown }),
    );
    expect(oneResultPerRange(planned.plan, [...results, ...results])).toHaveLength(4);
    await expect(commitPhase(phase, planned.plan, rest)).rejects.toMatchObject({ code: 'ETL_TASK_RESULT_MISSING' });
    expect((await readCommitLog(warehouse, 'wh', 'views')).claimed).toEqual([]);
  });
});
