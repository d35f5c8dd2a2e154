/**
 * What replays and rollbacks share around their own work: the load's lease (the one runs take,
 * /etl/locks/<load>, so a scheduled run and a swap never work at once), recovery of what earlier
 * attempts left (claimed commits, then claimed swaps), the history of the load's hours, and at the
 * end fence ▸ claim ▸ swap ▸ publish (replay-fence.ts, replay-swap.ts). A swap with no hour to change
 * (a replay whose output is what is live, a rollback already done) is neither fenced nor claimed:
 * it publishes nothing, so running the same command again after a kill adds no version.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../common/logger.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { readClaim, readCommitLog } from '../load/commit-log.js';
import { recoverCommits, removeDeadStaging, type CommitContext } from '../load/commit.js';
import { etlError } from '../errors.js';
import { acquireLease } from '../load/lease.js';
import { checkLayoutUnchanged } from '../load/layout-check.js';
import type { LoadDefinition } from '../load-file.js';
import type { Manifest } from '../load/manifest.js';
import { commitFence } from './fence.js';
import type { SwapFailpointName } from './failpoints.js';
import { readLoadHistory, type LoadHistory } from './history.js';
import { swapStagingDir } from './layout.js';
import { readSwapLog } from './log.js';
import type { ReplayManifest } from './manifest.js';
import { claimSwap, completeSwap, recoverSwaps, removeDeadSwapStaging, type SwapContext } from './swap.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface SwapServices {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  readonly logger: Logger;
  readonly store: CoordinationStore;
  /** Whether the store outlives the process (ZooKeeper), so run numbers mean something. */
  readonly numberRuns: boolean;
  readonly failpoint?: ((point: SwapFailpointName) => void) | undefined;
  readonly now?: () => Date;
}

export interface SwapRequest {
  readonly kind: ReplayManifest['kind'];
  readonly from: string;
  readonly to: string;
  readonly topic: string | null;
}

export interface SwapSession {
  readonly attempt: string;
  /** The seq this swap will take (and fence): the commit after the last one claimed. */
  readonly seq: number;
  readonly runNumber: number | null;
  readonly history: LoadHistory;
  /** This attempt's staging folder (replays build new versions in it). */
  readonly stagingDir: string;
  readonly swapContext: SwapContext;
}

/** An hour of the request that is left as it is, and why. */
export type UnchangedHour =
  | { readonly topic: string; readonly hour: string; readonly version: number; readonly why: 'identical' }
  | {
      readonly topic: string;
      readonly hour: string;
      readonly version: number;
      readonly why: 'rolled-back';
      /** The rollback that undid the hour's last replay, and the versions it swapped. */
      readonly by: { readonly seq: number; readonly fromVersion: number; readonly toVersion: number };
      /** The version a further rollback would restore (`--to-version`), if any. */
      readonly further: number | undefined;
    }
  | { readonly topic: string; readonly hour: string; readonly version: number; readonly why: 'at-version' };

/** What `work` decided: the swap of the hours that change, and the hours left alone. */
export interface SwapPlan {
  readonly manifest: ReplayManifest;
  readonly unchanged: readonly UnchangedHour[];
}

interface ReportCommon {
  readonly request: SwapRequest;
  readonly load: string;
  /** Hours of the request left as they were (none when rolled forward). */
  readonly unchanged: readonly UnchangedHour[];
  /** What earlier attempts left claimed and this one finished first. */
  readonly recovered: { readonly commits: readonly number[]; readonly swaps: readonly number[] };
}

export type SwapReport =
  | (ReportCommon & {
      /** `rolled-forward`: an earlier attempt of the same request had claimed it; this one finished it. */
      readonly outcome: 'swapped' | 'rolled-forward';
      readonly manifest: ReplayManifest;
    })
  | (ReportCommon & {
      /** No hour needed changing: nothing was fenced, claimed or published. */
      readonly outcome: 'unchanged';
      readonly manifest: undefined;
    });

/**
 * Under the lease: recovers, then lets `work` plan the swap from the session, then fences, claims
 * and completes it. `work` must change nothing outside `session.stagingDir`; if it throws, its
 * staging is removed and nothing else was changed. A plan without hours is not swapped at all.
 * A claimed swap found by the recovery is finished as it was claimed (never re-planned).
 */
export async function runSwap(services: SwapServices, request: SwapRequest, work: (session: SwapSession) => Promise<SwapPlan>): Promise<SwapReport> {
  const { load, warehouse } = services;
  const root = load.warehouse.root;
  const attempt = randomBytes(6).toString('hex');
  const logger = services.logger.child({ load: load.name, attempt, kind: request.kind });
  const lease = await acquireLease(services.store, load.name, { attempt, numberRuns: services.numberRuns });
  try {
    const commitContext: CommitContext = { warehouse, root, load: load.name, attempt, logger };
    const swapContext: SwapContext = { warehouse, root, load: load.name, attempt, logger, failpoint: services.failpoint };
    await checkLayoutUnchanged(warehouse, load);
    const commits = await recoverCommits(commitContext);
    const swaps = await recoverSwaps(swapContext);
    const recovered = { commits: commits.rolledForward, swaps: swaps.rolledForward.map((manifest) => manifest.seq) };
    const finished = swaps.rolledForward.find((manifest) => manifest.kind === request.kind && manifest.request.from === request.from && manifest.request.to === request.to && manifest.request.topic === request.topic);
    if (finished !== undefined) return { outcome: 'rolled-forward', manifest: finished, request, load: load.name, unchanged: [], recovered };

    const history = await readLoadHistory(warehouse, root, load.name);
    const log = await readCommitLog(warehouse, root, load.name);
    const seq = log.lastClaimed + 1;
    const session: SwapSession = { attempt, seq, runNumber: lease.runNumber, history, stagingDir: swapStagingDir(root, load.name, seq, attempt), swapContext };
    let plan: SwapPlan;
    try {
      plan = await work(session);
    } catch (error) {
      await warehouse.delete(session.stagingDir, { recursive: true }).catch(() => false);
      throw error;
    }
    const { manifest, unchanged } = plan;
    if (manifest.hours.length === 0) {
      // Only this attempt's staging was written; left behind by a crash it is removed once a later commit exists.
      await warehouse.delete(session.stagingDir, { recursive: true }).catch(() => false);
      logger.info({ hours: unchanged.length, event: 'swap-unchanged' }, `no hour of the ${request.kind} needs changing; nothing published`);
      return { outcome: 'unchanged', manifest: undefined, request, load: load.name, unchanged, recovered };
    }

    await lease.check();
    const base = log.lastPublished === 0 ? undefined : (await readClaim(warehouse, root, load.name, log.lastPublished)).manifest;
    try {
      await fence(commitContext, services, base, session);
    } catch (error) {
      // Nothing refers to the staging yet (a swap is claimed only after its fence).
      await warehouse.delete(session.stagingDir, { recursive: true }).catch(() => false);
      throw error;
    }
    services.failpoint?.('swap-after-fence');
    // Still ours, and nothing committed after the fence: else the manifest may be stale.
    await lease.check();
    if ((await readCommitLog(warehouse, root, load.name)).lastClaimed !== session.seq) {
      throw etlError('ETL_COMMIT_FENCED', `${request.kind} of load ${load.name}: a run committed after this ${request.kind}'s fence (commit ${session.seq}); nothing was swapped. Run it again`, {
        details: { load: load.name, seq: session.seq },
      });
    }
    const claimBytes = await claimSwap(swapContext, manifest);
    await completeSwap(swapContext, manifest, claimBytes);
    await removeDeadStaging(commitContext, await readCommitLog(warehouse, root, load.name));
    await removeDeadSwapStaging(swapContext, await readSwapLog(warehouse, root, load.name));
    return { outcome: 'swapped', manifest, request, load: load.name, unchanged, recovered };
  } finally {
    await lease.release();
  }
}

async function fence(context: CommitContext, services: SwapServices, base: Manifest | undefined, session: SwapSession): Promise<void> {
  await commitFence(context, { load: services.load, base, seq: session.seq, runNumber: session.runNumber, now: (services.now ?? (() => new Date()))() });
}
