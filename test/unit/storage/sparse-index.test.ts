/**
 * Segment indexes in Kafka's convention: offset entries name the LAST offset of the batch at their
 * position, time entries the last offset of the first batch to reach each new max timestamp
 * (sparse-index.ts). Reads of every offset inside multi-record batches, timestamp lookups,
 * truncation, rebuilds and restarts are checked against oracles and against the files' rules
 * (support/index-files.ts, what kafka-dump-log.sh --verify-index-only checks); index files of the
 * earlier convention (base offsets) are read right and rebuilt in Kafka's.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CompressionName } from '../../../src/protocol/record-batch.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { CLEAN_SHUTDOWN_MARKER } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { SparseIndex } from '../../../src/storage/sparse-index.js';
import { kafkaIndexProblems, segmentBatches, writeEarlierConventionIndexes } from '../../support/index-files.js';
import { openManager, seededRandom, temporaryDirectory, walkBatches } from './helpers.js';

/** ManualClock's start: record timestamps stay within a few hours before it (no retention). */
const NOW = 1_700_000_000_000;
const CODECS: readonly (CompressionName | undefined)[] = [undefined, 'gzip', undefined, 'lz4', 'zstd', undefined, 'snappy'];

interface StoredRecord {
  readonly offset: number;
  readonly timestamp: number;
}

/**
 * Appends `batches` batches of 1–9 records: timestamps mostly rising, a batch in four going back
 * in time, one in seven repeating an earlier timestamp, records out of order within a batch (the
 * max is seldom the last record's); every codec. Returns the records in offset order.
 */
async function appendWorkload(log: PartitionLog, seed: number, batches: number, from: StoredRecord[] = []): Promise<StoredRecord[]> {
  const random = seededRandom(seed);
  const records = [...from];
  let clock = NOW - 3_600_000 + (from.at(-1)?.timestamp ?? 0) % 1_000;
  for (let batch = 0; batch < batches; batch += 1) {
    const count = 1 + Math.floor(random() * 9);
    clock += Math.floor(random() * 50);
    const base = batch % 4 === 3 ? clock - 20_000 : batch % 7 === 6 && records.length > 0 ? (records[Math.floor(random() * records.length)]?.timestamp ?? clock) : clock;
    const timestamps = Array.from({ length: count }, () => base + Math.floor(random() * 5) * 3);
    const codec = CODECS[batch % CODECS.length];
    const bytes = encodeRecordBatch(
      timestamps.map((timestamp, index) => ({ value: Buffer.from(`${seed}-${batch}-${index}-${'v'.repeat(Math.floor(random() * 80))}`), timestamp })),
      codec === undefined ? {} : { compression: codec },
    );
    const { baseOffset } = await log.append(bytes);
    timestamps.forEach((timestamp, index) => records.push({ offset: baseOffset + index, timestamp }));
  }
  return records;
}

/** Offsets whose read does not start with the batch holding them. */
async function misplacedReads(log: PartitionLog): Promise<number[]> {
  const misplaced: number[] = [];
  for (let offset = 0; offset < log.logEndOffset; offset += 1) {
    const { slice } = await log.read(offset, 1);
    const bytes = slice === undefined ? Buffer.alloc(0) : await slice.readBytes();
    slice?.release();
    const [first] = walkBatches(bytes);
    if (first === undefined || first.baseOffset > offset || first.lastOffset < offset) misplaced.push(offset);
  }
  return misplaced;
}

/** Timestamp lookups that differ from the oracle: the first record, in offset order, at or after the timestamp. */
async function wrongTimeLookups(log: PartitionLog, records: readonly StoredRecord[]): Promise<string[]> {
  const probes = new Set<number>();
  for (const { timestamp } of records) for (const probe of [timestamp - 1, timestamp, timestamp + 1]) probes.add(probe);
  const wrong: string[] = [];
  for (const probe of [...probes].sort((a, b) => a - b)) {
    const want = records.find((record) => record.timestamp >= probe);
    const got = await log.offsetForTimestamp(BigInt(probe));
    const expected = want === undefined ? 'none' : `${want.offset}@${want.timestamp}`;
    const actual = got === undefined ? 'none' : `${got.offset}@${got.timestamp}`;
    if (actual !== expected) wrong.push(`${probe}: ${actual}, expected ${expected}`);
  }
  return wrong;
}

/** Reads and timestamp lookups of everything written (flushed first: reads stop at the high watermark). */
async function expectServedRight(log: PartitionLog, records: readonly StoredRecord[]): Promise<void> {
  await log.flush();
  expect(log.highWatermark).toBe(records.length);
  expect(await misplacedReads(log)).toEqual([]);
  expect(await wrongTimeLookups(log, records)).toEqual([]);
}

describe("index entries in Kafka's convention", () => {
  for (const indexIntervalBytes of [0, 150, 700, 1_000_000]) {
    it(`index.interval.bytes ${indexIntervalBytes}: every offset of multi-record batches is read from its batch, timestamps are found, files follow the rules, before and after restarts`, async () => {
      const directory = temporaryDirectory();
      const settings = { segmentBytes: 2048, indexIntervalBytes, flushMessages: 1_000_000 };
      const first = await openManager(directory, settings);
      const log = await first.manager.getOrCreateLog('kafka', 0);
      const records = await appendWorkload(log, indexIntervalBytes + 1, 90);
      expect(log.segmentBaseOffsets.length).toBeGreaterThan(5);
      await expectServedRight(log, records);
      await log.flush();
      const folder = join(directory, 'kafka-0');
      expect(kafkaIndexProblems(folder)).toEqual([]);
      const written = readFileSync(join(folder, '00000000000000000000.index'));
      await first.manager.close();

      // A clean restart loads the files as they are.
      const clean = await openManager(directory, settings);
      const reloaded = clean.manager.getLog('kafka', 0)!;
      expect(clean.lines.filter((line) => String(line['msg']).includes('rebuilding'))).toEqual([]);
      await expectServedRight(reloaded, records);
      // Appends after a restart go on with the same entries (files unchanged before them).
      const more = await appendWorkload(reloaded, indexIntervalBytes + 2, 30, records);
      await expectServedRight(reloaded, more);
      await reloaded.flush();
      expect(kafkaIndexProblems(folder)).toEqual([]);
      expect(readFileSync(join(folder, '00000000000000000000.index'))).toEqual(written);

      // Unclean (never closed): recovery rebuilds what follows the recovery point.
      const unclean = await openManager(directory, settings);
      expect(unclean.manager.recoveredFromUncleanShutdown).toBe(true);
      await expectServedRight(unclean.manager.getLog('kafka', 0)!, more);
      await unclean.manager.close();
      expect(kafkaIndexProblems(folder)).toEqual([]);
    });
  }

  it('the time index holds an entry only where the max timestamp rose, naming the batch that first reached it', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, { indexIntervalBytes: 0, flushMessages: 1_000_000 });
    const log = await manager.getOrCreateLog('times', 0);
    // Batches (offsets): 0–2 max 30, 3–4 max 20, 5 max 30, 6–8 max 50, 9 max 40.
    for (const timestamps of [[10, 30, 20], [20, 5], [30], [50, 45, 10], [40]]) {
      await log.append(encodeRecordBatch(timestamps.map((timestamp, index) => ({ value: Buffer.from(`r${index}`), timestamp: NOW - 1_000 + timestamp }))));
    }
    await log.flush();
    const folder = join(directory, 'times-0');
    const offsets = readFileSync(join(folder, '00000000000000000000.index'));
    const times = readFileSync(join(folder, '00000000000000000000.timeindex'));
    const offsetEntries = Array.from({ length: offsets.length / 8 }, (_, i) => [offsets.readInt32BE(i * 8), offsets.readInt32BE(i * 8 + 4)]);
    const timeEntries = Array.from({ length: times.length / 12 }, (_, i) => [Number(times.readBigInt64BE(i * 12)) - NOW + 1_000, times.readInt32BE(i * 12 + 8)]);
    const positions = segmentBatches(readFileSync(join(folder, '00000000000000000000.log'))).map((batch) => batch.position);
    expect(offsetEntries).toEqual([[2, positions[0]], [4, positions[1]], [5, positions[2]], [8, positions[3]], [9, positions[4]]]);
    expect(timeEntries).toEqual([[30, 2], [50, 8]]);
    expect(kafkaIndexProblems(folder)).toEqual([]);
    // 30 is first reached at offset 1, in the first batch, not in the batch at offset 5.
    expect(await log.offsetForTimestamp(BigInt(NOW - 1_000 + 30))).toEqual({ offset: 1, timestamp: BigInt(NOW - 1_000 + 30) });
    expect(await log.offsetForTimestamp(BigInt(NOW - 1_000 + 41))).toEqual({ offset: 6, timestamp: BigInt(NOW - 1_000 + 50) });
    expect(await log.offsetForTimestamp(BigInt(NOW - 1_000 + 51))).toBeUndefined();
    await manager.close();
  });

  it('truncation (follower) inside multi-record batches keeps the index right, and appends after it go on right', async () => {
    const directory = temporaryDirectory();
    const settings = { segmentBytes: 4096, indexIntervalBytes: 200, flushMessages: 1_000_000 };
    const { manager } = await openManager(directory, settings);
    const log = await manager.getOrCreateLog('cut', 0);
    let records = await appendWorkload(log, 7, 120);
    const folder = join(directory, 'cut-0');
    const random = seededRandom(99);
    for (let round = 0; round < 6; round += 1) {
      const target = 1 + Math.floor(random() * (records.length - 1));
      const end = await log.truncateTo(target);
      // Cut at the start of the batch holding the target.
      expect(end).toBeLessThanOrEqual(target);
      records = records.slice(0, end);
      await expectServedRight(log, records);
      expect(kafkaIndexProblems(folder)).toEqual([]);
      records = await appendWorkload(log, 100 + round, 15, records);
      await expectServedRight(log, records);
      await log.flush();
      expect(kafkaIndexProblems(folder)).toEqual([]);
    }
    await manager.close();
    const reopened = await openManager(directory, settings);
    expect(reopened.lines.filter((line) => String(line['msg']).includes('rebuilding'))).toEqual([]);
    await expectServedRight(reopened.manager.getLog('cut', 0)!, records);
    await reopened.manager.close();
  });
});

describe('index files that do not match their segment', () => {
  const settings = { segmentBytes: 1 << 20, indexIntervalBytes: 100, flushMessages: 1_000_000 };
  const damages: Record<string, (offsets: Buffer, times: Buffer) => { offsets: Buffer; times: Buffer }> = {
    'the last offset entry names another offset than its batch’s last': (offsets, times) => {
      const copy = Buffer.from(offsets);
      copy.writeInt32BE(copy.readInt32BE(copy.length - 8) - 1, copy.length - 8);
      return { offsets: copy, times };
    },
    'the last time entry names an offset past the segment': (offsets, times) => {
      const copy = Buffer.from(times);
      copy.writeInt32BE(100_000, copy.length - 4);
      return { offsets, times: copy };
    },
    'time entries repeat a timestamp': (offsets, times) => ({ offsets, times: Buffer.concat([times.subarray(0, 12), times.subarray(0, 12), times.subarray(12)]) }),
    'offset entries are out of order': (offsets, times) => ({ offsets: Buffer.concat([offsets.subarray(8, 16), offsets.subarray(0, 8), offsets.subarray(16)]), times }),
    'the offset index is not whole entries': (offsets, times) => ({ offsets: offsets.subarray(0, offsets.length - 3), times }),
  };

  for (const [damage, apply] of Object.entries(damages)) {
    it(`${damage}: rebuilt from the segment at a clean start`, async () => {
      const directory = temporaryDirectory();
      const first = await openManager(directory, settings);
      const records = await appendWorkload(await first.manager.getOrCreateLog('bad', 0), 11, 40);
      await first.manager.close();
      const folder = join(directory, 'bad-0');
      const paths = { offsets: join(folder, '00000000000000000000.index'), times: join(folder, '00000000000000000000.timeindex') };
      const written = { offsets: readFileSync(paths.offsets), times: readFileSync(paths.times) };
      expect(written.offsets.length / 8).toBeGreaterThan(4);
      expect(written.times.length / 12).toBeGreaterThan(2);
      const damaged = apply(written.offsets, written.times);
      writeFileSync(paths.offsets, damaged.offsets);
      writeFileSync(paths.times, damaged.times);

      const { manager, lines } = await openManager(directory, settings);
      const warned = lines.filter((line) => line['msg'] === 'index missing or corrupt; rebuilding it from the segment');
      expect(warned).toHaveLength(1);
      expect(readFileSync(paths.offsets)).toEqual(written.offsets);
      expect(readFileSync(paths.times)).toEqual(written.times);
      await expectServedRight(manager.getLog('bad', 0)!, records);
      await manager.close();
    });
  }
});

describe('SparseIndex.truncateToPosition', () => {
  it('drops the offset entries at or past the position and the time entries added with them, in memory and in the files', () => {
    const directory = temporaryDirectory();
    const paths = { offsets: join(directory, '00000000000000000100.index'), times: join(directory, '00000000000000000100.timeindex') };
    const index = new SparseIndex(100, paths.offsets, paths.times);
    // Batches 100–102 @0 (max 5), 103–104 @80 (max 9), 105–106 @120 (max 11, not indexed),
    // 107–109 @150 (max 7), 110 @260 (max 12).
    index.add(102, 0);
    index.addTime(5n, 102);
    index.add(104, 80);
    index.addTime(9n, 104);
    index.add(109, 150);
    index.addTime(11n, 106);
    index.add(110, 260);
    index.addTime(12n, 110);
    index.persist();
    expect([index.length, index.timeLength]).toEqual([4, 4]);
    expect([readFileSync(paths.offsets).length, readFileSync(paths.times).length]).toEqual([32, 48]);
    // Cut before the batch at 150: (11, 106) was added with its entry and goes too, though its
    // batch stays (the index is only sparser); (9, 104) stays.
    index.truncateToPosition(150);
    expect([index.last(), index.lastTime()]).toEqual([{ offset: 104, position: 80 }, { timestamp: 9n, offset: 104 }]);
    expect([readFileSync(paths.offsets).length, readFileSync(paths.times).length]).toEqual([16, 24]);
    index.truncateToPosition(80);
    expect([index.length, index.timeLength, index.lastTime()]).toEqual([1, 1, { timestamp: 5n, offset: 102 }]);
    expect([readFileSync(paths.offsets).length, readFileSync(paths.times).length]).toEqual([8, 12]);
    expect(index.floorByOffset(101)).toBeUndefined();
    expect(index.floorByOffset(102)).toEqual({ offset: 102, position: 0 });
    index.truncateToPosition(0);
    expect([index.length, index.timeLength]).toEqual([0, 0]);
    expect([readFileSync(paths.offsets).length, readFileSync(paths.times).length]).toEqual([0, 0]);
  });
});

describe('index files of the earlier convention (base offsets)', () => {
  const settings = { segmentBytes: 2048, indexIntervalBytes: 150, flushMessages: 1_000_000 };

  async function writtenByEarlierVersion(): Promise<{ directory: string; folder: string; records: StoredRecord[]; segments: number; empty: number }> {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, settings);
    const records = await appendWorkload(await manager.getOrCreateLog('old', 0), 5, 80);
    await manager.close();
    const folder = join(directory, 'old-0');
    const { segments, empty } = writeEarlierConventionIndexes(folder, settings.indexIntervalBytes);
    expect(segments).toBeGreaterThan(3);
    expect(kafkaIndexProblems(folder).length).toBeGreaterThan(segments);
    return { directory, folder, records, segments, empty };
  }

  it('are rebuilt in Kafka’s convention after a clean stop, and the log serves the same', async () => {
    const { directory, folder, records, segments, empty } = await writtenByEarlierVersion();
    const { manager, lines } = await openManager(directory, settings);
    const earlier = lines.filter((line) => String(line['msg']) === "index written by an earlier version (base offsets, not Kafka's last offsets); rebuilding it from the segment");
    expect(earlier.map((line) => line['reason'])).toEqual(Array.from({ length: segments - empty }, () => 'the offset index has no entry for the batch at position 0'));
    // An earlier version left a segment of less than index.interval.bytes an empty index: rebuilt too.
    expect(lines.filter((line) => String(line['msg']) === 'index missing or corrupt; rebuilding it from the segment')).toHaveLength(empty);
    // Rewritten at load, before any close.
    expect(kafkaIndexProblems(folder)).toEqual([]);
    const log = manager.getLog('old', 0)!;
    await expectServedRight(log, records);
    const more = await appendWorkload(log, 6, 20, records);
    await expectServedRight(log, more);
    await manager.close();
    expect(kafkaIndexProblems(folder)).toEqual([]);
  });

  it('are rebuilt after an unclean stop too, below the recovery point as above it', async () => {
    const { directory, folder, records } = await writtenByEarlierVersion();
    // No clean-shutdown marker: the segments before the recovery point are loaded, the last recovered.
    rmSync(join(directory, CLEAN_SHUTDOWN_MARKER));
    const { manager, lines } = await openManager(directory, settings);
    expect(manager.recoveredFromUncleanShutdown).toBe(true);
    expect(lines.some((line) => String(line['msg']).startsWith('index written by an earlier version'))).toBe(true);
    expect(kafkaIndexProblems(folder)).toEqual([]);
    await expectServedRight(manager.getLog('old', 0)!, records);
    await manager.close();
  });

  it('would be read right as they are: lookups hold under both conventions', () => {
    // Random segments indexed both ways; every lookup must start at or before the batch it wants.
    // (In memory, time entries always rise strictly: the loader refuses repeats as damage.)
    const random = seededRandom(2024);
    const directory = temporaryDirectory();
    for (let round = 0; round < 200; round += 1) {
      const base = Math.floor(random() * 1_000);
      const batches: { position: number; baseOffset: number; lastOffset: number; maxTimestamp: bigint }[] = [];
      let offset = base;
      let position = 0;
      for (let count = 1 + Math.floor(random() * 40); count > 0; count -= 1) {
        const records = 1 + Math.floor(random() * 6);
        batches.push({ position, baseOffset: offset, lastOffset: offset + records - 1, maxTimestamp: BigInt(1_000 + Math.floor(random() * 60)) });
        offset += records;
        position += 70 + Math.floor(random() * 200);
      }
      for (const convention of ['kafka', 'earlier'] as const) {
        const index = new SparseIndex(base, join(directory, 'unused.index'), join(directory, 'unused.timeindex'));
        let maxSoFar = -1n;
        let offsetOfMax = -1;
        for (const batch of batches) {
          if (batch.maxTimestamp > maxSoFar) {
            maxSoFar = batch.maxTimestamp;
            offsetOfMax = batch.lastOffset;
          }
          if (random() < 0.4) continue;
          if (convention === 'kafka') {
            index.add(batch.lastOffset, batch.position);
            index.addTime(maxSoFar, offsetOfMax);
          } else {
            // Both entries name the batch's base offset; the time entry carries the max so far.
            index.add(batch.baseOffset, batch.position);
            index.addTime(maxSoFar, batch.baseOffset);
          }
        }
        for (let target = base; target < offset; target += 1) {
          const holder = batches.find((batch) => batch.lastOffset >= target)!;
          const start = index.floorByOffset(target)?.position ?? 0;
          expect(start, `${convention}: offset ${target}`).toBeLessThanOrEqual(holder.position);
        }
        for (let timestamp = 995n; timestamp <= 1_065n; timestamp += 1n) {
          const wanted = batches.find((batch) => batch.maxTimestamp >= timestamp);
          const older = index.lastOlderThan(timestamp);
          const start = older === undefined ? 0 : (index.floorByOffset(older.offset)?.position ?? 0);
          if (wanted !== undefined) expect(start, `${convention}: timestamp ${timestamp}`).toBeLessThanOrEqual(wanted.position);
        }
      }
    }
  });
});
