/**
 * Timestamps are exact int64 everywhere in storage: a batch whose MaxTimestamp is 2^63−1 (as a
 * double it rounds to 2^63, which no int64 holds) is indexed, persisted, reloaded after a clean
 * stop, rebuilt after an unclean one, looked up by ListOffsets and weighed by retention exactly.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BASE_TIMESTAMP_OFFSET, MAX_TIMESTAMP_OFFSET, writeBatchCrc } from '../../../src/protocol/record-batch.js';
import { TIME_ENTRY_BYTES } from '../../../src/storage/sparse-index.js';
import { batch, openManager, temporaryDirectory } from './helpers.js';

const INT64_MAX = 2n ** 63n - 1n;
// Producers' timestamps are not bounded here: that is the validator's rule, not storage's.
const SETTINGS = { indexIntervalBytes: 0, flushMessages: 1_000_000, timestampAfterMaxMs: Infinity };

/** A valid batch of `count` records whose base and max timestamps are `timestamp` (every delta 0). */
function batchAt(timestamp: bigint, count = 1, tag = 'far'): Buffer {
  const bytes = batch(count, { tag, timestamp: 0 });
  // The encoder gives record i the delta i; with base = max = T the records sit at T..T+i−1, so
  // only one-record batches are exact at INT64_MAX. Keep deltas and move the base below T.
  bytes.writeBigInt64BE(timestamp - BigInt(count - 1), BASE_TIMESTAMP_OFFSET);
  bytes.writeBigInt64BE(timestamp, MAX_TIMESTAMP_OFFSET);
  writeBatchCrc(bytes);
  return bytes;
}

function timeIndexValues(directory: string, topic: string): bigint[] {
  const folder = join(directory, `${topic}-0`);
  const values: bigint[] = [];
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.timeindex')).sort()) {
    const bytes = readFileSync(join(folder, file));
    for (let at = 0; at + TIME_ENTRY_BYTES <= bytes.length; at += TIME_ENTRY_BYTES) values.push(bytes.readBigInt64BE(at));
  }
  return values;
}

describe('int64 timestamps in storage', () => {
  it('indexes, persists and finds a batch whose MaxTimestamp is 2^63−1, and keeps serving after it', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, SETTINGS);
    const log = await manager.getOrCreateLog('far', 0);
    await log.append(batch(2, { tag: 'before', timestamp: 1_000 }));
    await log.append(batchAt(INT64_MAX));
    await log.append(batch(1, { tag: 'after', timestamp: 2_000 }));
    // The flush persists the index: it threw RangeError when the index held doubles.
    await log.flush();
    expect(log.highWatermark).toBe(4);
    expect(await log.offsetForTimestamp(INT64_MAX)).toEqual({ offset: 2, timestamp: INT64_MAX });
    expect(await log.offsetForTimestamp(INT64_MAX - 1n)).toEqual({ offset: 2, timestamp: INT64_MAX });
    expect(await log.offsetForTimestamp(1_001n)).toEqual({ offset: 1, timestamp: 1_001n });
    // One time entry per rise of the max timestamp: the first batch's 1001, then 2^63−1 (the batch
    // after it raises nothing).
    expect(timeIndexValues(directory, 'far')).toEqual([1_001n, INT64_MAX]);
    // The partition is not offline: later appends and flushes go on.
    await log.append(batch(1, { tag: 'later' }), { waitForFlush: true });
    expect(log.highWatermark).toBe(5);
    await manager.close();
  });

  it('reloads the exact value after a clean stop and rebuilds it after an unclean one', async () => {
    const directory = temporaryDirectory();
    const first = await openManager(directory, SETTINGS);
    const log = await first.manager.getOrCreateLog('far', 0);
    await log.append(batch(1, { tag: 'a', valueBytes: 5_000 }));
    await log.append(batchAt(INT64_MAX));
    await log.append(batch(1, { tag: 'b' }));
    await first.manager.close();

    const clean = await openManager(directory, SETTINGS);
    const reopened = clean.manager.getLog('far', 0)!;
    expect(reopened.logEndOffset).toBe(3);
    expect(clean.lines.some((line) => String(line.msg).includes('rebuilding'))).toBe(false);
    expect(await reopened.offsetForTimestamp(INT64_MAX)).toEqual({ offset: 1, timestamp: INT64_MAX });
    await reopened.append(batch(1, { tag: 'c' }));
    await reopened.flush();
    // Unclean: the second manager is never closed; the third recovers and rewrites the indexes.
    const unclean = await openManager(directory, SETTINGS);
    const recovered = unclean.manager.getLog('far', 0)!;
    expect(unclean.manager.recoveredFromUncleanShutdown).toBe(true);
    expect(unclean.manager.offlineLogs()).toEqual([]);
    expect(recovered.logEndOffset).toBe(4);
    expect(await recovered.offsetForTimestamp(INT64_MAX)).toEqual({ offset: 1, timestamp: INT64_MAX });
    expect(timeIndexValues(directory, 'far')).toContain(INT64_MAX);
    await unclean.manager.close();
  });

  it('finds records by timestamps beyond 2^53 exactly, one millisecond apart', async () => {
    const { manager } = await openManager(temporaryDirectory(), SETTINGS);
    const log = await manager.getOrCreateLog('big', 0);
    const base = 2n ** 60n + 1n;
    // Three records at base, base+1, base+2 (as doubles all three are the same number).
    await log.append(batchAt(base + 2n, 3));
    await log.flush();
    expect(await log.offsetForTimestamp(base)).toEqual({ offset: 0, timestamp: base });
    expect(await log.offsetForTimestamp(base + 1n)).toEqual({ offset: 1, timestamp: base + 1n });
    expect(await log.offsetForTimestamp(base + 2n)).toEqual({ offset: 2, timestamp: base + 2n });
    expect(await log.offsetForTimestamp(base + 3n)).toBeUndefined();
    await manager.close();
  });

  it('retention weighs exact timestamps: a segment stamped 2^63−1 is not expired, an old one is', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { ...SETTINGS, segmentBytes: 100, retentionMs: 1_000 });
    const log = await manager.getOrCreateLog('ret', 0);
    const now = BigInt(clock.now());
    await log.append(batchAt(now - 10_000n, 1, 'old'));
    await log.append(batchAt(INT64_MAX, 1, 'future'));
    await log.append(batchAt(now, 1, 'active'));
    await log.flush();
    expect(log.segmentBaseOffsets).toEqual([0, 1, 2]);
    expect(manager.applyRetention()).toBe(1);
    expect(log.segmentBaseOffsets).toEqual([1, 2]);
    clock.advance(1_000_000);
    expect(manager.applyRetention()).toBe(0);
    await manager.close();
  });
});
