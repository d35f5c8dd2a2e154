/**
 * Reading a load's swap log, `<root>/_etl/<load>/replays/`: `<seq>.pending` claims a swap (kept
 * forever) and `<seq>.json` says it is done (replay-swap.ts writes both), like the commit log.
 */
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { etlError } from '../errors.js';
import { parseCommitName } from '../layout.js';
import { parseReplayManifest, type ReplayManifest } from './manifest.js';
import { replaysDir, swapClaimPath, swapPublishedPath } from './layout.js';

export interface SwapLog {
  /** Claimed seqs, ascending. */
  readonly claimed: readonly number[];
  readonly published: ReadonlySet<number>;
  /** Claimed, not published: a swap to roll forward. */
  readonly pending: readonly number[];
}

export async function readSwapLog(warehouse: WarehouseFileSystem, root: string, load: string): Promise<SwapLog> {
  let names: string[];
  try {
    names = (await warehouse.list(replaysDir(root, load))).map((entry) => entry.name);
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) throw error;
    names = [];
  }
  const claimed = new Set<number>();
  const published = new Set<number>();
  for (const name of names) {
    const parsed = parseCommitName(name);
    if (parsed !== undefined) (parsed.kind === 'claim' ? claimed : published).add(parsed.seq);
  }
  for (const seq of published) {
    if (!claimed.has(seq)) {
      throw etlError(
        'ETL_WAREHOUSE_DAMAGED',
        `replay ${seq} of load ${load} is published (${warehouse.describe(swapPublishedPath(root, load, seq))}) but its claim ${swapClaimPath(root, load, seq)} is missing; ` +
          'claims are never deleted, so the replay log was changed by hand. Restore the claim (a copy of the .json) first',
        { details: { load, seq } },
      );
    }
  }
  const ascending = [...claimed].sort((a, b) => a - b);
  return { claimed: ascending, published, pending: ascending.filter((seq) => !published.has(seq)) };
}

/** The claim of swap `seq` (its full manifest, done or not). */
export async function readSwapClaim(warehouse: WarehouseFileSystem, root: string, load: string, seq: number): Promise<{ manifest: ReplayManifest; bytes: Buffer }> {
  const path = swapClaimPath(root, load, seq);
  const bytes = await warehouse.open(path);
  const manifest = parseReplayManifest(bytes, warehouse.describe(path));
  if (manifest.seq !== seq || manifest.load !== load) {
    throw etlError('ETL_WAREHOUSE_DAMAGED', `${warehouse.describe(path)} holds replay ${manifest.seq} of load ${manifest.load}, not replay ${seq} of ${load}`, { details: { load, seq } });
  }
  return { manifest, bytes };
}
