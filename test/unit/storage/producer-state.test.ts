/**
 * Idempotent append (issue 17, storage): Kafka's producer-state rules (kafka-clients.md §2.2), one
 * by one on the table and through PartitionLog.append, then a model-based property test: seeded
 * random interleavings of in-order batches, duplicates inside and beyond the five-batch window,
 * gaps, stale epochs, epoch bumps, new epochs not at 0, sequence wrap, batches without producer
 * id, expiry, and restarts (clean, unclean, with and without snapshots) against a reference model
 * written here from the rules.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import type { LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { lastSequenceOf, MAX_SEQUENCE, ProducerStateTable } from '../../../src/storage/producer-state.js';
import { LogSegment } from '../../../src/storage/segment.js';
import { Prng } from '../../support/fuzz-frames.js';
import { openManager, temporaryDirectory, walkBatches } from './helpers.js';

const TOPIC = 'idem';

/** A batch of `count` records from producer `producerId` (−1: not idempotent). */
function producerBatch(producerId: bigint, epoch: number, baseSequence: number, count = 1, timestamp = 1_700_000_000_000): Buffer {
  return encodeRecordBatch(
    Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`p${producerId}-e${epoch}-s${baseSequence}-${i}`), timestamp })),
    producerId < 0n ? {} : { producerId, producerEpoch: epoch, baseSequence },
  );
}

async function outcome(promise: Promise<{ baseOffset: number; duplicate: boolean }>): Promise<string> {
  try {
    const result = await promise;
    return result.duplicate ? `duplicate@${result.baseOffset}` : `appended@${result.baseOffset}`;
  } catch (error) {
    if (error instanceof KafkaProtocolError) return error.code;
    throw error;
  }
}

const header = (producerId: bigint, producerEpoch: number, baseSequence: number, count = 1) => ({ producerId, producerEpoch, baseSequence, lastOffsetDelta: count - 1 });
const placed = (firstOffset: number, appendedAt = 0) => ({ firstOffset, maxTimestamp: 5n, logAppendTime: -1n, appendedAt });

describe('sequence arithmetic', () => {
  it('wraps the last sequence to 0 after 2^31−1', () => {
    expect(lastSequenceOf(0, 4)).toBe(4);
    expect(lastSequenceOf(MAX_SEQUENCE, 0)).toBe(MAX_SEQUENCE);
    expect(lastSequenceOf(MAX_SEQUENCE, 1)).toBe(0);
    expect(lastSequenceOf(MAX_SEQUENCE - 1, 3)).toBe(1);
  });
});

describe('producer state table: the rules', () => {
  function codeOf(run: () => unknown): string {
    try {
      const result = run() as { duplicateOf?: unknown };
      return result.duplicateOf === undefined ? 'ACCEPT' : 'DUPLICATE';
    } catch (error) {
      if (error instanceof KafkaProtocolError) return `${error.code}:${error.kafkaCode}`;
      throw error;
    }
  }

  it('accepts any sequence from an unknown producer, and batches without producer id always', () => {
    const table = new ProducerStateTable('t-0');
    expect(codeOf(() => table.check(header(7n, 3, 12345)))).toBe('ACCEPT');
    expect(codeOf(() => table.check(header(-1n, -1, -1)))).toBe('ACCEPT');
    table.record(header(-1n, -1, -1), placed(0));
    // Any id below 0 means "no producer id", as in Kafka.
    table.record(header(-7n, 0, 0), placed(1));
    expect(codeOf(() => table.check(header(-7n, 0, 0)))).toBe('ACCEPT');
    expect(table.size).toBe(0);
  });

  it('finds a duplicate of any of the last five batches, with its original offsets', () => {
    const table = new ProducerStateTable('t-0');
    for (let i = 0; i < 6; i += 1) table.record(header(1n, 0, i * 2, 2), placed(100 + i * 2));
    expect(table.get(1n)?.batches.map((b) => b.firstSequence)).toEqual([2, 4, 6, 8, 10]);
    const check = table.check(header(1n, 0, 4, 2));
    expect(check.duplicateOf).toMatchObject({ firstOffset: 104, lastOffset: 105, firstSequence: 4, lastSequence: 5 });
    // Same base sequence, other length: not a duplicate, and out of order.
    expect(codeOf(() => table.check(header(1n, 0, 4, 1)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER:45');
    // Fell out of the window: out of order, not a duplicate.
    expect(codeOf(() => table.check(header(1n, 0, 0, 2)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER:45');
    expect(codeOf(() => table.check(header(1n, 0, 12)))).toBe('ACCEPT');
    expect(codeOf(() => table.check(header(1n, 0, 13)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER:45');
  });

  it('refuses an older epoch with 47, even for a batch matching a cached one', () => {
    const table = new ProducerStateTable('t-0');
    table.record(header(1n, 4, 0), placed(0));
    let error: unknown;
    try {
      table.check(header(1n, 3, 0));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(KafkaProtocolError);
    const refused = error as KafkaProtocolError;
    expect([refused.code, refused.kafkaCode, refused.retriable]).toEqual(['INVALID_PRODUCER_EPOCH', 47, false]);
    expect(refused.message).toContain('epoch 3');
    expect(refused.message).toContain('current epoch for it is 4');
  });

  it('opens a higher epoch only at sequence 0, and the new epoch clears the cache', () => {
    const table = new ProducerStateTable('t-0');
    table.record(header(1n, 0, 0), placed(0));
    table.record(header(1n, 0, 1), placed(1));
    expect(codeOf(() => table.check(header(1n, 1, 2)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER:45');
    expect(codeOf(() => table.check(header(1n, 5, 0)))).toBe('ACCEPT');
    table.record(header(1n, 1, 0), placed(2));
    expect(table.get(1n)?.batches).toHaveLength(1);
    // The old epoch's batches are no duplicates any more: stale epoch.
    expect(codeOf(() => table.check(header(1n, 0, 1)))).toBe('INVALID_PRODUCER_EPOCH:47');
  });

  it('expects sequence 0 after 2^31−1', () => {
    const table = new ProducerStateTable('t-0');
    table.record(header(1n, 0, MAX_SEQUENCE - 1, 2), placed(0));
    expect(table.get(1n)?.batches[0]?.lastSequence).toBe(MAX_SEQUENCE);
    expect(codeOf(() => table.check(header(1n, 0, 0, 3)))).toBe('ACCEPT');
    table.record(header(1n, 0, 0, 3), placed(2));
    expect(codeOf(() => table.check(header(1n, 0, 3)))).toBe('ACCEPT');
  });

  it('undoes exactly the batches from the first offset that never reached the file', () => {
    const table = new ProducerStateTable('t-0');
    table.record(header(1n, 0, 0), placed(0));
    table.settleBelow(1);
    table.record(header(1n, 0, 1), placed(1));
    table.record(header(2n, 0, 9), placed(2));
    table.record(header(1n, 1, 0), placed(3));
    table.forgetFrom(2);
    expect(table.get(2n)).toBeUndefined();
    expect(table.get(1n)?.epoch).toBe(0);
    expect(table.get(1n)?.batches.map((b) => b.firstSequence)).toEqual([0, 1]);
    table.forgetFrom(0);
    // Offset 0 was settled (written): it stays.
    expect(table.get(1n)?.batches.map((b) => b.firstSequence)).toEqual([0]);
  });

  it('forgets producers idle for the expiration time and those whose batches retention deleted', () => {
    const table = new ProducerStateTable('t-0');
    table.record(header(1n, 0, 0), placed(0, 1_000));
    table.record(header(2n, 0, 0), placed(1, 5_000));
    expect(table.removeExpired(10_999, 10_000)).toEqual([]);
    expect(table.removeExpired(11_000, 10_000)).toEqual([1n]);
    expect(table.removeBefore(2)).toEqual([2n]);
    expect(table.size).toBe(0);
  });
});

describe('idempotent append in the partition log', () => {
  it('answers a duplicate with the original offsets and appends nothing; refused batches change nothing', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog(TOPIC, 0);
    expect(await outcome(log.append(producerBatch(9n, 0, 0, 3)))).toBe('appended@0');
    expect(await outcome(log.append(producerBatch(9n, 0, 3, 2)))).toBe('appended@3');
    expect(await outcome(log.append(producerBatch(9n, 0, 0, 3)))).toBe('duplicate@0');
    expect(await outcome(log.append(producerBatch(9n, 0, 3, 2), { waitForFlush: true }))).toBe('duplicate@3');
    expect(await outcome(log.append(producerBatch(9n, 0, 6)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(await outcome(log.append(producerBatch(9n, -1 + 0, 5)))).toBe('INVALID_PRODUCER_EPOCH');
    expect(await outcome(log.append(producerBatch(9n, 1, 4)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(log.logEndOffset).toBe(5);
    expect(log.producerStateSnapshot()).toEqual([
      expect.objectContaining({ producerId: 9n, epoch: 0, batches: [expect.objectContaining({ firstOffset: 0, lastSequence: 2 }), expect.objectContaining({ firstOffset: 3, lastSequence: 4 })] }),
    ]);
    expect(await outcome(log.append(producerBatch(9n, 1, 0)))).toBe('appended@5');
    expect(await outcome(log.append(producerBatch(-1n, 0, 0, 2)))).toBe('appended@6');
    await log.flush();
    const { slice } = await log.read(0, 1 << 20);
    const bytes = await slice!.readBytes();
    slice!.release();
    expect(walkBatches(bytes).map((b) => b.baseOffset)).toEqual([0, 3, 5, 6]);
    await manager.close();
  });

  it('checks and numbers pipelined appends in call order, and holds a duplicate of a queued batch until it is written', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog(TOPIC, 0);
    // Called back to back without awaiting, as the broker does for pipelined requests.
    const pending = [
      log.append(producerBatch(4n, 0, 0, 2)),
      log.append(producerBatch(4n, 0, 2, 2)),
      log.append(producerBatch(4n, 0, 0, 2)),
      log.append(producerBatch(4n, 0, 5)),
      log.append(producerBatch(4n, 0, 4)),
      log.append(producerBatch(4n, 0, 2, 2), { waitForFlush: true }),
    ];
    expect(await Promise.all(pending.map(outcome))).toEqual(['appended@0', 'appended@2', 'duplicate@0', 'OUT_OF_ORDER_SEQUENCE_NUMBER', 'appended@4', 'duplicate@2']);
    expect(log.recoveryPoint).toBeGreaterThanOrEqual(4);
    expect(log.logEndOffset).toBe(5);

    // acks=1: the duplicate of a batch still queued answers only once the original is in the file.
    const segmentFile = join(log.directory, '00000000000000000000.log');
    const sizeBefore = statSync(segmentFile).size;
    const queued = producerBatch(4n, 0, 5, 3);
    const original = log.append(queued);
    const sizeWhenDuplicateAnswered = log.append(Buffer.from(producerBatch(4n, 0, 5, 3))).then(() => statSync(segmentFile).size);
    expect(await outcome(original)).toBe('appended@5');
    expect(await sizeWhenDuplicateAnswered).toBe(sizeBefore + queued.length);
    await manager.close();
  });

  it('answers a LogAppendTime duplicate with the original append time', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { timestampType: 'LogAppendTime' });
    const log = await manager.getOrCreateLog(TOPIC, 0);
    const original = await log.append(producerBatch(4n, 0, 0));
    clock.advance(5_000);
    const duplicate = await log.append(producerBatch(4n, 0, 0));
    expect(duplicate).toEqual({ ...original, duplicate: true });
    expect(original.logAppendTime).toBe(BigInt(clock.now() - 5_000));
    await manager.close();
  });

  it('forgets the state of batches whose write failed, so their retry is appended, not answered as a duplicate', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog(TOPIC, 0);
    await log.append(producerBatch(4n, 0, 0));
    // A full disk for one write: the segment undoes its queued batches and throws, as writePending does.
    const spy = vi.spyOn(LogSegment.prototype, 'writePending').mockImplementationOnce(function (this: LogSegment) {
      this.discardPending();
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    });
    const failed = await Promise.all([log.append(producerBatch(4n, 0, 1)), log.append(producerBatch(5n, 0, 7)), log.append(producerBatch(4n, 0, 1))].map(outcome));
    expect(failed).toEqual(['KAFKA_STORAGE_ERROR', 'KAFKA_STORAGE_ERROR', 'KAFKA_STORAGE_ERROR']);
    spy.mockRestore();
    expect(log.logEndOffset).toBe(1);
    expect(log.producerStateSnapshot().map((entry) => [entry.producerId, entry.batches.map((b) => b.firstSequence)])).toEqual([[4n, [0]]]);
    expect(await outcome(log.append(producerBatch(4n, 0, 1)))).toBe('appended@1');
    expect(await outcome(log.append(producerBatch(4n, 0, 0)))).toBe('duplicate@0');
    await manager.close();
  });
});

// ---- model-based property test --------------------------------------------------------

interface ModelBatch {
  readonly first: number;
  readonly last: number;
  readonly offset: number;
}

/** The rules of kafka-clients.md §2.2, written plainly. */
class ReferenceModel {
  readonly producers = new Map<bigint, { epoch: number; batches: ModelBatch[] }>();
  end = 0;

  produce(producerId: bigint, epoch: number, sequence: number, count: number): string {
    const last = (sequence + count - 1) % (MAX_SEQUENCE + 1);
    const entry = this.producers.get(producerId);
    if (producerId >= 0n && entry !== undefined) {
      const duplicate = entry.epoch === epoch ? entry.batches.find((b) => b.first === sequence && b.last === last) : undefined;
      if (duplicate !== undefined) return `duplicate@${duplicate.offset}`;
      if (epoch < entry.epoch) return 'INVALID_PRODUCER_EPOCH';
      if (epoch > entry.epoch && sequence !== 0) return 'OUT_OF_ORDER_SEQUENCE_NUMBER';
      const previous = entry.batches[entry.batches.length - 1]!;
      if (epoch === entry.epoch && sequence !== (previous.last + 1) % (MAX_SEQUENCE + 1)) return 'OUT_OF_ORDER_SEQUENCE_NUMBER';
    }
    const offset = this.end;
    this.end += count;
    if (producerId >= 0n) {
      const kept = entry !== undefined && entry.epoch === epoch ? entry.batches : [];
      this.producers.set(producerId, { epoch, batches: [...kept, { first: sequence, last, offset }].slice(-5) });
    }
    return `appended@${offset}`;
  }

  view(): [string, number, number[][]][] {
    return [...this.producers]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([id, entry]) => [String(id), entry.epoch, entry.batches.map((b) => [b.first, b.last, b.offset])]);
  }
}

function logView(log: PartitionLog): [string, number, number[][]][] {
  return log.producerStateSnapshot().map((entry) => [String(entry.producerId), entry.epoch, entry.batches.map((b) => [b.firstSequence, b.lastSequence, b.firstOffset])]);
}

/** What the test's producers believe: their epoch, next sequence and what they sent. */
interface ClientProducer {
  readonly id: bigint;
  epoch: number;
  next: number;
  sent: { epoch: number; sequence: number; count: number }[];
}

describe('producer state against a reference model', () => {
  /** producer.id.expiration.ms by default. */
  const EXPIRATION_MS = 86_400_000;

  async function reopen(dataDir: string, manager: LogManager, clean: boolean, dropSnapshots: boolean, clock: Parameters<typeof openManager>[2]) {
    if (clean) await manager.close();
    const folder = join(dataDir, `${TOPIC}-0`);
    if (dropSnapshots) for (const file of readdirSync(folder)) if (file.endsWith('.snapshot')) rmSync(join(folder, file));
    // Unclean: the first manager is simply abandoned (a crash; the OS keeps what was written).
    return openManager(dataDir, { segmentBytes: 1_500, flushMessages: 7 }, clock);
  }

  it.each([1, 2, 3, 4, 5, 6])('agrees with the model over a random run (seed %i)', async (seed) => {
    const rng = new Prng(seed * 7919);
    const dataDir = temporaryDirectory();
    const opened = await openManager(dataDir, { segmentBytes: 1_500, flushMessages: 7 });
    const clock = opened.clock;
    let manager = opened.manager;
    const reopened = async (clean: boolean, dropSnapshots: boolean) => {
      ({ manager } = await reopen(dataDir, manager, clean, dropSnapshots, clock));
      return manager.getOrCreateLog(TOPIC, 0);
    };
    let log = await manager.getOrCreateLog(TOPIC, 0);
    const model = new ReferenceModel();
    const clients: ClientProducer[] = [];
    const counts = new Map<string, number>();
    let nextId = 1000n;
    let wrapped = 0;
    const newClient = (nearLimit = rng.chance(0.3)): ClientProducer => {
      // Some start near the sequence limit: unknown producers may start anywhere, and then wrap.
      const client = { id: nextId, epoch: rng.between(0, 3), next: nearLimit ? MAX_SEQUENCE - rng.between(0, 2) : rng.between(0, 50), sent: [] };
      nextId += 1n;
      clients.push(client);
      return client;
    };
    newClient(true);
    newClient(false);

    for (let step = 0; step < 400; step += 1) {
      const kind = step === 0 ? 'next' : rng.weighted([
        ['next', 40], ['recent-duplicate', 10], ['old-duplicate', 4], ['gap', 5], ['stale-epoch', 4], ['bump', 4],
        ['new-epoch-not-0', 3], ['plain', 4], ['new-producer', 2], ['restart', 2], ['expire', 1],
      ] as const);
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      if (kind === 'restart') {
        const clean = rng.chance(0.5);
        const dropSnapshots = rng.chance(0.4);
        expect(logView(log), 'state before the restart').toEqual(model.view());
        if (!clean) await log.flush();
        log = await reopened(clean, dropSnapshots);
        expect(logView(log), `state after a ${clean ? 'clean' : 'unclean'} restart${dropSnapshots ? ' without snapshots' : ''}`).toEqual(model.view());
        expect(log.logEndOffset).toBe(model.end);
        continue;
      }
      if (kind === 'expire') {
        clock.advance(EXPIRATION_MS);
        // Every producer is idle that long: all are forgotten, in the log as in the model.
        expect(log.expireProducers(clock.now())).toBeGreaterThanOrEqual(0);
        model.producers.clear();
        expect(logView(log)).toEqual([]);
        continue;
      }
      clock.advance(rng.between(0, 50));
      // The first batch crosses 2^31−1 (its producer starts near the limit, unknown, so accepted).
      const client = step === 0 ? clients[0]! : kind === 'new-producer' ? newClient() : rng.pick(clients);
      let epoch = client.epoch;
      let sequence = client.next;
      let count = step === 0 ? 4 : rng.between(1, 4);
      if (kind === 'recent-duplicate' || kind === 'old-duplicate') {
        const window = kind === 'recent-duplicate' ? client.sent.slice(-5) : client.sent.slice(0, -5);
        if (window.length === 0) continue;
        ({ epoch, sequence, count } = rng.pick(window));
      } else if (kind === 'gap') {
        sequence = (client.next + rng.between(1, 3)) % (MAX_SEQUENCE + 1);
      } else if (kind === 'stale-epoch') {
        if (client.epoch === 0) continue;
        epoch = client.epoch - rng.between(1, client.epoch);
      } else if (kind === 'bump') {
        client.epoch += 1;
        client.next = 0;
        client.sent = [];
        epoch = client.epoch;
        sequence = 0;
      } else if (kind === 'new-epoch-not-0') {
        epoch = client.epoch + 1;
        sequence = rng.between(1, 10);
      }
      const producerId = kind === 'plain' ? -1n : client.id;
      const expected = model.produce(producerId, epoch, sequence, count);
      const actual = await outcome(log.append(producerBatch(producerId, epoch, sequence, count, clock.now()), { waitForFlush: rng.chance(0.2) }));
      expect(actual, `step ${step}: ${kind} producer ${producerId} epoch ${epoch} sequence ${sequence} count ${count}`).toBe(expected);
      if (expected.startsWith('appended') && producerId >= 0n) {
        if (sequence + count - 1 > MAX_SEQUENCE) wrapped += 1;
        if (epoch !== client.epoch) client.sent = [];
        client.sent.push({ epoch, sequence, count });
        client.epoch = epoch;
        client.next = (sequence + count) % (MAX_SEQUENCE + 1);
      }
    }
    expect(logView(log)).toEqual(model.view());
    expect(log.logEndOffset).toBe(model.end);
    // The run exercised what it claims to.
    expect(log.segmentBaseOffsets.length).toBeGreaterThan(1);
    expect(wrapped).toBeGreaterThan(0);
    expect([...counts.keys()]).toEqual(expect.arrayContaining(['next', 'recent-duplicate', 'gap', 'stale-epoch', 'bump', 'restart']));
    await manager.close();
  });
});
