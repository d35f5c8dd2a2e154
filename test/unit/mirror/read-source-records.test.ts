/**
 * The audit's recount of a source range (readSourceRecords) over a fake compacted partition: reads
 * step by batches, so a batch whose last records compaction removed, or that holds none at all (a
 * producer's last batch kept as an empty header), does not end the range early.
 */
import { describe, expect, it } from 'vitest';
import type { FetchResult } from '../../../src/client/simple-consumer.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { readSourceRecords } from '../../../src/mirror/source-mirror.js';

/** Batches of a compacted partition as [base, last offset, kept offsets]; a fetch returns the one batch holding its offset. */
const batches: readonly (readonly [number, number, readonly number[]])[] = [
  [0, 4, [0, 2]], // 3 and 4 removed: the batch ends in removed records
  [5, 7, []], // every record removed, the header kept
  [8, 9, [8, 9]],
  [10, 14, [11]],
  [15, 19, [15, 16, 17, 18, 19]],
];
const HIGH_WATERMARK = 20n;

const record = (offset: number): KafkaRecord => ({ offset: BigInt(offset), timestamp: offset, key: Buffer.from('k'), value: null, headers: [] });

const fakeConsumer = {
  fetch(_topic: string, _partition: number, offset: bigint): Promise<FetchResult> {
    const batch = batches.find(([, last]) => BigInt(last) >= offset);
    if (batch === undefined) return Promise.resolve({ records: [], nextOffset: offset, highWatermark: HIGH_WATERMARK, logStartOffset: 0n });
    const [, last, kept] = batch;
    return Promise.resolve({ records: kept.filter((at) => BigInt(at) >= offset).map(record), nextOffset: BigInt(last) + 1n, highWatermark: HIGH_WATERMARK, logStartOffset: 0n });
  },
};

describe('readSourceRecords', () => {
  it('reads every kept record of the range over batches that end in removed records or hold none', async () => {
    expect((await readSourceRecords(fakeConsumer, 't', 0, 0n, 20n)).map((r) => Number(r.offset))).toEqual([0, 2, 8, 9, 11, 15, 16, 17, 18, 19]);
    expect((await readSourceRecords(fakeConsumer, 't', 0, 3n, 16n)).map((r) => Number(r.offset))).toEqual([8, 9, 11, 15]);
    expect((await readSourceRecords(fakeConsumer, 't', 0, 12n, 30n)).map((r) => Number(r.offset))).toEqual([15, 16, 17, 18, 19]);
  });
});
