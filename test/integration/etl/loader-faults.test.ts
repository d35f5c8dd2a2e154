/**
 * The loader fault runs of `npm run chaos -- loader` (test/chaos/loader.ts), short: the NameNode
 * restarted and the DataNode SIGKILLed while a run commits (an HDFS of its own, in a run folder of
 * its own, so the other test files keep the shared one), Redis restarted empty under a scheduled
 * run (a Redis of its own likewise) and two loaders racing for one commit, each scenario's
 * invariant checked in full (exactly once, per-hour manifest counts, committed offsets equal to
 * the data, a run failing while a daemon is down fails with a retriable code, a run completes once
 * it is back).
 *
 * Worker SIGKILLs are covered by test/integration/jobs/worker-crash.test.ts; `npm run chaos --
 * loader` runs every scenario at its full count.
 */
import { describe, expect, it } from 'vitest';
import { createTemporaryRun, openRun, startGuardian, stopRun } from '../../services/run-dir.js';
import type { ServiceAddresses } from '../../services/stack.js';
import { seededRandom } from '../../support/seeded-random.js';
import { formatLoaderLine, runLoaderScenario, type LoaderScenario, type ScenarioOptions } from '../../chaos/loader.js';
import { loaderServices, startLoaderWorld } from '../../chaos/loader-world.js';
import { services, zookeeperAddress } from '../services.js';

const say = (line: string): void => console.info(line);

/** Runs `scenarios` on services `given` from the shared ones; what is missing is started in a run folder of its own. */
async function withWorld(given: (shared: ServiceAddresses) => ServiceAddresses, own: boolean, scenarios: readonly { readonly scenario: LoaderScenario; readonly options: Omit<ScenarioOptions, 'world' | 'say' | 'random'> }[]): Promise<void> {
  const shared = services();
  const run = own ? createTemporaryRun('tributary-loader-faults-') : openRun(shared.runDir);
  if (own) startGuardian(run);
  try {
    const loaderServicesOf = await loaderServices(run, zookeeperAddress().connectString, given(shared), say);
    const world = await startLoaderWorld(loaderServicesOf);
    try {
      for (const { scenario, options } of scenarios) {
        const result = await runLoaderScenario(scenario, { ...options, world, say, random: seededRandom(22) });
        say(formatLoaderLine(result));
        expect(result.violations, scenario).toEqual([]);
        expect(result.faults, `${scenario}: faults injected`).toBeGreaterThanOrEqual(options.count);
        expect([result.lost, result.duplicates], `${scenario}: records lost, duplicates`).toEqual([0, 0]);
        expect(result.produced).toBeGreaterThan(0);
      }
    } finally {
      await world.close();
      await loaderServicesOf.stop();
    }
  } finally {
    if (own) await stopRun(run);
  }
}

describe.concurrent('loader faults', () => {
  it('NameNode restarted, then DataNode SIGKILLed, while a run commits: exactly once; a failed run fails retriable; a run completes once HDFS is back', async () => {
    await withWorld((shared) => ({ runDir: shared.runDir, ...(shared.redis === undefined ? {} : { redis: shared.redis }) }), true, [
      { scenario: 'namenode-restart', options: { count: 1, events: ['claimed'] } },
      { scenario: 'datanode-kill', options: { count: 1, events: ['claimed'] } },
    ]);
  }, 240_000);

  it('Redis restarted empty during a scheduled run: exactly once; the worker and the scheduler survive; the load catches up', async () => {
    await withWorld((shared) => ({ runDir: shared.runDir, ...(shared.hdfs === undefined ? {} : { hdfs: shared.hdfs }) }), true, [
      { scenario: 'redis-restart', options: { count: 1, events: ['staged-file'], lockMs: 4_000, workers: 1 } },
    ]);
  }, 150_000);

  it('two loaders racing for one commit (no lease; a commit job run twice): one commit per window, exactly once', async () => {
    await withWorld((shared) => shared, false, [{ scenario: 'racing-workers', options: { count: 2, raceModes: ['no lease', 'commit job twice'] } }]);
  }, 150_000);
});
