import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { validateProducerBatch, validateStoredBatch, type BatchRules } from '../../../src/protocol/batch-validation.js';
import { compress, decompress } from '../../../src/protocol/compression.js';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_LENGTH_OFFSET,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAX_TIMESTAMP_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT_OFFSET,
  computeBatchCrc,
  readBatchHeader,
  setBaseOffset,
  writeBatchCrc,
  type CompressionName,
} from '../../../src/protocol/record-batch.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { KCAT_BATCH, KCAT_TIMESTAMP } from './kcat-batch.js';

const NOW = 1_800_000_000_000;
const RULES: BatchRules = {
  maxBatchBytes: 1_048_588,
  allowZstd: true,
  timestampType: 'CreateTime',
  timestampBeforeMaxMs: Infinity,
  timestampAfterMaxMs: 3_600_000,
  now: NOW,
};
const CODECS: readonly CompressionName[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

/** The Kafka error a validation throws ('NONE' if it accepts), checking the bytes stay as they were on a refusal. */
function refusal(batch: Buffer, rules: BatchRules = RULES): { code: string; error: KafkaProtocolError | undefined } {
  const before = Buffer.from(batch);
  try {
    validateProducerBatch(batch, rules);
  } catch (error) {
    if (!(error instanceof KafkaProtocolError)) throw error;
    expect(batch.equals(before), 'a refused batch is left unchanged').toBe(true);
    return { code: error.code, error };
  }
  return { code: 'NONE', error: undefined };
}

const codeOf = (batch: Buffer, rules: BatchRules = RULES): string => refusal(batch, rules).code;

/** The batch inside one of the Produce v3 frames (hex with the size prefix): its records field. */
function batchOfFrame(hex: string): Buffer {
  const frame = Buffer.from(hex, 'hex');
  // The records field is the last field of the frame: an int32 size then that many bytes.
  for (let at = frame.length - RECORD_BATCH_OVERHEAD - 4; at >= 0; at -= 1) {
    const size = frame.readInt32BE(at);
    if (size === frame.length - at - 4 && frame.readInt32BE(at + 4 + BATCH_LENGTH_OFFSET) === size - LOG_OVERHEAD) return frame.subarray(at + 4);
  }
  throw new Error('no batch in frame');
}

/** Rebuilds a batch around new (uncompressed) records bytes, keeping its header fields. */
function withRecords(batch: Buffer, records: Buffer, codec: CompressionName = 'none'): Buffer {
  const section = codec === 'none' ? records : compress(codec, records);
  const rebuilt = Buffer.concat([batch.subarray(0, RECORD_BATCH_OVERHEAD), section]);
  rebuilt.writeInt32BE(rebuilt.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  writeBatchCrc(rebuilt);
  return rebuilt;
}

function recordsOf(batch: Buffer): Buffer {
  const codec = batch.readInt16BE(ATTRIBUTES_OFFSET) & 7;
  const section = batch.subarray(RECORD_BATCH_OVERHEAD);
  return codec === 0 ? Buffer.from(section) : decompress(codec, section);
}

describe('validateProducerBatch: the header rules', () => {
  const valid = (): Buffer => Buffer.from(KCAT_BATCH);

  it('accepts a real kcat batch, reporting its count and exact max timestamp, and leaves its bytes as sent', () => {
    const batch = valid();
    expect(validateProducerBatch(batch, RULES)).toMatchObject({ recordCount: 1, maxTimestamp: BigInt(KCAT_TIMESTAMP), logAppendTime: -1n });
    expect(batch.equals(KCAT_BATCH)).toBe(true);
  });

  it('refuses every truncation as CORRUPT_MESSAGE and every flipped CRC-covered byte as CORRUPT_MESSAGE', () => {
    for (let length = 0; length < KCAT_BATCH.length; length += 1) expect(codeOf(Buffer.from(KCAT_BATCH.subarray(0, length)))).toBe('CORRUPT_MESSAGE');
    for (let position = ATTRIBUTES_OFFSET; position < KCAT_BATCH.length; position += 1) {
      const damaged = valid();
      damaged[position] = (damaged[position] ?? 0) ^ 0xff;
      expect(codeOf(damaged)).toBe('CORRUPT_MESSAGE');
    }
  });

  it('answers each invalid header with the code Kafka uses', () => {
    const magic1 = valid();
    magic1[16] = 1;
    expect(codeOf(magic1)).toBe('INVALID_RECORD');
    expect(codeOf(Buffer.concat([valid(), valid()]))).toBe('INVALID_RECORD');
    expect(codeOf(valid(), { ...RULES, maxBatchBytes: 82 })).toBe('MESSAGE_TOO_LARGE');
    const offsetSet = valid();
    setBaseOffset(offsetSet, 7n);
    expect(codeOf(offsetSet)).toBe('INVALID_RECORD');
    const badCount = valid();
    badCount.writeInt32BE(2, RECORDS_COUNT_OFFSET);
    writeBatchCrc(badCount);
    expect(codeOf(badCount)).toBe('INVALID_RECORD');
    const flags = (bits: number): Buffer => {
      const batch = valid();
      batch.writeInt16BE(bits, ATTRIBUTES_OFFSET);
      writeBatchCrc(batch);
      return batch;
    };
    expect(codeOf(flags(0x20))).toBe('INVALID_RECORD'); // control
    expect(codeOf(flags(0x10))).toBe('INVALID_TXN_STATE'); // transactional
    for (const codec of [5, 6, 7]) expect(codeOf(flags(codec))).toBe('UNSUPPORTED_COMPRESSION_TYPE');
    const withoutSequence = valid();
    withoutSequence.writeBigInt64BE(42n, 43);
    writeBatchCrc(withoutSequence);
    expect(codeOf(withoutSequence)).toBe('INVALID_RECORD');
  });

  it('refuses a batch that claims LogAppendTime with INVALID_TIMESTAMP naming its records', () => {
    const batch = valid();
    batch.writeInt16BE(0x08, ATTRIBUTES_OFFSET);
    writeBatchCrc(batch);
    const { code, error } = refusal(batch);
    expect(code).toBe('INVALID_TIMESTAMP');
    expect(error?.recordErrors.map((record) => record.batchIndex)).toEqual([0]);
  });

  it('refuses zstd below Produce v7 with UNSUPPORTED_COMPRESSION_TYPE and accepts it from v7', () => {
    const zstd = encodeRecordBatch([{ value: Buffer.from('z'), timestamp: NOW }], { compression: 'zstd' });
    expect(codeOf(Buffer.from(zstd), { ...RULES, allowZstd: false })).toBe('UNSUPPORTED_COMPRESSION_TYPE');
    expect(codeOf(Buffer.from(zstd))).toBe('NONE');
  });
});

describe('validateProducerBatch: the issue #16 reproductions', () => {
  it('refuses a count of 5 over 1 record, and a count of 2^31−1 over 1 record (LastOffsetDelta 7ffffffe)', () => {
    const countFive = batchOfFrame(
      '0000007900000003000000020005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004700000000000000000000003bffffffff02cdfcc45d0000000000040000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff000000051200000001066f6e6500',
    );
    const overflowing = batchOfFrame(
      '0000007700000003000000020005726570726fffff000100001388000000010009726570726f2d696478000000010000000000000045000000000000000000000039ffffffff027b3a10b900007ffffffe0000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff7fffffff0e00000001027800',
    );
    expect(readBatchHeader(overflowing).recordsCount).toBe(0x7fffffff);
    expect(codeOf(countFive)).toBe('INVALID_RECORD');
    expect(codeOf(overflowing)).toBe('INVALID_RECORD');
  });

  it('refuses snappy bits on plain records and gzip bits on a payload that is not gzip as CORRUPT_MESSAGE', () => {
    const snappyBits = batchOfFrame(
      '0000007b00000003000000030005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004900000000000000000000003dffffffff02b173cbe50002000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000116000000010a706c61696e00',
    );
    const gzipBits = batchOfFrame(
      '0000007e00000003000000040005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004c000000000000000000000040ffffffff029bc28f1b0001000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff000000016e6f7420677a697020617420616c6c',
    );
    expect(codeOf(snappyBits)).toBe('CORRUPT_MESSAGE');
    expect(codeOf(gzipBits)).toBe('CORRUPT_MESSAGE');
  });

  it('refuses a record whose length runs past the batch, naming record 0', () => {
    const { code, error } = refusal(
      batchOfFrame(
        '0000007900000003000000050005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004700000000000000000000003bffffffff0269235ccb0000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000114000000010661626300',
      ),
    );
    expect(code).toBe('INVALID_RECORD');
    expect(error?.recordErrors).toEqual([expect.objectContaining({ batchIndex: 0 })]);
  });

  it('sets a lying MaxTimestamp of 2^63−1 to the records’ true maximum, with a valid CRC, as Kafka does', () => {
    const batch = batchOfFrame(
      '0000007600000003000000020005726570726fffff000100001388000000010008726570726f2d7473000000010000000000000045000000000000000000000039ffffffff02d9f0cdeb0000000000000000018bcfe568007fffffffffffffffffffffffffffffffffffffffffff000000010e00000001027800',
    );
    const sent = Buffer.from(batch);
    const validated = validateProducerBatch(batch, RULES);
    expect(validated.maxTimestamp).toBe(0x018bcfe56800n);
    expect(batch.readBigInt64BE(MAX_TIMESTAMP_OFFSET)).toBe(0x018bcfe56800n);
    expect(computeBatchCrc(batch, 0, batch.length)).toBe(batch.readUInt32BE(17));
    // Only MaxTimestamp and the CRC changed.
    const changed = [...batch.keys()].filter((index) => batch[index] !== sent[index]);
    expect(changed.every((index) => (index >= 17 && index < 21) || (index >= MAX_TIMESTAMP_OFFSET && index < MAX_TIMESTAMP_OFFSET + 8))).toBe(true);
  });
});

describe('validateProducerBatch: every record', () => {
  const threeRecords = (codec: CompressionName = 'none'): Buffer =>
    encodeRecordBatch(
      [
        { key: Buffer.from('k0'), value: Buffer.from('v0'), timestamp: NOW - 10 },
        { key: null, value: null, timestamp: NOW, headers: [{ key: 'h', value: Buffer.from('x') }, { key: 'n', value: null }] },
        { value: Buffer.alloc(300, 7), timestamp: NOW - 5 },
      ],
      { compression: codec },
    );

  for (const codec of CODECS) {
    it(`${codec}: accepts valid records and refuses each kind of damage inside them (CRC recomputed)`, () => {
      expect(validateProducerBatch(threeRecords(codec), RULES)).toMatchObject({ recordCount: 3, maxTimestamp: BigInt(NOW) });
      const plain = recordsOf(threeRecords(codec));
      const damaged = (edit: (records: Buffer) => Buffer): string => codeOf(withRecords(threeRecords(codec), edit(Buffer.from(plain)), codec));
      // Offsets inside the batch must be 0, 1, 2: record 1's offset delta (byte 3 of record 1) set to 2.
      const firstLength = (plain[0] ?? 0) >> 1;
      expect(damaged((records) => {
        records[1 + firstLength + 3] = 4; // zig-zag 2
        return records;
      })).toBe('INVALID_RECORD');
      expect(damaged((records) => Buffer.concat([records, Buffer.from([0])]))).toBe('INVALID_RECORD'); // a stray byte after the last record
      expect(damaged((records) => records.subarray(0, records.length - 1))).toBe('INVALID_RECORD'); // the last record cut short
      expect(damaged((records) => {
        records[0] = (records[0] ?? 0) + 2; // record 0 claims one more byte
        return records;
      })).toBe('INVALID_RECORD');
      expect(damaged((records) => {
        records[1 + 3] = 0x7e; // record 0's key length: 63 bytes, past the record
        return records;
      })).toBe('INVALID_RECORD');
      expect(damaged((records) => {
        records[1 + 3] = 0x03; // key length −2
        return records;
      })).toBe('INVALID_RECORD');
      expect(damaged((records) => Buffer.concat([records.subarray(0, 1 + 2), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]), records.subarray(1 + 3)]))).toBe('INVALID_RECORD'); // a 6-byte varint
    });
  }

  it('refuses a decompression bomb with CORRUPT_MESSAGE without inflating past the limit', () => {
    const bomb = withRecords(encodeRecordBatch([{ value: Buffer.from('x'), timestamp: NOW }], { compression: 'gzip' }), Buffer.alloc(0), 'none');
    const payload = gzipSync(Buffer.alloc(8 * 1024 * 1024));
    const batch = Buffer.concat([bomb.subarray(0, RECORD_BATCH_OVERHEAD), payload]);
    batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
    batch.writeInt16BE(1, ATTRIBUTES_OFFSET);
    writeBatchCrc(batch);
    expect(codeOf(batch, { ...RULES, maxDecompressedBytes: 1024 * 1024 })).toBe('CORRUPT_MESSAGE');
  });
});

describe('validateProducerBatch: timestamps', () => {
  const batchAt = (...timestamps: number[]): Buffer => encodeRecordBatch(timestamps.map((timestamp) => ({ value: Buffer.from('t'), timestamp })), { baseTimestamp: NOW });

  it('refuses CreateTime records beyond now + after.max.ms or before now − before.max.ms, naming each one', () => {
    const { code, error } = refusal(batchAt(NOW, NOW + 3_600_001, NOW - 1, NOW + 7_200_000));
    expect(code).toBe('INVALID_TIMESTAMP');
    expect(error?.recordErrors.map((record) => record.batchIndex)).toEqual([1, 3]);
    expect(codeOf(batchAt(NOW + 3_600_000))).toBe('NONE');
    expect(codeOf(batchAt(NOW - 86_400_001), { ...RULES, timestampBeforeMaxMs: 86_400_000 })).toBe('INVALID_TIMESTAMP');
    expect(codeOf(batchAt(NOW - 86_400_000), { ...RULES, timestampBeforeMaxMs: 86_400_000 })).toBe('NONE');
  });

  it('exempts −1 ("no timestamp") from the bounds', () => {
    expect(codeOf(batchAt(-1, NOW), { ...RULES, timestampBeforeMaxMs: 1000 })).toBe('NONE');
  });

  it('keeps a timestamp of 2^63−1 exactly when the bounds allow it', () => {
    const batch = encodeRecordBatch([{ value: Buffer.from('far'), timestamp: 0 }], { baseTimestamp: 0 });
    batch.writeBigInt64BE(2n ** 63n - 1n, BASE_TIMESTAMP_OFFSET);
    batch.writeBigInt64BE(2n ** 63n - 1n, MAX_TIMESTAMP_OFFSET);
    writeBatchCrc(batch);
    expect(codeOf(Buffer.from(batch))).toBe('INVALID_TIMESTAMP');
    expect(validateProducerBatch(batch, { ...RULES, timestampAfterMaxMs: Infinity }).maxTimestamp).toBe(2n ** 63n - 1n);
    expect(batch.readBigInt64BE(MAX_TIMESTAMP_OFFSET)).toBe(2n ** 63n - 1n);
  });

  it('computes timestamps with int64 wrap-around for deltas beyond 2^53, as Java clients read them', () => {
    const batch = encodeRecordBatch([{ value: Buffer.from('a'), timestamp: 0 }], { baseTimestamp: 0 });
    const records = recordsOf(batch);
    // Record: length, attributes, timestamp delta 2^60 (zig-zag 2^61: 9 bytes) …
    const delta = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
    const body = Buffer.concat([records.subarray(1, 2), delta, records.subarray(3)]);
    const rebuilt = withRecords(batch, Buffer.concat([Buffer.from([body.length * 2]), body]));
    expect(validateProducerBatch(Buffer.from(rebuilt), { ...RULES, timestampAfterMaxMs: Infinity }).maxTimestamp).toBe(2n ** 60n);
    expect(decodeRecords(rebuilt)[0]?.timestamp).toBe(2 ** 60);
    expect(codeOf(Buffer.from(rebuilt))).toBe('INVALID_TIMESTAMP');
    // Base 2^63 − 1 plus 2^60 wraps to a negative timestamp, as a Java client computes it; Kafka's
    // batch maximum starts at −1, so a batch of such records has MaxTimestamp −1.
    rebuilt.writeBigInt64BE(2n ** 63n - 1n, BASE_TIMESTAMP_OFFSET);
    writeBatchCrc(rebuilt);
    expect(validateProducerBatch(Buffer.from(rebuilt), { ...RULES, timestampAfterMaxMs: Infinity }).maxTimestamp).toBe(-1n);
    expect(codeOf(Buffer.from(rebuilt), { ...RULES, timestampBeforeMaxMs: 1000 })).toBe('INVALID_TIMESTAMP');
  });

  it('on a LogAppendTime topic sets the type bit and MaxTimestamp to now, keeping the records as sent', () => {
    const batch = batchAt(NOW - 5, NOW - 1);
    const sentRecords = Buffer.from(batch.subarray(RECORD_BATCH_OVERHEAD));
    const validated = validateProducerBatch(batch, { ...RULES, timestampType: 'LogAppendTime', now: NOW + 99 });
    expect(validated).toMatchObject({ maxTimestamp: BigInt(NOW + 99), logAppendTime: BigInt(NOW + 99) });
    const header = readBatchHeader(batch);
    expect(header.attributes & 0x08).toBe(0x08);
    expect(header.maxTimestamp).toBe(BigInt(NOW + 99));
    expect(computeBatchCrc(batch, 0, batch.length)).toBe(header.crc);
    expect(batch.subarray(RECORD_BATCH_OVERHEAD).equals(sentRecords)).toBe(true);
  });
});

describe('validateProducerBatch: keys on a compacted topic', () => {
  const compacted: BatchRules = { ...RULES, requireKeys: true };
  const keyed = (key: string | null, value: string | null): { key: Buffer | null; value: Buffer | null; timestamp: number } => ({
    key: key === null ? null : Buffer.from(key),
    value: value === null ? null : Buffer.from(value),
    timestamp: NOW,
  });

  it('refuses the whole batch with INVALID_RECORD naming the keyless records, in every codec, and leaves it unchanged', () => {
    for (const compression of CODECS) {
      const batch = encodeRecordBatch([keyed('a', '1'), keyed(null, '2'), keyed('c', null), keyed(null, null)], { compression, baseTimestamp: NOW });
      const { code, error } = refusal(batch, compacted);
      expect(code, compression).toBe('INVALID_RECORD');
      expect(error?.message).toContain('2 of the batch\'s 4 records have none (first: record 1, 3)');
      expect(error?.recordErrors.map((recordError) => recordError.batchIndex)).toEqual([1, 3]);
      // The same batch is fine where compaction is off.
      expect(codeOf(batch), compression).toBe('NONE');
    }
  });

  it('accepts keyed records and tombstones (a key with a null value)', () => {
    expect(codeOf(encodeRecordBatch([keyed('a', '1'), keyed('a', null), keyed('', 'empty key')], { baseTimestamp: NOW }), compacted)).toBe('NONE');
  });
});

describe('validateStoredBatch', () => {
  it('accepts a stored batch (any base offset, the LogAppendTime bit) and refuses damaged records', () => {
    const batch = encodeRecordBatch([{ value: Buffer.from('s'), timestamp: NOW }], { baseOffset: 1234n });
    validateProducerBatch(Buffer.from(batch).fill(0, 0, 8), { ...RULES, timestampType: 'LogAppendTime' });
    expect(() => validateStoredBatch(batch)).not.toThrow();
    batch.writeInt32BE(0, LAST_OFFSET_DELTA_OFFSET);
    const lying = withRecords(batch, Buffer.concat([recordsOf(batch), Buffer.from([0])]));
    expect(() => validateStoredBatch(lying)).toThrow(KafkaProtocolError);
  });
});
