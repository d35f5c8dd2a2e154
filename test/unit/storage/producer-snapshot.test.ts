/**
 * Producer state across restarts (issue 17): snapshots on roll and close, replay after an unclean
 * stop, fallback past damaged snapshots (never a failed start), snapshots past a recovery
 * truncation and below the retention start deleted, idle producers expired.
 */
import { readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { decodeSnapshot, encodeSnapshot, readSnapshot, snapshotFileName } from '../../../src/storage/producer-snapshot.js';
import type { ProducerEntry } from '../../../src/storage/producer-state.js';
import { config, memoryLogger, openManager, temporaryDirectory } from './helpers.js';

const TOPIC = 'snap';
const SETTINGS = { segmentBytes: 1_000, indexIntervalBytes: 256, flushMessages: 1_000_000 };

function producerBatch(producerId: bigint, epoch: number, baseSequence: number, count = 2, timestamp = 1_700_000_000_000): Buffer {
  return encodeRecordBatch(
    Array.from({ length: count }, (_, i) => ({ value: Buffer.alloc(40, 0x61 + i), timestamp })),
    { producerId, producerEpoch: epoch, baseSequence },
  );
}

function folderOf(dataDir: string): string {
  return join(dataDir, `${TOPIC}-0`);
}

function snapshotOffsets(dataDir: string): number[] {
  return readdirSync(folderOf(dataDir))
    .filter((file) => file.endsWith('.snapshot'))
    .map((file) => Number(file.slice(0, 20)))
    .sort((a, b) => a - b);
}

/** Three producers, each sending `rounds` in-order batches of two records, round robin. */
async function fill(log: PartitionLog, rounds: number, firstRound = 0): Promise<void> {
  for (let round = firstRound; round < firstRound + rounds; round += 1) {
    for (const producerId of [11n, 12n, 13n]) {
      const result = await log.append(producerBatch(producerId, 0, round * 2));
      expect(result.duplicate).toBe(false);
    }
  }
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

const replayLines = (lines: Record<string, unknown>[]) => lines.filter((line) => line.msg === 'rebuilt producer state from the log');
const warnings = (lines: Record<string, unknown>[]) => lines.filter((line) => line.level === 40).map((line) => String(line.msg));

describe('snapshot file format', () => {
  const entries: ProducerEntry[] = [
    { producerId: 3n, epoch: 2, lastTimestamp: 1_700_000_000_123, batches: [{ firstSequence: 5, lastSequence: 6, firstOffset: 10, lastOffset: 11, maxTimestamp: 99n, logAppendTime: -1n }] },
    {
      producerId: 2n ** 62n,
      epoch: 32_767,
      lastTimestamp: 5,
      batches: [
        { firstSequence: 2_147_483_646, lastSequence: 0, firstOffset: 20, lastOffset: 22, maxTimestamp: -1n, logAppendTime: 7n },
        { firstSequence: 1, lastSequence: 1, firstOffset: 30, lastOffset: 30, maxTimestamp: 2n ** 63n - 1n, logAppendTime: 7n },
      ],
    },
  ];

  it('round-trips every field', () => {
    expect(decodeSnapshot(encodeSnapshot(entries), 31, 'test')).toEqual(entries);
    expect(decodeSnapshot(encodeSnapshot([]), 0, 'test')).toEqual([]);
  });

  it('refuses a flipped byte anywhere, a cut, an extension, another version and offsets past its own', () => {
    const bytes = encodeSnapshot(entries);
    for (let position = 0; position < bytes.length; position += 1) {
      const damaged = Buffer.from(bytes);
      damaged[position] = (damaged[position] ?? 0) ^ 0x10;
      expect(() => decodeSnapshot(damaged, 31, 'test'), `flipped byte ${position}`).toThrow(/producer snapshot test is unusable/);
    }
    for (let length = 0; length < bytes.length; length += 1) {
      expect(() => decodeSnapshot(bytes.subarray(0, length), 31, 'test'), `cut at ${length}`).toThrow(/unusable/);
    }
    expect(() => decodeSnapshot(Buffer.concat([bytes, Buffer.alloc(1)]), 31, 'test')).toThrow(/unusable/);
    // Valid bytes, but the snapshot claims to be taken before its last batch: refused.
    expect(() => decodeSnapshot(bytes, 30, 'test')).toThrow(/offsets 30\.\.30/);
  });
});

describe('producer snapshots in the partition log', () => {
  it('writes one on every roll, named for the new segment, and one at close, holding the state', async () => {
    const dataDir = temporaryDirectory();
    const { manager } = await openManager(dataDir, SETTINGS);
    const log = await manager.getOrCreateLog(TOPIC, 0);
    await fill(log, 8);
    await log.whenSnapshotsWritten();
    const bases = log.segmentBaseOffsets.slice(1);
    expect(bases.length).toBeGreaterThan(1);
    expect(snapshotOffsets(dataDir)).toEqual(bases);
    const state = log.producerStateSnapshot();
    const end = log.logEndOffset;
    await manager.close();
    expect(snapshotOffsets(dataDir)).toEqual([...bases, end]);
    expect(readSnapshot(folderOf(dataDir), end)).toEqual(state);
    // A roll snapshot holds exactly the batches before its offset.
    const atFirstRoll = readSnapshot(folderOf(dataDir), bases[0]!);
    expect(atFirstRoll.flatMap((entry) => entry.batches).every((b) => b.lastOffset < bases[0]!)).toBe(true);
    expect(atFirstRoll.length).toBe(3);
  });

  it('after a clean stop loads the last snapshot and replays nothing', async () => {
    const dataDir = temporaryDirectory();
    const first = await openManager(dataDir, SETTINGS);
    const log = await first.manager.getOrCreateLog(TOPIC, 0);
    await fill(log, 6);
    const state = log.producerStateSnapshot();
    await first.manager.close();
    const second = await openManager(dataDir, SETTINGS);
    const reopened = second.manager.getLog(TOPIC, 0)!;
    expect(reopened.producerStateSnapshot()).toEqual(state);
    expect(replayLines(second.lines)).toEqual([]);
    // The same duplicate is still detected, with its original offset.
    expect(await outcome(reopened.append(producerBatch(12n, 0, 10)))).toBe(`duplicate@${state.find((e) => e.producerId === 12n)!.batches[4]!.firstOffset}`);
    expect(await outcome(reopened.append(producerBatch(12n, 0, 14)))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    await second.manager.close();
  });

  it('after an unclean stop replays the batches after the newest roll snapshot', async () => {
    const dataDir = temporaryDirectory();
    const first = await openManager(dataDir, SETTINGS);
    const log = await first.manager.getOrCreateLog(TOPIC, 0);
    await fill(log, 7);
    await log.whenSnapshotsWritten();
    const state = log.producerStateSnapshot();
    const newest = snapshotOffsets(dataDir).at(-1)!;
    expect(newest).toBeLessThan(log.logEndOffset);
    // A crash: no close, no marker; the written batches are in the files.
    const second = await openManager(dataDir, SETTINGS);
    expect(second.manager.getLog(TOPIC, 0)!.producerStateSnapshot()).toEqual(state);
    expect(replayLines(second.lines)).toEqual([expect.objectContaining({ from: newest, to: log.logEndOffset })]);
    await second.manager.close();
  });

  it.each([
    ['a flipped byte', (path: string) => {
      const bytes = readFileSync(path);
      bytes[bytes.length - 3] = (bytes[bytes.length - 3] ?? 0) ^ 0xff;
      writeFileSync(path, bytes);
    }],
    ['a truncation', (path: string) => truncateSync(path, 9)],
    ['an empty file', (path: string) => writeFileSync(path, '')],
  ])('falls back past a snapshot with %s to an older one, and to a full replay when none is left', async (_name, damage) => {
    const dataDir = temporaryDirectory();
    const first = await openManager(dataDir, SETTINGS);
    const log = await first.manager.getOrCreateLog(TOPIC, 0);
    await fill(log, 7);
    const state = log.producerStateSnapshot();
    await first.manager.close();
    const offsets = snapshotOffsets(dataDir);
    damage(join(folderOf(dataDir), snapshotFileName(offsets.at(-1)!)));
    const second = await openManager(dataDir, SETTINGS);
    expect(second.manager.getLog(TOPIC, 0)!.producerStateSnapshot()).toEqual(state);
    expect(warnings(second.lines)).toEqual(['producer snapshot unreadable; deleting it and trying an older one']);
    expect(replayLines(second.lines)).toEqual([expect.objectContaining({ from: offsets.at(-2) })]);
    expect(second.manager.offlineLogs()).toEqual([]);
    await second.manager.close();

    // Every snapshot damaged: the whole log is replayed, the start still succeeds.
    for (const offset of snapshotOffsets(dataDir)) damage(join(folderOf(dataDir), snapshotFileName(offset)));
    const third = await openManager(dataDir, SETTINGS);
    expect(third.manager.getLog(TOPIC, 0)!.producerStateSnapshot()).toEqual(state);
    expect(replayLines(third.lines)).toEqual([expect.objectContaining({ from: 0 })]);
    await third.manager.close();
  });

  it('deletes snapshots past the point where recovery truncated the log, and rebuilds from what is left', async () => {
    const dataDir = temporaryDirectory();
    const first = await openManager(dataDir, SETTINGS);
    const log = await first.manager.getOrCreateLog(TOPIC, 0);
    await fill(log, 2);
    await log.flush();
    first.manager.writeRecoveryCheckpoint();
    await fill(log, 6, 2);
    await log.whenSnapshotsWritten();
    const bases = log.segmentBaseOffsets;
    expect(bases.length).toBeGreaterThan(2);
    // Damage the tail of the first segment (after the recovery point): recovery cuts it there.
    const firstSegment = join(folderOf(dataDir), '00000000000000000000.log');
    const size = readFileSync(firstSegment).length;
    truncateSync(firstSegment, size - 5);
    const second = await openManager(dataDir, SETTINGS);
    const recovered = second.manager.getLog(TOPIC, 0)!;
    expect(recovered.logEndOffset).toBeLessThan(bases[1]!);
    expect(snapshotOffsets(dataDir).every((offset) => offset <= recovered.logEndOffset)).toBe(true);
    // The state is that of the surviving batches: the next in-order batch of each producer is
    // the one after its last surviving batch.
    for (const entry of recovered.producerStateSnapshot()) {
      expect(entry.batches.at(-1)!.lastOffset).toBeLessThan(recovered.logEndOffset);
      expect(await outcome(recovered.append(producerBatch(entry.producerId, 0, entry.batches.at(-1)!.lastSequence + 1)))).toMatch(/^appended@/);
    }
    await second.manager.close();
  });

  it('retention deletes the snapshots below the new log start and forgets producers whose batches are gone', async () => {
    const dataDir = temporaryDirectory();
    const { manager } = await openManager(dataDir, { ...SETTINGS, retentionBytes: 2_500 });
    const log = await manager.getOrCreateLog(TOPIC, 0);
    await log.append(producerBatch(50n, 0, 0));
    await fill(log, 8);
    await log.flush();
    await log.whenSnapshotsWritten();
    expect(log.producerStateSnapshot().map((entry) => entry.producerId)).toContain(50n);
    expect(manager.applyRetention()).toBeGreaterThan(0);
    expect(log.logStartOffset).toBeGreaterThan(0);
    expect(snapshotOffsets(dataDir).every((offset) => offset >= log.logStartOffset)).toBe(true);
    expect(snapshotOffsets(dataDir)).toContain(log.logStartOffset);
    expect(log.producerStateSnapshot().map((entry) => entry.producerId)).toEqual([11n, 12n, 13n]);
    // Producer 50 is unknown again: any sequence is accepted.
    expect(await outcome(log.append(producerBatch(50n, 0, 77)))).toMatch(/^appended@/);
    await manager.close();
  });

  it('forgets producers idle for producer.id.expiration.ms on the periodic check, then accepts any sequence from them', async () => {
    const dataDir = temporaryDirectory();
    const clock = new ManualClock();
    const { logger } = memoryLogger();
    const manager = await LogManager.open({ dataDir, logger, clock, configFor: () => config(SETTINGS), producerIdExpirationMs: 10_000 });
    const log = await manager.getOrCreateLog(TOPIC, 0);
    await log.append(producerBatch(7n, 0, 0, 2, clock.now()));
    clock.advance(6_000);
    await log.append(producerBatch(8n, 0, 0, 2, clock.now()));
    clock.advance(3_999);
    expect(manager.expireProducers()).toBe(0);
    clock.advance(1);
    expect(manager.expireProducers()).toBe(1);
    expect(log.producerStateSnapshot().map((entry) => entry.producerId)).toEqual([8n]);
    // Same epoch, sequence far ahead, and even the old duplicate: accepted as new.
    expect(await outcome(log.append(producerBatch(7n, 0, 500, 2, clock.now())))).toBe('appended@4');
    expect(await outcome(log.append(producerBatch(8n, 0, 500, 2, clock.now())))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    await manager.close();

    // Down longer than the expiration: the loaded state drops them too.
    clock.advance(20_000);
    const reopened = await LogManager.open({ dataDir, logger, clock, configFor: () => config(SETTINGS), producerIdExpirationMs: 10_000 });
    expect(reopened.getLog(TOPIC, 0)!.producerStateSnapshot()).toEqual([]);
    await reopened.close();
  });
});
