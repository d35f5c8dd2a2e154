import { describe, expect, it } from 'vitest';
import { causeMessages, isRetriable, TributaryError } from '../../../src/common/errors.js';

describe('TributaryError', () => {
  it('carries a code, a retriable flag, details and its cause', () => {
    const cause = new Error('ECONNRESET');
    const error = new TributaryError({
      code: 'BROKER_UNREACHABLE',
      message: 'broker 1 at 127.0.0.1:9092 closed the connection; it will be retried',
      retriable: true,
      cause,
      details: { brokerId: 1 },
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('TributaryError');
    expect(error.code).toBe('BROKER_UNREACHABLE');
    expect(error.retriable).toBe(true);
    expect(error.cause).toBe(cause);
    expect(error.details).toEqual({ brokerId: 1 });
    expect(isRetriable(error)).toBe(true);
  });

  it('is permanent unless said otherwise, and unknown errors are never retriable', () => {
    expect(new TributaryError({ code: 'CORRUPT_BATCH', message: 'CRC mismatch' }).retriable).toBe(false);
    expect(isRetriable(new Error('anything'))).toBe(false);
    expect(isRetriable('a string')).toBe(false);
  });

  it('serializes to JSON with the cause chain flattened to messages', () => {
    const error = new TributaryError({
      code: 'HDFS_RENAME_FAILED',
      message: 'rename of /a to /b failed',
      cause: new Error('outer', { cause: new Error('inner') }),
    });
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      name: 'TributaryError',
      code: 'HDFS_RENAME_FAILED',
      message: 'rename of /a to /b failed',
      retriable: false,
      details: {},
      causes: ['outer', 'inner'],
    });
  });

  it('bounds a cyclic cause chain', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(causeMessages(a, 4)).toEqual(['a', 'b', 'a', 'b']);
    expect(causeMessages('plain text')).toEqual(['plain text']);
    expect(causeMessages({ reason: 42 })).toEqual(['{ reason: 42 }']);
  });
});
