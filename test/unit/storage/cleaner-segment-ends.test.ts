/**
 * Where a cleaned segment ends. The cleaner keeps each cleaned segment's last batch, as a header
 * when no record of it survives (Kafka keeps the cleaning round's last batch), so:
 *   - the segment still ends where the next one begins, and a restart that must check every
 *     segment (recovery checkpoint damaged, unclean stop) does not take the gap for a crash's hole
 *     and drop the segments after it;
 *   - a follower that fetches from the end of a cleaned segment is carried to the next one;
 *   - a consumer never gets such headers alone (kafkajs asks again for the same offset for ever):
 *     its read lands on the next record.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { LogCleaner, DEFAULT_CLEANER_CONFIG } from '../../../src/storage/cleaner/log-cleaner.js';
import { CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT, type LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { memoryLogger, openManager, temporaryDirectory, walkBatches } from './helpers.js';

const DAY = 86_400_000;
// One keyed batch (~70 bytes) a segment.
const SETTINGS = { cleanupPolicy: 'compact', segmentBytes: 100, indexIntervalBytes: 4096, flushMessages: 1, deleteRetentionMs: DAY } as const;

function keyed(clock: ManualClock, key: string, value: string | null): Buffer {
  return encodeRecordBatch([{ key: Buffer.from(key), value: value === null ? null : Buffer.from(value), timestamp: clock.now() }]);
}

async function readOnce(log: PartitionLog, offset: number, upTo: 'highWatermark' | 'written' = 'highWatermark') {
  const { slice } = await log.read(offset, 1 << 20, { upTo });
  if (slice === undefined) return undefined;
  const bytes = await slice.readBytes();
  slice.release();
  const batches = walkBatches(bytes);
  const records = batches.flatMap((batch) => decodeRecords(bytes, batch.position).map((record) => ({ offset: Number(record.offset), value: record.value?.toString() ?? null })));
  return { batches, records };
}

/** Every read from `offset` to the end, as a reader steps: from after the last batch it got. */
async function readToEnd(log: PartitionLog, upTo: 'highWatermark' | 'written' = 'highWatermark') {
  const batches: { baseOffset: number; lastOffset: number }[] = [];
  const records: { offset: number; value: string | null }[] = [];
  for (let offset = log.logStartOffset; ; ) {
    const read = await readOnce(log, offset, upTo);
    if (read === undefined) return { batches, records, end: offset };
    batches.push(...read.batches.map(({ baseOffset, lastOffset }) => ({ baseOffset, lastOffset })));
    records.push(...read.records);
    offset = (read.batches.at(-1)?.lastOffset ?? offset) + 1;
  }
}

function cleaner(dataDir: string, manager: () => LogManager, clock: ManualClock): LogCleaner {
  const logs = { dataDir, allLogs: () => manager().allLogs(), writeRecoveryCheckpoint: () => manager().writeRecoveryCheckpoint() };
  return new LogCleaner({ logs, config: { ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 1 << 20 }, logger: memoryLogger().logger, clock });
}

/** Offsets 0–5 in six segments: a, b, then a again and b's tombstone, then c, d (the active segment). */
async function writeAndClean(directory: string, clock: ManualClock) {
  const { manager } = await openManager(directory, SETTINGS, clock);
  const log = await manager.getOrCreateLog('compacted', 0);
  for (const [key, value] of [['a', 'a0'], ['b', 'b1'], ['a', 'a2'], ['b', null], ['c', 'c4'], ['d', 'd5']] as const) {
    await log.append(keyed(clock, key, value));
  }
  await log.flush();
  expect(log.segmentBaseOffsets).toEqual([0, 1, 2, 3, 4, 5]);
  const logCleaner = cleaner(directory, () => manager, clock);
  expect(await logCleaner.cleanLogNow(log)).toBeDefined();
  // Past the horizon, a second pass drops the tombstone at 3.
  clock.advance(DAY + 1);
  expect(await logCleaner.cleanLogNow(log)).toBeDefined();
  return { manager, log, logCleaner };
}

describe('the ends of cleaned segments', () => {
  it('keep their last offset, so the next segment follows on even where every record went', async () => {
    const directory = temporaryDirectory();
    const clock = new ManualClock();
    const { manager, log, logCleaner } = await writeAndClean(directory, clock);
    // Offsets 0, 1 and 3 lost their records; each was its segment's last batch, so stays as a header.
    const expected = [
      { offset: 2, value: 'a2' },
      { offset: 4, value: 'c4' },
      { offset: 5, value: 'd5' },
    ];
    const replica = await readToEnd(log, 'written');
    expect(replica.batches.map((batch) => batch.baseOffset)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(replica.records).toEqual(expected);
    expect(log.segmentBaseOffsets).toEqual([0, 1, 2, 3, 4, 5]);
    await logCleaner.stop();
    await manager.close();

    // A restart that checks every segment: no clean-stop marker, no recovery checkpoint.
    rmSync(join(directory, CLEAN_SHUTDOWN_MARKER), { force: true });
    rmSync(join(directory, RECOVERY_POINT_CHECKPOINT), { force: true });
    const again = await openManager(directory, SETTINGS, clock);
    const reopened = again.manager.getLog('compacted', 0);
    expect(reopened?.logEndOffset).toBe(6);
    expect(reopened?.segmentBaseOffsets).toEqual([0, 1, 2, 3, 4, 5]);
    if (reopened !== undefined) expect((await readToEnd(reopened)).records).toEqual(expected);
    await again.manager.close();
  });

  it('carry a follower over the header and land a consumer on the next record', async () => {
    const directory = temporaryDirectory();
    const clock = new ManualClock();
    const { manager, log, logCleaner } = await writeAndClean(directory, clock);
    // A consumer at the removed tombstone's offset: only a header is there, so it gets the next record.
    const consumer = await readOnce(log, 3);
    expect(consumer?.batches.map((batch) => batch.baseOffset)).toEqual([4]);
    expect(consumer?.records).toEqual([{ offset: 4, value: 'c4' }]);
    // From the log start a consumer gets only batches with records, and every record kept.
    const fromStart = await readToEnd(log);
    expect(fromStart.batches.map((batch) => batch.baseOffset)).toEqual([2, 4, 5]);
    expect(fromStart.end).toBe(6);
    // A follower gets the header, which carries its log end to 4.
    const follower = await readOnce(log, 3, 'written');
    expect(follower?.batches).toEqual([expect.objectContaining({ baseOffset: 3, lastOffset: 3 })]);
    expect(follower?.records).toEqual([]);
    await logCleaner.stop();
    await manager.close();
  });
});
