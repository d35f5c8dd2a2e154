/**
 * Moving a log's start (DeleteRecords; a follower taking its leader's start):
 * `PartitionLog.incrementLogStartOffset`. The start only grows and never passes the high
 * watermark; reads below it are OFFSET_OUT_OF_RANGE; segments it covers go at once; producers and
 * leader epochs wholly before it are forgotten; it is checkpointed before anything is deleted and
 * survives clean and unclean restarts.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { readCheckpoint } from '../../../src/storage/checkpoint.js';
import { LOG_START_CHECKPOINT } from '../../../src/storage/log-manager.js';
import { batch, openManager, temporaryDirectory, walkBatches } from './helpers.js';

const TOPIC = 'trimmed';

function codeOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof TributaryError) return error.code;
    throw error;
  }
  return 'NONE';
}

async function readCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof KafkaProtocolError) return error.code;
    throw error;
  }
  return 'NONE';
}

function segmentFiles(directory: string): number[] {
  return readdirSync(join(directory, `${TOPIC}-0`))
    .filter((file) => file.endsWith('.log'))
    .map((file) => Number(file.slice(0, 20)))
    .sort((a, b) => a - b);
}

/** A log of 30 batches of 2 records (offsets 0–59), rolled every ~4 batches, all flushed. */
async function filledLog(directory: string, settings: Record<string, number> = {}) {
  const opened = await openManager(directory, { segmentBytes: 500, ...settings });
  const log = await opened.manager.getOrCreateLog(TOPIC, 0);
  for (let i = 0; i < 30; i += 1) await log.append(batch(2, { tag: `b${i}`, valueBytes: 40 }));
  await log.flush();
  return { ...opened, log };
}

describe('incrementLogStartOffset', () => {
  it('only raises the start, never past the high watermark; reads below it are OFFSET_OUT_OF_RANGE', async () => {
    const directory = temporaryDirectory();
    const { manager, log } = await filledLog(directory, { flushMessages: 1_000_000 });
    await log.append(batch(2, { tag: 'unflushed' }));
    expect(log.highWatermark).toBe(60);
    expect(log.logEndOffset).toBe(62);

    expect(codeOf(() => log.incrementLogStartOffset(61))).toBe('OFFSET_OUT_OF_RANGE');
    expect(codeOf(() => log.incrementLogStartOffset(-1))).toBe('OFFSET_INVALID');
    expect(log.incrementLogStartOffset(0)).toBe(false);
    // Inside the batch of offsets 6–7: that batch stays readable whole from 7.
    expect(log.incrementLogStartOffset(7)).toBe(true);
    expect(log.logStartOffset).toBe(7);
    expect(log.incrementLogStartOffset(5)).toBe(false);
    expect(log.incrementLogStartOffset(7)).toBe(false);
    expect(log.logStartOffset).toBe(7);

    expect(await readCode(log.read(6, 1_000))).toBe('OFFSET_OUT_OF_RANGE');
    const { slice, logStartOffset } = await log.read(7, 1_000);
    expect(logStartOffset).toBe(7);
    expect(walkBatches(await slice!.readBytes())[0]?.baseOffset).toBe(6);
    slice!.release();

    // Up to the high watermark (what DeleteRecords −1 asks for): nothing left to read below it.
    expect(log.incrementLogStartOffset(60)).toBe(true);
    expect((await log.read(60, 1_000)).slice).toBeUndefined();
    await log.flush();
    expect(log.logEndOffset).toBe(62);
    await manager.close();
  });

  it('deletes the segments it covers at once, never the active one, after checkpointing the new start', async () => {
    const directory = temporaryDirectory();
    const { manager, log } = await filledLog(directory);
    const bases = [...log.segmentBaseOffsets];
    expect(bases.length).toBeGreaterThan(4);
    const third = bases[2]!;

    // Below the second segment's base: nothing can go yet.
    expect(log.incrementLogStartOffset(bases[1]! - 1)).toBe(true);
    expect(segmentFiles(directory)).toEqual(bases);
    // At the third segment's base: the first two go.
    expect(log.incrementLogStartOffset(third)).toBe(true);
    expect(log.segmentBaseOffsets).toEqual(bases.slice(2));
    expect(segmentFiles(directory)).toEqual(bases.slice(2));
    expect(existsSync(join(directory, `${TOPIC}-0`, `${String(bases[0]).padStart(20, '0')}.index`))).toBe(false);
    expect(readCheckpoint(join(directory, LOG_START_CHECKPOINT)).get(`${TOPIC} 0`)).toBe(third);

    // Everything: only the active segment is left, holding records no one can read.
    expect(log.incrementLogStartOffset(60)).toBe(true);
    expect(log.segmentBaseOffsets).toEqual([bases.at(-1)]);
    expect(segmentFiles(directory)).toEqual([bases.at(-1)]);
    await log.append(batch(1, { tag: 'after' }));
    await log.flush();
    expect(log.logEndOffset).toBe(61);
    await manager.close();
  });

  it('keeps a moved start across a clean restart and an unclean one', async () => {
    const directory = temporaryDirectory();
    const first = await filledLog(directory);
    first.log.incrementLogStartOffset(33);
    await first.manager.close();

    const clean = await openManager(directory, { segmentBytes: 500 });
    const reopened = clean.manager.getLog(TOPIC, 0)!;
    expect([reopened.logStartOffset, reopened.logEndOffset]).toEqual([33, 60]);
    expect(await readCode(reopened.read(32, 1_000))).toBe('OFFSET_OUT_OF_RANGE');
    reopened.incrementLogStartOffset(41);
    // The process dies here: no close, no clean-shutdown marker.

    const unclean = await openManager(directory, { segmentBytes: 500 });
    const recovered = unclean.manager.getLog(TOPIC, 0)!;
    expect([recovered.logStartOffset, recovered.logEndOffset]).toEqual([41, 60]);
    expect(recovered.segmentBaseOffsets[0]).toBeLessThanOrEqual(41);
    expect(recovered.segmentBaseOffsets[1] ?? Infinity).toBeGreaterThan(41);
    await unclean.manager.close();
  });

  it('changes nothing when the new start cannot be checkpointed', async () => {
    const directory = temporaryDirectory();
    const { manager, log } = await filledLog(directory);
    const bases = [...log.segmentBaseOffsets];
    const write = vi.spyOn(manager, 'writeLogStartCheckpoint').mockImplementation(() => {
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    });
    let thrown: unknown;
    try {
      log.incrementLogStartOffset(40);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(KafkaProtocolError);
    expect((thrown as KafkaProtocolError).code).toBe('KAFKA_STORAGE_ERROR');
    expect((thrown as KafkaProtocolError).retriable).toBe(true);
    expect(log.logStartOffset).toBe(0);
    expect(segmentFiles(directory)).toEqual(bases);
    write.mockRestore();
    expect(log.incrementLogStartOffset(40)).toBe(true);
    await manager.close();
  });

  it('forgets producers whose batches are all below the start, and leader epochs before it', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory);
    const log = await manager.getOrCreateLog(TOPIC, 0);
    const produce = (producerId: bigint, baseSequence: number, leaderEpoch: number) =>
      log.append(encodeRecordBatch([{ value: Buffer.from(`p${producerId}-${baseSequence}`), timestamp: 1_700_000_000_000 }], { producerId, producerEpoch: 0, baseSequence }), { leaderEpoch });
    await produce(1n, 0, 1); // offset 0
    await produce(2n, 0, 1); // 1
    await produce(1n, 1, 2); // 2
    await produce(2n, 1, 3); // 3
    await log.flush();
    expect(log.leaderEpochCache.entries().map((entry) => [entry.epoch, entry.startOffset])).toEqual([[1, 0], [2, 2], [3, 3]]);

    log.incrementLogStartOffset(3);
    expect(log.producerStateSnapshot().map((entry) => entry.producerId)).toEqual([2n]);
    expect(log.leaderEpochCache.entries().map((entry) => [entry.epoch, entry.startOffset])).toEqual([[3, 3]]);
    // Producer 1 is unknown now: any sequence is accepted (Kafka since KIP-360).
    expect((await produce(1n, 7, 3)).baseOffset).toBe(4);
    // Producer 2 is still known: a gap in its sequence is refused.
    expect(await readCode(produce(2n, 5, 3))).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    await manager.close();
  });
});
