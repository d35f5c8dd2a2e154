/**
 * The log cleaner against a reference model: random keyed writes and tombstones in every codec,
 * idempotent and not, cleaned at random moments with a key map small enough to force partial
 * passes. After every pass (and after a restart) what a reader gets from the log start is checked
 * against the history written:
 *   - every record read was written at that offset with that key and value (offsets never change,
 *     order kept);
 *   - below the uncleanable tail each key appears once, as its latest write there (a tombstone
 *     until its horizon has passed, then not at all); at and above the tail, everything written;
 *   - a reader from the log start steps over every gap and ends at the log end.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { compressionName } from '../../../src/protocol/compression.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { LogCleaner, DEFAULT_CLEANER_CONFIG } from '../../../src/storage/cleaner/log-cleaner.js';
import type { LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { memoryLogger, openManager, seededRandom, temporaryDirectory, walkBatches } from './helpers.js';

const DAY = 86_400_000;
const SETTINGS = { cleanupPolicy: 'compact', segmentBytes: 1500, indexIntervalBytes: 200, flushMessages: 1, deleteRetentionMs: DAY } as const;

interface Written {
  readonly offset: number;
  readonly key: string;
  readonly value: string | null;
}

async function readAll(log: PartitionLog): Promise<{ records: Written[]; end: number }> {
  const records: Written[] = [];
  let offset = log.logStartOffset;
  for (;;) {
    const { slice } = await log.read(offset, 4096);
    if (slice === undefined) break;
    const bytes = await slice.readBytes();
    slice.release();
    for (const batch of walkBatches(bytes)) {
      for (const record of decodeRecords(bytes, batch.position)) {
        records.push({ offset: Number(record.offset), key: record.key?.toString() ?? '', value: record.value?.toString() ?? null });
      }
      offset = batch.lastOffset + 1;
    }
  }
  return { records, end: offset };
}

function cleaner(dataDir: string, manager: () => LogManager, clock: ManualClock, dedupeBufferSize: number): LogCleaner {
  const logs = { dataDir, allLogs: () => manager().allLogs(), writeRecoveryCheckpoint: () => manager().writeRecoveryCheckpoint() };
  return new LogCleaner({ logs, config: { ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize }, logger: memoryLogger().logger, clock });
}

/** Checks what a reader sees against the history, given how far the last pass may have cleaned. */
function checkAgainstModel(read: Written[], history: readonly Written[], uncleanableFrom: number, tombstonesGone: boolean): void {
  const byOffset = new Map(history.map((record) => [record.offset, record]));
  for (const [index, record] of read.entries()) {
    expect(byOffset.get(record.offset), `offset ${record.offset}`).toEqual(record);
    if (index > 0) expect(record.offset).toBeGreaterThan(read[index - 1]!.offset);
  }
  const below = history.filter((record) => record.offset < uncleanableFrom);
  const latest = new Map<string, Written>();
  for (const record of below) latest.set(record.key, record);
  const expectedBelow = [...latest.values()].filter((record) => !(tombstonesGone && record.value === null)).sort((a, b) => a.offset - b.offset);
  expect(read.filter((record) => record.offset < uncleanableFrom)).toEqual(expectedBelow);
  expect(read.filter((record) => record.offset >= uncleanableFrom)).toEqual(history.filter((record) => record.offset >= uncleanableFrom));
}

describe('the log cleaner', () => {
  for (const seed of [1, 2, 3]) {
    it(`keeps each key's latest value at its offset through random writes, partial passes and a restart (seed ${seed})`, async () => {
      const random = seededRandom(seed);
      const directory = temporaryDirectory();
      const clock = new ManualClock();
      let { manager } = await openManager(directory, SETTINGS, clock);
      let log = await manager.getOrCreateLog('compacted', 0);
      // 60 keys in a map of at most 40 (24 bytes a slot at load factor 0.9 of 45 slots): passes are partial.
      let logCleaner = cleaner(directory, () => manager, clock, 45 * 24);
      const history: Written[] = [];
      let sequence = 0;
      let cleanedTo = 0;
      for (let round = 0; round < 40; round += 1) {
        const count = 1 + Math.floor(random() * 5);
        const producerId = random() < 0.5 ? 7n : -1n;
        const records = Array.from({ length: count }, (_, index) => {
          const key = `k${Math.floor(random() * 60)}`;
          const value = random() < 0.1 ? null : `v${round}-${index}`;
          return { key, value };
        });
        const codec = compressionName(Math.floor(random() * 5));
        const bytes = encodeRecordBatch(
          records.map((record) => ({ key: Buffer.from(record.key), value: record.value === null ? null : Buffer.from(record.value), timestamp: clock.now() })),
          { compression: codec, ...(producerId >= 0n ? { producerId, producerEpoch: 0, baseSequence: sequence } : {}) },
        );
        if (producerId >= 0n) sequence += count;
        const appended = await log.append(bytes);
        await log.flush();
        records.forEach((record, index) => history.push({ offset: appended.baseOffset + index, ...record }));
        clock.advance(1000);
        if (random() < 0.3) {
          const view = log.cleanableView(clock.now());
          const cleaned = await logCleaner.cleanLogNow(log);
          if (cleaned !== undefined) cleanedTo = view.firstUncleanable;
          const { records: read, end } = await readAll(log);
          expect(end).toBe(log.logEndOffset);
          // Partial passes leave some of the range below the tail dirty: check only what every pass must keep.
          for (const record of read) expect(history.find((written) => written.offset === record.offset)).toEqual(record);
          const latestOf = new Map<string, Written>();
          for (const record of history) latestOf.set(record.key, record);
          for (const latest of latestOf.values()) expect(read, `latest of ${latest.key}`).toContainEqual(latest);
        }
      }
      // Cleaning to a fixed point: every range below the tail cleaned in full.
      for (let pass = 0; pass < 20 && (await logCleaner.cleanLogNow(log)) !== undefined; pass += 1);
      const tail = log.cleanableView(clock.now()).firstUncleanable;
      expect(tail).toBeGreaterThanOrEqual(cleanedTo);
      checkAgainstModel((await readAll(log)).records, history, tail, false);

      // A restart reads the same, and a producer's retry of its last batch is still a duplicate.
      await logCleaner.stop();
      await manager.close();
      ({ manager } = await openManager(directory, SETTINGS, clock));
      log = await manager.getOrCreateLog('compacted', 0);
      logCleaner = cleaner(directory, () => manager, clock, 45 * 24);
      checkAgainstModel((await readAll(log)).records, history, tail, false);
      // The restarted cleaner's first look: nothing dirty, and the tombstones not yet due.
      expect(await logCleaner.cleanOnce()).toBeUndefined();

      // Past delete.retention.ms, a pass drops the tombstones its earlier passes stamped.
      clock.advance(DAY + 1);
      for (let pass = 0; pass < 20 && (await logCleaner.cleanLogNow(log)) !== undefined; pass += 1);
      checkAgainstModel((await readAll(log)).records, history, tail, true);
      await logCleaner.stop();
      await manager.close();
    });
  }

  it('keeps an idempotent producer deduplicated after its records were cleaned away', async () => {
    const directory = temporaryDirectory();
    const clock = new ManualClock();
    const { manager } = await openManager(directory, SETTINGS, clock);
    const log = await manager.getOrCreateLog('compacted', 0);
    const logCleaner = cleaner(directory, () => manager, clock, 1 << 20);
    const producerBatch = (sequence: number, key: string) =>
      encodeRecordBatch([{ key: Buffer.from(key), value: Buffer.from(`s${sequence}`), timestamp: clock.now() }], { producerId: 9n, producerEpoch: 0, baseSequence: sequence });
    const first = await log.append(producerBatch(0, 'a'));
    // Others overwrite key "a" and fill segments so the producer's batch is in a cleanable one.
    for (let index = 0; index < 40; index += 1) await log.append(encodeRecordBatch([{ key: Buffer.from('a'), value: Buffer.alloc(100, 1), timestamp: clock.now() }]));
    await log.flush();
    expect(await logCleaner.cleanLogNow(log)).toBeDefined();
    const { records } = await readAll(log);
    expect(records.some((record) => record.offset === first.baseOffset)).toBe(false);
    const retry = await log.append(producerBatch(0, 'a'));
    expect(retry).toMatchObject({ duplicate: true, baseOffset: first.baseOffset });
    await logCleaner.stop();
    await manager.close();
  });

  it('leaves logs with cleanup.policy=delete alone, and logs without enough dirt below the ratio', async () => {
    const directory = temporaryDirectory();
    const clock = new ManualClock();
    const { manager } = await openManager(directory, { ...SETTINGS, cleanupPolicy: 'delete' }, clock);
    const log = await manager.getOrCreateLog('plain', 0);
    for (let index = 0; index < 30; index += 1) await log.append(encodeRecordBatch([{ key: Buffer.from('a'), value: Buffer.alloc(100, 1), timestamp: clock.now() }]));
    await log.flush();
    const logCleaner = cleaner(directory, () => manager, clock, 1 << 20);
    expect(await logCleaner.cleanOnce()).toBeUndefined();
    expect((await readAll(log)).records).toHaveLength(30);
    await manager.close();
  });
});
