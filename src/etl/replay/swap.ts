/**
 * The swap protocol of replays and rollbacks: each listed hour folder is replaced by another
 * version while the one it replaces is kept, and a crash at any point is finished by whoever comes
 * next (the next replay, rollback or run of the load rolls a claimed swap forward).
 *
 * 1. Claim: the replay manifest (replay-manifest.ts) is staged and renamed to `replays/<seq>.pending`.
 *    <seq> is the seq of the empty commit that fenced the swap (replay-fence.ts), so the name is
 *    free; the claim is never removed.
 * 2. Per hour, two renames: live → keep, then bring → live; then every entry of keep that is not
 *    one of the outgoing version's data files (`old`) is carried back: keep/x → live/x. That is
 *    what the manifest lists as `carried` (markers; late files on rollback), and also any file a
 *    run committed into the hour folder while the swap was being made.
 *    HDFS cannot rename a directory over a non-empty one, so an hour cannot be swapped in one
 *    atomic step: between the renames the hour folder is missing. The claim makes the pair
 *    crash-atomic: once it exists the swap is finished by whoever comes next, from the state it
 *    finds (which of live, keep and bring exist tells which renames are done).
 * 3. Publish: the claim's bytes, staged afresh, renamed to `replays/<seq>.json`.
 *
 * Every step refuses to overwrite and is idempotent, so several processes may roll the same swap
 * forward at once. A state no sequence of these steps can produce is ETL_WAREHOUSE_DAMAGED.
 */
import { bindOnce, type Logger } from '../../common/logger.js';
import { readClaim, readCommitLog } from '../load/commit-log.js';
import { etlError } from '../errors.js';
import { parseStagingName } from '../layout.js';
import { readSwapClaim, readSwapLog, type SwapLog } from './log.js';
import { serializeReplayManifest, type HourSwap, type ReplayManifest } from './manifest.js';
import type { SwapFailpointName } from './failpoints.js';
import { swapClaimPath, swapPublishedPath, swapStagingDir, swapStagingRoot } from './layout.js';
import { publishClaim } from '../load/publish-claim.js';
import { createUnderFreshName } from '../load/stage.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface SwapContext {
  readonly warehouse: WarehouseFileSystem;
  readonly root: string;
  readonly load: string;
  /** This process's attempt: names the staging folder of its publication. */
  readonly attempt: string;
  readonly logger: Logger;
  readonly failpoint?: ((point: SwapFailpointName) => void) | undefined;
}

/** Renames an hour needs at most (two, after a concurrent roller did none); more means a loop. */
const HOUR_STEPS = 6;

/** Step 1. Returns the claim's bytes. */
export async function claimSwap(context: SwapContext, manifest: ReplayManifest): Promise<Buffer> {
  const { warehouse, root, load } = context;
  const bytes = serializeReplayManifest(manifest);
  const staged = await createUnderFreshName(warehouse, `${swapStagingDir(root, load, manifest.seq, manifest.attempt)}/manifest.pending`, bytes);
  const claim = swapClaimPath(root, load, manifest.seq);
  try {
    await warehouse.rename(staged, claim);
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) throw error;
    await warehouse.delete(staged).catch(() => false);
    throw etlError('ETL_COMMIT_FENCED', `${manifest.kind} ${manifest.seq} of load ${load} was claimed by another attempt (${warehouse.describe(claim)} exists); nothing of this ${manifest.kind} was changed. Run it again`, {
      details: { load, seq: manifest.seq, attempt: manifest.attempt },
    });
  }
  logOf(context).info({ seq: manifest.seq, kind: manifest.kind, event: 'swap-claimed' }, 'swap claimed');
  context.failpoint?.('swap-after-claim');
  return bytes;
}

/** Steps 2 and 3 for a claimed swap: this process's own, or one rolled forward. */
export async function completeSwap(context: SwapContext, manifest: ReplayManifest, claimBytes: Buffer): Promise<void> {
  for (const hour of manifest.hours) {
    await swapHour(context, manifest.seq, hour);
    logOf(context).info({ seq: manifest.seq, topic: hour.topic, hour: hour.hour, version: hour.toVersion, event: 'hour-swapped' }, 'hour swapped');
  }
  context.failpoint?.('swap-before-publish');
  await publishClaim({
    warehouse: context.warehouse,
    load: context.load,
    seq: manifest.seq,
    claimBytes,
    claimPath: swapClaimPath(context.root, context.load, manifest.seq),
    target: swapPublishedPath(context.root, context.load, manifest.seq),
    stagingFolder: swapStagingDir(context.root, context.load, manifest.seq, context.attempt),
    logName: 'replay log',
  });
  logOf(context).info({ seq: manifest.seq, event: 'swap-published' }, 'swap published');
  context.failpoint?.('swap-after-publish');
}

/** The context's logger bound to the load exactly once (commit.ts does the same). */
function logOf(context: SwapContext): Logger {
  return bindOnce(context.logger, { load: context.load });
}

async function swapHour(context: SwapContext, seq: number, hour: HourSwap): Promise<void> {
  const { warehouse } = context;
  for (let step = 0; step < HOUR_STEPS; step += 1) {
    const [live, keep, bring] = await Promise.all([warehouse.stat(hour.live), warehouse.stat(hour.keep), warehouse.stat(hour.bring)]);
    if (live !== undefined && keep === undefined && bring !== undefined) {
      if (await renameIfStill(warehouse, hour.live, hour.keep)) context.failpoint?.('swap-after-rename');
    } else if (live === undefined && keep !== undefined && bring !== undefined) {
      if (await renameIfStill(warehouse, hour.bring, hour.live)) context.failpoint?.('swap-after-rename');
    } else if (live !== undefined && keep !== undefined && bring === undefined) {
      const outgoing = new Set(hour.old.map((file) => file.name));
      const names = new Set([...hour.carried, ...(await warehouse.list(hour.keep)).map((entry) => entry.name).filter((name) => !outgoing.has(name))]);
      for (const name of [...names].sort()) await carry(context, seq, hour, name);
      return;
    } else {
      throw damaged(context, seq, hour, `the hour folder ${exists(live)}, the kept version ${exists(keep)} and the incoming version ${exists(bring)}`);
    }
  }
  throw damaged(context, seq, hour, 'the folders kept changing while the swap was finished');
}

/** A rename that another process may have just made: false when it finds the move already done or undone by someone. */
async function renameIfStill(warehouse: WarehouseFileSystem, from: string, to: string): Promise<boolean> {
  try {
    await warehouse.rename(from, to);
    return true;
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND') || hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) return false; // look again
    throw error;
  }
}

async function carry(context: SwapContext, seq: number, hour: HourSwap, name: string): Promise<void> {
  const { warehouse } = context;
  const from = `${hour.keep}/${name}`;
  const to = `${hour.live}/${name}`;
  if (await renameIfStill(warehouse, from, to)) {
    context.failpoint?.('swap-after-rename');
    return;
  }
  const [source, target] = await Promise.all([warehouse.stat(from), warehouse.stat(to)]);
  if (source === undefined && target !== undefined) return; // carried before
  throw damaged(context, seq, hour, `${name} should move from the kept version into the hour folder, but it ${source === undefined ? 'is in neither' : 'is in both'}`);
}

function exists(entry: unknown): string {
  return entry === undefined ? 'is missing' : 'exists';
}

function damaged(context: SwapContext, seq: number, hour: HourSwap, state: string): Error {
  const { warehouse } = context;
  return etlError(
    'ETL_WAREHOUSE_DAMAGED',
    `replay ${seq} of load ${context.load} cannot finish swapping hour ${hour.hour} of ${hour.topic} (version ${hour.fromVersion} → ${hour.toVersion}): ${state} ` +
      `(hour folder ${warehouse.describe(hour.live)}, kept version ${warehouse.describe(hour.keep)}, incoming version ${warehouse.describe(hour.bring)}). ` +
      'Something other than the loader changed these folders; nothing was overwritten. Put them back as the replay manifest describes, then run again',
    { details: { load: context.load, seq, topic: hour.topic, hour: hour.hour, live: hour.live, keep: hour.keep, bring: hour.bring } },
  );
}

export interface SwapRecovery {
  /** Swaps this recovery finished, in seq order. */
  readonly rolledForward: readonly ReplayManifest[];
  readonly stagingRemoved: readonly string[];
}

/**
 * Rolls every claimed but unpublished swap forward, in seq order, then removes dead staging. Runs
 * after the commit recovery (a swap's fencing commit is published before the swap is claimed).
 */
export async function recoverSwaps(context: SwapContext): Promise<SwapRecovery> {
  const { warehouse, root, load } = context;
  let log = await readSwapLog(warehouse, root, load);
  const rolledForward: ReplayManifest[] = [];
  for (const seq of log.pending) {
    const { manifest, bytes } = await readSwapClaim(warehouse, root, load, seq);
    logOf(context).info({ seq, kind: manifest.kind, event: 'swap-roll-forward' }, 'rolling a claimed swap forward');
    await completeSwap(context, manifest, bytes);
    rolledForward.push(manifest);
  }
  if (rolledForward.length > 0) log = await readSwapLog(warehouse, root, load);
  return { rolledForward, stagingRemoved: await removeDeadSwapStaging(context, log) };
}

/**
 * Deletes the staging folders `<seq>-<attempt>` that can never be swapped in: swap <seq> is
 * published (its claimed attempt's folders were renamed away, and no other attempt can claim
 * <seq>); or commit <seq> was claimed by another attempt (this one can never fence <seq>); or swap
 * <seq> is unclaimed while a later commit exists (a swap is claimed right after its fencing commit,
 * under the lease, so its time has passed). Other folders may belong to a replay still working.
 */
export async function removeDeadSwapStaging(context: SwapContext, log: SwapLog): Promise<string[]> {
  const { warehouse, root, load } = context;
  let entries;
  try {
    entries = await warehouse.list(swapStagingRoot(root, load));
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return [];
    throw error;
  }
  const commits = await readCommitLog(warehouse, root, load);
  const claimedSwaps = new Set(log.claimed);
  const removed: string[] = [];
  for (const entry of entries) {
    const parsed = parseStagingName(entry.name);
    if (parsed === undefined) continue;
    let dead = log.published.has(parsed.seq) || (!claimedSwaps.has(parsed.seq) && commits.lastClaimed > parsed.seq);
    if (!dead && !claimedSwaps.has(parsed.seq) && commits.claimed.includes(parsed.seq)) {
      dead = (await readClaim(warehouse, root, load, parsed.seq)).manifest.attempt !== parsed.attempt;
    }
    if (!dead) continue;
    try {
      await warehouse.delete(entry.path, { recursive: true });
      removed.push(entry.path);
    } catch (error) {
      logOf(context).warn({ path: entry.path, err: error }, 'could not remove dead replay staging'); // costs only space; tried again next time
    }
  }
  return removed;
}
