/**
 * The storage side of replication: a leader's appends stamped with its epoch, a follower's
 * appends of the leader's bytes (checked whole before anything changes), truncation to a batch
 * boundary or to an empty log, the high watermark moved only by the replica manager in
 * 'replicated' mode, and follower reads up to the written end.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { validateStoredBatch } from '../../../src/protocol/batch-validation.js';
import { computeBatchCrc, PARTITION_LEADER_EPOCH_OFFSET } from '../../../src/protocol/record-batch.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { LEADER_EPOCH_CHECKPOINT } from '../../../src/storage/leader-epoch-cache.js';
import { CLEAN_SHUTDOWN_MARKER, LOG_START_CHECKPOINT, LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { readCheckpoint } from '../../../src/storage/checkpoint.js';
import { batch, config, memoryLogger, openManager, temporaryDirectory, walkBatches } from './helpers.js';

const SETTINGS = { flushMessages: 1_000_000, indexIntervalBytes: 128 };
/** The tests' clock (ManualClock's start): producer batches carry it, so replay does not take their producers for idle. */
const NOW = 1_700_000_000_000;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TributaryError) return error.code;
    throw error;
  }
  return 'NONE';
}

function producerBatch(producerId: bigint, baseSequence: number, count = 2): Buffer {
  return encodeRecordBatch(
    Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`p${producerId}-${baseSequence + i}`), timestamp: NOW + i })),
    { producerId, producerEpoch: 0, baseSequence },
  );
}

async function leaderAndFollower(overrides: Record<string, number | boolean> = {}) {
  const directory = temporaryDirectory();
  const opened = await openManager(directory, { ...SETTINGS, ...overrides });
  const leader = await opened.manager.getOrCreateLog('lead', 0);
  const follower = await opened.manager.getOrCreateLog('follow', 0);
  return { ...opened, directory, leader, follower };
}

/** What a leader's Fetch would carry from `offset`: whole written batches of one segment. */
async function fetchFrom(log: PartitionLog, offset: number, maxBytes = 1 << 20): Promise<Buffer> {
  const { slice } = await log.read(offset, maxBytes, { upTo: 'written' });
  if (slice === undefined) return Buffer.alloc(0);
  try {
    return await slice.readBytes();
  } finally {
    slice.release();
  }
}

/** Fetches from the leader until the follower has everything the leader wrote, flushing after each. */
async function replicate(leader: PartitionLog, follower: PartitionLog): Promise<void> {
  while (follower.logEndOffset < leader.writtenEndOffset) {
    const result = await follower.appendAsFollower(await fetchFrom(leader, follower.logEndOffset));
    expect(result).toBeDefined();
    await follower.flush();
  }
}

/** The segment files of a log folder, by name. */
function segmentFiles(dataDir: string, folder: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const name of readdirSync(join(dataDir, folder)).filter((file) => file.endsWith('.log')).sort()) {
    files.set(name, readFileSync(join(dataDir, folder, name)));
  }
  return files;
}

function snapshotOffsets(dataDir: string, folder: string): number[] {
  return readdirSync(join(dataDir, folder))
    .filter((file) => file.endsWith('.snapshot'))
    .map((file) => Number(file.slice(0, 20)))
    .sort((a, b) => a - b);
}

const epochs = (log: PartitionLog): [number, number][] => log.leaderEpochCache.entries().map((entry) => [entry.epoch, entry.startOffset]);

async function storedBytes(log: PartitionLog, offset = log.logStartOffset): Promise<Buffer> {
  const parts: Buffer[] = [];
  let next = offset;
  while (next < log.writtenEndOffset) {
    const bytes = await fetchFrom(log, next);
    parts.push(bytes);
    const last = walkBatches(bytes).at(-1);
    if (last === undefined) break;
    next = last.lastOffset + 1;
  }
  return Buffer.concat(parts);
}

async function values(log: PartitionLog): Promise<string[]> {
  const bytes = await storedBytes(log);
  return walkBatches(bytes).flatMap((stored) => decodeRecords(bytes, stored.position).map((record) => `${record.offset}:${record.value?.toString()}`));
}

describe('append as leader with an epoch', () => {
  it('stamps PartitionLeaderEpoch (bytes 12–15) and keeps the CRC valid', async () => {
    const { manager, directory, leader } = await leaderAndFollower();
    await leader.append(batch(3), { leaderEpoch: 7 });
    await leader.append(batch(2), { leaderEpoch: 7 });
    await leader.flush();
    const file = segmentFiles(directory, 'lead-0').get('00000000000000000000.log')!;
    for (const stored of walkBatches(file)) {
      const bytes = file.subarray(stored.position, stored.position + stored.size);
      expect(bytes.readInt32BE(PARTITION_LEADER_EPOCH_OFFSET)).toBe(7);
      expect(computeBatchCrc(bytes, 0, bytes.length)).toBe(bytes.readUInt32BE(17));
      expect(() => validateStoredBatch(bytes)).not.toThrow();
    }
    expect(epochs(leader)).toEqual([[7, 0]]);
    expect(readFileSync(join(directory, 'lead-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).toBe('0\n1\n7 0\n');
    await manager.close();
  });

  it('records a newer epoch at the base offset of its first batch and refuses an older one', async () => {
    const { manager, leader } = await leaderAndFollower();
    await leader.append(batch(3), { leaderEpoch: 1 });
    await leader.append(batch(2), { leaderEpoch: 4 });
    await leader.append(batch(1), { leaderEpoch: 4 });
    expect(epochs(leader)).toEqual([[1, 0], [4, 3]]);
    expect(await codeOf(leader.append(batch(1), { leaderEpoch: 3 }))).toBe('NOT_LEADER_OR_FOLLOWER');
    expect(await codeOf(leader.append(batch(1), { leaderEpoch: -2 }))).toBe('LEADER_EPOCH_INVALID');
    expect(leader.logEndOffset).toBe(6);
    expect(epochs(leader)).toEqual([[1, 0], [4, 3]]);
    await manager.close();
  });

  it('stores the batch as the producer sent it without an epoch, and never writes an epoch file', async () => {
    const { manager, directory, leader } = await leaderAndFollower();
    const sent = encodeRecordBatch([{ value: Buffer.from('x'), timestamp: 1_000 }], { partitionLeaderEpoch: 12 });
    await leader.append(sent);
    await leader.append(batch(1));
    await leader.flush();
    const file = segmentFiles(directory, 'lead-0').get('00000000000000000000.log')!;
    expect(walkBatches(file).map((stored) => file.readInt32BE(stored.position + PARTITION_LEADER_EPOCH_OFFSET))).toEqual([12, -1]);
    expect(leader.leaderEpochCache.entries()).toEqual([]);
    expect(existsSync(join(directory, 'lead-0', LEADER_EPOCH_CHECKPOINT))).toBe(false);
    await manager.close();
  });
});

describe('appendAsFollower', () => {
  it('stores the leader’s bytes unchanged, rolling where the leader rolled, and takes its epochs', async () => {
    const { manager, directory, leader, follower } = await leaderAndFollower({ segmentBytes: 1_200 });
    for (let i = 0; i < 30; i += 1) await leader.append(batch(1 + (i % 4), { tag: `b${i}`, valueBytes: 60 }), { leaderEpoch: i < 12 ? 1 : i < 20 ? 3 : 6 });
    await leader.flush();
    expect(leader.segmentBaseOffsets.length).toBeGreaterThan(3);
    await replicate(leader, follower);
    expect(follower.logEndOffset).toBe(leader.logEndOffset);
    expect(follower.segmentBaseOffsets).toEqual(leader.segmentBaseOffsets);
    const leaderFiles = segmentFiles(directory, 'lead-0');
    const followerFiles = segmentFiles(directory, 'follow-0');
    expect([...followerFiles.keys()]).toEqual([...leaderFiles.keys()]);
    for (const [name, bytes] of leaderFiles) expect(followerFiles.get(name)!.equals(bytes)).toBe(true);
    expect(epochs(follower)).toEqual(epochs(leader));
    expect(epochs(follower).map(([epoch]) => epoch)).toEqual([1, 3, 6]);
    expect(await values(follower)).toEqual(await values(leader));
    await manager.close();
  });

  it('ignores a trailing partial batch and answers undefined when no whole batch came', async () => {
    const { manager, leader, follower } = await leaderAndFollower();
    for (let i = 0; i < 4; i += 1) await leader.append(batch(2, { tag: `b${i}` }), { leaderEpoch: 2 });
    const all = await fetchFrom(leader, 0);
    const stored = walkBatches(all);
    const cut = stored[2]!.position + 30;
    expect(await follower.appendAsFollower(all.subarray(0, 8))).toBeUndefined();
    expect(await follower.appendAsFollower(all.subarray(0, 40))).toBeUndefined();
    expect(follower.logEndOffset).toBe(0);
    expect(await follower.appendAsFollower(all.subarray(0, cut))).toEqual({ batches: 2, firstOffset: 0, lastOffset: 3 });
    expect(follower.logEndOffset).toBe(4);
    expect(follower.writtenEndOffset).toBe(4);
    expect(await follower.appendAsFollower(all.subarray(stored[2]!.position))).toEqual({ batches: 2, firstOffset: 4, lastOffset: 7 });
    await manager.close();
  });

  const damages: Record<string, { readonly code: string; readonly damage: (bytes: Buffer, second: number) => Buffer }> = {
    'a CRC mismatch': { code: 'REPLICA_BATCH_INVALID', damage: (bytes, second) => flip(bytes, second + 70) },
    'a wrong magic byte': { code: 'REPLICA_BATCH_INVALID', damage: (bytes, second) => set(bytes, second + 16, 1) },
    'a batch length below a header': { code: 'REPLICA_BATCH_INVALID', damage: (bytes, second) => setInt32(bytes, second + 8, 20) },
    'a batch length past any limit': { code: 'REPLICA_BATCH_INVALID', damage: (bytes, second) => setInt32(bytes, second + 8, 50_000_000) },
    'a record count that disagrees with the last offset delta': {
      code: 'REPLICA_BATCH_INVALID',
      damage: (bytes, second) => {
        const copy = setInt32(bytes, second + 57, 9);
        const size = copy.readInt32BE(second + 8) + 12;
        copy.writeUInt32BE(computeBatchCrc(copy, second, size), second + 17);
        return copy;
      },
    },
    'an overlap between batches': { code: 'REPLICA_OFFSET_MISMATCH', damage: (bytes, second) => setInt64(bytes, second, 1n) },
  };
  for (const [name, { code, damage }] of Object.entries(damages)) {
    it(`refuses records with ${name} and changes nothing`, async () => {
      const { manager, directory, leader, follower } = await leaderAndFollower();
      await leader.append(batch(2, { tag: 'first' }), { leaderEpoch: 1 });
      await follower.appendAsFollower(await fetchFrom(leader, 0));
      await follower.flush();
      // Two more batches of a new epoch: the first valid, the second damaged.
      await leader.append(batch(2, { tag: 'second' }), { leaderEpoch: 2 });
      await leader.append(batch(2, { tag: 'third' }), { leaderEpoch: 2 });
      const bytes = await fetchFrom(leader, 2);
      const second = walkBatches(bytes)[1]!.position;
      const before = { end: follower.logEndOffset, size: statSync(join(directory, 'follow-0', '00000000000000000000.log')).size, epochs: epochs(follower) };
      expect(await codeOf(follower.appendAsFollower(damage(bytes, second)))).toBe(code);
      expect({ end: follower.logEndOffset, size: statSync(join(directory, 'follow-0', '00000000000000000000.log')).size, epochs: epochs(follower) }).toEqual(before);
      expect(readFileSync(join(directory, 'follow-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).toBe('0\n1\n1 0\n');
      // The undamaged records still go in.
      expect(await follower.appendAsFollower(bytes)).toEqual({ batches: 2, firstOffset: 2, lastOffset: 5 });
      await manager.close();
    });
  }

  it('refuses repeats of what it holds, and stores a gap a compacted leader left with its offsets', async () => {
    const { manager, leader, follower } = await leaderAndFollower();
    for (let i = 0; i < 3; i += 1) await leader.append(batch(2), { leaderEpoch: 1 });
    const fromZero = await fetchFrom(leader, 0);
    const fromTwo = await fetchFrom(leader, 2);
    await follower.appendAsFollower(fromZero);
    for (const repeat of [fromZero, fromTwo]) {
      const error = await follower.appendAsFollower(repeat).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TributaryError);
      expect(error).toMatchObject({ code: 'REPLICA_OFFSET_MISMATCH', retriable: false, details: { expected: 6 } });
    }
    expect(follower.logEndOffset).toBe(6);

    // Offsets 6 and 7 are gone from the leader's history (compacted): the next batch starts at 8.
    const other = await leaderAndFollower();
    await other.follower.appendAsFollower(await fetchFrom(leader, 2));
    expect(other.follower.logEndOffset).toBe(6);
    expect((await fetchFrom(other.follower, 0)).equals(fromTwo)).toBe(true);
    await other.manager.close();
    await manager.close();
  });

  it('keeps producer state as the leader does, so a retry of a replicated batch is a duplicate', async () => {
    const { manager, leader, follower } = await leaderAndFollower({ segmentBytes: 600 });
    for (let sequence = 0; sequence < 20; sequence += 2) {
      await leader.append(producerBatch(7n, sequence), { leaderEpoch: 1 });
      await leader.append(producerBatch(8n, sequence), { leaderEpoch: 1 });
    }
    await replicate(leader, follower);
    const strip = (log: PartitionLog) => log.producerStateSnapshot().map(({ producerId, epoch, batches }) => ({ producerId, epoch, batches }));
    expect(strip(follower)).toEqual(strip(leader));
    // The follower becomes leader: a producer's retry of its last batch is answered with the original's offsets.
    const retried = await follower.append(producerBatch(7n, 18), { leaderEpoch: 2 });
    expect(retried.duplicate).toBe(true);
    expect(retried.baseOffset).toBe(leader.producerStateSnapshot().find((entry) => entry.producerId === 7n)!.batches.at(-1)!.firstOffset);
    expect(await codeOf(follower.append(producerBatch(7n, 24), { leaderEpoch: 2 }))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect((await follower.append(producerBatch(7n, 20), { leaderEpoch: 2 })).duplicate).toBe(false);
    await manager.close();
  });

  it('reports the written end and wakes followers’ long-polls when bytes reach the file', async () => {
    const directory = temporaryDirectory();
    const appended: string[] = [];
    const flushed: string[] = [];
    const manager = await LogManager.open({
      dataDir: directory,
      logger: memoryLogger().logger,
      configFor: () => config(SETTINGS),
      onAppended: (log) => appended.push(`${log.name}@${log.writtenEndOffset}`),
      onFlushed: (log) => flushed.push(`${log.name}@${log.flushedEndOffset}`),
    });
    const leader = await manager.getOrCreateLog('lead', 0);
    const follower = await manager.getOrCreateLog('follow', 0);
    await leader.append(batch(3), { leaderEpoch: 1 });
    await follower.appendAsFollower(await fetchFrom(leader, 0));
    expect(appended).toEqual(['lead-0@3', 'follow-0@3']);
    await follower.flush();
    expect(flushed).toEqual(['follow-0@3']);
    await manager.close();
  });
});

describe('truncateTo', () => {
  /** A leader with epochs 1, 2 and 3, replicated; returns the batches' offsets. */
  async function filled(overrides: Record<string, number> = {}) {
    const setup = await leaderAndFollower(overrides);
    const { leader, follower } = setup;
    for (let i = 0; i < 24; i += 1) {
      await leader.append(producerBatch(9n, i * 3, 3), { leaderEpoch: i < 8 ? 1 : i < 16 ? 2 : 3 });
    }
    await leader.flush();
    await replicate(leader, follower);
    return setup;
  }

  it('cuts mid-segment at the batch holding the offset, keeping what is before', async () => {
    const { manager, directory, follower } = await filled();
    const before = await values(follower);
    expect(follower.segmentBaseOffsets).toEqual([0]);
    // Offset 40 lies in the batch 39..41: the log ends at 39.
    expect(await follower.truncateTo(40)).toBe(39);
    expect([follower.logEndOffset, follower.writtenEndOffset, follower.flushedEndOffset, follower.highWatermark]).toEqual([39, 39, 39, 39]);
    expect(await values(follower)).toEqual(before.slice(0, 39));
    const file = segmentFiles(directory, 'follow-0').get('00000000000000000000.log')!;
    expect(walkBatches(file).at(-1)).toMatchObject({ lastOffset: 38 });
    expect(walkBatches(file).reduce((sum, stored) => sum + stored.size, 0)).toBe(file.length);
    expect(epochs(follower)).toEqual([[1, 0], [2, 24]]);
    expect(readFileSync(join(directory, 'follow-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).toBe('0\n2\n1 0\n2 24\n');
    // The log goes on from the cut.
    expect((await follower.append(batch(1), { leaderEpoch: 4 })).baseOffset).toBe(39);
    expect(epochs(follower)).toEqual([[1, 0], [2, 24], [4, 39]]);
    await manager.close();
  });

  it('cuts at a segment boundary, leaving that segment empty, and across several segments', async () => {
    const { manager, directory, leader, follower } = await filled({ segmentBytes: 500 });
    const bases = follower.segmentBaseOffsets.slice();
    expect(bases.length).toBeGreaterThan(4);
    const boundary = bases[3]!;
    expect(await follower.truncateTo(boundary)).toBe(boundary);
    expect(follower.segmentBaseOffsets).toEqual(bases.slice(0, 4));
    expect(follower.logEndOffset).toBe(boundary);
    const files = segmentFiles(directory, 'follow-0');
    expect([...files.keys()].map((name) => Number(name.slice(0, 20)))).toEqual(bases.slice(0, 4));
    expect(files.get(`${String(boundary).padStart(20, '0')}.log`)!.length).toBe(0);
    for (const base of bases.slice(4)) {
      for (const suffix of ['.log', '.index', '.timeindex']) expect(existsSync(join(directory, 'follow-0', `${String(base).padStart(20, '0')}${suffix}`))).toBe(false);
    }
    // Into the middle of the first segment: every later segment goes.
    expect(await follower.truncateTo(4)).toBe(3);
    expect(follower.segmentBaseOffsets).toEqual([0]);
    expect([...segmentFiles(directory, 'follow-0').keys()]).toEqual(['00000000000000000000.log']);
    expect(epochs(follower)).toEqual([[1, 0]]);
    // It follows the leader again from there, byte for byte.
    await replicate(leader, follower);
    for (const [name, bytes] of segmentFiles(directory, 'lead-0')) expect(segmentFiles(directory, 'follow-0').get(name)!.equals(bytes)).toBe(true);
    expect(epochs(follower)).toEqual(epochs(leader));
    await manager.close();
  });

  it('rebuilds producer state and deletes snapshots past the cut', async () => {
    const { manager, directory, follower } = await filled({ segmentBytes: 500 });
    await follower.whenSnapshotsWritten();
    expect(snapshotOffsets(directory, 'follow-0').length).toBeGreaterThan(3);
    const cutTo = follower.segmentBaseOffsets[2]! + 4;
    const end = await follower.truncateTo(cutTo);
    expect(snapshotOffsets(directory, 'follow-0').every((offset) => offset <= end)).toBe(true);
    const entry = follower.producerStateSnapshot().find((candidate) => candidate.producerId === 9n)!;
    expect(entry.batches.at(-1)!.lastOffset).toBe(end - 1);
    const nextSequence = entry.batches.at(-1)!.lastSequence + 1;
    // A batch cut away is not a duplicate any more: it is the next in sequence and goes in at the end.
    const resent = await follower.append(producerBatch(9n, nextSequence, 3), { leaderEpoch: 4 });
    expect({ duplicate: resent.duplicate, baseOffset: resent.baseOffset }).toEqual({ duplicate: false, baseOffset: end });
    await manager.close();
  });

  it('loads the same end, epochs and producer state after a restart', async () => {
    const { manager, directory, follower } = await filled({ segmentBytes: 500 });
    const end = await follower.truncateTo(follower.segmentBaseOffsets[2]! + 4);
    const state = follower.producerStateSnapshot();
    expect(state.map((entry) => entry.producerId)).toEqual([9n]);
    const cache = epochs(follower);
    await manager.close();
    for (const clean of [true, false]) {
      if (!clean) rmMarker(directory);
      const reopened = await openManager(directory, { ...SETTINGS, segmentBytes: 500 });
      const log = reopened.manager.getLog('follow', 0)!;
      expect([log.logEndOffset, epochs(log)]).toEqual([end, cache]);
      expect(log.producerStateSnapshot().map((entry) => entry.batches)).toEqual(state.map((entry) => entry.batches));
      await reopened.manager.close();
    }
  });

  it('does nothing at or past the log end except drop epochs that start there with no batch', async () => {
    const { manager, follower } = await filled();
    follower.leaderEpochCache.assign(5, follower.logEndOffset);
    expect(await follower.truncateTo(500)).toBe(72);
    expect(await follower.truncateTo(72)).toBe(72);
    expect(follower.logEndOffset).toBe(72);
    expect(epochs(follower).map(([epoch]) => epoch)).toEqual([1, 2, 3]);
    await manager.close();
  });

  it('empties the log at its start when asked to cut at or below it', async () => {
    const { manager, follower } = await filled();
    expect(await follower.truncateTo(0)).toBe(0);
    expect([follower.logStartOffset, follower.logEndOffset, follower.highWatermark]).toEqual([0, 0, 0]);
    expect(follower.leaderEpochCache.entries()).toEqual([]);
    expect(follower.producerStateSnapshot()).toEqual([]);
    await manager.close();
  });

  it('refuses the appends queued for the next write', async () => {
    const { manager, follower } = await filled();
    const queued = codeOf(follower.append(batch(2), { leaderEpoch: 3 }));
    expect(await follower.truncateTo(10)).toBe(9);
    expect(await queued).toBe('NOT_LEADER_OR_FOLLOWER');
    expect(follower.logEndOffset).toBe(9);
    expect((await follower.append(batch(1), { leaderEpoch: 4 })).baseOffset).toBe(9);
    await manager.close();
  });

  it('fails an acks=-1 append whose batch was cut away before its flush, instead of waiting for its offsets', async () => {
    const directory = temporaryDirectory();
    let cut: Promise<number> | undefined;
    const manager = await LogManager.open({
      dataDir: directory,
      logger: memoryLogger().logger,
      configFor: () => config(SETTINGS),
      // Between the write of the batch and its append's wait for the flush: a leader change.
      onAppended: (log) => {
        if (log.logEndOffset === 5) cut = log.truncateTo(2);
      },
    });
    const log = await manager.getOrCreateLog('acks', 0);
    await log.append(batch(2), { leaderEpoch: 1 });
    const acksAll = codeOf(log.append(batch(3), { leaderEpoch: 1, waitForFlush: true }));
    expect(await acksAll).toBe('NOT_LEADER_OR_FOLLOWER');
    expect(await cut).toBe(2);
    expect(log.logEndOffset).toBe(2);
    await manager.close();
  });

  it('lets a reader holding a slice past the cut read short rather than fail or read other bytes', async () => {
    const { manager, follower } = await filled();
    const { slice } = await follower.read(30, 1 << 20, { upTo: 'written' });
    expect(slice!.size).toBeGreaterThan(0);
    expect(await follower.truncateTo(45)).toBe(45);
    const bytes = await slice!.readBytes();
    slice!.release();
    const kept = walkBatches(bytes).filter((stored) => stored.position + stored.size <= bytes.length);
    expect(kept.map((stored) => stored.baseOffset)).toEqual([30, 33, 36, 39, 42]);
    expect(bytes.length).toBeLessThan(slice!.size);
    await manager.close();
  });

  it('waits for a flush in progress and pulls the high watermark back only as far as the cut', async () => {
    const { manager, follower } = await filled();
    await follower.append(batch(3));
    const flushing = follower.flush();
    const cut = follower.truncateTo(60);
    await flushing;
    expect(await cut).toBe(60);
    expect(follower.highWatermark).toBe(60);
    await manager.close();
  });
});

describe('truncateFullyAndStartAt', () => {
  it('deletes everything and starts an empty log at the offset, persisting the new start', async () => {
    const { manager, directory, leader, follower } = await leaderAndFollower({ segmentBytes: 700 });
    for (let i = 0; i < 20; i += 1) await leader.append(producerBatch(3n, i * 2), { leaderEpoch: 1 });
    await replicate(leader, follower);
    await follower.truncateFullyAndStartAt(500);
    expect([follower.logStartOffset, follower.logEndOffset, follower.writtenEndOffset, follower.flushedEndOffset, follower.highWatermark]).toEqual([500, 500, 500, 500, 500]);
    expect(follower.segmentBaseOffsets).toEqual([500]);
    expect(readdirSync(join(directory, 'follow-0')).filter((name) => !name.endsWith('.tmp'))).toEqual([]);
    expect(follower.producerStateSnapshot()).toEqual([]);
    expect(readCheckpoint(join(directory, LOG_START_CHECKPOINT)).get('follow 0')).toBe(500);
    expect(await codeOf(follower.read(0, 100))).toBe('OFFSET_OUT_OF_RANGE');

    const next = encodeRecordBatch([{ value: Buffer.from('at-500'), timestamp: 1_000 }], { baseOffset: 500n, partitionLeaderEpoch: 3 });
    expect(await follower.appendAsFollower(next)).toEqual({ batches: 1, firstOffset: 500, lastOffset: 500 });
    expect(epochs(follower)).toEqual([[3, 500]]);
    await manager.close();

    const reopened = await openManager(directory, { ...SETTINGS, segmentBytes: 700 });
    const log = reopened.manager.getLog('follow', 0)!;
    expect([log.logStartOffset, log.logEndOffset, epochs(log)]).toEqual([500, 501, [[3, 500]]]);
    await reopened.manager.close();
  });
});

describe('high watermark modes', () => {
  it('in replicated mode only updateHighWatermark moves it: forward, clamped, to a batch start', async () => {
    const { manager, leader } = await leaderAndFollower({ visibleOnAppend: true });
    leader.setHighWatermarkMode('replicated');
    expect(leader.highWatermarkMode).toBe('replicated');
    for (let i = 0; i < 4; i += 1) await leader.append(batch(3), { leaderEpoch: 1 });
    await leader.flush();
    expect([leader.highWatermark, leader.flushedEndOffset, leader.writtenEndOffset]).toEqual([0, 12, 12]);
    expect((await leader.read(0, 1 << 20)).slice).toBeUndefined();
    // Offset 5 is inside the batch 3..5: the high watermark stops at 3.
    expect(leader.updateHighWatermark(5)).toBe(true);
    expect(leader.highWatermark).toBe(3);
    expect(leader.updateHighWatermark(2)).toBe(false);
    expect(leader.updateHighWatermark(3)).toBe(false);
    expect(leader.highWatermark).toBe(3);
    const { slice } = await leader.read(0, 1 << 20);
    expect(walkBatches(await slice!.readBytes()).map((stored) => stored.baseOffset)).toEqual([0]);
    slice!.release();
    expect(leader.updateHighWatermark(1_000)).toBe(true);
    expect(leader.highWatermark).toBe(12);
    await manager.close();
  });

  it('never moves it past the written end, even over batches queued for the next write', async () => {
    const { manager, leader } = await leaderAndFollower();
    leader.setHighWatermarkMode('replicated');
    await leader.append(batch(2));
    const queued = leader.append(batch(2));
    expect([leader.logEndOffset, leader.writtenEndOffset]).toEqual([4, 2]);
    expect(leader.updateHighWatermark(4)).toBe(true);
    expect(leader.highWatermark).toBe(2);
    await queued;
    expect(leader.updateHighWatermark(4)).toBe(true);
    expect(leader.highWatermark).toBe(4);
    await manager.close();
  });

  it('fires highWatermarkAdvanced when updateHighWatermark moves it', async () => {
    const directory = temporaryDirectory();
    const moves: number[] = [];
    const manager = await LogManager.open({ dataDir: directory, logger: memoryLogger().logger, configFor: () => config(SETTINGS), onHighWatermarkAdvanced: (log) => moves.push(log.highWatermark) });
    const log = await manager.getOrCreateLog('hw', 0);
    log.setHighWatermarkMode('replicated');
    await log.append(batch(2));
    await log.append(batch(2));
    await log.flush();
    expect(moves).toEqual([]);
    log.updateHighWatermark(2);
    log.updateHighWatermark(1);
    log.updateHighWatermark(4);
    expect(moves).toEqual([2, 4]);
    await manager.close();
  });

  it('resetHighWatermark moves it backwards too, within the log start and the written end', async () => {
    const { manager, leader } = await leaderAndFollower();
    for (let i = 0; i < 4; i += 1) await leader.append(batch(2));
    await leader.flush();
    expect(leader.highWatermark).toBe(8);
    leader.setHighWatermarkMode('replicated');
    expect(leader.resetHighWatermark(5)).toBe(4);
    expect(leader.highWatermark).toBe(4);
    expect(leader.resetHighWatermark(-3)).toBe(0);
    expect(leader.resetHighWatermark(99)).toBe(8);
    expect(leader.resetHighWatermark(2)).toBe(2);
    // Back to flushed: the log's own rule applies again at once.
    leader.setHighWatermarkMode('flushed');
    expect(leader.highWatermark).toBe(8);
    await manager.close();
  });

  it('keeps today’s rule in flushed mode: a flush moves it', async () => {
    const { manager, leader } = await leaderAndFollower();
    expect(leader.highWatermarkMode).toBe('flushed');
    await leader.append(batch(2), { leaderEpoch: 1 });
    expect(leader.highWatermark).toBe(0);
    await leader.flush();
    expect(leader.highWatermark).toBe(2);
    await manager.close();
  });
});

describe('read up to the written end', () => {
  it('serves a follower unflushed batches and nothing queued; past the log end is out of range', async () => {
    const { manager, leader } = await leaderAndFollower();
    await leader.append(batch(2));
    await leader.append(batch(3));
    expect([leader.highWatermark, leader.writtenEndOffset]).toEqual([0, 5]);
    expect((await leader.read(0, 1 << 20)).slice).toBeUndefined();
    const { slice } = await leader.read(1, 1 << 20, { upTo: 'written' });
    expect(walkBatches(await slice!.readBytes()).map((stored) => [stored.baseOffset, stored.lastOffset])).toEqual([[0, 1], [2, 4]]);
    slice!.release();
    const queued = leader.append(batch(1));
    expect(leader.logEndOffset).toBe(6);
    expect((await leader.read(5, 1 << 20, { upTo: 'written' })).slice).toBeUndefined();
    expect(await codeOf(leader.read(7, 100, { upTo: 'written' }))).toBe('OFFSET_OUT_OF_RANGE');
    await queued;
    expect((await leader.read(5, 1 << 20, { upTo: 'written' })).slice?.firstBatchOffset).toBe(5);
    await manager.close();
  });
});

describe('the epoch cache at load and retention', () => {
  it('drops epochs past the recovered log end at load', async () => {
    const directory = temporaryDirectory();
    const first = await openManager(directory, SETTINGS);
    const log = await first.manager.getOrCreateLog('e', 0);
    await log.append(batch(2), { leaderEpoch: 1 });
    await first.manager.close();
    writeFileSync(join(directory, 'e-0', LEADER_EPOCH_CHECKPOINT), '0\n3\n1 0\n2 2\n3 9\n');
    const second = await openManager(directory, SETTINGS);
    expect(epochs(second.manager.getLog('e', 0)!)).toEqual([[1, 0]]);
    expect(readFileSync(join(directory, 'e-0', LEADER_EPOCH_CHECKPOINT), 'utf8')).toBe('0\n1\n1 0\n');
    await second.manager.close();
  });

  it('moves the first epoch to the new log start when retention deletes segments', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { ...SETTINGS, segmentBytes: 400, retentionMs: 1_000 });
    const log = await manager.getOrCreateLog('old', 0);
    for (let i = 0; i < 12; i += 1) await log.append(batch(1, { timestamp: clock.now(), valueBytes: 100 }), { leaderEpoch: i < 6 ? 1 : 2 });
    await log.flush();
    expect(epochs(log)).toEqual([[1, 0], [2, 6]]);
    clock.advance(10_000);
    expect(manager.applyRetention()).toBeGreaterThan(0);
    expect(log.logStartOffset).toBeGreaterThan(6);
    expect(epochs(log)).toEqual([[2, log.logStartOffset]]);
    await manager.close();
  });
});

function flip(bytes: Buffer, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = (copy[at] ?? 0) ^ 0x01;
  return copy;
}

function set(bytes: Buffer, at: number, value: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = value;
  return copy;
}

function setInt32(bytes: Buffer, at: number, value: number): Buffer {
  const copy = Buffer.from(bytes);
  copy.writeInt32BE(value, at);
  return copy;
}

function setInt64(bytes: Buffer, at: number, value: bigint): Buffer {
  const copy = Buffer.from(bytes);
  copy.writeBigInt64BE(value, at);
  return copy;
}

/** Makes the next start unclean (recovery from the recovery point). */
function rmMarker(directory: string): void {
  rmSync(join(directory, CLEAN_SHUTDOWN_MARKER), { force: true });
}
