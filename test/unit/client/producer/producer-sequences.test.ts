/**
 * The idempotent producer's sequence bookkeeping on its own: numbering, what a sequence error
 * means depending on what was acknowledged, given-up batches, and the client-side epoch bump.
 */
import { describe, expect, it } from 'vitest';
import { MAX_EPOCH, ProducerSequences, comesBefore, follows } from '../../../../src/client/producer/producer-sequences.js';

const P = 't\u00000';
const Q = 't\u00001';

function started(epoch = 0): ProducerSequences {
  const sequences = new ProducerSequences();
  sequences.setProducerId({ producerId: 7n, epoch });
  return sequences;
}

describe('ProducerSequences', () => {
  it('numbers nothing before it has a producer id, then numbers each partition from 0 by record count', () => {
    const sequences = new ProducerSequences();
    expect(sequences.mayNumber(P, false)).toBe(false);
    sequences.setProducerId({ producerId: 7n, epoch: 0 });
    expect(sequences.number(P, 3)).toEqual({ producerId: 7n, epoch: 0, baseSequence: 0 });
    expect(sequences.number(P, 2)).toEqual({ producerId: 7n, epoch: 0, baseSequence: 3 });
    expect(sequences.number(Q, 4)).toEqual({ producerId: 7n, epoch: 0, baseSequence: 0 });
  });

  it('wraps sequences after 2^31 - 1, and orders across the wrap', () => {
    const sequences = started();
    sequences.number(P, 2 ** 31 - 2);
    const before = sequences.number(P, 2);
    const after = sequences.number(P, 1);
    expect(before.baseSequence).toBe(2 ** 31 - 2);
    expect(after.baseSequence).toBe(0);
    expect(follows(before, 2, after)).toBe(true);
    expect(comesBefore(before, after)).toBe(true);
    expect(comesBefore(after, before)).toBe(false);
  });

  it('OUT_OF_ORDER on a batch behind an unacknowledged one waits for it; on the very next batch it needs a new epoch', () => {
    const sequences = started();
    const first = sequences.number(P, 5);
    const second = sequences.number(P, 5);
    expect(sequences.sequenceError(P, second, 'out-of-order')).toBe('retry-behind-earlier');
    expect(sequences.needsNewEpoch(P)).toBe(false);
    sequences.acknowledged(P, first, 5);
    expect(sequences.sequenceError(P, second, 'out-of-order')).toBe('retry-in-new-epoch');
    expect(sequences.needsNewEpoch(P)).toBe(true);
    expect(sequences.mayNumber(P, false)).toBe(false);
  });

  it('UNKNOWN_PRODUCER_ID always needs a new epoch', () => {
    const sequences = started();
    const batch = sequences.number(P, 1);
    expect(sequences.sequenceError(P, batch, 'unknown-producer')).toBe('retry-in-new-epoch');
  });

  it('a new epoch: epoch + 1 for the producer, the partition restarts at 0, other partitions restart once nothing of theirs is out', () => {
    const sequences = started();
    const batch = sequences.number(P, 3);
    sequences.number(Q, 3);
    sequences.sequenceError(P, batch, 'unknown-producer');
    expect(sequences.startNewEpoch(P)).toBe(true);
    expect(sequences.current).toEqual({ producerId: 7n, epoch: 1 });
    expect(sequences.number(P, 3)).toEqual({ producerId: 7n, epoch: 1, baseSequence: 0 });
    // Q still has a batch of epoch 0 out: its epoch-1 sequence 0 must not overtake it.
    expect(sequences.mayNumber(Q, true)).toBe(false);
    expect(sequences.mayNumber(Q, false)).toBe(true);
    expect(sequences.number(Q, 1)).toEqual({ producerId: 7n, epoch: 1, baseSequence: 0 });
  });

  it('at epoch 32767 asks for a new producer id instead of bumping', () => {
    const sequences = started(MAX_EPOCH);
    const batch = sequences.number(P, 1);
    sequences.sequenceError(P, batch, 'out-of-order');
    expect(sequences.startNewEpoch(P)).toBe(false);
    sequences.setProducerId({ producerId: 8n, epoch: 0 });
    expect(sequences.startNewEpoch(P)).toBe(true);
    expect(sequences.number(P, 1)).toEqual({ producerId: 8n, epoch: 0, baseSequence: 0 });
  });

  it('a given-up batch surely not stored: the last one gives its numbers back, one in the middle needs a new epoch', () => {
    const sequences = started();
    const last = sequences.number(P, 4);
    sequences.gaveUp(P, last, 4, false);
    expect(sequences.number(P, 1).baseSequence).toBe(0);
    const middle = sequences.number(P, 2);
    sequences.number(P, 2);
    sequences.gaveUp(P, middle, 2, false);
    expect(sequences.needsNewEpoch(P)).toBe(true);
  });

  it('a given-up batch that may be stored: a later acknowledgement proves it stored; none means a new epoch', () => {
    const stored = started();
    const lost = stored.number(P, 2);
    const later = stored.number(P, 2);
    stored.gaveUp(P, lost, 2, true);
    expect(stored.mayNumber(P, true)).toBe(false);
    stored.acknowledged(P, later, 2);
    stored.settle(P);
    expect(stored.mayNumber(P, false)).toBe(true);
    expect(stored.needsNewEpoch(P)).toBe(false);

    const unknown = started();
    const alone = unknown.number(P, 2);
    unknown.gaveUp(P, alone, 2, true);
    unknown.settle(P);
    expect(unknown.mayNumber(P, false)).toBe(false);
    expect(unknown.needsNewEpoch(P)).toBe(true);
  });

  it('OUT_OF_ORDER right after a given-up batch proves the gap: new epoch', () => {
    const sequences = started();
    const lost = sequences.number(P, 2);
    const next = sequences.number(P, 2);
    sequences.gaveUp(P, lost, 2, true);
    expect(sequences.sequenceError(P, next, 'out-of-order')).toBe('retry-in-new-epoch');
  });
});
