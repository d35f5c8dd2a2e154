import { describe, expect, it } from 'vitest';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { computeBatchCrc, readBatchHeader, setBaseOffset } from '../../../src/protocol/record-batch.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { ByteReader, varintSize, writeVarint } from '../../../src/protocol/varint.js';
import { KCAT_BATCH } from './kcat-batch.js';


function kafkaCodeOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof KafkaProtocolError) return error.code;
    throw error;
  }
  return 'NONE';
}

describe('RecordBatch v2 golden bytes', () => {
  it('reads the header of a real kcat batch', () => {
    expect(KCAT_BATCH.length).toBe(83);
    expect(readBatchHeader(KCAT_BATCH)).toEqual({
      baseOffset: 0n,
      sizeInBytes: 83,
      partitionLeaderEpoch: 0,
      magic: 2,
      crc: 0x9e1aa1d9,
      attributes: 0,
      lastOffsetDelta: 0,
      baseTimestamp: 0x01a227557d55n,
      maxTimestamp: 0x01a227557d55n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
      recordsCount: 1,
    });
    expect(computeBatchCrc(KCAT_BATCH, 0, 83)).toBe(0x9e1aa1d9);
  });

  it('decodes its record: key, value, timestamp and header', () => {
    const [record, ...rest] = decodeRecords(KCAT_BATCH);
    expect(rest).toEqual([]);
    expect(record?.offset).toBe(0n);
    expect(record?.timestamp).toBe(0x01a227557d55);
    expect(record?.key?.toString()).toBe('key1');
    expect(record?.value?.toString()).toBe('hello');
    expect(record?.headers.map((h) => [h.key, h.value?.toString()])).toEqual([['hk', 'hv']]);
  });

  it('encodes the same record to exactly the same bytes', () => {
    const encoded = encodeRecordBatch(
      [{ key: Buffer.from('key1'), value: Buffer.from('hello'), headers: [{ key: 'hk', value: Buffer.from('hv') }], timestamp: 0x01a227557d55 }],
      { partitionLeaderEpoch: 0 },
    );
    expect(encoded.toString('hex')).toBe(KCAT_BATCH.toString('hex'));
  });

  it('keeps the CRC valid when the base offset is rewritten', () => {
    const copy = Buffer.from(KCAT_BATCH);
    setBaseOffset(copy, 123_456n);
    expect(readBatchHeader(copy).baseOffset).toBe(123_456n);
    expect(computeBatchCrc(copy, 0, copy.length)).toBe(readBatchHeader(copy).crc);
  });

  it('round-trips null keys and values, several headers and timestamps before the base', () => {
    const batch = encodeRecordBatch(
      [
        { key: null, value: null, timestamp: 5_000 },
        { key: Buffer.alloc(0), value: Buffer.alloc(300, 7), headers: [{ key: 'a', value: null }, { key: 'ü', value: Buffer.from([1]) }], timestamp: 4_000 },
      ],
      { baseTimestamp: 5_000 },
    );
    const records = decodeRecords(batch);
    expect(records.map((r) => [Number(r.offset), r.timestamp, r.key?.length ?? null, r.value?.length ?? null])).toEqual([
      [0, 5_000, null, null],
      [1, 4_000, 0, 300],
    ]);
    expect(records[1]?.headers.map((h) => [h.key, h.value === null ? null : [...h.value]])).toEqual([['a', null], ['ü', [1]]]);
    expect(readBatchHeader(batch).maxTimestamp).toBe(5_000n);
  });
});

describe('decodeRecords on hostile bytes', () => {
  it('fails with CORRUPT_MESSAGE, never another exception, on every truncation and every byte flip', () => {
    const batch = encodeRecordBatch([
      { key: Buffer.from('k'), value: Buffer.from('value one'), headers: [{ key: 'h', value: Buffer.from('x') }], timestamp: 10 },
      { key: null, value: Buffer.from('value two'), timestamp: 11 },
    ]);
    for (let position = 61; position < batch.length; position += 1) {
      for (const replacement of [0x00, 0x7f, 0x80, 0xff]) {
        const damaged = Buffer.from(batch);
        damaged[position] = replacement;
        const code = kafkaCodeOf(() => decodeRecords(damaged));
        expect(['NONE', 'CORRUPT_MESSAGE']).toContain(code);
      }
    }
    const truncated = Buffer.from(batch.subarray(0, batch.length - 3));
    truncated.writeInt32BE(truncated.length - 12, 8);
    expect(kafkaCodeOf(() => decodeRecords(truncated))).toBe('CORRUPT_MESSAGE');
  });
});

describe('varints', () => {
  it('round-trips zig-zag varints at the edges of each byte length', () => {
    const values = [0, -1, 1, 63, -64, 64, -65, 8191, -8192, 8192, 2 ** 20, -(2 ** 20), 2 ** 31 - 1, -(2 ** 31)];
    const bytes = Buffer.alloc(values.reduce((sum, v) => sum + varintSize(v), 0));
    let position = 0;
    for (const value of values) position = writeVarint(bytes, position, value);
    expect(position).toBe(bytes.length);
    const reader = new ByteReader(bytes, 0, bytes.length);
    expect(values.map(() => reader.varint('test'))).toEqual(values);
    expect(varintSize(63)).toBe(1);
    expect(varintSize(64)).toBe(2);
  });
});
