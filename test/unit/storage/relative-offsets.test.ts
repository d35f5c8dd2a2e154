/**
 * Offsets within a segment always fit its index (Int32 relative to the segment's base). The log
 * rolls a new segment before an append would pass 2^31−1 (Kafka's canConvertToRelativeOffset),
 * and recovery cuts a segment at a batch that reaches past it instead of wrapping.
 *
 * Claiming 2^31 offsets takes a batch whose LastOffsetDelta is that large; the segment files here
 * are written by hand (valid CRCs), as an older broker or a damaged disk would leave them.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LAST_OFFSET_DELTA_OFFSET, RECORDS_COUNT_OFFSET, setBaseOffset, writeBatchCrc } from '../../../src/protocol/record-batch.js';
import { decodeRecords } from '../../../src/protocol/records.js';
import { verifyBatches } from '../../../src/storage/batch-scan.js';
import { CLEAN_SHUTDOWN_MARKER } from '../../../src/storage/log-manager.js';
import { segmentFileName } from '../../../src/storage/segment.js';
import { MAX_RELATIVE_OFFSET } from '../../../src/storage/sparse-index.js';
import { batch, openManager, temporaryDirectory, walkBatches } from './helpers.js';

/** One record that claims `offsets` offsets (LastOffsetDelta = offsets − 1), at `baseOffset`. */
function claimingBatch(baseOffset: number, offsets: number, tag: string): Buffer {
  const bytes = batch(1, { tag });
  bytes.writeInt32BE(offsets - 1, LAST_OFFSET_DELTA_OFFSET);
  bytes.writeInt32BE(offsets, RECORDS_COUNT_OFFSET);
  setBaseOffset(bytes, BigInt(baseOffset));
  writeBatchCrc(bytes);
  return bytes;
}

function placed(baseOffset: number, tag: string, count = 1): Buffer {
  const bytes = batch(count, { tag });
  setBaseOffset(bytes, BigInt(baseOffset));
  return bytes;
}

function writeSegment(dataDir: string, topic: string, base: number, batches: Buffer[]): string {
  const folder = join(dataDir, `${topic}-0`);
  mkdirSync(folder, { recursive: true });
  const path = join(folder, segmentFileName(base, '.log'));
  writeFileSync(path, Buffer.concat(batches));
  return path;
}

describe('relative offsets fit the segment index', () => {
  it('rolls a new segment before an append would take a relative offset past 2^31−1', async () => {
    const directory = temporaryDirectory();
    // The active segment already reaches relative offset 2^31 − 10.
    writeSegment(directory, 'roll', 0, [claimingBatch(0, MAX_RELATIVE_OFFSET - 8, 'huge')]);
    writeFileSync(join(directory, CLEAN_SHUTDOWN_MARKER), '');
    const { manager } = await openManager(directory, { flushMessages: 1_000_000 });
    const log = manager.getLog('roll', 0)!;
    const end = MAX_RELATIVE_OFFSET - 8;
    expect(log.logEndOffset).toBe(end);
    // 8 more offsets still fit (relative 2^31−9 … 2^31−2): no roll.
    await log.append(batch(8, { tag: 'fits' }));
    expect(log.segmentBaseOffsets).toEqual([0]);
    // 2 more would reach 2^31−1 and 2^31: the second does not fit, so the segment rolls first.
    const result = await log.append(batch(2, { tag: 'next' }));
    expect(result.baseOffset).toBe(end + 8);
    expect(log.segmentBaseOffsets).toEqual([0, end + 8]);
    await log.flush();

    const { slice } = await log.read(end + 8, 1 << 20);
    expect(slice?.firstBatchOffset).toBe(end + 8);
    const bytes = await slice!.readBytes();
    slice!.release();
    expect(decodeRecords(bytes).map((r) => `${r.offset}:${r.value?.toString()}`)).toEqual([`${end + 8}:next-0`, `${end + 9}:next-1`]);
    await manager.close();

    // A clean restart reads both segments back and finds the same batches.
    const again = await openManager(directory);
    const reopened = again.manager.getLog('roll', 0)!;
    expect(reopened.segmentBaseOffsets).toEqual([0, end + 8]);
    expect(reopened.logEndOffset).toBe(end + 10);
    const first = await reopened.read(end, 1 << 20);
    expect(first.slice?.firstBatchOffset).toBe(end);
    first.slice?.release();
    await again.manager.close();
  });

  for (const shutdown of ['unclean', 'clean'] as const) {
    it(`after an ${shutdown} stop, truncates a segment at the first batch whose offsets overflow its index`, async () => {
      const directory = temporaryDirectory();
      // Offsets 0 and 1, then a batch claiming offsets 2 … 2^31 (relative 2^31 does not fit), then more.
      const path = writeSegment(directory, 'wrap', 0, [
        placed(0, 'kept'),
        placed(1, 'kept'),
        claimingBatch(2, MAX_RELATIVE_OFFSET, 'overflow'),
        placed(MAX_RELATIVE_OFFSET + 2, 'lost'),
      ]);
      if (shutdown === 'clean') writeFileSync(join(directory, CLEAN_SHUTDOWN_MARKER), '');
      const { manager, lines } = await openManager(directory, { flushMessages: 1_000_000 });
      const log = manager.getLog('wrap', 0)!;
      expect(manager.offlineLogs()).toEqual([]);
      expect(log.logEndOffset).toBe(2);
      expect(walkBatches(readFileSync(path)).map((b) => b.baseOffset)).toEqual([0, 1]);
      // Recovery checks every record, so the batch is refused for claiming 2^31−1 records it does
      // not hold; the relative-offset guard behind that check would refuse it too.
      expect(lines.some((line) => typeof line.reason === 'string' && line.reason.includes(`declares ${MAX_RELATIVE_OFFSET} records`))).toBe(true);
      // The log goes on from offset 2, and a read at 0 answers from 0 (it never skips ahead).
      expect((await log.append(batch(1, { tag: 'new' }))).baseOffset).toBe(2);
      await log.flush();
      const { slice } = await log.read(0, 1 << 20);
      const bytes = await slice!.readBytes();
      slice!.release();
      expect(walkBatches(bytes).map((b) => b.baseOffset)).toEqual([0, 1, 2]);
      expect(readdirSync(join(directory, 'wrap-0')).filter((f) => f.endsWith('.log'))).toEqual([segmentFileName(0, '.log')]);
      await manager.close();
    });
  }

  it('refuses, in the recovery scan, a valid batch whose offsets lie past 2^31−1 from the segment base', async () => {
    const directory = temporaryDirectory();
    const far = MAX_RELATIVE_OFFSET + 5;
    const path = writeSegment(directory, 'far', 0, [placed(far, 'far')]);
    const fd = openSync(path, 'r');
    try {
      const scan = await verifyBatches(fd, 0, fstatSync(fd).size, far, 1 << 20, () => {}, 0);
      expect(scan.batches).toBe(0);
      expect(scan.damage?.reason).toContain('2^31');
    } finally {
      closeSync(fd);
    }
  });
});
