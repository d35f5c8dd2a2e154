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
 */
import type { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { auditCommits, type AuditStepReport } from './audit-tier.js';
import { buildManifestEventTimes } from '../load/build-manifest.js';
import { etlError } from '../errors.js';
import type { FailpointName } from '../load/failpoints.js';
import { updateHourMarkers, type MarkerUpdateReport } from './hour-completeness.js';
import type { LoadAudit } from './load-audit.js';
import type { LoadDefinition } from '../load-file.js';
import type { LoadPlan } from '../load/plan.js';
import { readLoadStatus } from '../status/status.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface AuditRunServices {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  readonly audit?: LoadAudit | undefined;
  readonly failpoint?: ((point: FailpointName) => void) | undefined;
}

export interface AuditRunReport {
  readonly tier: AuditStepReport;
  readonly markers?: MarkerUpdateReport;
  /** Why the markers were not updated this run. */
  readonly markersFailed?: TributaryError;
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
  try {
    const status = await readLoadStatus(warehouse, load.warehouse.root, load.name);
    if (status.lastPublished === 0) return { tier };
    const eventTimes = plan === undefined ? status.eventTimes : buildManifestEventTimes({ nextOffsets: status.nextOffsets, eventTimes: status.eventTimes }, plan, new Map());
    const markers = await updateHourMarkers({
      warehouse,
      root: load.warehouse.root,
      layout: load.layout,
      attempt,
      hours: status.hours,
      nextOffsets: status.nextOffsets,
      eventTimes,
      latenessHorizonMs: load.latenessHorizonMs,
      seq: status.lastPublished,
      readEvents: (topic) => audit.readEvents(topic),
      logger,
    });
    return { tier, markers };
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
