/**
 * The reason a worker logs for a failed job (jobs/src/worker.ts, `failed` event) is
 * failureReason of what asJobFailure threw. For a retriable failure (a lease still held, HDFS
 * away) that read "unexpected failure: … [ETL_LOAD_BUSY]" (found by `npm run chaos -- loader
 * --scenario worker-kills`): it must read as the reason, as the job's failedReason does.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { asJobFailure, failureReason } from '../../../jobs/src/failures.js';

describe('the reason logged for a failed job', () => {
  it('is the reason of a retriable failure, not "unexpected failure"', () => {
    const busy = new TributaryError({ code: 'ETL_LOAD_BUSY', message: 'load views is being run by run 4', retriable: true });
    expect(failureReason(asJobFailure(busy))).toBe('load views is being run by run 4 [ETL_LOAD_BUSY]');
  });

  it('still says "unexpected failure" for an error of unknown origin', () => {
    expect(failureReason(asJobFailure(new TypeError('x is undefined')))).toBe('unexpected failure: x is undefined');
  });
});
