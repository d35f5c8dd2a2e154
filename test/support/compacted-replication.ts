/**
 * Replicated compaction (issue #34): a keyed workload on a compacted, replicated topic, each
 * replica's log read back from its files, and the checker that judges them against what was
 * written. Used by the `compacted-leader-kill` scenario (test/chaos/compacted-replication.ts).
 *
 * The workload: an idempotent acks=−1 producer (our Producer) writing one record per send over a
 * small key space per partition, a share of them tombstones, and one-shot keys: written once,
 * deleted a little later, never written again, so their tombstones are the last word and outlive
 * delete.retention.ms if the run is longer (then cleaning drops them). Every record carries a
 * header `id` with a number unique to its send, so any record found in a log names the write it
 * came from, tombstones included. Every send's outcome is recorded: acknowledged at an offset,
 * failed, or unknown (it may or may not be stored).
 *
 * A replica is read from a stopped broker's data dir with a LogManager in this process (recovery
 * runs if needed, the cleaner is off), from its log start to its log end: every batch's header
 * fields and every record's offset, key and id; its leader-epoch cache, producer state and log
 * start; and the high watermark its replication-offset-checkpoint holds (read before the dir is
 * opened).
 *
 * The checker (`checkCompactedPartition`), for one partition and all its replicas:
 *
 *   R1 every record a replica holds was written (its id was sent, with that key and partition,
 *      tombstone or not); an acknowledged write is only ever at its acknowledged offset; no id is
 *      at two offsets (a duplicate of an idempotent send); offsets rise; each record lies in its
 *      batch's range; batches do not overlap; a reader from the log start ends at the log end.
 *   R2 the replicas' histories are one history: an offset held by two replicas holds the same
 *      record, and a batch base offset held by two replicas starts batches with the same last
 *      offset, leader epoch, producer id, producer epoch and base sequence (their records may
 *      differ: one replica may have cleaned the batch and the other not).
 *   R3 every key's latest acknowledged write survives on every replica: the newest record of the
 *      key a replica holds is at or after that write (the same record when at it). A tombstone
 *      may be gone (its delete horizon passed), but then nothing of its key is left before it.
 *   R4 cleaning never removed a key's latest record: on each replica, a key's newest record is
 *      the newest record of that key anywhere in the history below the replica's log end (or
 *      nothing, when that is a tombstone). Below the lowest high watermark of the replicas, every
 *      replica holds the same newest record per key (or none, for a tombstone): each is a valid
 *      compaction of the same history.
 *   R5 log start offsets are equal; log ends are equal (the run lets followers catch up before
 *      the stop); each replica's leader-epoch cache is ordered, within its log, and gives every
 *      batch it holds the epoch stamped in that batch; the last entry is the epoch of its last
 *      batch; and at an offset where another replica holds a batch of epoch e, it gives e or a
 *      later epoch (where it holds nothing, it may date an epoch early, never late).
 *   R6 producer state is the same on every replica: per producer id, its epoch and its last
 *      batch's sequences and offsets.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../src/common/errors.js';
import { createLogger } from '../../src/common/logger.js';
import { Producer } from '../../src/client/producer.js';
import { readBatchHeader, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, BATCH_LENGTH_OFFSET } from '../../src/protocol/record-batch.js';
import { decodeRecords } from '../../src/protocol/records.js';
import { checkpointKey, readCheckpoint } from '../../src/storage/checkpoint.js';
import type { EpochEntry } from '../../src/storage/leader-epoch-cache.js';
import { logConfigSchema, type LogConfig } from '../../src/storage/log-config.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { classifySendError } from './replicated-cluster.js';
import type { SendOutcome } from './replication-history.js';

/** The header every record carries: the unique number of its send. */
export const ID_HEADER = 'id';

// -------------------------------------------------------------------------------------------------
// Workload

export interface KeyedWrite {
  readonly id: number;
  readonly partition: number;
  readonly key: string;
  readonly tombstone: boolean;
  readonly time: number;
  outcome: SendOutcome | undefined;
}

export interface KeyedWorkloadOptions {
  readonly topic: string;
  readonly partitions: readonly number[];
  /** Distinct keys per partition; default 40. */
  readonly keysPerPartition?: number;
  /** Share of sends that are tombstones; default 0.1. */
  readonly tombstoneShare?: number;
  /** Share of sends that write a new one-shot key, and as many that delete the oldest one written; default 0. */
  readonly oneShotShare?: number;
  /** Sends per second over all partitions; default 200. */
  readonly ratePerSecond?: number;
  readonly random: () => number;
  /** Sends waiting for an answer beyond which no new one starts; default 2000. */
  readonly maxPending?: number;
}

/** The key of index `index` in `partition`: keys never move between partitions. */
export function keyName(partition: number, index: number): string {
  return `p${partition}-k${index}`;
}

/**
 * Sends keyed records and tombstones at a steady rate, one record per send, each to a chosen
 * partition, and records every send and its outcome in `writes` (by id).
 */
export class KeyedWorkload {
  readonly writes = new Map<number, KeyedWrite>();
  /** Send failures by error code: diagnostics. */
  readonly errors = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private producing = true;
  private nextId = 0;
  private acknowledgedCount = 0;
  private loop: Promise<void> = Promise.resolve();
  private stopped: Promise<void> | undefined;
  /** One-shot keys written and not yet deleted, oldest first, per partition. */
  private readonly oneShot = new Map<number, string[]>();
  private oneShotCount = 0;

  private constructor(
    private readonly options: KeyedWorkloadOptions,
    private readonly producer: Producer,
  ) {}

  static async start(bootstrap: readonly string[], options: KeyedWorkloadOptions): Promise<KeyedWorkload> {
    const producer = await Producer.connect({
      bootstrap,
      clientId: 'keyed-workload',
      allowAutoTopicCreation: false,
      acks: -1,
      idempotent: true,
      retries: 30,
      retryBackoffMs: 100,
      retryBackoffMaxMs: 1000,
      requestTimeoutMs: 10_000,
      lingerMs: 5,
    });
    const workload = new KeyedWorkload(options, producer);
    workload.loop = workload.produce();
    return workload;
  }

  acknowledged(): number {
    return this.acknowledgedCount;
  }

  describeErrors(): string {
    return [...this.errors].map(([code, count]) => `${code} ×${count}`).join(', ') || 'none';
  }

  async waitForAcknowledged(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.acknowledgedCount < count) {
      if (Date.now() > deadline) throw new Error(`only ${this.acknowledgedCount} of ${count} keyed sends acknowledged after ${timeoutMs} ms (errors: ${this.describeErrors()})`);
      await sleep(100);
    }
  }

  /** Stops sending, waits up to `drainTimeoutMs` for the sends in flight (those left are unknown), closes the producer. */
  stop(drainTimeoutMs = 60_000): Promise<void> {
    this.stopped ??= (async () => {
      this.producing = false;
      await this.loop;
      await Promise.race([Promise.allSettled([...this.inFlight]), sleep(drainTimeoutMs)]);
      for (const write of this.writes.values()) write.outcome ??= { type: 'unknown', error: 'NO_ANSWER_BEFORE_STOP' };
      const closed = this.producer.close();
      await Promise.race([closed, sleep(1_000)]);
      this.producer.cluster.close();
      await closed.catch(() => undefined);
    })();
    return this.stopped;
  }

  private async produce(): Promise<void> {
    const rate = this.options.ratePerSecond ?? 200;
    const maxPending = this.options.maxPending ?? 2000;
    const began = Date.now();
    let started = 0;
    while (this.producing) {
      const due = Math.floor(((Date.now() - began) / 1000) * rate);
      while (started < due && this.inFlight.size < maxPending) {
        this.send();
        started += 1;
      }
      if (started < due) started = due;
      await sleep(10);
    }
  }

  private send(): void {
    const { random, partitions } = this.options;
    const id = this.nextId;
    this.nextId += 1;
    const partition = partitions[Math.floor(random() * partitions.length)] as number;
    let key = keyName(partition, Math.floor(random() * (this.options.keysPerPartition ?? 40)));
    let tombstone = random() < (this.options.tombstoneShare ?? 0.1);
    const oneShotShare = this.options.oneShotShare ?? 0;
    const draw = random();
    const pending = this.oneShot.get(partition) ?? [];
    if (draw < oneShotShare) {
      key = `p${partition}-once${this.oneShotCount}`;
      this.oneShotCount += 1;
      tombstone = false;
      this.oneShot.set(partition, [...pending, key]);
    } else if (draw < 2 * oneShotShare && pending.length > 0) {
      key = pending[0] as string;
      tombstone = true;
      this.oneShot.set(partition, pending.slice(1));
    }
    const write: KeyedWrite = { id, partition, key, tombstone, time: Date.now(), outcome: undefined };
    this.writes.set(id, write);
    const sent = this.producer
      .send(this.options.topic, [{ partition, key: Buffer.from(key), value: tombstone ? null : Buffer.from(`v${id}`), headers: [{ key: ID_HEADER, value: Buffer.from(String(id)) }] }])
      .then(
        ([metadata]) => {
          if (write.outcome !== undefined) return;
          this.acknowledgedCount += 1;
          write.outcome = { type: 'acknowledged', offset: Number(metadata?.offset ?? -1n) };
        },
        (error: unknown) => {
          const outcome = classifySendError(error);
          const code = error instanceof TributaryError ? error.code : 'UNKNOWN';
          this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
          write.outcome ??= outcome;
        },
      );
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }
}

// -------------------------------------------------------------------------------------------------
// Reading a replica from its files

export interface StoredRecord {
  readonly offset: number;
  readonly key: string;
  /** The id header's number; NaN when the record has none. */
  readonly id: number;
  readonly tombstone: boolean;
}

export interface StoredBatch {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly leaderEpoch: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly records: readonly StoredRecord[];
}

export interface ProducerSummary {
  readonly producerId: bigint;
  readonly epoch: number;
  readonly lastSequence: number;
  readonly lastOffset: number;
}

export interface ReplicaContents {
  readonly brokerId: number;
  /** Why the log could not be read; the rest is empty then. */
  readonly error: string | undefined;
  readonly logStartOffset: number;
  readonly logEndOffset: number;
  /** Where a reader from the log start stopped. */
  readonly readEnd: number;
  /** From the broker's replication-offset-checkpoint; undefined when it has no entry. */
  readonly highWatermark: number | undefined;
  readonly batches: readonly StoredBatch[];
  readonly epochs: readonly EpochEntry[];
  readonly producers: readonly ProducerSummary[];
}

/** The log config the replicas are read with (the cleaner never runs on them here). */
export function compactedLogConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return logConfigSchema.parse({ cleanupPolicy: 'compact', ...overrides });
}

/** Reads one replica of `topic`/`partition` from a stopped broker's data dir (see the file comment). */
export async function readReplica(brokerId: number, dataDir: string, topic: string, partition: number, config: LogConfig = compactedLogConfig()): Promise<ReplicaContents> {
  const empty = (error: string): ReplicaContents => ({ brokerId, error, logStartOffset: 0, logEndOffset: 0, readEnd: 0, highWatermark: undefined, batches: [], epochs: [], producers: [] });
  const checkpointPath = join(dataDir, 'replication-offset-checkpoint');
  const highWatermark = existsSync(checkpointPath) ? readCheckpoint(checkpointPath).get(checkpointKey(topic, partition)) : undefined;
  const logger = createLogger({ name: `replica-reader-${brokerId}`, level: 'warn' });
  const manager = await LogManager.open({ dataDir, logger, configFor: () => config, cleaner: { enable: false, threads: 1, dedupeBufferSize: 1024 * 1024, loadFactor: 0.9, ioBufferSize: 65_536, maxIoBytesPerSecond: Infinity, backoffMs: 60_000 } });
  try {
    if (manager.offlineLogs().length > 0) return empty(`offline: ${manager.offlineLogs().map((log) => log.reason).join('; ')}`);
    const log = manager.getLog(topic, partition);
    if (log === undefined) return empty('no log for the partition');
    const batches: StoredBatch[] = [];
    let offset = log.logStartOffset;
    for (;;) {
      const { slice } = await log.read(offset, 1024 * 1024);
      if (slice === undefined) break;
      const bytes = await slice.readBytes();
      slice.release();
      let position = 0;
      const before = offset;
      while (position + RECORD_BATCH_OVERHEAD <= bytes.length) {
        const size = bytes.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        if (position + size > bytes.length) break;
        const header = readBatchHeader(bytes, position);
        const baseOffset = Number(header.baseOffset);
        const records = decodeRecords(bytes, position).map((record) => {
          const id = record.headers.find((entry) => entry.key === ID_HEADER)?.value;
          return { offset: Number(record.offset), key: record.key?.toString('utf8') ?? '', id: id === undefined || id === null ? Number.NaN : Number(id.toString('utf8')), tombstone: record.value === null };
        });
        batches.push({
          baseOffset,
          lastOffset: baseOffset + header.lastOffsetDelta,
          leaderEpoch: header.partitionLeaderEpoch,
          producerId: header.producerId,
          producerEpoch: header.producerEpoch,
          baseSequence: header.baseSequence,
          records,
        });
        offset = baseOffset + header.lastOffsetDelta + 1;
        position += size;
      }
      if (offset === before) break; // nothing whole came back: stop rather than loop
    }
    const producers = log.producerStateSnapshot().map((entry) => {
      const last = entry.batches.at(-1);
      return { producerId: entry.producerId, epoch: entry.epoch, lastSequence: last?.lastSequence ?? -1, lastOffset: last?.lastOffset ?? -1 };
    });
    return {
      brokerId,
      error: undefined,
      logStartOffset: log.logStartOffset,
      logEndOffset: log.logEndOffset,
      readEnd: offset,
      highWatermark,
      batches,
      epochs: log.leaderEpochCache.entries(),
      producers,
    };
  } finally {
    await manager.close();
  }
}

// -------------------------------------------------------------------------------------------------
// The checker

export interface PartitionCheck {
  readonly partition: number;
  readonly violations: readonly string[];
  /** Keys whose latest acknowledged write is missing on some replica (R3). */
  readonly lost: number;
  /** Ids stored at two offsets (R1). */
  readonly duplicated: number;
  /** The lowest high watermark of the replicas (their checkpoints), and the log end. */
  readonly minHighWatermark: number;
  readonly logEndOffset: number;
  /** Keys whose latest acknowledged write is a tombstone that some replica no longer holds (its horizon passed). */
  readonly tombstonesDropped: number;
  /** Per replica: records held, and offsets below its log end that hold none (removed by cleaning). */
  readonly held: readonly { readonly brokerId: number; readonly records: number; readonly batches: number }[];
  readonly keys: number;
}

/** Checks R1–R6 for one partition over `replicas` (see the file comment); at most `limit` violations of each kind are listed. */
export function checkCompactedPartition(partition: number, writes: ReadonlyMap<number, KeyedWrite>, replicas: readonly ReplicaContents[], limit = 10): PartitionCheck {
  const violations: string[] = [];
  const counts = new Map<string, number>();
  const fail = (kind: string, text: string): void => {
    const seen = (counts.get(kind) ?? 0) + 1;
    counts.set(kind, seen);
    if (seen <= limit) violations.push(`p${partition} ${kind}: ${text}`);
  };
  const say = (record: StoredRecord): string => `${record.key}=${record.tombstone ? 'tombstone' : `v${record.id}`} (id ${record.id}) at ${record.offset}`;

  for (const replica of replicas) if (replica.error !== undefined) fail('R5 unreadable', `broker ${replica.brokerId}: ${replica.error}`);
  const readable = replicas.filter((replica) => replica.error === undefined);

  // R1, per replica; the history (offset → record) is the union.
  const history = new Map<number, { record: StoredRecord; brokerId: number }>();
  const idAt = new Map<number, number>();
  let duplicated = 0;
  for (const replica of readable) {
    const who = `broker ${replica.brokerId}`;
    if (replica.readEnd !== replica.logEndOffset) fail('R1 short read', `${who}: a reader from the log start ${replica.logStartOffset} stopped at ${replica.readEnd}, not at the log end ${replica.logEndOffset}`);
    let previousEnd = replica.logStartOffset;
    let previousOffset = -1;
    for (const batch of replica.batches) {
      if (batch.baseOffset < previousEnd) fail('R1 overlap', `${who}: batch [${batch.baseOffset}, ${batch.lastOffset}] starts before ${previousEnd}`);
      previousEnd = batch.lastOffset + 1;
      for (const record of batch.records) {
        if (record.offset < batch.baseOffset || record.offset > batch.lastOffset) fail('R1 outside batch', `${who}: ${say(record)} is outside its batch [${batch.baseOffset}, ${batch.lastOffset}]`);
        if (record.offset <= previousOffset) fail('R1 order', `${who}: offset ${record.offset} follows ${previousOffset}`);
        previousOffset = record.offset;
        const write = writes.get(record.id);
        if (write === undefined || write.key !== record.key || write.partition !== partition || write.tombstone !== record.tombstone) {
          fail('R1 never written', `${who}: ${say(record)} matches no send`);
          continue;
        }
        if (write.outcome?.type === 'acknowledged' && write.outcome.offset !== record.offset) fail('R1 moved', `${who}: ${say(record)} was acknowledged at ${write.outcome.offset}`);
        const other = idAt.get(record.id);
        if (other !== undefined && other !== record.offset) {
          duplicated += 1;
          fail('R1 duplicate', `id ${record.id} is at ${other} and at ${record.offset} (${who})`);
        }
        idAt.set(record.id, record.offset);
        const known = history.get(record.offset);
        if (known === undefined) history.set(record.offset, { record, brokerId: replica.brokerId });
        else if (known.record.id !== record.id) fail('R2 offset differs', `offset ${record.offset}: broker ${known.brokerId} holds ${say(known.record)}, ${who} holds ${say(record)}`);
      }
    }
  }

  // R2: batches at the same base offset are the same batch.
  const batchAt = new Map<number, { batch: StoredBatch; brokerId: number }>();
  for (const replica of readable) {
    for (const batch of replica.batches) {
      const known = batchAt.get(batch.baseOffset);
      if (known === undefined) {
        batchAt.set(batch.baseOffset, { batch, brokerId: replica.brokerId });
        continue;
      }
      const fields = ['lastOffset', 'leaderEpoch', 'producerId', 'producerEpoch', 'baseSequence'] as const;
      const differing = fields.filter((field) => known.batch[field] !== batch[field]).map((field) => `${field} ${String(known.batch[field])} ≠ ${String(batch[field])}`);
      if (differing.length > 0) fail('R2 batch differs', `batch at ${batch.baseOffset}: broker ${known.brokerId} vs broker ${replica.brokerId}: ${differing.join(', ')}`);
    }
  }

  // Newest record per key: in the history, and on each replica.
  const newestOn = (replica: ReplicaContents): Map<string, StoredRecord> => {
    const newest = new Map<string, StoredRecord>();
    for (const batch of replica.batches) for (const record of batch.records) newest.set(record.key, record);
    return newest;
  };
  const byKey = new Map<string, StoredRecord[]>();
  for (const { record } of [...history.values()].sort((a, b) => a.record.offset - b.record.offset)) byKey.set(record.key, [...(byKey.get(record.key) ?? []), record]);
  const newestInHistoryBelow = (key: string, end: number): StoredRecord | undefined => (byKey.get(key) ?? []).filter((record) => record.offset < end).at(-1);
  const minHighWatermark = Math.min(...readable.map((replica) => replica.highWatermark ?? replica.logEndOffset));

  // R3: the latest acknowledged write of each key survives on every replica.
  const latestAcknowledged = new Map<string, KeyedWrite & { offset: number }>();
  for (const write of writes.values()) {
    if (write.partition !== partition || write.outcome?.type !== 'acknowledged') continue;
    const offset = write.outcome.offset;
    const known = latestAcknowledged.get(write.key);
    if (known === undefined || known.offset < offset) latestAcknowledged.set(write.key, { ...write, offset });
  }
  const lostKeys = new Set<string>();
  for (const replica of readable) {
    const newest = newestOn(replica);
    for (const [key, acknowledged] of latestAcknowledged) {
      const found = newest.get(key);
      const what = `${key}=${acknowledged.tombstone ? 'tombstone' : `v${acknowledged.id}`} acknowledged at ${acknowledged.offset}`;
      // A tombstone past its delete horizon goes; only if nothing of its key is left before it.
      if (found === undefined && acknowledged.tombstone) continue;
      if (found === undefined || found.offset < acknowledged.offset) {
        lostKeys.add(key);
        fail('R3 lost', `broker ${replica.brokerId}: ${what} is gone (newest held: ${found === undefined ? 'none' : say(found)})`);
      } else if (found.offset === acknowledged.offset && found.id !== acknowledged.id) {
        lostKeys.add(key);
        fail('R3 replaced', `broker ${replica.brokerId}: ${what}, but ${say(found)} is there`);
      }
    }
    // R4: a replica's newest record of each key is the history's newest below its log end.
    for (const key of byKey.keys()) {
      const expected = newestInHistoryBelow(key, replica.logEndOffset);
      const found = newest.get(key);
      if (expected !== undefined && found?.id !== expected.id && !(found === undefined && expected.tombstone)) {
        fail('R4 not the latest', `broker ${replica.brokerId}: newest ${key} held is ${found === undefined ? 'none' : say(found)}, but ${say(expected)} is in the history below its log end ${replica.logEndOffset}`);
      }
    }
  }
  // R4 below the lowest high watermark: every replica holds the same newest record per key.
  for (const key of byKey.keys()) {
    const expected = newestInHistoryBelow(key, minHighWatermark);
    if (expected === undefined) continue;
    const held = readable.map((replica) => ({ brokerId: replica.brokerId, found: newestOn(replica).get(key) }));
    if (held.some(({ found }) => found?.id !== expected.id && !(found === undefined && expected.tombstone))) {
      fail('R4 replicas disagree', `${key} below high watermark ${minHighWatermark}: ${held.map(({ brokerId, found }) => `broker ${brokerId} ${found === undefined ? 'none' : say(found)}`).join(', ')}`);
    }
  }

  // R5: log start and end, leader epochs.
  const starts = new Set(readable.map((replica) => replica.logStartOffset));
  if (starts.size > 1) fail('R5 log start', readable.map((replica) => `broker ${replica.brokerId} starts at ${replica.logStartOffset}`).join(', '));
  const ends = new Set(readable.map((replica) => replica.logEndOffset));
  if (ends.size > 1) fail('R5 log end', readable.map((replica) => `broker ${replica.brokerId} ends at ${replica.logEndOffset}`).join(', '));
  for (const replica of readable) {
    const who = `broker ${replica.brokerId}`;
    const { epochs } = replica;
    for (let index = 1; index < epochs.length; index += 1) {
      const before = epochs[index - 1] as EpochEntry;
      const entry = epochs[index] as EpochEntry;
      if (entry.epoch <= before.epoch || entry.startOffset < before.startOffset) fail('R5 epoch order', `${who}: epoch ${entry.epoch} at ${entry.startOffset} follows epoch ${before.epoch} at ${before.startOffset}`);
    }
    const last = epochs.at(-1);
    if (last !== undefined && last.startOffset >= replica.logEndOffset) fail('R5 epoch past end', `${who}: epoch ${last.epoch} starts at ${last.startOffset}, at or past the log end ${replica.logEndOffset}`);
    const epochAt = (offset: number): number => {
      let found = -1;
      for (const entry of epochs) if (entry.startOffset <= offset) found = entry.epoch;
      return found;
    };
    for (const batch of replica.batches) {
      const cached = epochAt(batch.baseOffset);
      if (cached !== batch.leaderEpoch) fail('R5 epoch of batch', `${who}: batch [${batch.baseOffset}, ${batch.lastOffset}] carries epoch ${batch.leaderEpoch}, the epoch cache says ${cached} (${epochs.map((entry) => `${entry.epoch}@${entry.startOffset}`).join(' ')})`);
    }
    const lastBatch = replica.batches.at(-1);
    if (lastBatch !== undefined && last !== undefined && last.epoch !== lastBatch.leaderEpoch) fail('R5 latest epoch', `${who}: the cache's latest epoch ${last.epoch} is not its last batch's ${lastBatch.leaderEpoch}`);
    // Where this replica holds nothing (a gap its leader's cleaner left), its cache may date an
    // epoch earlier than the truth, never later: a later start would make it, leading, tell
    // another replica that the epoch before ended after that replica's batches of the newer one.
    for (const other of readable) {
      if (other === replica) continue;
      for (const batch of other.batches) {
        if (batch.baseOffset >= replica.logEndOffset || batch.baseOffset < replica.logStartOffset) continue;
        const cached = epochAt(batch.baseOffset);
        if (cached < batch.leaderEpoch) fail('R5 epoch starts late', `${who}: its cache gives offset ${batch.baseOffset} epoch ${cached}, but broker ${other.brokerId} holds a batch of epoch ${batch.leaderEpoch} there`);
      }
    }
  }

  // R6: producer state.
  const reference = readable[0];
  if (reference !== undefined) {
    const describe = (producers: readonly ProducerSummary[]): string =>
      [...producers].sort((a, b) => (a.producerId < b.producerId ? -1 : 1)).map((entry) => `${entry.producerId}:${entry.epoch}:${entry.lastSequence}@${entry.lastOffset}`).join(' ');
    for (const replica of readable.slice(1)) {
      if (describe(replica.producers) !== describe(reference.producers)) {
        fail('R6 producer state', `broker ${reference.brokerId} has [${describe(reference.producers)}], broker ${replica.brokerId} has [${describe(replica.producers)}]`);
      }
    }
  }

  let tombstonesDropped = 0;
  for (const [key, acknowledged] of latestAcknowledged) {
    if (acknowledged.tombstone && readable.some((replica) => newestOn(replica).get(key) === undefined)) tombstonesDropped += 1;
  }

  for (const [kind, count] of counts) if (count > limit) violations.push(`p${partition} ${kind}: ${count - limit} more`);
  return {
    tombstonesDropped,
    partition,
    violations,
    lost: lostKeys.size,
    duplicated,
    minHighWatermark,
    logEndOffset: Math.max(0, ...readable.map((replica) => replica.logEndOffset)),
    held: readable.map((replica) => ({ brokerId: replica.brokerId, records: replica.batches.reduce((sum, batch) => sum + batch.records.length, 0), batches: replica.batches.length })),
    keys: byKey.size,
  };
}
