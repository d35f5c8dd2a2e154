/**
 * A replicated log after cleaning (issue #34's replicated acceptance found these): cleaned
 * segments may end before the next one starts, or hold nothing, and a replica's high watermark —
 * reset at start from a checkpoint written before the last passes, or moved by its leader — may
 * name an offset in such a gap.
 */
import { describe, expect, it } from 'vitest';
import type { ManualClock } from '../../../src/common/clock.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { DEFAULT_CLEANER_CONFIG, LogCleaner } from '../../../src/storage/cleaner/log-cleaner.js';
import type { LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { memoryLogger, openManager, temporaryDirectory, walkBatches } from './helpers.js';

const SETTINGS = { cleanupPolicy: 'compact', segmentBytes: 600, indexIntervalBytes: 128, flushMessages: 1 } as const;
const KEYS = ['a', 'b', 'c', 'd', 'e'];

function keyed(key: string, value: string, timestamp: number): Buffer {
  return encodeRecordBatch([{ key: Buffer.from(key), value: Buffer.concat([Buffer.from(value), Buffer.alloc(100, 0x61)]), timestamp }]);
}

function cleanerOf(dataDir: string, manager: LogManager, clock: ManualClock): LogCleaner {
  return new LogCleaner({ logs: { dataDir, allLogs: () => manager.allLogs() }, config: DEFAULT_CLEANER_CONFIG, logger: memoryLogger().logger, clock, sliceMs: 1 });
}

/** Offsets of the records a consumer reads from the log start up to the high watermark. */
async function visibleOffsets(log: PartitionLog): Promise<number[]> {
  const offsets: number[] = [];
  let offset = log.logStartOffset;
  for (;;) {
    const { slice } = await log.read(offset, 1 << 20);
    if (slice === undefined) return offsets;
    const bytes = await slice.readBytes();
    slice.release();
    for (const stored of walkBatches(bytes)) {
      offsets.push(...decodeRecords(bytes, stored.position).map((record) => Number(record.offset)));
      offset = stored.lastOffset + 1;
    }
  }
}

/** A compacted log of 40 single-record batches over 5 keys, cleaned: its first segments are left empty or short. */
async function cleanedLog() {
  const directory = temporaryDirectory();
  const opened = await openManager(directory, SETTINGS);
  const log = await opened.manager.getOrCreateLog('compacted', 0);
  for (let index = 0; index < 40; index += 1) await log.append(keyed(KEYS[index % KEYS.length] as string, `v${index}`, opened.clock.now() + index));
  await log.flush();
  const cleaner = cleanerOf(directory, opened.manager, opened.clock);
  expect(await cleaner.cleanLogNow(log)).toBeDefined();
  await cleaner.stop();
  return { ...opened, directory, log };
}

/** Offsets below the log end that no record holds and that no batch spans: where the cleaner removed whole batches. */
function gapOffsets(held: readonly number[], end: number): number[] {
  const kept = new Set(held);
  return Array.from({ length: end }, (_, offset) => offset).filter((offset) => !kept.has(offset));
}

describe('a cleaned log whose high watermark falls in a gap', () => {
  it('resets its high watermark into a gap at a segment’s end (a start from an older checkpoint) to the next batch boundary', async () => {
    const { manager, log } = await cleanedLog();
    const held = await visibleOffsets(log);
    expect(held.length).toBeLessThan(40);
    // The first segment was emptied or cut short: its offsets are a gap up to the next segment.
    const emptied = log.segmentBaseOffsets[1] as number;
    expect(held.some((offset) => offset < emptied)).toBe(false);
    log.setHighWatermarkMode('replicated');
    for (const offset of gapOffsets(held, log.logEndOffset)) {
      const highWatermark = log.resetHighWatermark(offset);
      // Never below what was asked, and nothing held lies between the two.
      expect(highWatermark, `reset to ${offset}`).toBeGreaterThanOrEqual(offset);
      expect(held.filter((kept) => kept >= offset && kept < highWatermark), `reset to ${offset}`).toEqual([]);
      expect(await visibleOffsets(log)).toEqual(held.filter((kept) => kept < offset));
    }
    await manager.close();
  });

  it('opens with a lagging high watermark checkpoint and moves it forward through gaps (a follower after a restart)', async () => {
    const { manager, directory, log } = await cleanedLog();
    const held = await visibleOffsets(log);
    const end = log.logEndOffset;
    await manager.close();
    const reopened = await openManager(directory, SETTINGS);
    const again = reopened.manager.getLog('compacted', 0) as PartitionLog;
    again.setHighWatermarkMode('replicated');
    expect(again.resetHighWatermark(1)).toBeGreaterThanOrEqual(1);
    for (const offset of gapOffsets(held, end)) {
      again.updateHighWatermark(offset);
      expect(again.highWatermark).toBeGreaterThanOrEqual(offset);
    }
    again.updateHighWatermark(end);
    expect(again.highWatermark).toBe(end);
    expect(await visibleOffsets(again)).toEqual(held);
    await reopened.manager.close();
  });
});
