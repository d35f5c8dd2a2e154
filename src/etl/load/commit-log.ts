/**
 * Reading a load's commit log: `<root>/_etl/<load>/commits/`, where `<seq>.pending` is the claim
 * of commit <seq> (kept forever) and `<seq>.json` its publication (commit.ts writes both). The
 * warehouse is the only record of what was loaded: no offsets live anywhere else.
 */
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { etlError } from '../errors.js';
import { claimPath, commitsDir, parseCommitName, publishedPath } from '../layout.js';
import { parseManifest, type Manifest } from './manifest.js';

export interface CommitLog {
  /** Claimed seqs, ascending. */
  readonly claimed: readonly number[];
  readonly published: ReadonlySet<number>;
  /** Claimed but not yet published: a commit to roll forward. */
  readonly pending: readonly number[];
  /** The highest claimed seq (0 when none): the next commit is this + 1. */
  readonly lastClaimed: number;
  /** The highest published seq (0 when none). */
  readonly lastPublished: number;
}

export async function readCommitLog(warehouse: WarehouseFileSystem, root: string, load: string): Promise<CommitLog> {
  let names: string[];
  try {
    names = (await warehouse.list(commitsDir(root, load))).map((entry) => entry.name);
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) names = [];
    else throw error;
  }
  const claimed = new Set<number>();
  const published = new Set<number>();
  for (const name of names) {
    const parsed = parseCommitName(name);
    if (parsed === undefined) continue;
    (parsed.kind === 'claim' ? claimed : published).add(parsed.seq);
  }
  for (const seq of published) {
    if (!claimed.has(seq)) {
      throw etlError(
        'ETL_WAREHOUSE_DAMAGED',
        `commit ${seq} of load ${load} is published (${warehouse.describe(publishedPath(root, load, seq))}) but its claim ${claimPath(root, load, seq)} is missing; ` +
          'claims are never deleted, so the commit log was changed by hand. Restore the claim (a copy of the .json) before running the load',
        { details: { load, seq } },
      );
    }
  }
  const ascending = [...claimed].sort((a, b) => a - b);
  return {
    claimed: ascending,
    published,
    pending: ascending.filter((seq) => !published.has(seq)),
    lastClaimed: ascending.at(-1) ?? 0,
    lastPublished: Math.max(0, ...published),
  };
}

export async function readManifestAt(warehouse: WarehouseFileSystem, path: string): Promise<{ manifest: Manifest; bytes: Buffer }> {
  const bytes = await warehouse.open(path);
  return { manifest: parseManifest(bytes, warehouse.describe(path)), bytes };
}

/** The claim of commit `seq` (its full manifest, published or not). */
export async function readClaim(warehouse: WarehouseFileSystem, root: string, load: string, seq: number): Promise<{ manifest: Manifest; bytes: Buffer }> {
  const found = await readManifestAt(warehouse, claimPath(root, load, seq));
  if (found.manifest.seq !== seq || found.manifest.load !== load) {
    throw etlError('ETL_WAREHOUSE_DAMAGED', `${warehouse.describe(claimPath(root, load, seq))} holds commit ${found.manifest.seq} of load ${found.manifest.load}, not commit ${seq} of ${load}`, {
      details: { load, seq },
    });
  }
  return found;
}
