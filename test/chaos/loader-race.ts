/**
 * A commit job run twice at once (racing-workers, third way): what BullMQ does when a worker
 * stalls past its lock while still alive, or when two workers lose sight of each other's lease.
 * One run is planned and its tasks staged (the phases of jobs/, src/etl/load/phases.ts), then two
 * commits of that run start together, each with a lease store of its own, so no lease keeps them
 * apart: only the commit claim can. Each answers its outcome (`committed`, `already-committed`)
 * or the code it failed with.
 */
import { MemoryCoordination } from '../../src/coordination/memory-store.js';
import { isTributaryError } from '../../src/common/errors.js';
import { parseLoadFile } from '../../src/etl/load-file.js';
import { commitPhase, planPhase, taskPhase, type PlannedRun } from '../../src/etl/load/phases.js';
import { withLoadServices } from '../../jobs/src/load-services.js';
import { readFile } from 'node:fs/promises';
import { silent, type ChaosLoad } from './loader-world.js';

export async function raceCommitJobs(load: ChaosLoad): Promise<{ readonly ending: string; readonly said: string }[]> {
  const definition = parseLoadFile(await readFile(load.file, 'utf8'), load.file);
  return withLoadServices(definition, silent, async (services) => {
    const planned = await planPhase({ ...services, store: new MemoryCoordination({ logger: silent }).session(), numberRuns: false }, false, async (run: PlannedRun) => run);
    if (planned.tasks.length === 0) return [0, 1].map(() => ({ ending: 'nothing new', said: '' }));
    const results = await Promise.all(planned.tasks.map((task) => taskPhase(services, task)));
    const commit = async (): Promise<{ ending: string; said: string }> => {
      try {
        const report = await commitPhase({ ...services, store: new MemoryCoordination({ logger: silent }).session(), numberRuns: false }, planned.plan, results);
        return { ending: report.outcome, said: '' };
      } catch (error) {
        return { ending: isTributaryError(error) ? error.code : 'unexpected failure', said: (error as Error).stack ?? String(error) };
      }
    };
    return Promise.all([commit(), commit()]);
  });
}
