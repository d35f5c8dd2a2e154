/**
 * The pure parts of the replication harness: how a failed send is classified (a sure refusal or
 * an unknown outcome) and how test values travel as record values.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { classifySendError, decodeValue, encodeValue } from '../../support/replicated-cluster.js';
import { UNREADABLE_VALUE } from '../../support/replication-history.js';

/** A producer error as the sender gives up with it: the last attempt's code, and how many attempts failed. */
const gaveUp = (code: string, attempts: number): TributaryError => new TributaryError({ code, message: code, details: { topic: 't', partition: 0, records: 1, attempts } });

describe('classifySendError', () => {
  it('calls a refusal on the first and only attempt a sure failure', () => {
    expect(classifySendError(gaveUp('NOT_ENOUGH_REPLICAS', 1))).toEqual({ type: 'failed', error: 'NOT_ENOUGH_REPLICAS' });
    expect(classifySendError(gaveUp('MESSAGE_TOO_LARGE', 1))).toEqual({ type: 'failed', error: 'MESSAGE_TOO_LARGE' });
    expect(classifySendError(new TributaryError({ code: 'PRODUCER_CLOSED', message: 'closed' }))).toEqual({ type: 'failed', error: 'PRODUCER_CLOSED' });
  });

  it('calls unknown what may have been stored: a lost answer, an append that then failed, or any earlier attempt', () => {
    for (const code of ['REQUEST_TIMED_OUT', 'CONNECTION_LOST', 'NETWORK_EXCEPTION', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND']) {
      expect(classifySendError(gaveUp(code, 1))).toEqual({ type: 'unknown', error: code });
    }
    // The error names the last attempt only: an earlier one may have timed out after the broker stored it.
    expect(classifySendError(gaveUp('NOT_LEADER_OR_FOLLOWER', 31))).toEqual({ type: 'unknown', error: 'NOT_LEADER_OR_FOLLOWER' });
    expect(classifySendError(new TributaryError({ code: 'LEADER_NOT_AVAILABLE', message: 'no attempts recorded' }))).toEqual({ type: 'unknown', error: 'LEADER_NOT_AVAILABLE' });
    expect(classifySendError(new Error('not ours'))).toEqual({ type: 'unknown', error: 'UNKNOWN' });
  });
});

describe('test values as record values', () => {
  it('round-trips integers and reads anything else as the unreadable value', () => {
    for (const value of [0, 7, 123_456_789, 100_000_000 * 5 + 3]) expect(decodeValue(encodeValue(value))).toBe(value);
    for (const bytes of [null, Buffer.from(''), Buffer.from('12a'), Buffer.from('-5'), Buffer.from(' 5'), Buffer.from('1'.repeat(16))]) expect(decodeValue(bytes)).toBe(UNREADABLE_VALUE);
  });
});
