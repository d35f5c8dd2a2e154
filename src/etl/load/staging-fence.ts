/**
 * A stale run whose staging folder is removed under it. Once commit <seq> is published, recovery
 * and the committing run delete every staging folder of <seq> (commit.ts, removeDeadStaging):
 * they can never commit. A run that planned the same seq and is still staging (two runs started
 * together without a lease between them, a task or commit job run twice) then sees its next
 * write fail with WAREHOUSE_NOT_FOUND ("no such file or directory. Check the path"), which sends
 * an operator looking for a path problem, and which a job fails for good as an unexpected
 * failure of the warehouse. What actually happened is that its plan is stale: when the seq is
 * claimed by then, the failure is ETL_COMMIT_FENCED, as the claim step would have said.
 */
import { etlError } from '../errors.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { readCommitLog } from './commit-log.js';

export interface StagingRun {
  readonly warehouse: WarehouseFileSystem;
  readonly root: string;
  readonly load: string;
  /** The commit the run stages for. */
  readonly seq: number;
}

/** Runs `work` (staging of `run.seq`); a WAREHOUSE_NOT_FOUND with the seq claimed by then becomes ETL_COMMIT_FENCED. */
export async function fencedWhenStagingTaken<T>(run: StagingRun, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) throw error;
    const log = await readCommitLog(run.warehouse, run.root, run.load).catch(() => undefined);
    if (log === undefined || log.lastClaimed < run.seq) throw error;
    throw etlError(
      'ETL_COMMIT_FENCED',
      `commit ${run.seq} of load ${run.load} was claimed by another run while this run was still staging its files (that run removed this run's staging as dead), ` +
        "so this run's plan is stale; nothing of this run was committed. Run the load again: it continues from what the other run committed",
      { cause: error, details: { load: run.load, seq: run.seq } },
    );
  }
}
