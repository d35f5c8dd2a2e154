/**
 * The last log line of `etl run`: what the run committed, how long it took, its rate and the bytes
 * of the data files it committed (the manifest's `files`, quarantine files not counted), so a log
 * alone tells how fast a load goes.
 */
import type { RunReport } from '../load/run.js';
import { formatBytes } from './progress-bar.js';

export interface RunSummary {
  readonly event: 'run-finished';
  readonly outcome: RunReport['outcome'];
  /** The commit, when the run made one. */
  readonly seq?: number;
  readonly attempt?: string;
  /** Records committed (quarantined ones not counted). */
  readonly records: number;
  readonly quarantined: number;
  readonly files: number;
  readonly bytesWritten: number;
  readonly partitions: number;
  /** Partitions left out of the commit (offsets lost to retention, or ahead of the log). */
  readonly problems: number;
  readonly durationMs: number;
  readonly recordsPerSecond: number;
}

/** The fields and message of the line, for a run that took `durationMs` from start to end. */
export function summarizeRun(report: RunReport, elapsedMs: number): { fields: RunSummary; message: string } {
  // The rate from the duration the line shows, so a reader can check one against the other.
  const durationMs = Math.round(elapsedMs);
  const manifest = report.manifest;
  const records = manifest?.ranges.reduce((sum, range) => sum + range.records, 0) ?? 0;
  const bytesWritten = manifest?.files.reduce((sum, file) => sum + file.bytes, 0) ?? 0;
  const recordsPerSecond = durationMs > 0 ? Math.round((records * 1000) / durationMs) : 0;
  const fields: RunSummary = {
    event: 'run-finished',
    outcome: report.outcome,
    ...(manifest === undefined ? {} : { seq: manifest.seq, attempt: manifest.attempt }),
    records,
    quarantined: manifest?.quarantine.records ?? 0,
    files: manifest?.files.length ?? 0,
    bytesWritten,
    partitions: manifest?.ranges.length ?? 0,
    problems: report.problems.length,
    durationMs,
    recordsPerSecond,
  };
  const took = `${(durationMs / 1000).toFixed(1)} s`;
  const message =
    manifest === undefined
      ? `run finished: nothing new to load, in ${took}`
      : `run finished: commit ${manifest.seq}, ${records} records in ${fields.files} files (${formatBytes(bytesWritten)} written) from ${fields.partitions} partitions in ${took}: ${recordsPerSecond} records/s`;
  return { fields, message: report.problems.length === 0 ? message : `${message}; ${report.problems.length} partitions left out` };
}
