/**
 * The idempotent producer's bookkeeping: its producer id and epoch, and per partition the next
 * sequence to hand out and the last one the broker acknowledged.
 *
 * The broker stores a batch only if its base sequence follows the last one it stored for this
 * producer id and epoch, and answers a repeat of one of the last five with success and the
 * original offset. So the client's job is to give each batch its numbers once (when it is first
 * drained), to resend a failed batch with the very same numbers, and to never let a batch reach the
 * broker ahead of an earlier one of its partition that is still outstanding.
 *
 * When the broker and the client disagree for good (the broker lost the producer's state, or a
 * batch in the middle was given up), the partition cannot continue in this epoch: the client bumps
 * the epoch itself (epoch + 1, the partition's sequences start at 0 again), as the Java client
 * does, and only once nothing of that partition is in flight. The batches of that partition that
 * were waiting then get new numbers — safe, because the broker has just said it does not have them.
 * At epoch 32767 a new producer id is needed instead (InitProducerId again).
 */
import type { BatchIdentity } from './batch.js';

export const MAX_EPOCH = 32_767;
const SEQUENCE_MODULUS = 2 ** 31;

export interface ProducerIdAndEpoch {
  readonly producerId: bigint;
  readonly epoch: number;
}

/** One partition's sequence state, valid for one producer id and epoch. */
interface PartitionSequences {
  producerId: bigint;
  epoch: number;
  nextSequence: number;
  /** The last sequence the broker acknowledged in this epoch; −1 before the first. */
  lastAcked: number;
  /** A batch was given up without knowing whether it was stored: its last sequence. */
  unresolvedLast: number | undefined;
  /** The partition must restart at sequence 0 in a newer epoch once nothing of it is in flight. */
  needsNewEpoch: boolean;
}

/** How to treat a sequence-related error on a batch. */
export type SequenceVerdict =
  /** Resend unchanged; an earlier batch is missing at the broker and goes first. Not the batch's fault. */
  | 'retry-behind-earlier'
  /** The gap is real: resend in a newer epoch (numbers restart at 0 for the partition). */
  | 'retry-in-new-epoch'
  /** Fail the batch. */
  | 'fatal';

export function nextSequence(sequence: number, count: number): number {
  return (sequence + count) % SEQUENCE_MODULUS;
}

export function lastSequence(identity: BatchIdentity, count: number): number {
  return nextSequence(identity.baseSequence, count - 1);
}

/** Whether sequence `a` comes after `b`, in a space that wraps at 2^31. */
function isAfter(a: number, b: number): boolean {
  const distance = (a - b + SEQUENCE_MODULUS) % SEQUENCE_MODULUS;
  return distance > 0 && distance < SEQUENCE_MODULUS / 2;
}

export class ProducerSequences {
  private idAndEpoch: ProducerIdAndEpoch | undefined;
  private readonly partitions = new Map<string, PartitionSequences>();

  /** The producer id and epoch new batches get; undefined before InitProducerId answered. */
  get current(): ProducerIdAndEpoch | undefined {
    return this.idAndEpoch;
  }

  /** A new producer id from InitProducerId: every partition starts again at sequence 0 in it. */
  setProducerId(idAndEpoch: ProducerIdAndEpoch): void {
    this.idAndEpoch = idAndEpoch;
  }

  /**
   * Whether a new batch of the partition may get numbers now. `outstanding`: a numbered batch of
   * the partition is in flight or waiting for a retry.
   */
  mayNumber(key: string, outstanding: boolean): boolean {
    if (this.idAndEpoch === undefined) return false;
    const state = this.partitions.get(key);
    if (state === undefined) return true;
    // After a batch was given up, wait to learn whether it was stored (`settle`) before numbering more.
    if (state.needsNewEpoch || state.unresolvedLast !== undefined) return false;
    // Sequences of a stale epoch restart at 0, which must not overtake what is still out.
    return !this.isStale(state) || !outstanding;
  }

  /** Gives a new batch of `count` records its identity. Call only when `mayNumber` said yes. */
  number(key: string, count: number): BatchIdentity {
    const current = this.idAndEpoch;
    if (current === undefined) throw new Error('no producer id yet');
    let state = this.partitions.get(key);
    if (state === undefined || this.isStale(state)) {
      state = { producerId: current.producerId, epoch: current.epoch, nextSequence: 0, lastAcked: -1, unresolvedLast: undefined, needsNewEpoch: false };
      this.partitions.set(key, state);
    }
    const identity = { producerId: state.producerId, epoch: state.epoch, baseSequence: state.nextSequence };
    state.nextSequence = nextSequence(state.nextSequence, count);
    return identity;
  }

  /** The broker stored the batch (or already had it). */
  acknowledged(key: string, identity: BatchIdentity, count: number): void {
    const state = this.stateOf(key, identity);
    if (state === undefined) return;
    const last = lastSequence(identity, count);
    if (state.lastAcked < 0 || isAfter(last, state.lastAcked)) state.lastAcked = last;
  }

  /**
   * OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID for a batch. Out of order means a gap
   * before the batch at the broker: if the batch is not the one right after the last
   * acknowledged (or given-up) batch, an earlier one is still on its way and this one is simply
   * resent behind it; if it is, the broker lost track and the partition needs a new epoch.
   * An unknown producer id always does.
   */
  sequenceError(key: string, identity: BatchIdentity, kind: 'out-of-order' | 'unknown-producer'): SequenceVerdict {
    const state = this.stateOf(key, identity);
    if (state === undefined) return 'fatal';
    if (kind === 'out-of-order') {
      const expected = nextSequence(state.unresolvedLast ?? state.lastAcked, 1);
      if (identity.baseSequence !== expected) return 'retry-behind-earlier';
    }
    state.needsNewEpoch = true;
    return 'retry-in-new-epoch';
  }

  /**
   * The batch was failed for good. If it was surely not stored and nothing was numbered after it,
   * its numbers are handed out again; if it was surely not stored but later batches have numbers,
   * those can never be stored in this epoch; if it may have been stored, the next batches wait
   * until the broker's answers tell which.
   */
  gaveUp(key: string, identity: BatchIdentity, count: number, mayHaveBeenStored: boolean): void {
    const state = this.stateOf(key, identity);
    if (state === undefined) return;
    const after = nextSequence(identity.baseSequence, count);
    if (!mayHaveBeenStored && after === state.nextSequence) state.nextSequence = identity.baseSequence;
    else if (!mayHaveBeenStored) state.needsNewEpoch = true;
    else if (state.unresolvedLast === undefined || isAfter(lastSequence(identity, count), state.unresolvedLast)) state.unresolvedLast = lastSequence(identity, count);
  }

  /** Whether the partition waits for a new epoch (call `startNewEpoch` once nothing of it is in flight). */
  needsNewEpoch(key: string): boolean {
    return this.partitions.get(key)?.needsNewEpoch === true;
  }

  /**
   * Moves the partition to a newer epoch than the one its sequences count in, bumping the
   * producer's epoch when the partition is on the current one. Returns false when the epoch is
   * exhausted: a new producer id is needed first (`setProducerId`), then call again.
   */
  startNewEpoch(key: string): boolean {
    const state = this.partitions.get(key);
    const current = this.idAndEpoch;
    if (state === undefined || current === undefined) return true;
    if (!this.isStale(state)) {
      if (current.epoch >= MAX_EPOCH) return false;
      this.idAndEpoch = { producerId: current.producerId, epoch: current.epoch + 1 };
    }
    this.partitions.delete(key);
    return true;
  }

  private isStale(state: PartitionSequences): boolean {
    return state.producerId !== this.idAndEpoch?.producerId || state.epoch !== this.idAndEpoch.epoch;
  }

  /** The partition's state if `identity` counts in it (not a batch of an older epoch). */
  private stateOf(key: string, identity: BatchIdentity): PartitionSequences | undefined {
    const state = this.partitions.get(key);
    return state !== undefined && state.producerId === identity.producerId && state.epoch === identity.epoch ? state : undefined;
  }

  /**
   * Call with nothing of the partition outstanding. A batch given up with an unknown outcome is
   * proven stored by a later acknowledgement; without one, the partition needs a new epoch
   * (which is safe either way: the old epoch's batches stay as they are).
   */
  settle(key: string): void {
    const state = this.partitions.get(key);
    if (state?.unresolvedLast === undefined) return;
    if (state.lastAcked < 0 || isAfter(state.unresolvedLast, state.lastAcked)) state.needsNewEpoch = true;
    state.unresolvedLast = undefined;
  }
}

/** Whether batch `a` must reach the broker before batch `b` of the same partition. */
export function comesBefore(a: BatchIdentity, b: BatchIdentity): boolean {
  if (a.producerId !== b.producerId || a.epoch !== b.epoch) return a.producerId < b.producerId || (a.producerId === b.producerId && a.epoch < b.epoch);
  return isAfter(b.baseSequence, a.baseSequence);
}

/** Whether `next` is the batch right after `previous` in their partition's sequence. */
export function follows(previous: BatchIdentity, previousCount: number, next: BatchIdentity): boolean {
  return previous.producerId === next.producerId && previous.epoch === next.epoch && nextSequence(previous.baseSequence, previousCount) === next.baseSequence;
}
