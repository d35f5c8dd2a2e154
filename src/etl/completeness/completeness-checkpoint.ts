/**
 * The completeness checkpoint of a load with an `audit` section (issue #19): what the hour-marker
 * step of the last run settled, so the next run judges only the hours that can still change
 * instead of every hour ever loaded (hours-to-judge.ts says which those are).
 *
 *   <root>/_etl/<load>/completeness/<generation>.json
 *
 *   format          "tributary-etl-completeness-v1"
 *   load            the load's name
 *   generation      this file's number; each run that judged hours writes the next one
 *   commitsThrough  every published commit with seq ≤ this is summed into `records`
 *   replaysThrough  every published replay or rollback with seq ≤ this had its hours judged again
 *   writtenAt       ISO time (information only)
 *   topics          {<topic>: {records: {<YYYY-MM-DDTHH>: n}, open: [<YYYY-MM-DDTHH>…]}}
 *                   records: the hour's records over those commits (what status.ts sums from every
 *                   manifest); open: the hours judged OPEN last time, judged again by the next run.
 *                   Every other hour with records is settled: closed, with its marker written or
 *                   found not to match; it is judged again only when a commit or a replay touches it.
 *
 * Why records of settled hours are kept: a late commit into an old hour needs the hour's total,
 * and reading it back from every manifest is what this file avoids. That is one number per hour
 * of data (about 25 bytes), read and written as one file per run.
 *
 * Writes never overwrite (warehouse.ts): generation g+1 is written under a fresh temp name and
 * renamed to its final name, which fails if another run got there first (then its file stands and
 * ours is dropped: the next run judges from theirs). Generations before g are deleted after the
 * rename, so the folder holds two or three entries. The file is derived data: one that is missing
 * or unreadable makes the next run rebuild it from the manifests, judging every hour as runs did
 * before checkpoints.
 */
import { z } from 'zod';
import { bindOnce, type Logger } from '../../common/logger.js';
import { completenessCheckpointPath, completenessDir, completenessTempPath, parseCompletenessName } from '../layout.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export const CHECKPOINT_FORMAT = 'tributary-etl-completeness-v1';

export interface TopicCompleteness {
  /** Records per hour key over the published commits ≤ commitsThrough. */
  readonly records: Readonly<Record<string, number>>;
  /** Hours still open at the last judgement, ascending: the next run judges them again. */
  readonly open: readonly string[];
}

export interface CompletenessCheckpoint {
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly load: string;
  readonly generation: number;
  readonly commitsThrough: number;
  readonly replaysThrough: number;
  readonly writtenAt: string;
  readonly topics: Readonly<Record<string, TopicCompleteness>>;
}

/** What readCheckpoint found: the newest readable generation, and every entry of the folder (for pruning). */
export interface CheckpointRead {
  readonly checkpoint: CompletenessCheckpoint | undefined;
  /** Generations present, ascending (readable or not). */
  readonly generations: readonly number[];
  /** Names of temp files left by writers that crashed before their rename. */
  readonly temps: readonly string[];
}

const hourKey = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}$/);
const count = z.number().int().nonnegative();

const checkpointSchema = z.strictObject({
  format: z.literal(CHECKPOINT_FORMAT),
  load: z.string().min(1),
  generation: z.number().int().positive(),
  commitsThrough: count,
  replaysThrough: count,
  writtenAt: z.string(),
  topics: z.record(z.string().min(1), z.strictObject({ records: z.record(hourKey, count), open: z.array(hourKey) })),
});

export function serializeCheckpoint(checkpoint: CompletenessCheckpoint): Buffer {
  return Buffer.from(`${JSON.stringify(checkpoint)}\n`, 'utf8');
}

/** The checkpoint in `bytes`, or undefined when it is not one of `load` (damaged, or copied from another load). */
export function parseCheckpoint(bytes: Buffer, load: string): CompletenessCheckpoint | undefined {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  const result = checkpointSchema.safeParse(json);
  if (!result.success || result.data.load !== load) return undefined;
  return result.data;
}

/**
 * The newest readable checkpoint of the load (one list, and one open unless the newest is
 * damaged). An unreadable generation is skipped with a warning: an older one, or a rebuild, is
 * correct, only slower.
 */
export async function readCheckpoint(warehouse: WarehouseFileSystem, root: string, load: string, logger?: Logger): Promise<CheckpointRead> {
  let names: string[];
  try {
    names = (await warehouse.list(completenessDir(root, load))).map((entry) => entry.name);
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return { checkpoint: undefined, generations: [], temps: [] };
    throw error;
  }
  const generations = names.flatMap((name) => parseCompletenessName(name) ?? []).sort((a, b) => a - b);
  const temps = names.filter((name) => name.endsWith('.tmp'));
  for (const generation of [...generations].reverse()) {
    const path = completenessCheckpointPath(root, load, generation);
    let bytes: Buffer;
    try {
      bytes = await warehouse.open(path);
    } catch (error) {
      // Pruned by a concurrent writer between the list and the open: an older one will do.
      if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) continue;
      throw error;
    }
    const checkpoint = parseCheckpoint(bytes, load);
    if (checkpoint !== undefined && checkpoint.generation === generation) return { checkpoint, generations, temps };
    if (logger !== undefined) bindOnce(logger, { load }).warn({ path: warehouse.describe(path), event: 'completeness-checkpoint-unreadable' }, 'completeness checkpoint unreadable: an older one is used, or the hours are judged from the manifests');
  }
  return { checkpoint: undefined, generations, temps };
}

/**
 * Writes `checkpoint` (its generation one above every generation in `found`) and deletes the
 * generations before the previous one and the temps that `found` listed. Resolves false when
 * another writer took that generation first (its file stands).
 */
export async function writeCheckpoint(warehouse: WarehouseFileSystem, root: string, attempt: string, checkpoint: CompletenessCheckpoint, found: CheckpointRead): Promise<boolean> {
  const { load, generation } = checkpoint;
  const temp = completenessTempPath(root, load, generation, attempt);
  await warehouse.create(temp, serializeCheckpoint(checkpoint));
  try {
    await warehouse.rename(temp, completenessCheckpointPath(root, load, generation));
  } catch (error) {
    await warehouse.delete(temp).catch(() => false);
    if (hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) return false;
    throw error;
  }
  // The previous generation stays, so a reader that listed before this rename still finds a file.
  for (const older of found.generations) if (older < generation - 1) await warehouse.delete(completenessCheckpointPath(root, load, older));
  for (const name of found.temps) await warehouse.delete(`${completenessDir(root, load)}/${name}`);
  return true;
}
