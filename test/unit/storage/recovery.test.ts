/**
 * Recovery after an unclean stop: a "crash" is a second LogManager opened on the data dir while
 * the first was never closed (no clean-shutdown marker), after the files were damaged by hand.
 */
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeBatchCrc, readBatchHeader } from '../../../src/protocol/record-batch.js';
import type { LogManager } from '../../../src/storage/log-manager.js';
import { batch, openManager, seededRandom, temporaryDirectory, walkBatches, type StoredBatch } from './helpers.js';

const TOPIC = 'clicks';
const SETTINGS = { segmentBytes: 3_000, indexIntervalBytes: 256, flushMessages: 1_000_000 };

interface SegmentFile {
  readonly base: number;
  readonly path: string;
  readonly batches: StoredBatch[];
}

function segmentFiles(directory: string): SegmentFile[] {
  const folder = join(directory, `${TOPIC}-0`);
  return readdirSync(folder)
    .filter((file) => file.endsWith('.log'))
    .sort()
    .map((file) => ({ base: Number(file.slice(0, 20)), path: join(folder, file), batches: walkBatches(readFileSync(join(folder, file))) }));
}

/** Every stored batch passes its CRC and the offsets run from the first segment's base without a gap. */
function expectValidLog(directory: string): number {
  let next: number | undefined;
  for (const segment of segmentFiles(directory)) {
    const bytes = readFileSync(segment.path);
    let end = 0;
    for (const stored of segment.batches) {
      const header = readBatchHeader(bytes, stored.position);
      expect(header.magic).toBe(2);
      expect(computeBatchCrc(bytes, stored.position, stored.size)).toBe(header.crc);
      if (next !== undefined) expect(stored.baseOffset).toBe(next);
      next = stored.lastOffset + 1;
      end = stored.position + stored.size;
    }
    expect(end).toBe(bytes.length);
    if (segment.batches.length === 0) next = next ?? segment.base;
  }
  return next ?? 0;
}

/** Fills a log: `flushed` batches flushed and checkpointed, then `unflushed` more, then a "crash". */
async function crashedLog(directory: string, flushed: number, unflushed: number, seed = 1): Promise<{ manager: LogManager; recoveryPoint: number }> {
  const random = seededRandom(seed);
  const { manager } = await openManager(directory, SETTINGS);
  const log = await manager.getOrCreateLog(TOPIC, 0);
  for (let i = 0; i < flushed; i += 1) await log.append(batch(1 + Math.floor(random() * 4), { valueBytes: Math.floor(random() * 80) }));
  await log.flush();
  manager.writeRecoveryCheckpoint();
  for (let i = 0; i < unflushed; i += 1) await log.append(batch(1 + Math.floor(random() * 4), { valueBytes: Math.floor(random() * 80) }));
  // The process dies here: no flush, no close, no marker. The OS keeps what was written.
  return { manager, recoveryPoint: log.recoveryPoint };
}

describe('recovery after an unclean stop', () => {
  it('truncates at the first damaged byte and keeps every valid batch before it (12 random tail corruptions)', async () => {
    for (let trial = 0; trial < 12; trial += 1) {
      const random = seededRandom(1_000 + trial);
      const directory = temporaryDirectory();
      const { recoveryPoint } = await crashedLog(directory, 40, 60, trial);
      const before = segmentFiles(directory);
      const all = before.flatMap((segment) => segment.batches.map((stored) => ({ ...stored, segment })));
      const endOffset = (all[all.length - 1]?.lastOffset ?? -1) + 1;

      // Damage one byte range in the tail: a segment at or after the recovery point's.
      const tail = before.filter((segment, index) => (before[index + 1]?.base ?? Infinity) > recoveryPoint);
      const target = tail[Math.floor(random() * tail.length)]!;
      const size = readFileSync(target.path).length;
      const kind = ['flip', 'truncate', 'garbage'][trial % 3]!;
      let damageAt: number;
      if (kind === 'garbage') {
        damageAt = size;
        appendFileSync(target.path, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xde, 0xad]));
      } else {
        damageAt = Math.floor(random() * size);
        // PartitionLeaderEpoch (batch bytes 12–15) is outside the CRC by Kafka's design: damage there
        // is undetectable, so move such a flip to the epoch's neighbour, the magic byte.
        const inEpoch = target.batches.find((b) => damageAt - b.position >= 12 && damageAt - b.position < 16);
        if (kind === 'flip' && inEpoch !== undefined) damageAt = inEpoch.position + 16;
        if (kind === 'truncate') truncateSync(target.path, damageAt);
        else {
          const bytes = readFileSync(target.path);
          bytes[damageAt] = (bytes[damageAt] ?? 0) ^ (1 + Math.floor(random() * 255));
          writeFileSync(target.path, bytes);
        }
      }
      // Batches of the damaged segment that end before the damage, and every earlier segment's, must survive.
      const damagedBatch = target.batches.find((b) => b.position + b.size > damageAt);
      const bytesFlippedInBaseOffset = kind === 'flip' && damagedBatch !== undefined && damageAt - damagedBatch.position < 8;
      const expectedEnd = damagedBatch?.baseOffset ?? (target === before[before.length - 1] ? endOffset : target.batches[target.batches.length - 1]!.lastOffset + 1);

      const { manager, lines } = await openManager(directory, SETTINGS);
      const log = manager.getLog(TOPIC, 0)!;
      expect(manager.recoveredFromUncleanShutdown).toBe(true);
      const validEnd = expectValidLog(directory);
      expect(log.logEndOffset).toBe(validEnd);
      expect(log.logEndOffset, `trial ${trial} (${kind} at ${damageAt} in segment ${target.base})`).toBe(expectedEnd);
      expect(log.highWatermark).toBe(log.logEndOffset);
      expect(lines.some((line) => line['msg'] === 'recovery truncated the segment at the first invalid byte')).toBe(true);
      // A damaged base offset (not covered by the CRC) is caught by the sequence check.
      if (bytesFlippedInBaseOffset) expect(lines.some((line) => String(line['reason']).includes('expected'))).toBe(true);
      // The log goes on from where the valid data ends.
      expect((await log.append(batch(1))).baseOffset).toBe(expectedEnd);
      await manager.close();
    }
  });

  it('drops a torn last batch and appends after the last whole one', async () => {
    const directory = temporaryDirectory();
    await crashedLog(directory, 10, 5);
    const segments = segmentFiles(directory);
    const last = segments[segments.length - 1]!;
    const torn = last.batches[last.batches.length - 1]!;
    truncateSync(last.path, torn.position + Math.floor(torn.size / 2));

    const { manager } = await openManager(directory, SETTINGS);
    const log = manager.getLog(TOPIC, 0)!;
    expect(log.logEndOffset).toBe(torn.baseOffset);
    expect(expectValidLog(directory)).toBe(torn.baseOffset);
    const appended = await log.append(batch(2), { waitForFlush: true });
    expect(appended.baseOffset).toBe(torn.baseOffset);
    const { slice } = await log.read(torn.baseOffset, 1 << 20);
    expect(walkBatches(await slice!.readBytes()).map((b) => b.baseOffset)).toEqual([torn.baseOffset]);
    slice!.release();
    await manager.close();
  });

  it('treats a crash during recovery as unclean: the marker is consumed before recovery starts', async () => {
    const directory = temporaryDirectory();
    const first = await openManager(directory, SETTINGS);
    await (await first.manager.getOrCreateLog(TOPIC, 0)).append(batch(3));
    await first.manager.close();
    expect(existsSync(join(directory, '.clean-shutdown'))).toBe(true);

    const second = await openManager(directory, SETTINGS);
    expect(second.manager.recoveredFromUncleanShutdown).toBe(false);
    // "Crash" now, before a clean stop: the next start must recover.
    const third = await openManager(directory, SETTINGS);
    expect(third.manager.recoveredFromUncleanShutdown).toBe(true);
    expect(third.manager.getLog(TOPIC, 0)?.logEndOffset).toBe(3);
    await third.manager.close();
  });
});

describe('index rebuilds', () => {
  for (const damage of ['deleted', 'overwritten'] as const) {
    it(`rebuilds ${damage} index files after a clean stop, and lookups still agree with the data`, async () => {
      const directory = temporaryDirectory();
      const first = await openManager(directory, SETTINGS);
      const log = await first.manager.getOrCreateLog(TOPIC, 0);
      for (let i = 0; i < 120; i += 1) await log.append(batch(2, { timestamp: 50_000 + i * 10, valueBytes: 40 }));
      await first.manager.close();
      const folder = join(directory, `${TOPIC}-0`);
      const indexFiles = readdirSync(folder).filter((file) => file.endsWith('index'));
      expect(indexFiles.length).toBeGreaterThan(4);
      for (const file of indexFiles) {
        if (damage === 'deleted') rmSync(join(folder, file));
        else writeFileSync(join(folder, file), '  ');
      }

      const { manager, lines } = await openManager(directory, SETTINGS);
      const reopened = manager.getLog(TOPIC, 0)!;
      expect(lines.filter((line) => line['msg'] === 'index missing or corrupt; rebuilding it from the segment').length).toBeGreaterThan(0);
      expect(reopened.logEndOffset).toBe(240);
      for (const offset of [0, 1, 77, 150, 239]) {
        const { slice } = await reopened.read(offset, 1);
        const [found] = walkBatches(await slice!.readBytes());
        expect(found!.baseOffset).toBeLessThanOrEqual(offset);
        expect(found!.lastOffset).toBeGreaterThanOrEqual(offset);
        slice!.release();
      }
      expect(await reopened.offsetForTimestamp(BigInt(50_000 + 77 * 10))).toEqual({ offset: 154, timestamp: 50_770n });
      await manager.close();
      // The rebuilt files are back, each a whole number of entries.
      for (const file of readdirSync(folder).filter((name) => name.endsWith('.index'))) {
        expect(readFileSync(join(folder, file)).length % 8).toBe(0);
      }
    });
  }
});
