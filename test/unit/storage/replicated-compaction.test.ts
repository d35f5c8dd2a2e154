/**
 * A replicated log after cleaning (issue #34's replicated acceptance):
 *
 * - cleaned segments may end before the next one starts, or hold nothing, and a replica's high
 *   watermark — reset at start from a checkpoint written before the last passes, or moved by its
 *   leader — may name an offset in such a gap;
 * - a follower that fetches across a gap the leader's cleaner left cannot know where in it a new
 *   leader epoch began, so it records the epoch from where its own log ended: the answers it gives
 *   to OffsetForLeaderEpoch once it leads never let another replica keep a suffix that no leader
 *   committed;
 * - a follower's log cut back below the cleaner's checkpoint (emptied to follow a leader from its
 *   start) and grown again before the next pass: what grew below the old checkpoint must be
 *   cleaned as dirty, or a tombstone there outlives the values it deletes.
 */
import { describe, expect, it } from 'vitest';
import { truncationFor } from '../../../src/broker/replication/follower-truncation.js';
import { ManualClock } from '../../../src/common/clock.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { DEFAULT_CLEANER_CONFIG, LogCleaner } from '../../../src/storage/cleaner/log-cleaner.js';
import { LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { config, memoryLogger, openManager, temporaryDirectory, walkBatches } from './helpers.js';

/** What a leader's Fetch would carry from `offset` (whole batches of one segment). */
async function fetchFrom(log: PartitionLog, offset: number): Promise<Buffer> {
  const { slice } = await log.read(offset, 1 << 20, { upTo: 'written' });
  if (slice === undefined) return Buffer.alloc(0);
  const bytes = await slice.readBytes();
  slice.release();
  return bytes;
}

/** Copies what the leader wrote from the follower's end on (up to offset `until`), as a replica fetcher would. */
async function replicate(leader: PartitionLog, follower: PartitionLog, until = leader.writtenEndOffset): Promise<void> {
  while (follower.logEndOffset < until) {
    const bytes = await fetchFrom(leader, follower.logEndOffset);
    const past = walkBatches(bytes).find((stored) => stored.baseOffset >= until);
    const result = await follower.appendAsFollower(past === undefined ? bytes : bytes.subarray(0, past.position));
    if (result === undefined) break;
    await follower.flush();
  }
}

const SETTINGS = { cleanupPolicy: 'compact', segmentBytes: 600, indexIntervalBytes: 128, flushMessages: 1 } as const;
const KEYS = ['a', 'b', 'c', 'd', 'e'];

function keyed(key: string, value: string, timestamp: number): Buffer {
  return encodeRecordBatch([{ key: Buffer.from(key), value: Buffer.concat([Buffer.from(value), Buffer.alloc(100, 0x61)]), timestamp }]);
}

function cleanerOf(dataDir: string, manager: LogManager, clock: ManualClock): LogCleaner {
  const logs = { dataDir, allLogs: () => manager.allLogs(), writeRecoveryCheckpoint: () => manager.writeRecoveryCheckpoint() };
  return new LogCleaner({ logs, config: DEFAULT_CLEANER_CONFIG, logger: memoryLogger().logger, clock });
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

describe('leader epochs of a follower that fetched across a gap the leader’s cleaner left', () => {
  it('start where the follower’s log ended, so a replica with an uncommitted suffix there cuts it when this follower leads', async () => {
    const directory = temporaryDirectory();
    const { manager, clock } = await openManager(directory, SETTINGS);
    const at = (index: number): number => clock.now() + index;
    // `old` led in epoch 4 and wrote offsets 0–14; only 0–9 were committed (the others got them),
    // 10–14 (keys x0–x4, never written again) are a suffix no one else has.
    const old = await manager.getOrCreateLog('old', 0);
    for (let index = 0; index < 15; index += 1) await old.append(keyed(index < 10 ? `k${index}` : `x${index - 10}`, `old${index}`, at(index)), { leaderEpoch: 4 });
    await old.flush();
    const lead = await manager.getOrCreateLog('lead', 0);
    await replicate(old, lead, 10);
    // `follower` had 0–9 too, then was away while `lead` led epoch 5 from offset 10: keys y0–y4
    // twice (10–19), then others, so its cleaner removes 10–14 (superseded by 15–19).
    const follower = await manager.getOrCreateLog('follower', 0);
    await replicate(lead, follower);
    for (let index = 10; index < 40; index += 1) await lead.append(keyed(index < 20 ? `y${index % 5}` : `z${index}`, `lead${index}`, at(index)), { leaderEpoch: 5 });
    await lead.flush();
    const cleaner = cleanerOf(directory, manager, clock);
    expect(await cleaner.cleanLogNow(lead)).toBeDefined();
    await cleaner.stop();
    const resumed = walkBatches(await fetchFrom(lead, 10))[0];
    expect(resumed?.baseOffset, 'the leader serves offset 10 from a later batch: 10–14 were cleaned away').toBeGreaterThan(10);

    // The follower comes back and copies the leader's log across the gap.
    await replicate(lead, follower);
    expect(follower.logEndOffset).toBe(lead.logEndOffset);
    expect(follower.leaderEpochCache.entries()).toEqual([{ epoch: 4, startOffset: 0 }, { epoch: 5, startOffset: 10 }]);

    // The follower leads (epoch 6); `old` comes back and asks it where its latest epoch, 4, ends.
    const answer = follower.leaderEpochCache.endOffsetFor(old.leaderEpochCache.latestEpoch(), follower.logEndOffset);
    const decision = truncationFor({ entries: old.leaderEpochCache.entries(), logEndOffset: old.logEndOffset, logStartOffset: old.logStartOffset }, answer);
    expect(decision).toEqual({ kind: 'truncate', offset: 10 });
    await old.truncateTo(10);
    await replicate(follower, old);
    const keys: string[] = [];
    const bytes = await fetchFrom(old, 0);
    for (const stored of walkBatches(bytes)) keys.push(...decodeRecords(bytes, stored.position).map((record) => record.key?.toString() ?? ''));
    expect(keys.filter((key) => key.startsWith('x')), 'the uncommitted suffix is gone').toEqual([]);
    await manager.close();
  });

  it('start at the batch’s own base offset when no gap precedes it, as the leader recorded it', async () => {
    const directory = temporaryDirectory();
    const { manager, clock } = await openManager(directory, SETTINGS);
    const lead = await manager.getOrCreateLog('lead', 0);
    const follower = await manager.getOrCreateLog('follower', 0);
    for (let index = 0; index < 6; index += 1) await lead.append(keyed(`k${index}`, `v${index}`, clock.now()), { leaderEpoch: index < 3 ? 1 : 2 });
    await replicate(lead, follower);
    expect(follower.leaderEpochCache.entries()).toEqual(lead.leaderEpochCache.entries());
    await manager.close();
  });
});

describe('the cleaner’s checkpoint after a truncation', () => {
  it('is lowered when a follower’s log is cut below it, so a tombstone written again below it still removes the older value before it goes', async () => {
    const directory = temporaryDirectory();
    const clock = new ManualClock();
    const manager = await LogManager.open({
      dataDir: directory,
      logger: memoryLogger().logger,
      clock,
      configFor: () => config({ ...SETTINGS, deleteRetentionMs: 1_000 }),
      cleaner: { ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 1 << 20 },
    });
    const log = await manager.getOrCreateLog('compacted', 0);
    const { cleaner } = manager;
    const fill = async (from: number, to: number): Promise<void> => {
      for (let index = from; index < to; index += 1) await log.append(keyed(`f${index}`, `v${index}`, clock.now()));
    };
    await fill(0, 60);
    await log.flush();
    expect((await cleaner.cleanLogNow(log))?.nextDirtyOffset).toBeGreaterThan(30);

    // A new leader had nothing as old as this replica's epochs: the log is emptied and fetched again,
    // past the old checkpoint, before the cleaner looks at it: k's value, then its tombstone.
    await log.truncateFullyAndStartAt(0);
    await log.append(keyed('k', 'value', clock.now()));
    await fill(1, 20);
    await log.append(encodeRecordBatch([{ key: Buffer.from('k'), value: null, timestamp: clock.now() }]));
    await fill(21, 70);
    await log.flush();
    expect(await cleaner.cleanLogNow(log)).toBeDefined();
    clock.advance(2_000);
    expect(await cleaner.cleanLogNow(log)).toBeDefined();

    const keys: string[] = [];
    let offset = 0;
    for (;;) {
      const { slice } = await log.read(offset, 1 << 20);
      if (slice === undefined) break;
      const bytes = await slice.readBytes();
      slice.release();
      for (const stored of walkBatches(bytes)) {
        keys.push(...decodeRecords(bytes, stored.position).map((record) => record.key?.toString() ?? ''));
        offset = stored.lastOffset + 1;
      }
    }
    expect(keys, 'k was deleted: neither its value nor (past its horizon) its tombstone is left').not.toContain('k');
    await manager.close();
  });
});
