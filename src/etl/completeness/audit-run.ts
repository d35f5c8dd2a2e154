/**
 * The audit steps of a run of a load with an `audit` section (issue #9), in the order runs call
 * them:
 *
 *   start (under the lease, after recovery)   catchUpAudit: count every published commit not yet audited
 *   before the claim                           withdrawMarkers (hour-completeness.ts)
 *   after the commit, or when nothing moved   auditAndMark: count the new commit, then judge the hours and
 *                                              write or remove their _COMPLETE markers
 *
 * None of them fails the load: the data commit stands, the failure is logged as a warning and
 * reported, and the next run does what was left (same audit keys, markers judged again).
 *
 * auditAndMark judges only the hours that can still change (hours-to-judge.ts), reading the
 * audit topic from a little before the earliest of them (hour-completeness.ts), and records what
 * it settled in the completeness checkpoint (completeness-checkpoint.ts), so a run's cost does
 * not grow with the load's history. The checkpoint is written only after every topic was judged:
 * a run whose marker step failed leaves the old one, and the next run judges the same hours again.
 */
import type { TributaryError } from '../../common/errors.js';
import { bindOnce, type Logger } from '../../common/logger.js';
import { auditCommits, type AuditStepReport } from './audit-tier.js';
import { buildManifestEventTimes } from '../load/build-manifest.js';
import { readCommitLog } from '../load/commit-log.js';
import { readCheckpoint, writeCheckpoint, type CheckpointRead, type CompletenessCheckpoint } from './completeness-checkpoint.js';
import { nextCheckpoint, planJudgement } from './hours-to-judge.js';
import { etlError } from '../errors.js';
import type { FailpointName } from '../load/failpoints.js';
import { updateHourMarkers, type MarkerUpdateReport } from './hour-completeness.js';
import type { LoadAudit } from './load-audit.js';
import type { LoadDefinition } from '../load-file.js';
import type { LoadPlan } from '../load/plan.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface AuditRunServices {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  readonly audit?: LoadAudit | undefined;
  readonly failpoint?: ((point: FailpointName) => void) | undefined;
  /** The run's clock (when a mismatched hour stops being judged again). */
  readonly now?: (() => Date) | undefined;
}

export interface AuditRunReport {
  readonly tier: AuditStepReport;
  readonly markers?: MarkerUpdateReport;
  /** Why the markers were not updated this run. */
  readonly markersFailed?: TributaryError;
  /** The markers were updated but the checkpoint was not written: the next run judges the same hours again. */
  readonly checkpointFailed?: TributaryError;
}

/** Counts the published commits whose LOADER counts were never acknowledged (a crash, an unreachable audit topic). */
export async function catchUpAudit(services: AuditRunServices, logger: Logger): Promise<AuditStepReport | undefined> {
  if (services.audit === undefined) return undefined;
  return auditCommits({ load: services.load, warehouse: services.warehouse, sink: services.audit.sink, logger, failpoint: services.failpoint });
}

/**
 * After a commit (or a run with nothing to load, then with its `plan`, whose caught-up partitions
 * advance the loaded event time without a commit): the audit tier, then the hour markers.
 */
export async function auditAndMark(services: AuditRunServices, attempt: string, logger: Logger, plan?: LoadPlan): Promise<AuditRunReport | undefined> {
  const { audit, load, warehouse } = services;
  if (audit === undefined) return undefined;
  const tier = await auditCommits({ load, warehouse, sink: audit.sink, logger, failpoint: services.failpoint });
  const root = load.warehouse.root;
  try {
    const log = await readCommitLog(warehouse, root, load.name);
    if (log.lastPublished === 0) return { tier };
    const found = await readCheckpoint(warehouse, root, load.name, logger);
    const judging = await planJudgement({ warehouse, root, load: load.name, log, checkpoint: found.checkpoint, logger });
    const eventTimes = plan === undefined ? judging.eventTimes : buildManifestEventTimes({ nextOffsets: judging.nextOffsets, eventTimes: judging.eventTimes }, plan, new Map());
    const markers = await updateHourMarkers({
      warehouse,
      root,
      layout: load.layout,
      attempt,
      hours: judging.judge,
      nextOffsets: judging.nextOffsets,
      eventTimes,
      latenessHorizonMs: load.latenessHorizonMs,
      seq: log.lastPublished,
      readEvents: (topic, window) => audit.readEvents(topic, window),
      logger,
    });
    const checkpointFailed = await saveCheckpoint(warehouse, root, attempt, found, nextCheckpoint((found.generations.at(-1) ?? 0) + 1, load.name, judging, markers.verdicts, (services.now ?? (() => new Date()))()), logger);
    return { tier, markers, ...(checkpointFailed === undefined ? {} : { checkpointFailed }) };
  } catch (error) {
    const failure =
      (error as TributaryError).code === 'ETL_AUDIT_UNAVAILABLE'
        ? (error as TributaryError)
        : etlError('ETL_AUDIT_UNAVAILABLE', `the hour markers of load ${load.name} were not updated (${error instanceof Error ? error.message : String(error)}); the data commit stands and the next run tries again`, {
            retriable: true,
            cause: error,
            details: { load: load.name },
          });
    logger.warn({ err: failure, event: 'markers-failed' }, failure.message);
    return { tier, markersFailed: failure };
  }
}

/** Writes the checkpoint; a failure is logged and returned, never thrown (the markers already stand). */
async function saveCheckpoint(warehouse: WarehouseFileSystem, root: string, attempt: string, found: CheckpointRead, checkpoint: CompletenessCheckpoint, logger: Logger): Promise<TributaryError | undefined> {
  try {
    if (!(await writeCheckpoint(warehouse, root, attempt, checkpoint, found))) {
      bindOnce(logger, { load: checkpoint.load }).info({ generation: checkpoint.generation, event: 'completeness-checkpoint-raced' }, 'another run wrote this completeness checkpoint first; its file stands');
    }
    return undefined;
  } catch (error) {
    const failure = etlError('ETL_AUDIT_UNAVAILABLE', `the completeness checkpoint of load ${checkpoint.load} was not written (${error instanceof Error ? error.message : String(error)}); the markers stand, and the next run judges the same hours again`, {
      retriable: true,
      cause: error,
      details: { load: checkpoint.load, generation: checkpoint.generation },
    });
    logger.warn({ err: failure, event: 'completeness-checkpoint-failed' }, failure.message);
    return failure;
  }
}
