/**
 * Idempotent-producer state of one partition (Kafka's ProducerStateManager, facts from
 * /work/shared/reference/kafka-clients.md §2.2): per producer id its current epoch, its last five
 * batches and when it last appended. Pure logic, no I/O: the log asks `check` before numbering a
 * batch and calls `record` once the batch has its offsets; snapshots and replay feed `apply`.
 *
 * Checks on a client batch, in Kafka's order:
 *   1. same epoch and (baseSequence, lastSequence) equal to one of the five cached batches
 *      → a duplicate: the caller answers with that batch's offsets and appends nothing;
 *   2. epoch below the current one → INVALID_PRODUCER_EPOCH (47);
 *   3. epoch above the current one → base sequence must be 0, else OUT_OF_ORDER_SEQUENCE_NUMBER (45);
 *   4. same epoch → base sequence must follow the last one (0 after 2^31−1), else 45 — this
 *      includes duplicates older than the five cached batches;
 *   5. no state for the producer (new, expired, or its batches deleted by retention) → any sequence.
 *
 * Writes that fail after `record` are undone with `forgetFrom`: every `record` keeps the entry as
 * it was before (a journal), kept until the write of its batch is known to have succeeded
 * (`settleBelow`). The journal is keyed by the batch's first offset, so undoing "everything from
 * the first offset that never reached the file" restores exactly the state of the bytes on disk.
 */
import { KafkaProtocolError } from '../protocol/kafka-errors.js';

/** Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN. */
export const BATCHES_RETAINED = 5;
export const MAX_SEQUENCE = 2_147_483_647;
export const NO_PRODUCER_ID = -1n;

/** One appended batch of a producer, as the duplicate check and the Produce answer need it. */
export interface ProducerBatch {
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly firstOffset: number;
  readonly lastOffset: number;
  /** The batch's MaxTimestamp as stored (exact int64). */
  readonly maxTimestamp: bigint;
  /** The broker's append time on a LogAppendTime topic, −1 otherwise (what a duplicate is answered with). */
  readonly logAppendTime: bigint;
}

export interface ProducerEntry {
  readonly producerId: bigint;
  readonly epoch: number;
  /** Oldest first, at most BATCHES_RETAINED, never empty. */
  readonly batches: readonly ProducerBatch[];
  /** Broker clock (ms) of the producer's last append: what `producer.id.expiration.ms` measures. */
  readonly lastTimestamp: number;
}

/** The producer fields of a batch's header. */
export interface ProducerBatchHeader {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly lastOffsetDelta: number;
}

/** Where an accepted batch went. */
export interface PlacedBatch {
  readonly firstOffset: number;
  readonly maxTimestamp: bigint;
  readonly logAppendTime: bigint;
  /** Broker clock (ms) of the append. */
  readonly appendedAt: number;
}

export type SequenceCheck = { readonly duplicateOf: undefined } | { readonly duplicateOf: ProducerBatch };

const ACCEPT: SequenceCheck = { duplicateOf: undefined };

/** Sequence of a batch's last record: Kafka wraps to 0 after 2^31−1. */
export function lastSequenceOf(baseSequence: number, lastOffsetDelta: number): number {
  if (baseSequence > MAX_SEQUENCE - lastOffsetDelta) return lastOffsetDelta - (MAX_SEQUENCE - baseSequence) - 1;
  return baseSequence + lastOffsetDelta;
}

/** The sequence that must come after `lastSequence`. */
export function nextSequenceAfter(lastSequence: number): number {
  return lastSequence === MAX_SEQUENCE ? 0 : lastSequence + 1;
}

/** Kafka's DefaultRecordBatch.hasProducerId: any id below 0 means "no producer id". */
export function hasProducerId(header: Pick<ProducerBatchHeader, 'producerId'>): boolean {
  return header.producerId > NO_PRODUCER_ID;
}

interface JournalRecord {
  readonly firstOffset: number;
  readonly producerId: bigint;
  readonly previous: ProducerEntry | undefined;
}

export class ProducerStateTable {
  private readonly producers = new Map<bigint, ProducerEntry>();
  private journal: JournalRecord[] = [];
  /** Bumped on every change, so an unchanged table is not snapshotted twice. */
  changes = 0;

  constructor(private readonly partitionName: string) {}

  get size(): number {
    return this.producers.size;
  }

  get(producerId: bigint): ProducerEntry | undefined {
    return this.producers.get(producerId);
  }

  /** Every entry, by producer id. */
  entries(): ProducerEntry[] {
    return [...this.producers.values()].sort((a, b) => (a.producerId < b.producerId ? -1 : a.producerId > b.producerId ? 1 : 0));
  }

  /**
   * Kafka's checks on a client batch (see the file comment). Returns the cached batch it
   * duplicates, if any; throws KafkaProtocolError 47 or 45. Changes nothing.
   */
  check(header: ProducerBatchHeader): SequenceCheck {
    if (!hasProducerId(header)) return ACCEPT;
    const entry = this.producers.get(header.producerId);
    if (entry === undefined) return ACCEPT;
    const { producerId, producerEpoch: epoch, baseSequence } = header;
    const lastSequence = lastSequenceOf(baseSequence, header.lastOffsetDelta);
    if (epoch === entry.epoch) {
      const duplicate = entry.batches.find((batch) => batch.firstSequence === baseSequence && batch.lastSequence === lastSequence);
      if (duplicate !== undefined) return { duplicateOf: duplicate };
    }
    const details = { producerId: String(producerId), epoch, baseSequence, currentEpoch: entry.epoch, partition: this.partitionName };
    if (epoch < entry.epoch) {
      throw new KafkaProtocolError(
        'INVALID_PRODUCER_EPOCH',
        `producer ${producerId} sent epoch ${epoch} to partition ${this.partitionName}, whose current epoch for it is ${entry.epoch}: ` +
          'a newer instance of this producer took over; this one is fenced and must stop (or re-initialize with InitProducerId)',
        { details },
      );
    }
    if (epoch > entry.epoch) {
      if (baseSequence === 0) return ACCEPT;
      throw new KafkaProtocolError(
        'OUT_OF_ORDER_SEQUENCE_NUMBER',
        `producer ${producerId} opened epoch ${epoch} on partition ${this.partitionName} (current epoch ${entry.epoch}) at sequence ${baseSequence}; ` +
          'a new epoch must start at sequence 0 — reset the sequence numbers when bumping the epoch',
        { details },
      );
    }
    const last = entry.batches[entry.batches.length - 1];
    if (last === undefined) return ACCEPT;
    const expected = nextSequenceAfter(last.lastSequence);
    if (baseSequence === expected) return ACCEPT;
    throw new KafkaProtocolError(
      'OUT_OF_ORDER_SEQUENCE_NUMBER',
      `producer ${producerId} epoch ${epoch} sent sequences ${baseSequence}..${lastSequence} to partition ${this.partitionName}, ` +
        `which expected sequence ${expected} (the last batch written held ${last.firstSequence}..${last.lastSequence} at offset ${last.firstOffset}); ` +
        `batches were lost or reordered in between, or this is a retry older than the last ${BATCHES_RETAINED} batches — ` +
        'the producer must bump its epoch (sequence 0) or re-initialize, and resend',
      { details: { ...details, expectedSequence: expected, lastSequence: last.lastSequence } },
    );
  }

  /**
   * Records a batch that passed `check` and was given offsets, keeping the previous entry until
   * `settleBelow` says the batch is in the file (or `forgetFrom` undoes it).
   */
  record(header: ProducerBatchHeader, placed: PlacedBatch): void {
    if (!hasProducerId(header)) return;
    this.journal.push({ firstOffset: placed.firstOffset, producerId: header.producerId, previous: this.producers.get(header.producerId) });
    this.apply(header, placed);
  }

  /**
   * Applies a batch without checks: the log is the truth (replay at load, and `record`). Replay
   * passes `expirationMs`: a producer idle that long before this batch was forgotten in between
   * (`removeExpired`), so the batch starts a new entry, as it did when it was appended.
   */
  apply(header: ProducerBatchHeader, placed: PlacedBatch, expirationMs = Infinity): void {
    if (!hasProducerId(header)) return;
    const known = this.producers.get(header.producerId);
    const entry = known !== undefined && placed.appendedAt - known.lastTimestamp < expirationMs ? known : undefined;
    const batch: ProducerBatch = {
      firstSequence: header.baseSequence,
      lastSequence: lastSequenceOf(header.baseSequence, header.lastOffsetDelta),
      firstOffset: placed.firstOffset,
      lastOffset: placed.firstOffset + header.lastOffsetDelta,
      maxTimestamp: placed.maxTimestamp,
      logAppendTime: placed.logAppendTime,
    };
    // A new epoch starts a new cache.
    const kept = entry !== undefined && entry.epoch === header.producerEpoch ? entry.batches.slice(-(BATCHES_RETAINED - 1)) : [];
    this.producers.set(header.producerId, {
      producerId: header.producerId,
      epoch: header.producerEpoch,
      batches: [...kept, batch],
      lastTimestamp: placed.appendedAt,
    });
    this.changes += 1;
  }

  /** The batches recorded before `offset` are in the file: their undo records are dropped. */
  settleBelow(offset: number): void {
    if (this.journal.length === 0) return;
    this.journal = this.journal.filter((record) => record.firstOffset >= offset);
  }

  /** The batches from `offset` on never reached the file: restores the entries as they were before them. */
  forgetFrom(offset: number): void {
    while (this.journal.length > 0) {
      const record = this.journal[this.journal.length - 1];
      if (record === undefined || record.firstOffset < offset) break;
      this.journal.pop();
      if (record.previous === undefined) this.producers.delete(record.producerId);
      else this.producers.set(record.producerId, record.previous);
      this.changes += 1;
    }
  }

  /** Forgets producers idle for `expirationMs` or longer; returns their ids. */
  removeExpired(now: number, expirationMs: number): bigint[] {
    const expired: bigint[] = [];
    for (const [producerId, entry] of this.producers) {
      if (now - entry.lastTimestamp >= expirationMs) expired.push(producerId);
    }
    this.removeAll(expired);
    return expired;
  }

  /** Forgets producers whose every batch lies before `logStartOffset` (retention deleted them). */
  removeBefore(logStartOffset: number): bigint[] {
    const gone: bigint[] = [];
    for (const [producerId, entry] of this.producers) {
      const last = entry.batches[entry.batches.length - 1];
      if (last === undefined || last.lastOffset < logStartOffset) gone.push(producerId);
    }
    this.removeAll(gone);
    return gone;
  }

  /** Replaces the whole table (a snapshot was loaded). */
  load(entries: readonly ProducerEntry[]): void {
    this.producers.clear();
    this.journal = [];
    for (const entry of entries) this.producers.set(entry.producerId, entry);
    this.changes += 1;
  }

  private removeAll(producerIds: readonly bigint[]): void {
    if (producerIds.length === 0) return;
    for (const producerId of producerIds) this.producers.delete(producerId);
    // An undo record must not resurrect a producer forgotten since.
    const removed = new Set(producerIds);
    this.journal = this.journal.filter((record) => !removed.has(record.producerId));
    this.changes += 1;
  }
}
