/**
 * Replays and rollbacks run again by a user who cannot tell whether a killed one finished, on the
 * loader's in-process fakes: a replay whose output is what is live adds no version (per hour, and
 * not at all when every hour is identical); a replay stopped at any of its failpoints and run again
 * leaves exactly one new version, whose rollback returns the bytes from before the fix; a rollback
 * run again (after it finished, or stopped at any failpoint) lands where one rollback does; rolling
 * back further is asked for with `toVersion`, and is as safe to repeat.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import type { SwapFailpointName } from '../../../src/etl/replay/failpoints.js';
import { hourStateKey, readLoadHistory } from '../../../src/etl/replay/history.js';
import { readSwapLog } from '../../../src/etl/replay/log.js';
import { replayWindow } from '../../../src/etl/replay/replay.js';
import { formatSwapReport } from '../../../src/etl/replay/report.js';
import { rollbackHours } from '../../../src/etl/replay/rollback.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { startTestRegistry, type TestRegistry } from '../registry/serde-registry.js';
import { FakeSource, MemoryWarehouse } from './loader-fakes.js';
import { BUGGY, Crash, FIXED, HOUR, HOURS, ROOT, SCHEMA, TOPIC, copyOf, hourFolder, loadWith, produce, replayOptions, rollbackOptions, runOnce, snapshot, swappedManifest } from './replay-fixture.js';

/** A second fix: `page` becomes a constant, so hours replayed with it differ from the first fix. */
const CONSTANT = 'transform:\n  fields:\n    id: id\n    time: time\n    page: { const: home }\n';
const REPLAY_POINTS: readonly SwapFailpointName[] = ['swap-after-stage', 'swap-after-fence', 'swap-after-claim', 'swap-after-rename', 'swap-before-publish', 'swap-after-publish'];
/** A rollback stages no data files, so it never passes swap-after-stage. */
const ROLLBACK_POINTS: readonly SwapFailpointName[] = REPLAY_POINTS.filter((point) => point !== 'swap-after-stage');

let registry: TestRegistry;
let client: RegistryClient;
let source: FakeSource;
let buggy: LoadDefinition;
let fixed: LoadDefinition;
/** After two runs with the buggy mapping. */
let loaded: MemoryWarehouse;
let originalHours: Record<string, string>;
let warehouse: MemoryWarehouse;

const services = (): { registry: RegistryClient; source: FakeSource } => ({ registry: client, source });
const replay = (load: LoadDefinition, from: string, to: string, extra = {}): ReturnType<typeof replayWindow> => replayWindow(replayOptions(load, warehouse, services(), from, to, extra));
const everything = (): Record<string, string> => snapshot(warehouse, ROOT);
const hours = (): Record<string, string> => snapshot(warehouse, `${ROOT}/${TOPIC}`);

/** Stops at `point` by throwing there, as a SIGKILL would stop the CLI. */
function stopAt(point: SwapFailpointName): (reached: SwapFailpointName) => void {
  return (reached) => {
    if (reached === point) throw new Crash();
  };
}

/** Per hour of the topic: its live version and the highest version it has had. */
async function versions(): Promise<Record<string, string>> {
  const history = await readLoadHistory(warehouse, ROOT, 'views');
  return Object.fromEntries(HOURS.map((hour) => {
    const state = history.hours.get(hourStateKey(TOPIC, hour));
    return [hour, `${state?.live}/${state?.maxVersion}`];
  }));
}

async function failure(promise: Promise<unknown>): Promise<TributaryError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('it succeeded');
}

beforeAll(async () => {
  registry = await startTestRegistry();
  client = registry.client();
  await client.register(`${TOPIC}-value`, SCHEMA);
  source = new FakeSource();
  source.addTopic(TOPIC, 2);
  buggy = loadWith(registry.url, BUGGY);
  fixed = loadWith(registry.url, FIXED);
  loaded = new MemoryWarehouse();
  await produce(source, client, 24, 2);
  await runOnce(buggy, loaded, services());
  await produce(source, client, 8, 2, 24);
  await runOnce(buggy, loaded, services());
  originalHours = snapshot(loaded, `${ROOT}/${TOPIC}`);
});
afterAll(async () => {
  await registry.close();
});
beforeEach(() => {
  warehouse = copyOf(loaded);
});

describe('a replay run again', () => {
  it('after it finished publishes nothing, changes nothing, and says per hour that the output is the live version', async () => {
    expect((await replay(fixed, HOURS[0], HOURS[2])).outcome).toBe('swapped');
    const after = everything();
    const commits = await readCommitLog(warehouse, ROOT, 'views');

    const again = await replay(fixed, HOURS[0], HOURS[2]);
    expect(again.outcome).toBe('unchanged');
    expect(again.manifest).toBeUndefined();
    expect(again.unchanged).toEqual([
      { topic: TOPIC, hour: HOURS[0], version: 2, why: 'identical' },
      { topic: TOPIC, hour: HOURS[1], version: 2, why: 'identical' },
    ]);
    // Not even fenced: no commit, no swap, no staging; every byte of the warehouse as it was.
    expect(everything()).toEqual(after);
    expect(await readCommitLog(warehouse, ROOT, 'views')).toEqual(commits);
    expect((await readSwapLog(warehouse, ROOT, 'views')).claimed).toEqual([3]);
    expect(await versions()).toEqual({ [HOURS[0]]: '2/2', [HOURS[1]]: '2/2', [HOURS[2]]: '1/1' });

    const text = formatSwapReport(again, 'jobs/views.yaml');
    expect(text).toContain('replay of load views, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z): every hour is identical to its live version; nothing published');
    expect(text).toContain(`hour views ${HOURS[0]}: output identical to the live version 2; nothing published`);
    expect(text).toContain(`hour views ${HOURS[1]}: output identical to the live version 2; nothing published`);

    // One rollback per hour still returns the hours to the bytes from before the fix.
    const rollback = await rollbackHours({ ...rollbackOptions(fixed, warehouse, HOURS[0]), to: new Date(Date.parse(`${HOURS[0]}:00:00Z`) + 2 * HOUR) });
    expect(swappedManifest(rollback).hours.map((hour) => [hour.hour, hour.fromVersion, hour.toVersion])).toEqual([
      [HOURS[0], 2, 1],
      [HOURS[1], 2, 1],
    ]);
    expect(hours()).toEqual(originalHours);
  });

  it('swaps only the hours whose output differs; the identical ones are named and left alone', async () => {
    await replay(fixed, HOURS[0], HOURS[2]);
    const wider = await replay(fixed, HOURS[0], '2026-11-29T13');
    expect(wider.outcome).toBe('swapped');
    expect(swappedManifest(wider).hours.map((hour) => [hour.hour, hour.fromVersion, hour.toVersion])).toEqual([[HOURS[2], 1, 2]]);
    expect(wider.unchanged.map((hour) => [hour.hour, hour.version, hour.why])).toEqual([
      [HOURS[0], 2, 'identical'],
      [HOURS[1], 2, 'identical'],
    ]);
    const text = formatSwapReport(wider, 'jobs/views.yaml');
    expect(text).toMatch(new RegExp(`views\\s+${HOURS[2]}\\s+1 → 2`));
    expect(text).toContain(`hour views ${HOURS[0]}: output identical to the live version 2; nothing published`);
    expect(text).not.toMatch(new RegExp(`views\\s+${HOURS[0]}\\s+2 → 3`));
    expect(await versions()).toEqual({ [HOURS[0]]: '2/2', [HOURS[1]]: '2/2', [HOURS[2]]: '2/2' });
  });

  it('after late records arrived in a replayed hour still finds it identical (runs wrote them with the fixed load)', async () => {
    await replay(fixed, HOURS[0], HOURS[2]);
    await produce(source, client, 4, 2, 600, 1);
    expect((await runOnce(fixed, warehouse, services())).outcome).toBe('committed');
    const after = hours();
    const again = await replay(fixed, HOURS[0], HOURS[2]);
    expect(again.outcome).toBe('unchanged');
    expect(hours()).toEqual(after);
  });

  it('with another fix makes the next version, as before', async () => {
    await replay(fixed, HOURS[0], HOURS[2]);
    const second = await replay(loadWith(registry.url, CONSTANT), HOURS[0], HOURS[2]);
    expect(swappedManifest(second).hours.map((hour) => [hour.hour, hour.fromVersion, hour.toVersion])).toEqual([
      [HOURS[0], 2, 3],
      [HOURS[1], 2, 3],
    ]);
  });

  it.each(REPLAY_POINTS)('stopped at %s, then run again (twice), leaves exactly one new version, whose rollback returns the bytes from before the fix', async (point) => {
    await expect(replay(fixed, HOURS[0], HOURS[2], { failpoint: stopAt(point) })).rejects.toBeInstanceOf(Crash);
    const again = await replay(fixed, HOURS[0], HOURS[2]);
    expect(again.outcome).toBe(point === 'swap-after-publish' ? 'unchanged' : ['swap-after-claim', 'swap-after-rename', 'swap-before-publish'].includes(point) ? 'rolled-forward' : 'swapped');
    const replayed = hours();
    expect((await replay(fixed, HOURS[0], HOURS[2])).outcome).toBe('unchanged');
    expect(hours()).toEqual(replayed);

    const swaps = await readSwapLog(warehouse, ROOT, 'views');
    expect(swaps.claimed).toHaveLength(1);
    expect(swaps.pending).toEqual([]);
    expect(await versions()).toEqual({ [HOURS[0]]: '2/2', [HOURS[1]]: '2/2', [HOURS[2]]: '1/1' });
    for (const hour of [HOURS[0], HOURS[1]]) expect(snapshot(warehouse, hourFolder(hour))).not.toEqual(snapshot(loaded, hourFolder(hour)));

    for (const hour of [HOURS[0], HOURS[1]]) expect((await rollbackHours(rollbackOptions(fixed, warehouse, hour))).outcome).toBe('swapped');
    expect(hours()).toEqual(originalHours);
  });
});

describe('a rollback run again', () => {
  beforeEach(async () => {
    await replay(fixed, HOURS[0], HOURS[2]);
  });
  const both = (extra = {}): Parameters<typeof rollbackHours>[0] => ({ ...rollbackOptions(fixed, warehouse, HOURS[0], extra), to: new Date(Date.parse(`${HOURS[2]}:00:00Z`)) });

  it('after it finished changes nothing and says the hours were rolled back already', async () => {
    expect((await rollbackHours(both())).outcome).toBe('swapped');
    expect(hours()).toEqual(originalHours);
    const after = everything();
    const commits = await readCommitLog(warehouse, ROOT, 'views');

    const again = await rollbackHours(both());
    expect(again.outcome).toBe('unchanged');
    expect(again.unchanged.map((hour) => hour.why)).toEqual(['rolled-back', 'rolled-back']);
    expect(everything()).toEqual(after);
    expect(await readCommitLog(warehouse, ROOT, 'views')).toEqual(commits);
    expect(await versions()).toEqual({ [HOURS[0]]: '1/2', [HOURS[1]]: '1/2', [HOURS[2]]: '1/1' });
    const text = formatSwapReport(again, 'jobs/views.yaml');
    expect(text).toContain('rollback of load views, hours [2026-11-29T10:00:00.000Z, 2026-11-29T12:00:00.000Z): no hour needs rolling back; nothing published');
    expect(text).toContain(`hour views ${HOURS[0]}: already rolled back by rollback 4 (version 2 → 1); version 1 is live; nothing changed; it has no earlier version`);
  });

  it.each(ROLLBACK_POINTS)('stopped at %s, then run again, lands where one rollback does', async (point) => {
    const clean = copyOf(warehouse);
    const saved = warehouse;
    warehouse = clean;
    await rollbackHours(both());
    const once = { hours: hours(), versions: await versions() };
    warehouse = saved;

    await expect(rollbackHours(both({ failpoint: stopAt(point) }))).rejects.toBeInstanceOf(Crash);
    const again = await rollbackHours(both());
    expect(again.outcome).toBe(point === 'swap-after-publish' ? 'unchanged' : ['swap-after-claim', 'swap-after-rename', 'swap-before-publish'].includes(point) ? 'rolled-forward' : 'swapped');
    expect(hours()).toEqual(once.hours);
    expect(hours()).toEqual(originalHours);
    expect(await versions()).toEqual(once.versions);
    // And a third time: still where one rollback leaves the hours.
    expect((await rollbackHours(both())).outcome).toBe('unchanged');
    expect(hours()).toEqual(originalHours);
    expect((await readSwapLog(warehouse, ROOT, 'views')).pending).toEqual([]);
  });

  it('goes further back only when asked with toVersion, which is as safe to repeat', async () => {
    const firstFix = snapshot(warehouse, hourFolder(HOURS[0]));
    await replay(loadWith(registry.url, CONSTANT), HOURS[0], HOURS[1]);
    expect((await versions())[HOURS[0]]).toBe('3/3');

    // Straight back to version 1 skips version 2: refused, naming the step to take first.
    const tooFar = await failure(rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0], { toVersion: 1 })));
    expect(tooFar.code).toBe('ETL_ROLLBACK_NO_VERSION');
    expect(tooFar.message).toContain(`hour ${HOURS[0]} of views is at version 3, and version 1 is further back than the one before it (2): roll back one version at a time, --to-version 2 first`);

    expect(swappedManifest(await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0]))).hours.map((hour) => [hour.fromVersion, hour.toVersion])).toEqual([[3, 2]]);
    expect(snapshot(warehouse, hourFolder(HOURS[0]))).toEqual(firstFix);
    const repeated = await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0]));
    expect(repeated.outcome).toBe('unchanged');
    expect(repeated.unchanged).toEqual([{ topic: TOPIC, hour: HOURS[0], version: 2, why: 'rolled-back', by: { seq: 5, fromVersion: 3, toVersion: 2 }, further: 1 }]);
    expect(formatSwapReport(repeated, 'jobs/views.yaml')).toContain(`To go back further on purpose: tributary etl rollback --load jobs/views.yaml --hour ${HOURS[0]} --to-version 1`);

    const further = await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0], { toVersion: 1 }));
    expect(swappedManifest(further).hours.map((hour) => [hour.fromVersion, hour.toVersion])).toEqual([[2, 1]]);
    expect(snapshot(warehouse, hourFolder(HOURS[0]))).toEqual(snapshot(loaded, hourFolder(HOURS[0])));
    const furtherAgain = await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0], { toVersion: 1 }));
    expect(furtherAgain.outcome).toBe('unchanged');
    expect(furtherAgain.unchanged).toEqual([{ topic: TOPIC, hour: HOURS[0], version: 1, why: 'at-version' }]);
    expect(formatSwapReport(furtherAgain, 'jobs/views.yaml')).toContain(`hour views ${HOURS[0]}: version 1 is live already; nothing changed`);
    expect(snapshot(warehouse, hourFolder(HOURS[0]))).toEqual(snapshot(loaded, hourFolder(HOURS[0])));

    const never = await failure(rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0], { toVersion: 7 })));
    expect(never.message).toContain(`hour ${HOURS[0]} of views is at version 1 and has no earlier version`);
  });
});
