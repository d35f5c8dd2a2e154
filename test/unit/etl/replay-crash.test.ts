/**
 * Crash safety of replays and rollbacks on in-process fakes: the process dies at every warehouse
 * mutation of a replay in turn (that operation and all later ones fail), and whoever comes next
 * finishes or forgets it. A swap that was claimed is rolled forward (by the next run, the next
 * replay or the next rollback); one that was not leaves the hours as they were. Either way every
 * hour folder ends byte-identical to a clean replay's (or to the original), records are in their
 * hours exactly once, and no staging is left.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readClaim, readCommitLog } from '../../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { decodeDataFile } from '../../../src/etl/files/data-files.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { replayWindow } from '../../../src/etl/replay/replay.js';
import { readSwapLog } from '../../../src/etl/replay/log.js';
import { swapClaimPath } from '../../../src/etl/replay/layout.js';
import { rollbackHours } from '../../../src/etl/replay/rollback.js';
import type { SwapFailpointName } from '../../../src/etl/replay/failpoints.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { startTestRegistry, type TestRegistry } from '../registry/serde-registry.js';
import { FakeSource, MemoryWarehouse } from './loader-fakes.js';
import { BUGGY, Crash, CrashingWarehouse, FIXED, copyOf, HOURS, ROOT, SCHEMA, TOPIC, hourFolder, loadWith, produce, replayOptions, rollbackOptions, runOnce, snapshot, type Produced } from './replay-fixture.js';

let registry: TestRegistry;
let client: RegistryClient;
let source: FakeSource;
let produced: Produced[];
let buggy: LoadDefinition;
let fixed: LoadDefinition;
/** The warehouse after two runs, before any replay. */
let loaded: MemoryWarehouse;
/** Hour folders after a clean replay of hours 10 and 11, and before it. */
let replayedHours: Record<string, string>;
let originalHours: Record<string, string>;
let replayMutations: number;
let rollbackMutations: number;

async function exactlyOnce(warehouse: MemoryWarehouse): Promise<void> {
  const found = new Map<string, string>();
  for (const path of warehouse.filesUnder(`${ROOT}/${TOPIC}/hourly/`)) {
    const decoded = await decodeDataFile(warehouse.files.get(path)!, 'avro');
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    const hour = path.split('/').slice(3, 7).join('/');
    offsets.forEach((offset) => {
      const key = `${decoded.metadata['tributary.partition']}/${offset}`;
      if (found.has(key)) throw new Error(`record ${key} twice`);
      found.set(key, hour);
    });
  }
  expect(new Map(produced.map((record) => [`${record.partition}/${record.offset}`, record.hour.replace(/-/g, '/').replace('T', '/')]))).toEqual(found);
}

/**
 * No staging is left but what the protocol must leave (`leftoverAllowed`, after a crash that came
 * before a claim): a commit's staging whose seq is unpublished (commit.ts removes staging of
 * published seqs only), and the new versions of a replay that died before claiming its swap,
 * fenced or not. Nobody can tell those from a replay still working until a later commit exists
 * (replay-swap.ts removeDeadSwapStaging), so they wait for one.
 */
async function noStaging(warehouse: MemoryWarehouse, leftoverAllowed: boolean, at: number): Promise<void> {
  const log = await readCommitLog(warehouse, ROOT, 'views');
  const swaps = await readSwapLog(warehouse, ROOT, 'views');
  const folders = (prefix: string): string[] => [...new Set(warehouse.filesUnder(prefix).map((path) => path.slice(prefix.length).split('/')[0] ?? ''))];
  const commitLeft = folders(`${ROOT}/_etl/views/staging/`);
  const swapLeft = folders(`${ROOT}/_etl/views/replays/staging/`);
  if (commitLeft.length === 0 && swapLeft.length === 0) return;
  expect(leftoverAllowed, `crash at mutation ${at}: staging left ${[...commitLeft, ...swapLeft].join(', ')}`).toBe(true);
  for (const folder of commitLeft) expect(log.published.has(Number(folder.split('-')[0])), `crash at mutation ${at}: ${folder}`).toBe(false);
  for (const folder of swapLeft) {
    const [seqText, attempt] = folder.split('-');
    const seq = Number(seqText);
    expect(swaps.claimed, `crash at mutation ${at}: ${folder}`).not.toContain(seq);
    expect(seq, `crash at mutation ${at}: ${folder}`).toBeGreaterThanOrEqual(log.lastClaimed);
    if (seq === log.lastClaimed) expect((await readClaim(warehouse, ROOT, 'views', seq)).manifest.attempt, `crash at mutation ${at}: ${folder}`).toBe(attempt);
  }
}

const services = (): { registry: RegistryClient; source: FakeSource } => ({ registry: client, source });

beforeAll(async () => {
  registry = await startTestRegistry();
  client = registry.client();
  await client.register(`${TOPIC}-value`, SCHEMA);
  source = new FakeSource();
  source.addTopic(TOPIC, 2);
  buggy = loadWith(registry.url, BUGGY);
  fixed = loadWith(registry.url, FIXED);
  loaded = new MemoryWarehouse();
  produced = await produce(source, client, 24, 2);
  await runOnce(buggy, loaded, services());
  produced.push(...(await produce(source, client, 8, 2, 24)));
  await runOnce(buggy, loaded, services());
  originalHours = snapshot(loaded, `${ROOT}/${TOPIC}`);

  const counting = new CrashingWarehouse(copyOf(loaded), Number.POSITIVE_INFINITY);
  await replayWindow(replayOptions(fixed, counting, services(), HOURS[0], HOURS[2]));
  replayMutations = counting.mutations;
  replayedHours = snapshot(counting.inner, `${ROOT}/${TOPIC}`);
  const rollbackCounting = new CrashingWarehouse(counting.inner, Number.POSITIVE_INFINITY);
  await rollbackHours(rollbackOptions(fixed, rollbackCounting, HOURS[0]));
  rollbackMutations = rollbackCounting.mutations;
});
afterAll(async () => {
  await registry.close();
});

let warehouse: MemoryWarehouse;
beforeEach(() => {
  warehouse = copyOf(loaded);
});

describe('the setting', () => {
  it('a clean replay changes hours 10 and 11 and not 12, through enough mutations to crash at', () => {
    expect(replayMutations).toBeGreaterThan(20);
    expect(Object.keys(replayedHours)).toEqual(Object.keys(originalHours));
    const changed = Object.keys(replayedHours).filter((path) => replayedHours[path] !== originalHours[path]);
    expect(new Set(changed.map((path) => path.split('/')[4]))).toEqual(new Set(['10', '11']));
  });
});

describe('a replay that dies at any warehouse mutation', () => {
  const points = (): number[] => Array.from({ length: replayMutations }, (_, index) => index + 1);

  async function crashReplay(at: number): Promise<boolean> {
    const crashing = new CrashingWarehouse(warehouse, at);
    const outcome = await replayWindow(replayOptions(fixed, crashing, services(), HOURS[0], HOURS[2])).then(
      () => 'finished',
      (error: unknown) => (error instanceof Crash ? 'crashed' : error),
    );
    if (outcome !== 'crashed' && outcome !== 'finished') throw outcome;
    expect(crashing.crashed).toBe(true);
    return (await warehouse.stat(swapClaimPath(ROOT, 'views', 3))) !== undefined;
  }

  it('is finished by the next run if it was claimed, else forgotten: hours as a clean replay left them, or as before', async () => {
    const outcomes = { claimed: 0, unclaimed: 0 };
    for (const at of points()) {
      warehouse = copyOf(loaded);
      const claimed = await crashReplay(at);
      outcomes[claimed ? 'claimed' : 'unclaimed'] += 1;
      const run = await runOnce(fixed, warehouse, services());
      expect(run.outcome, `crash at mutation ${at}`).toBe('nothing-to-load');
      expect(snapshot(warehouse, `${ROOT}/${TOPIC}`), `crash at mutation ${at} (claimed: ${claimed})`).toEqual(claimed ? replayedHours : originalHours);
      expect((await readSwapLog(warehouse, ROOT, 'views')).pending, `crash at mutation ${at}`).toEqual([]);
      await exactlyOnce(warehouse);
      await noStaging(warehouse, !claimed, at);
    }
    // Both kinds of crash happened: before the claim (during staging and fencing) and after it.
    expect(outcomes.claimed).toBeGreaterThan(5);
    expect(outcomes.unclaimed).toBeGreaterThan(5);
  }, 300_000);

  it('is finished by running the same replay again, which then reports it as its own (or, once published, publishes nothing)', async () => {
    for (const at of points()) {
      warehouse = copyOf(loaded);
      const claimed = await crashReplay(at);
      const published = (await readSwapLog(warehouse, ROOT, 'views')).published.size > 0;
      const again = await replayWindow(replayOptions(fixed, warehouse, services(), HOURS[0], HOURS[2]));
      expect(again.outcome, `crash at mutation ${at}`).toBe(claimed ? (published ? 'unchanged' : 'rolled-forward') : 'swapped');
      // One new version either way: the hours are at version 2, and a second replay was never published.
      expect((await readSwapLog(warehouse, ROOT, 'views')).claimed, `crash at mutation ${at}`).toHaveLength(1);
      expect(snapshot(warehouse, `${ROOT}/${TOPIC}`), `crash at mutation ${at}`).toEqual(replayedHours);
      await exactlyOnce(warehouse);
      await noStaging(warehouse, false, at);
    }
  }, 300_000);

  it('is finished (or forgotten) by a rollback, which then restores the original hours', async () => {
    for (const at of points()) {
      warehouse = copyOf(loaded);
      const claimed = await crashReplay(at);
      await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[0])).catch((error: unknown) => {
        // Not claimed: nothing was replayed, so there is nothing to roll back.
        expect((error as { code?: string }).code, `crash at mutation ${at}`).toBe('ETL_ROLLBACK_NO_VERSION');
      });
      await rollbackHours(rollbackOptions(fixed, warehouse, HOURS[1])).catch((error: unknown) => {
        expect((error as { code?: string }).code, `crash at mutation ${at}`).toBe('ETL_ROLLBACK_NO_VERSION');
      });
      expect(snapshot(warehouse, `${ROOT}/${TOPIC}`), `crash at mutation ${at}`).toEqual(originalHours);
      await exactlyOnce(warehouse);
      await noStaging(warehouse, !claimed, at);
    }
  }, 300_000);
});

describe('a rollback that dies at any warehouse mutation', () => {
  it('is finished by the next run if it was claimed; the hour is then the original byte for byte', async () => {
    const replayed = copyOf(loaded);
    await replayWindow(replayOptions(fixed, replayed, services(), HOURS[0], HOURS[2]));
    const seq = (await readCommitLog(replayed, ROOT, 'views')).lastClaimed + 1;
    for (let at = 1; at <= rollbackMutations; at += 1) {
      warehouse = copyOf(replayed);
      const crashing = new CrashingWarehouse(warehouse, at);
      await rollbackHours(rollbackOptions(fixed, crashing, HOURS[0])).catch((error: unknown) => {
        if (!(error instanceof Crash)) throw error;
      });
      const claimed = (await warehouse.stat(swapClaimPath(ROOT, 'views', seq))) !== undefined;
      await runOnce(fixed, warehouse, services());
      const ten = snapshot(warehouse, hourFolder(HOURS[0]));
      expect(ten, `crash at mutation ${at}`).toEqual(snapshot(claimed ? loaded : replayed, hourFolder(HOURS[0])));
      await exactlyOnce(warehouse);
      await noStaging(warehouse, !claimed, at);
    }
  }, 300_000);
});

describe('failpoints', () => {
  it.each<SwapFailpointName>(['swap-after-stage', 'swap-after-fence', 'swap-after-claim', 'swap-after-rename', 'swap-before-publish', 'swap-after-publish'])(
    'a replay stopped at %s is finished by the next replay',
    async (point) => {
      const stop = (reached: SwapFailpointName): void => {
        if (reached === point) throw new Crash();
      };
      await expect(replayWindow(replayOptions(fixed, warehouse, services(), HOURS[0], HOURS[2], { failpoint: stop }))).rejects.toBeInstanceOf(Crash);
      const again = await replayWindow(replayOptions(fixed, warehouse, services(), HOURS[0], HOURS[2]));
      const outcome = point === 'swap-after-publish' ? 'unchanged' : ['swap-after-claim', 'swap-after-rename', 'swap-before-publish'].includes(point) ? 'rolled-forward' : 'swapped';
      expect(again.outcome).toBe(outcome);
      expect(snapshot(warehouse, `${ROOT}/${TOPIC}`)).toEqual(replayedHours);
      await exactlyOnce(warehouse);
      await noStaging(warehouse, false, 0);
    },
  );
});
