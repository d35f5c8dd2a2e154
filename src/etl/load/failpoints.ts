/**
 * Failpoints: named moments of a run at which a test stops the loader abruptly, to prove that a
 * crash there loses and duplicates nothing. The CLI reads TRIBUTARY_ETL_FAILPOINT=<name>[:<n>]
 * (stop at the n-th time the run passes <name>, default the first) and kills its own process with
 * SIGKILL there; unit tests pass a hook that throws instead.
 */
import { TributaryError } from '../../common/errors.js';

/**
 * `after-table-commit`: an Iceberg table's snapshot is made, the claim not yet published (iceberg/load-tables.ts).
 * `after-audit-flush`: a commit's LOADER counts are acknowledged but not yet recorded as audited (audit-tier.ts).
 */
export const FAILPOINT_NAMES = ['after-stage', 'after-claim', 'after-rename', 'after-table-commit', 'before-publish', 'after-publish', 'after-audit-flush'] as const;
export type FailpointName = (typeof FAILPOINT_NAMES)[number];

export interface Failpoint {
  readonly name: FailpointName;
  /** Fires on this pass (1-based). */
  readonly hit: number;
}

export function parseFailpoint(spec: string): Failpoint {
  const match = /^([a-z-]+)(?::(\d+))?$/.exec(spec.trim());
  const name = FAILPOINT_NAMES.find((candidate) => candidate === match?.[1]);
  const hit = match?.[2] === undefined ? 1 : Number(match[2]);
  if (match === null || name === undefined || hit < 1) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `failpoint "${spec}" is not <name>[:<n>] with n ≥ 1 and a name among ${FAILPOINT_NAMES.join(', ')}`,
      details: { spec },
    });
  }
  return { name, hit };
}

/** A hook for the run that calls `stop` on the failpoint's n-th pass. */
export function failpointHook(failpoint: Failpoint, stop: () => void): (point: FailpointName) => void {
  let passes = 0;
  return (point) => {
    if (point !== failpoint.name) return;
    passes += 1;
    if (passes === failpoint.hit) stop();
  };
}
