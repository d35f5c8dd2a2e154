import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { decodeRecords } from '../../../src/protocol/records.js';
import { batch, openManager, seededRandom, temporaryDirectory, walkBatches, type StoredBatch } from './helpers.js';

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KafkaProtocolError) return error.code;
    throw error;
  }
  return 'NONE';
}

describe('append and read', () => {
  it('numbers records consecutively and exposes them only once flushed', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog('events', 0);
    const results = [await log.append(batch(2)), await log.append(batch(3)), await log.append(batch(1))];
    expect(results.map((r) => [r.baseOffset, r.lastOffset])).toEqual([[0, 1], [2, 4], [5, 5]]);
    expect(log.logEndOffset).toBe(6);
    expect(log.highWatermark).toBe(0);
    expect((await log.read(0, 1 << 20)).slice).toBeUndefined();

    await log.flush();
    expect(log.highWatermark).toBe(6);
    const { slice } = await log.read(0, 1 << 20);
    const bytes = await slice!.readBytes();
    slice!.release();
    expect(walkBatches(bytes).map((b) => [b.baseOffset, b.lastOffset])).toEqual([[0, 1], [2, 4], [5, 5]]);
    expect(walkBatches(bytes).flatMap((b) => decodeRecords(bytes, b.position).map((r) => `${r.offset}:${r.value?.toString()}`))).toEqual([
      '0:r-0', '1:r-1', '2:r-0', '3:r-1', '4:r-2', '5:r-0',
    ]);
    await manager.close();
  });

  it('resolves an acks=-1 append only after its bytes are flushed', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog('events', 0);
    await log.append(batch(4));
    const result = await log.append(batch(2), { waitForFlush: true });
    expect(log.recoveryPoint).toBeGreaterThan(result.lastOffset);
    expect(log.highWatermark).toBe(6);
    await manager.close();
  });

  it('flushes after flush.messages records, and after flush.ms by the clock', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { flushMessages: 5, flushMs: 1_000 });
    const log = await manager.getOrCreateLog('events', 0);
    await log.append(batch(3));
    await log.maybeFlush(clock.now());
    expect(log.highWatermark).toBe(0);
    await log.append(batch(2));
    await vi.waitFor(() => expect(log.highWatermark).toBe(5));

    await log.append(batch(1));
    clock.advance(999);
    await manager.flushDue();
    expect(log.highWatermark).toBe(5);
    clock.advance(1);
    await manager.flushDue();
    expect(log.highWatermark).toBe(6);
    await manager.close();
  });

  it('exposes records on append when the topic asks for it', async () => {
    const { manager } = await openManager(temporaryDirectory(), { visibleOnAppend: true, flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog('latency', 0);
    await log.append(batch(3));
    expect(log.highWatermark).toBe(3);
    expect(log.recoveryPoint).toBe(0);
    const { slice } = await log.read(1, 100);
    expect(slice?.firstBatchOffset).toBe(0);
    slice?.release();
    await manager.close();
  });

  it('keeps offsets unique and contiguous under many concurrent appends', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 7 });
    const log = await manager.getOrCreateLog('events', 0);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => log.append(batch((i % 4) + 1), { waitForFlush: i % 3 === 0 })),
    );
    const ranges = results.map((r) => [r.baseOffset, r.lastOffset] as const).sort((a, b) => a[0] - b[0]);
    let next = 0;
    for (const [base, last] of ranges) {
      expect(base).toBe(next);
      next = last + 1;
    }
    expect(log.logEndOffset).toBe(next);
    await manager.close();
  });

  it('rejects an invalid batch whole and leaves the log unchanged', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory);
    const log = await manager.getOrCreateLog('events', 0);
    await log.append(batch(2), { waitForFlush: true });
    const sizeBefore = statSync(join(directory, 'events-0', '00000000000000000000.log')).size;

    const corrupt = batch(3);
    corrupt.writeUInt8((corrupt.at(-1) ?? 0) ^ 0x01, corrupt.length - 1);
    expect(await codeOf(log.append(corrupt))).toBe('CORRUPT_MESSAGE');
    expect(await codeOf(log.append(batch(3).subarray(0, 40)))).toBe('CORRUPT_MESSAGE');
    expect(await codeOf(log.append(batch(5000, { valueBytes: 300 })))).toBe('MESSAGE_TOO_LARGE');

    expect(log.logEndOffset).toBe(2);
    expect(statSync(join(directory, 'events-0', '00000000000000000000.log')).size).toBe(sizeBefore);
    await manager.close();
  });

  it('answers offsets outside the log with OFFSET_OUT_OF_RANGE and the end with nothing', async () => {
    const { manager } = await openManager(temporaryDirectory());
    const log = await manager.getOrCreateLog('events', 0);
    await log.append(batch(3), { waitForFlush: true });
    expect(await codeOf(log.read(4, 100))).toBe('OFFSET_OUT_OF_RANGE');
    expect(await codeOf(log.read(-1, 100))).toBe('OFFSET_OUT_OF_RANGE');
    expect((await log.read(3, 100)).slice).toBeUndefined();
    await manager.close();
  });
});

describe('reads against a brute-force model on random data', () => {
  it('returns the batch holding the offset and whole batches up to maxBytes, within one segment', async () => {
    const random = seededRandom(42);
    const { manager } = await openManager(temporaryDirectory(), { segmentBytes: 6_000, indexIntervalBytes: 300, flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog('random', 3);
    const stored: (StoredBatch & { segment: number })[] = [];
    for (let i = 0; i < 300; i += 1) {
      const records = 1 + Math.floor(random() * 5);
      const result = await log.append(batch(records, { valueBytes: Math.floor(random() * 120) }));
      stored.push({ position: 0, size: 0, baseOffset: result.baseOffset, lastOffset: result.lastOffset, segment: 0 });
    }
    await log.flush();
    expect(log.segmentBaseOffsets.length).toBeGreaterThan(5);

    // The model: each batch's size and segment, from the files themselves.
    for (const base of log.segmentBaseOffsets) {
      const { slice } = await log.read(base, 1 << 30);
      const bytes = await slice!.readBytes();
      slice!.release();
      for (const found of walkBatches(bytes)) {
        const entry = stored.find((b) => b.baseOffset === found.baseOffset)!;
        Object.assign(entry, { position: found.position, size: found.size, segment: base });
      }
    }
    for (let trial = 0; trial < 400; trial += 1) {
      const offset = Math.floor(random() * log.logEndOffset);
      const maxBytes = Math.floor(random() * 2_500);
      const firstIndex = stored.findIndex((b) => b.lastOffset >= offset);
      const first = stored[firstIndex]!;
      const expected = [first];
      let bytes = first.size;
      for (const next of stored.slice(firstIndex + 1)) {
        if (next.segment !== first.segment || bytes + next.size > maxBytes) break;
        expected.push(next);
        bytes += next.size;
      }
      const { slice } = await log.read(offset, maxBytes);
      expect(slice).toBeDefined();
      expect({ position: slice!.position, size: slice!.size, first: slice!.firstBatchOffset }).toEqual({
        position: first.position,
        size: bytes,
        first: first.baseOffset,
      });
      slice!.release();
    }
    await manager.close();
  });

  it('serves consumers reading on from where their last slice ended as the model says, while appends move the high watermark', async () => {
    for (const visibleOnAppend of [false, true]) {
      const random = seededRandom(visibleOnAppend ? 11 : 12);
      const { manager } = await openManager(temporaryDirectory(), { segmentBytes: 6_000, indexIntervalBytes: 300, flushMessages: 1_000_000, visibleOnAppend });
      const log = await manager.getOrCreateLog('sequential', 0);
      const stored: { baseOffset: number; lastOffset: number; size: number }[] = [];
      const append = async (count: number): Promise<void> => {
        for (let i = 0; i < count; i += 1) {
          const bytes = batch(1 + Math.floor(random() * 5), { valueBytes: Math.floor(random() * 120) });
          const size = bytes.length;
          const result = await log.append(bytes);
          stored.push({ baseOffset: result.baseOffset, lastOffset: result.lastOffset, size });
        }
      };
      // The model: batches laid end to end in the segment of the last base offset at or below theirs.
      const segmentOf = (offset: number): number => log.segmentBaseOffsets.filter((base) => base <= offset).at(-1)!;
      const model = (offset: number, maxBytes: number): { position: number; size: number; first: number; last: number } | undefined => {
        const visible = stored.filter((b) => b.lastOffset < log.highWatermark);
        const firstIndex = visible.findIndex((b) => b.lastOffset >= offset);
        const first = visible[firstIndex];
        if (first === undefined) return undefined;
        const segment = segmentOf(first.baseOffset);
        const position = visible.slice(0, firstIndex).filter((b) => segmentOf(b.baseOffset) === segment).reduce((sum, b) => sum + b.size, 0);
        let size = first.size;
        let last = first.lastOffset;
        for (const next of visible.slice(firstIndex + 1)) {
          if (segmentOf(next.baseOffset) !== segment || size + next.size > maxBytes) break;
          size += next.size;
          last = next.lastOffset;
        }
        return { position, size, first: first.baseOffset, last };
      };
      await append(20);
      await log.flush();
      const consumers = [0, 0, 0];
      for (let step = 0; step < 800; step += 1) {
        const action = random();
        if (action < 0.15) {
          await append(1 + Math.floor(random() * 4));
          if (random() < 0.5) await log.flush();
          continue;
        }
        const which = Math.floor(random() * consumers.length);
        // Now and then a consumer jumps (a seek), often into the middle of a batch.
        if (action < 0.2) consumers[which] = Math.floor(random() * (log.highWatermark + 1));
        const offset = consumers[which]!;
        const maxBytes = Math.floor(random() * 2_500);
        const expected = model(offset, maxBytes);
        const { slice } = await log.read(offset, maxBytes);
        expect(slice === undefined ? undefined : { position: slice.position, size: slice.size, first: slice.firstBatchOffset }).toEqual(
          expected === undefined ? undefined : { position: expected.position, size: expected.size, first: expected.first },
        );
        slice?.release();
        if (expected !== undefined) consumers[which] = expected.last + 1;
      }
      expect(log.segmentBaseOffsets.length).toBeGreaterThan(5);
      await manager.close();
    }
  });

  it('says a slice is cached only when its lookup read headers from the file', async () => {
    const { manager } = await openManager(temporaryDirectory(), { flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog('cached', 0);
    for (let i = 0; i < 10; i += 1) await log.append(batch(3, { valueBytes: 100 }));
    await log.flush();
    // Offset 0 is looked up in the file; a reader at the old high watermark starts where the last
    // read ended, so the next slice (up to the new high watermark, within maxBytes) reads no header.
    const first = (await log.read(0, 1 << 20)).slice!;
    expect(typeof first.cached).toBe('boolean');
    first.release();
    const end = log.highWatermark;
    for (let i = 0; i < 10; i += 1) await log.append(batch(3, { valueBytes: 100 }));
    await log.flush();
    const next = (await log.read(end, 1 << 20)).slice!;
    expect({ first: next.firstBatchOffset, cached: next.cached }).toEqual({ first: end, cached: false });
    next.release();
    await manager.close();
  });

  it('finds the first record at or after a timestamp', async () => {
    const random = seededRandom(7);
    const { manager } = await openManager(temporaryDirectory(), { segmentBytes: 4_000, indexIntervalBytes: 200 });
    const log = await manager.getOrCreateLog('times', 0);
    const records: { offset: number; timestamp: number }[] = [];
    let timestamp = 10_000;
    for (let i = 0; i < 200; i += 1) {
      const count = 1 + Math.floor(random() * 3);
      timestamp += Math.floor(random() * 50);
      const result = await log.append(batch(count, { timestamp }));
      for (let r = 0; r < count; r += 1) records.push({ offset: result.baseOffset + r, timestamp: timestamp + r });
    }
    await log.flush();
    for (let trial = 0; trial < 200; trial += 1) {
      const target = 9_990 + Math.floor(random() * (timestamp - 9_990 + 20));
      const expected = records.find((r) => r.timestamp >= target);
      expect(await log.offsetForTimestamp(BigInt(target))).toEqual(expected === undefined ? undefined : { offset: expected.offset, timestamp: BigInt(expected.timestamp) });
    }
    await manager.close();
  });
});

describe('segments', () => {
  it('rolls at segment.bytes, naming each segment by its first offset', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, { segmentBytes: 1_000 });
    const log = await manager.getOrCreateLog('roll', 0);
    for (let i = 0; i < 40; i += 1) await log.append(batch(2, { valueBytes: 40 }));
    await log.flush();
    const logs = readdirSync(join(directory, 'roll-0')).filter((f) => f.endsWith('.log')).sort();
    expect(logs.length).toBe(log.segmentBaseOffsets.length);
    expect(logs.map((f) => Number(f.slice(0, 20)))).toEqual(log.segmentBaseOffsets);
    expect(logs.every((f) => /^\d{20}\.log$/.test(f))).toBe(true);
    for (const file of logs) expect(statSync(join(directory, 'roll-0', file)).size).toBeLessThanOrEqual(1_000);
    await manager.close();
  });

  it('rolls at segment.ms even when the segment is small', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { segmentMs: 60_000 });
    const log = await manager.getOrCreateLog('roll', 0);
    await log.append(batch(1));
    clock.advance(59_999);
    await log.append(batch(1));
    expect(log.segmentBaseOffsets).toEqual([0]);
    clock.advance(1);
    await log.append(batch(1));
    expect(log.segmentBaseOffsets).toEqual([0, 2]);
    await manager.close();
  });
});

describe('retention', () => {
  it('deletes closed segments older than retention.ms, never the active one, and persists the log start', async () => {
    const directory = temporaryDirectory();
    // Records two hours ahead of the broker's clock: allowed past the default one-hour bound here.
    const { manager, clock } = await openManager(directory, { segmentBytes: 500, retentionMs: 3_600_000, timestampAfterMaxMs: Infinity });
    const log = await manager.getOrCreateLog('old', 0);
    const start = clock.now();
    for (let i = 0; i < 20; i += 1) await log.append(batch(2, { timestamp: start, valueBytes: 50 }));
    for (let i = 0; i < 5; i += 1) await log.append(batch(2, { timestamp: start + 7_200_000, valueBytes: 50 }));
    await log.flush();
    const segmentsBefore = log.segmentBaseOffsets.length;

    clock.set(start + 3_600_000);
    expect(manager.applyRetention()).toBe(0);
    clock.set(start + 3_600_000 + 1_000);
    const deleted = manager.applyRetention();
    expect(deleted).toBeGreaterThan(0);
    expect(log.segmentBaseOffsets.length).toBe(segmentsBefore - deleted);
    expect(log.logStartOffset).toBe(log.segmentBaseOffsets[0]);
    expect(log.logStartOffset).toBeLessThanOrEqual(40);
    expect(await codeOf(log.read(0, 100))).toBe('OFFSET_OUT_OF_RANGE');

    // Even far in the future the active segment stays.
    clock.set(start + 1_000 * 3_600_000);
    manager.applyRetention();
    expect(log.segmentBaseOffsets.length).toBe(1);
    const logStart = log.logStartOffset;
    await manager.close();

    const reopened = await openManager(directory, { segmentBytes: 500, retentionMs: 3_600_000 });
    expect(reopened.manager.getLog('old', 0)?.logStartOffset).toBe(logStart);
    expect(reopened.manager.getLog('old', 0)?.logEndOffset).toBe(50);
    await reopened.manager.close();
  });

  it('deletes the oldest segments while the log is larger than retention.bytes', async () => {
    const { manager } = await openManager(temporaryDirectory(), { segmentBytes: 1_000, retentionBytes: 2_500, retentionMs: -1 });
    const log = await manager.getOrCreateLog('big', 0);
    for (let i = 0; i < 60; i += 1) await log.append(batch(1, { valueBytes: 100 }));
    await log.flush();
    manager.applyRetention();
    expect(log.sizeInBytes).toBeLessThan(2_500 + 1_000);
    expect(log.sizeInBytes).toBeGreaterThanOrEqual(2_500);
    await manager.close();
  });

  it('keeps a deleted segment readable by a reader that still holds a slice', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { segmentBytes: 300, retentionMs: 1_000 });
    const log = await manager.getOrCreateLog('held', 0);
    for (let i = 0; i < 10; i += 1) await log.append(batch(1, { timestamp: clock.now(), valueBytes: 100 }));
    await log.flush();
    const { slice } = await log.read(0, 100_000);
    clock.advance(10_000);
    expect(manager.applyRetention()).toBeGreaterThan(0);
    expect(existsSync(slice!.path)).toBe(false);
    const bytes = await slice!.readBytes();
    expect(walkBatches(bytes)[0]?.baseOffset).toBe(0);
    slice!.release();
    await manager.close();
  });
});

describe('log manager', () => {
  it('reopens after a clean stop with every record readable and the marker consumed', async () => {
    const directory = temporaryDirectory();
    const first = await openManager(directory, { segmentBytes: 2_000 });
    const log = await first.manager.getOrCreateLog('a.topic_with-dashes', 12);
    for (let i = 0; i < 30; i += 1) await log.append(batch(3, { valueBytes: 30 }));
    await first.manager.close();
    expect(existsSync(join(directory, '.clean-shutdown'))).toBe(true);

    const second = await openManager(directory, { segmentBytes: 2_000 });
    expect(existsSync(join(directory, '.clean-shutdown'))).toBe(false);
    expect(second.manager.recoveredFromUncleanShutdown).toBe(false);
    const reopened = second.manager.getLog('a.topic_with-dashes', 12)!;
    expect([reopened.logEndOffset, reopened.highWatermark]).toEqual([90, 90]);
    const { slice } = await reopened.read(45, 1 << 20);
    expect(walkBatches(await slice!.readBytes())[0]?.baseOffset).toBe(45);
    slice!.release();
    expect((await reopened.append(batch(1))).baseOffset).toBe(90);
    await second.manager.close();
  });

  it('deletes a partition log with its folder', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory);
    await (await manager.getOrCreateLog('gone', 0)).append(batch(1));
    await manager.deleteLog('gone', 0);
    expect(manager.getLog('gone', 0)).toBeUndefined();
    expect(readdirSync(directory).filter((f) => f.startsWith('gone'))).toEqual([]);
    await manager.close();
  });

  it('creates a partition once when asked for it concurrently', async () => {
    const { manager } = await openManager(temporaryDirectory());
    const [a, b] = await Promise.all([manager.getOrCreateLog('race', 0), manager.getOrCreateLog('race', 0)]);
    expect(a).toBe(b);
    await manager.close();
  });

  it('refuses an invalid topic name', async () => {
    const { manager } = await openManager(temporaryDirectory());
    await expect(manager.getOrCreateLog('no/slashes', 0)).rejects.toThrow(/topic name "no\/slashes" is invalid/);
    await manager.close();
  });
});
