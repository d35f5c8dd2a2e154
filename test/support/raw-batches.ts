/**
 * RecordBatch v2 built field by field for tests, so that any field can lie: record lengths,
 * offset and timestamp deltas, key/value/header lengths and header counts, RecordsCount and
 * LastOffsetDelta, MaxTimestamp, attributes; the records section compressed with any codec after
 * the damage (src/protocol/compression.ts), the CRC recomputed or left stale. The honest case
 * produces exactly what src/protocol/records.ts `encodeRecordBatch` does (the property test checks).
 */
import { compress } from '../../src/protocol/compression.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_LENGTH_OFFSET,
  Compression,
  CURRENT_MAGIC,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  PARTITION_LEADER_EPOCH_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT_OFFSET,
  writeBatchCrc,
  type CompressionName,
} from '../../src/protocol/record-batch.js';

export interface RawHeader {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Lies about the header's key and value lengths (absent = the truth). */
  readonly keyLength?: number;
  readonly valueLength?: number;
}

export interface RawRecord {
  readonly attributes?: number;
  readonly timestampDelta: bigint;
  readonly offsetDelta: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RawHeader[];
  // Lies (absent = the truth):
  /** Added to the true body length written in the length varint. */
  readonly lengthAdjust?: number;
  readonly keyLength?: number;
  readonly valueLength?: number;
  readonly headerCount?: number;
  /** Bytes appended to the body (inside the written length when lengthAdjust is absent). */
  readonly trailing?: Buffer;
  /** Written instead of the length varint (e.g. an over-long encoding). */
  readonly rawLength?: Buffer;
}

export interface RawBatch {
  readonly records: readonly RawRecord[];
  readonly codec?: CompressionName;
  /** Codec bits written (defaults to the codec's); 5–7 name no codec. */
  readonly codecBits?: number;
  /** Attribute bits besides the codec (timestamp type 0x08, transactional 0x10, control 0x20). */
  readonly flags?: number;
  readonly baseOffset?: bigint;
  readonly baseTimestamp: bigint;
  /** Defaults to the records' true maximum (−1 when none is above). */
  readonly maxTimestamp?: bigint;
  readonly lastOffsetDelta?: number;
  readonly recordsCount?: number;
  readonly producerId?: bigint;
  readonly producerEpoch?: number;
  readonly baseSequence?: number;
  readonly partitionLeaderEpoch?: number;
  /** Replace the records section (after compression) with these bytes. */
  readonly payload?: Buffer;
  /** Leave the CRC as computed before this change: 'stale' flips one CRC bit. */
  readonly crc?: 'valid' | 'stale';
}

function zigzag32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

export function varint(value: number): Buffer {
  let z = zigzag32(value);
  const out: number[] = [];
  while (z >= 0x80) {
    out.push((z & 0x7f) | 0x80);
    z >>>= 7;
  }
  out.push(z);
  return Buffer.from(out);
}

export function varlong(value: bigint): Buffer {
  let z = BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return Buffer.from(out);
}

function lengthPrefixed(bytes: Buffer | null, declared: number | undefined): Buffer[] {
  if (bytes === null) return [varint(declared ?? -1)];
  return [varint(declared ?? bytes.length), bytes];
}

export function encodeRawRecord(record: RawRecord): Buffer {
  const parts: Buffer[] = [Buffer.from([record.attributes ?? 0]), varlong(record.timestampDelta), varint(record.offsetDelta)];
  parts.push(...lengthPrefixed(record.key, record.keyLength), ...lengthPrefixed(record.value, record.valueLength));
  parts.push(varint(record.headerCount ?? record.headers.length));
  for (const header of record.headers) parts.push(...lengthPrefixed(header.key, header.keyLength), ...lengthPrefixed(header.value, header.valueLength));
  if (record.trailing !== undefined) parts.push(record.trailing);
  const body = Buffer.concat(parts);
  return Buffer.concat([record.rawLength ?? varint(body.length + (record.lengthAdjust ?? 0)), body]);
}

export function encodeRawBatch(batch: RawBatch): Buffer {
  const plain = Buffer.concat(batch.records.map(encodeRawRecord));
  const codec = batch.codec ?? 'none';
  const payload = batch.payload ?? compress(codec, plain);
  const bytes = Buffer.alloc(RECORD_BATCH_OVERHEAD + payload.length);
  payload.copy(bytes, RECORD_BATCH_OVERHEAD);
  let max = -1n;
  for (const record of batch.records) {
    const timestamp = BigInt.asIntN(64, batch.baseTimestamp + record.timestampDelta);
    if (timestamp > max) max = timestamp;
  }
  const count = batch.records.length;
  bytes.writeBigInt64BE(batch.baseOffset ?? 0n, 0);
  bytes.writeInt32BE(bytes.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  bytes.writeInt32BE(batch.partitionLeaderEpoch ?? -1, PARTITION_LEADER_EPOCH_OFFSET);
  bytes.writeInt8(CURRENT_MAGIC, MAGIC_OFFSET);
  bytes.writeInt16BE(((batch.codecBits ?? Compression[codec]) & 0x07) | (batch.flags ?? 0), ATTRIBUTES_OFFSET);
  bytes.writeInt32BE(batch.lastOffsetDelta ?? count - 1, LAST_OFFSET_DELTA_OFFSET);
  bytes.writeBigInt64BE(batch.baseTimestamp, BASE_TIMESTAMP_OFFSET);
  bytes.writeBigInt64BE(batch.maxTimestamp ?? max, MAX_TIMESTAMP_OFFSET);
  bytes.writeBigInt64BE(batch.producerId ?? -1n, PRODUCER_ID_OFFSET);
  bytes.writeInt16BE(batch.producerEpoch ?? -1, PRODUCER_EPOCH_OFFSET);
  bytes.writeInt32BE(batch.baseSequence ?? -1, BASE_SEQUENCE_OFFSET);
  bytes.writeInt32BE(batch.recordsCount ?? count, RECORDS_COUNT_OFFSET);
  writeBatchCrc(bytes);
  if (batch.crc === 'stale') bytes.writeUInt32BE((bytes.readUInt32BE(17) ^ 0x00000100) >>> 0, 17);
  return bytes;
}

/** Honest records with timestamps `base + deltas[i]` (default 0) and small keys and values. */
export function simpleRecords(values: readonly string[], deltas: readonly bigint[] = []): RawRecord[] {
  return values.map((value, index) => ({ timestampDelta: deltas[index] ?? 0n, offsetDelta: index, key: null, value: Buffer.from(value), headers: [] }));
}

// ---------------------------------------------------------------------------------------------
// Decompression bombs: small compressed blobs that inflate far past any sane bound. Built once.

const bombs = new Map<string, Buffer>();

/** A `codec` blob of `megabytes` MiB of zeros (snappy: a raw block that only declares 1 GiB). */
export function decompressionBomb(codec: Exclude<CompressionName, 'none'>, megabytes = 128): Buffer {
  const key = `${codec}/${megabytes}`;
  let bomb = bombs.get(key);
  if (bomb === undefined) {
    if (codec === 'snappy') {
      // A raw snappy block declares its uncompressed length first: 1 GiB, then a literal of 1 byte.
      bomb = Buffer.concat([Buffer.from([0x80, 0x80, 0x80, 0x80, 0x04]), Buffer.from([0x00, 0x00])]);
    } else {
      bomb = compress(codec, Buffer.alloc(megabytes * 1024 * 1024));
    }
    bombs.set(key, bomb);
  }
  return bomb;
}
