/** Which failures a job retries and which fail it at once, with the reason as its failedReason. */
import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { asJobFailure, failingAsJob, failureReason } from '../../../jobs/src/failures.js';

describe('job failures', () => {
  it('throws a retriable failure as a plain Error (BullMQ retries it with backoff) with the reason and its code', () => {
    const busy = new TributaryError({ code: 'ETL_LOAD_BUSY', message: 'load views is being run by run 4', retriable: true });
    const failure = asJobFailure(busy);
    expect(failure).not.toBeInstanceOf(UnrecoverableError);
    expect(failure.message).toBe('load views is being run by run 4 [ETL_LOAD_BUSY]');
    expect(failure.cause).toBe(busy);
  });

  it('turns a permanent failure into UnrecoverableError whose message is the reason and its code', () => {
    const lost = new TributaryError({ code: 'ETL_OFFSETS_LOST', message: 'partition views-0 of load views: offsets [5, 90) were deleted by retention' });
    const failure = asJobFailure(lost);
    expect(failure).toBeInstanceOf(UnrecoverableError);
    expect(failure.message).toBe('partition views-0 of load views: offsets [5, 90) were deleted by retention [ETL_OFFSETS_LOST]');
  });

  it('treats an error of unknown origin as permanent (a bug does not heal by retrying)', () => {
    const failure = asJobFailure(new TypeError("Cannot read properties of undefined (reading 'x')"));
    expect(failure).toBeInstanceOf(UnrecoverableError);
    expect(failure.message).toBe("unexpected failure: Cannot read properties of undefined (reading 'x')");
    expect(failureReason('a string')).toBe('unexpected failure: a string');
  });

  it('keeps an UnrecoverableError as it is', () => {
    const unrecoverable = new UnrecoverableError('already decided');
    expect(asJobFailure(unrecoverable)).toBe(unrecoverable);
    expect(failureReason(unrecoverable)).toBe('already decided');
  });

  it('rethrows from failingAsJob as asJobFailure decides, and passes results through', async () => {
    await expect(failingAsJob(async () => 42)).resolves.toBe(42);
    await expect(
      failingAsJob(async () => {
        throw new TributaryError({ code: 'CONFIG_INVALID', message: 'invalid configuration in load file /jobs/v.yaml: codec: …' });
      }),
    ).rejects.toThrow(new UnrecoverableError('invalid configuration in load file /jobs/v.yaml: codec: … [CONFIG_INVALID]'));
  });
});
