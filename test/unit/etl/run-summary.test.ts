/** The last log line of `etl run` (src/etl/status/run-summary.ts): duration, records/s and the bytes of the committed data files. */
import { describe, expect, it } from 'vitest';
import type { RunReport } from '../../../src/etl/load/run.js';
import { summarizeRun } from '../../../src/etl/status/run-summary.js';

describe("a run's closing line", () => {
  it('gives duration, records/s and the bytes of the committed data files', () => {
    const file = (bytes: number) => ({ topic: 'views', partition: 0, hour: '2026-11-29T13', start: 0, end: 1, records: 1, bytes, sha256: '0'.repeat(64), staged: 's', path: 'p' });
    const report = {
      outcome: 'committed',
      problems: [],
      manifest: {
        seq: 4,
        attempt: 'a1b2c3',
        ranges: [
          { topic: 'views', partition: 0, start: 0, end: 600, records: 598, quarantined: 2 },
          { topic: 'views', partition: 1, start: 0, end: 400, records: 400, quarantined: 0 },
        ],
        files: [file(1_000), file(2_500), file(500)],
        quarantine: { records: 2, reasons: {}, files: [file(77)] },
      },
    } as unknown as RunReport;
    const { fields, message } = summarizeRun(report, 2_000);
    expect(fields).toEqual({ event: 'run-finished', outcome: 'committed', seq: 4, attempt: 'a1b2c3', records: 998, quarantined: 2, files: 3, bytesWritten: 4_000, partitions: 2, problems: 0, durationMs: 2_000, recordsPerSecond: 499 });
    expect(message).toBe('run finished: commit 4, 998 records in 3 files (3.9 KiB written) from 2 partitions in 2.0 s: 499 records/s');
  });

  it('says when there was nothing to load', () => {
    const { fields, message } = summarizeRun({ outcome: 'nothing-to-load', problems: [] } as unknown as RunReport, 812);
    expect(fields).toMatchObject({ outcome: 'nothing-to-load', records: 0, bytesWritten: 0, durationMs: 812, recordsPerSecond: 0 });
    expect(message).toBe('run finished: nothing new to load, in 0.8 s');
  });
});
