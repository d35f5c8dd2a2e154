/**
 * Which hours a run's marker step judges (issue #19), so that its cost follows what can still
 * change rather than the load's whole history:
 *
 * - the hours still open at the last judgement (the checkpoint's `open`: within latenessHorizon
 *   of the loaded event time, or not loaded far enough by every partition), judged until they close;
 * - the hours of the commits published since the checkpoint (the new commit, and commits of
 *   earlier runs whose marker step failed), including settled hours those commits add records to:
 *   their marker was withdrawn before the commit, and they are judged again;
 * - the hours swapped by replays and rollbacks published since the checkpoint.
 *
 * - closed hours that did not match, for a day after they ended (MISMATCH_RECHECK_MS).
 *
 * A settled hour (closed; marked, or found not to match for a day) is not read, listed or stat'ed again
 * unless one of those touches it. Reading is: the checkpoint (completeness-checkpoint.ts), the
 * commit log and swap log listings, the manifests of the commits and swaps since the checkpoint,
 * and the last claimed manifest (for where every partition stands). Without a usable checkpoint
 * (the first run, or one deleted or damaged) every manifest is read and every hour judged, as
 * runs did before checkpoints; the checkpoint written then makes the next run cheap again.
 */
import { bindOnce, type Logger } from '../../common/logger.js';
import { readClaim, type CommitLog } from '../load/commit-log.js';
import type { Manifest, NextOffsets } from '../load/manifest.js';
import { readSwapClaim, readSwapLog } from '../replay/log.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { CHECKPOINT_FORMAT, type CompletenessCheckpoint } from './completeness-checkpoint.js';
import type { HourVerdict } from './hour-completeness.js';

export interface JudgingPlan {
  /** Records of the hours to judge, per topic (updateHourMarkers' `hours`). */
  readonly judge: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Records of every hour with records, per topic, over the published commits ≤ commitsThrough. */
  readonly records: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly commitsThrough: number;
  readonly replaysThrough: number;
  /** Of the last claimed commit, as status.ts reports them. */
  readonly nextOffsets: NextOffsets;
  readonly eventTimes: NextOffsets | undefined;
  /** No usable checkpoint: every manifest was read and every hour is judged. */
  readonly rebuilt: boolean;
  /** Manifests read (commits and swaps): what the plan cost beyond the listings. */
  readonly manifestsRead: number;
}

export interface JudgingInputs {
  readonly warehouse: WarehouseFileSystem;
  readonly root: string;
  readonly load: string;
  readonly log: CommitLog;
  readonly checkpoint: CompletenessCheckpoint | undefined;
  readonly logger?: Logger | undefined;
}

/** A checkpoint the commit log contradicts (a warehouse restored from an older backup, a log edited by hand) is not used. */
function usable(checkpoint: CompletenessCheckpoint | undefined, log: CommitLog): checkpoint is CompletenessCheckpoint {
  if (checkpoint === undefined) return false;
  return checkpoint.commitsThrough === 0 || (checkpoint.commitsThrough <= log.lastPublished && log.published.has(checkpoint.commitsThrough));
}

export async function planJudgement(inputs: JudgingInputs): Promise<JudgingPlan> {
  const { warehouse, root, load, log } = inputs;
  const checkpoint = usable(inputs.checkpoint, log) ? inputs.checkpoint : undefined;
  if (inputs.checkpoint !== undefined && checkpoint === undefined) {
    if (inputs.logger !== undefined) bindOnce(inputs.logger, { load }).warn({ commitsThrough: inputs.checkpoint.commitsThrough, lastPublished: log.lastPublished, event: 'completeness-checkpoint-stale' }, 'completeness checkpoint does not match the commit log: every hour is judged from the manifests');
  }
  const records: Record<string, Record<string, number>> = {};
  const judge = new Map<string, Set<string>>();
  const touch = (topic: string, hour: string): void => {
    let hours = judge.get(topic);
    if (hours === undefined) judge.set(topic, (hours = new Set()));
    hours.add(hour);
  };
  for (const [topic, state] of Object.entries(checkpoint?.topics ?? {})) {
    records[topic] = { ...state.records };
    for (const hour of state.open) touch(topic, hour);
  }

  // Commits since the checkpoint, in order, up to the first one not yet published (rolled forward later).
  let commitsThrough = checkpoint?.commitsThrough ?? 0;
  let manifestsRead = 0;
  let last: Manifest | undefined;
  for (const seq of log.claimed) {
    if (seq <= commitsThrough) continue;
    const { manifest } = await readClaim(warehouse, root, load, seq);
    manifestsRead += 1;
    if (seq === log.lastClaimed) last = manifest;
    if (!log.published.has(seq)) break;
    for (const [topic, hours] of Object.entries(manifest.hours)) {
      const topicRecords = (records[topic] ??= {});
      for (const [hour, count] of Object.entries(hours)) {
        topicRecords[hour] = (topicRecords[hour] ?? 0) + count;
        touch(topic, hour);
      }
    }
    commitsThrough = seq;
  }
  if (last === undefined && log.lastClaimed > 0) {
    last = (await readClaim(warehouse, root, load, log.lastClaimed)).manifest;
    manifestsRead += 1;
  }

  // Swaps since the checkpoint: a replay or rollback changed these hours' files (and carried their markers).
  const swaps = await readSwapLog(warehouse, root, load);
  let replaysThrough = checkpoint?.replaysThrough ?? 0;
  for (const seq of swaps.claimed) {
    if (seq <= replaysThrough) continue;
    if (!swaps.published.has(seq)) break;
    if (checkpoint !== undefined) {
      const { manifest } = await readSwapClaim(warehouse, root, load, seq);
      manifestsRead += 1;
      for (const swapped of manifest.hours) touch(swapped.topic, swapped.hour);
    }
    replaysThrough = seq;
  }

  // Without a checkpoint every hour is judged; with one, only hours that have records.
  const judged: Record<string, Record<string, number>> = {};
  for (const [topic, topicRecords] of Object.entries(records)) {
    const wanted = judge.get(topic);
    const hours = Object.keys(topicRecords)
      .filter((hour) => checkpoint === undefined || wanted?.has(hour) === true)
      .sort();
    if (hours.length > 0) judged[topic] = Object.fromEntries(hours.map((hour) => [hour, topicRecords[hour] ?? 0]));
  }
  return {
    judge: judged,
    records,
    commitsThrough,
    replaysThrough,
    nextOffsets: last?.nextOffsets ?? {},
    eventTimes: last?.eventTimes,
    rebuilt: checkpoint === undefined,
    manifestsRead,
  };
}

/**
 * A closed hour whose counts did not match is judged again for this long after it ended: a
 * PRODUCER count published late (a producer that was down, an audit topic that was unreachable)
 * still marks it, while an hour that never matches stops costing anything after a day.
 */
export const MISMATCH_RECHECK_MS = 24 * 3_600_000;

/**
 * The checkpoint after a judgement: the plan's records, and as open the judged hours still open
 * or recently closed without a match (every hour not judged was settled before and stays so).
 */
export function nextCheckpoint(generation: number, load: string, plan: JudgingPlan, verdicts: readonly HourVerdict[], now: Date): CompletenessCheckpoint {
  const open = new Map<string, string[]>();
  for (const verdict of verdicts) {
    const recheck = verdict.state === 'CLOSED-MISMATCH' && now.getTime() - (Date.parse(`${verdict.hour}:00:00.000Z`) + 3_600_000) < MISMATCH_RECHECK_MS;
    if (verdict.closed && !recheck) continue;
    let hours = open.get(verdict.topic);
    if (hours === undefined) open.set(verdict.topic, (hours = []));
    hours.push(verdict.hour);
  }
  const topics: Record<string, { records: Record<string, number>; open: string[] }> = {};
  for (const [topic, topicRecords] of Object.entries(plan.records).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const sorted = Object.fromEntries(Object.entries(topicRecords).sort(([a], [b]) => (a < b ? -1 : 1)));
    topics[topic] = { records: sorted, open: (open.get(topic) ?? []).sort() };
  }
  return { format: CHECKPOINT_FORMAT, load, generation, commitsThrough: plan.commitsThrough, replaysThrough: plan.replaysThrough, writtenAt: now.toISOString(), topics };
}
