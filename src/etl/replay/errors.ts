/**
 * The failures of replays and rollbacks (replay.ts, replay-rollback.ts). Each stops before the
 * warehouse is changed, except ETL_WAREHOUSE_DAMAGED found while rolling a claimed swap forward.
 * Commit, lease and warehouse failures keep their own codes (errors.ts).
 */
import { TributaryError } from '../../common/errors.js';

export const REPLAY_ERROR_CODES = [
  /** --from/--to/--hour are not whole UTC hours, or the window is empty. */
  'ETL_REPLAY_WINDOW_INVALID',
  /** No hour of the window (or no hour of that topic) holds committed data; nothing to rebuild. */
  'ETL_REPLAY_NOTHING',
  /** Offsets that fed the window are no longer in the log (retention, or a recreated topic). */
  'ETL_REPLAY_OFFSETS_MISSING',
  /** Today's code would put records into other hours than before, outside the window. */
  'ETL_REPLAY_RECORDS_MOVE',
  /** Records loaded before would now be set aside (decoding or event time fails). */
  'ETL_REPLAY_RECORDS_DROPPED',
  /** Records loaded before are no longer in the log, though within its offsets: compaction removed them. */
  'ETL_REPLAY_RECORDS_COMPACTED',
  /** The hour has no earlier version to roll back to. */
  'ETL_ROLLBACK_NO_VERSION',
  /** Iceberg: the replay to roll back has later snapshots on top; moving main back would drop them. */
  'ETL_ROLLBACK_NOT_LIVE',
] as const;

export type ReplayErrorCode = (typeof REPLAY_ERROR_CODES)[number];

export function replayError(code: ReplayErrorCode, message: string, details: Readonly<Record<string, unknown>> = {}): TributaryError {
  return new TributaryError({ code, message, details });
}
