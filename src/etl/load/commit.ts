/**
 * The commit protocol. Data and offsets become visible together, and a commit happens at most
 * once per seq, whoever crashes or wakes up late:
 *
 * 1. Claim. The full manifest is written under the attempt's staging folder and renamed to
 *    `commits/<seq>.pending`. Rename refuses an existing target, so exactly one run can claim a
 *    seq, and the claim is never removed or renamed: a stale run (paused, lease lost) that planned
 *    from commit seq-1 finds the name taken and stops with ETL_COMMIT_FENCED, however late it
 *    comes. (Renaming the claim to `<seq>.json` would free its name again for such a run.) The
 *    claim is written through a rename, not a create in place, because a create that dies
 *    midway on HDFS would leave a partial file under the claim's name.
 * 2. Rename every staged file to its final name. A rename whose source is gone and whose target
 *    exists with the manifest's length was done before (by this run before a crash, or by
 *    another run rolling forward): it counts as done. Anything else is damage, never skipped.
 * 2b. Format iceberg: one snapshot per table, from the claim alone (iceberg/load-tables.ts); made
 *    at most once, found again by its commit id when a claim is rolled forward twice.
 * 3. Publish: the claim's exact bytes, staged afresh and renamed to `commits/<seq>.json`. If the
 *    name exists already it must hold the same bytes. The claiming run stages that copy in step 1,
 *    beside the claim's own copy and at the same time: on HDFS a create often waits 0.4 s for the
 *    file to close, and two creates at once cost one wait instead of two.
 *
 * Anyone may finish a claimed commit (roll forward) and any number may do so at once: every step
 * is idempotent and refuses to overwrite. Recovery rolls every unpublished claim forward in seq
 * order, then deletes staging folders of published seqs; folders of seqs not yet claimed may
 * belong to a live run and stay until their seq is claimed.
 */
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { bindOnce, type Logger } from '../../common/logger.js';
import { readClaim, readCommitLog, type CommitLog } from './commit-log.js';
import { etlError } from '../errors.js';
import { claimPath, parseStagingName, publishedPath, stagingDir, stagingRoot } from '../layout.js';
import { serializeManifest, type Manifest, type ManifestFile } from './manifest.js';
import { publishClaim } from './publish-claim.js';
import { publishSnapshots } from '../iceberg/load-tables.js';
import { publishDeadLetters } from '../iceberg/dead-letters.js';
import type { CatalogEnvironment } from '../iceberg/load-catalog.js';
import { createUnderFreshName } from './stage.js';

/** Points a failpoint may stop the process at (see failpoints.ts). */
export type CommitPoint = 'after-claim' | 'after-rename' | 'after-table-commit' | 'before-publish' | 'after-publish';

export interface CommitContext {
  readonly warehouse: WarehouseFileSystem;
  readonly root: string;
  readonly load: string;
  /** This process's attempt: names its staging folder. */
  readonly attempt: string;
  /** Its lines name the load once, whether or not the caller bound `load` already (logOf). */
  readonly logger: Logger;
  readonly failpoint?: (point: CommitPoint) => void;
  /**
   * The process environment, for the secrets of a claim's Iceberg REST catalog that its recorded
   * files do not hold (iceberg/load-catalog.ts); absent: none.
   */
  readonly env?: CatalogEnvironment | undefined;
}

const RENAME_CONCURRENCY = 8;

/**
 * The publication copy claimCommit staged with each claim, by the claim's bytes (the value it
 * returns and completeCommit takes). A claim rolled forward by another process has none, and
 * publishClaim stages one then.
 */
const stagedPublications = new WeakMap<Buffer, string>();

/** Step 1. Throws ETL_COMMIT_FENCED when another run holds the seq. Returns the claim's bytes. */
export async function claimCommit(context: CommitContext, manifest: Manifest): Promise<Buffer> {
  const { warehouse, root, load } = context;
  const bytes = serializeManifest(manifest);
  const folder = stagingDir(root, load, manifest.seq, manifest.attempt);
  const [staged, publication] = await Promise.all([
    createUnderFreshName(warehouse, `${folder}/manifest.pending`, bytes),
    createUnderFreshName(warehouse, `${folder}/manifest.json`, bytes),
  ]);
  const claim = claimPath(root, load, manifest.seq);
  try {
    await warehouse.rename(staged, claim);
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) throw error;
    await Promise.all([warehouse.delete(staged).catch(() => false), warehouse.delete(publication).catch(() => false)]);
    throw etlError(
      'ETL_COMMIT_FENCED',
      `commit ${manifest.seq} of load ${load} was claimed by another run (${warehouse.describe(claim)} exists), so this run's plan is stale; ` +
        'nothing of this run was committed. Run the load again: it continues from what the other run committed',
      { details: { load, seq: manifest.seq, attempt: manifest.attempt } },
    );
  }
  stagedPublications.set(bytes, publication);
  logOf(context).info({ seq: manifest.seq, event: 'claimed' }, 'commit claimed');
  context.failpoint?.('after-claim');
  return bytes;
}

/** Steps 2 and 3 for a claimed commit: this run's own, or one rolled forward. */
export async function completeCommit(context: CommitContext, manifest: Manifest, claimBytes: Buffer): Promise<void> {
  const moves: ManifestFile[] = [...manifest.files, ...manifest.quarantine.files];
  // The target folders first, once each: a rename into a missing folder fails, and finding out
  // why and making the folder costs three more round trips, for each file that gets there first.
  const folders = [...new Set(moves.map((file) => parentFolder(file.path)).filter((folder) => folder !== ''))];
  await inParallel(folders, RENAME_CONCURRENCY, (folder) => context.warehouse.mkdirs(folder));
  await inParallel(moves, RENAME_CONCURRENCY, async (file) => {
    await moveIntoPlace(context, manifest.seq, file);
    logOf(context).debug({ seq: manifest.seq, path: file.path, event: 'renamed-file' }, 'file in place');
    context.failpoint?.('after-rename');
  });
  logOf(context).info({ seq: manifest.seq, files: moves.length, event: 'renamed' }, 'files in place');
  // Format iceberg: each table's snapshot, made once whoever rolls the claim forward (load-tables.ts).
  // A claim names each table's catalog (or none), so a roll-forward commits where the run that claimed it would have.
  if (manifest.iceberg !== undefined) await publishSnapshots(context.warehouse, manifest, logOf(context), { afterEach: () => context.failpoint?.('after-table-commit'), env: context.env });
  if (manifest.deadLetters !== undefined) await publishDeadLetters(context.warehouse, manifest, logOf(context), context.env);
  context.failpoint?.('before-publish');
  const staged = stagedPublications.get(claimBytes);
  stagedPublications.delete(claimBytes);
  await publishClaim({
    ...(staged === undefined ? {} : { staged }),
    warehouse: context.warehouse,
    load: context.load,
    seq: manifest.seq,
    claimBytes,
    claimPath: claimPath(context.root, context.load, manifest.seq),
    target: publishedPath(context.root, context.load, manifest.seq),
    stagingFolder: stagingDir(context.root, context.load, manifest.seq, context.attempt),
    logName: 'commit log',
  });
  logOf(context).info({ seq: manifest.seq, event: 'published' }, 'commit published');
  context.failpoint?.('after-publish');
}

/** The context's logger bound to the load exactly once. */
function logOf(context: CommitContext): Logger {
  return bindOnce(context.logger, { load: context.load });
}

function parentFolder(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

/** `action` for every item, at most `bound` at a time; the first failure fails the whole after the others in flight settle. */
async function inParallel<T>(items: readonly T[], bound: number, action: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await action(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(bound, items.length) }, worker));
}

async function moveIntoPlace(context: CommitContext, seq: number, file: ManifestFile): Promise<void> {
  const { warehouse } = context;
  try {
    await warehouse.rename(file.staged, file.path);
    return;
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND') && !hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) throw error;
  }
  const [source, target] = await Promise.all([warehouse.stat(file.staged), warehouse.stat(file.path)]);
  if (source === undefined && target?.type === 'file' && target.length === file.bytes) return; // moved before
  const state =
    source === undefined && target === undefined
      ? 'the staged file is gone and the final file does not exist'
      : source === undefined
        ? `the final file exists with ${target?.length ?? 0} bytes, not the ${file.bytes} the manifest records`
        : `the final name is taken by another file (${target?.length ?? 0} bytes) while the staged file is still there`;
  throw etlError(
    'ETL_WAREHOUSE_DAMAGED',
    `commit ${seq} of load ${context.load} cannot move ${warehouse.describe(file.staged)} to ${warehouse.describe(file.path)}: ${state}. ` +
      'Something other than the loader changed these files; nothing was overwritten. Restore the file named in the manifest, then run the load again',
    { details: { load: context.load, seq, staged: file.staged, path: file.path, bytes: file.bytes } },
  );
}

export interface Recovery {
  /** Commits this recovery finished. */
  readonly rolledForward: readonly number[];
  readonly stagingRemoved: readonly string[];
  /** The commit log after recovery. */
  readonly log: CommitLog;
}

/** Rolls every claimed but unpublished commit forward, in seq order, then removes dead staging. */
export async function recoverCommits(context: CommitContext): Promise<Recovery> {
  const { warehouse, root, load } = context;
  let log = await readCommitLog(warehouse, root, load);
  const rolledForward: number[] = [];
  for (const seq of log.pending) {
    const { manifest, bytes } = await readClaim(warehouse, root, load, seq);
    logOf(context).info({ seq, event: 'roll-forward' }, 'rolling a claimed commit forward');
    await completeCommit(context, manifest, bytes);
    rolledForward.push(seq);
  }
  if (rolledForward.length > 0) log = await readCommitLog(warehouse, root, load);
  const stagingRemoved = await removeDeadStaging(context, log);
  return { rolledForward, stagingRemoved, log };
}

/**
 * Deletes staging folders whose seq is published: its claimed attempt's files were all renamed
 * away before publishing, and every other attempt of that seq can never commit.
 */
export async function removeDeadStaging(context: CommitContext, log: CommitLog): Promise<string[]> {
  const { warehouse, root, load } = context;
  let entries;
  try {
    entries = await warehouse.list(stagingRoot(root, load));
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return [];
    throw error;
  }
  const removed: string[] = [];
  for (const entry of entries) {
    const parsed = parseStagingName(entry.name);
    if (parsed === undefined || !log.published.has(parsed.seq)) continue;
    try {
      await warehouse.delete(entry.path, { recursive: true });
      removed.push(entry.path);
    } catch (error) {
      // Dead staging costs only space; the next recovery tries again.
      logOf(context).warn({ path: entry.path, err: error }, 'could not remove dead staging');
    }
  }
  if (removed.length > 0) logOf(context).info({ removed: removed.length, event: 'staging-removed' }, 'removed staging of published commits');
  return removed;
}
