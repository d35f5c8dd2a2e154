/**
 * Records inside an uncompressed RecordBatch v2, and a builder of whole batches.
 *
 * Wire grammar of one record (Kafka's DefaultRecord; varints are zig-zag, see varint.ts):
 *
 *   Record =
 *     Length          varint   bytes after this field
 *     Attributes      int8     unused, 0
 *     TimestampDelta  varlong  timestamp − batch BaseTimestamp
 *     OffsetDelta     varint   offset − batch BaseOffset
 *     KeyLength       varint   −1 = null key
 *     Key             bytes
 *     ValueLength     varint   −1 = null value
 *     Value           bytes
 *     HeadersCount    varint
 *     Headers         HeadersCount × { KeyLength varint, Key utf8, ValueLength varint (−1 = null), Value bytes }
 *
 * Compressed batches hold the same records inside one compressed blob; their codecs arrive with
 * the client (issue #5).
 */
import { KafkaProtocolError } from './kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_LENGTH_OFFSET,
  COMPRESSION_MASK,
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
  readBatchHeader,
  writeBatchCrc,
} from './record-batch.js';
import { ByteReader, varintSize, varlongSize, writeVarint, writeVarlong } from './varint.js';

export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer | null;
}

export interface RecordInput {
  readonly key?: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: readonly RecordHeader[];
  /** Milliseconds since the epoch; the batch's base timestamp when absent. */
  readonly timestamp?: number;
}

export interface Record {
  readonly offset: bigint;
  readonly timestamp: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
}

export interface BatchOptions {
  readonly baseOffset?: bigint;
  /** Used for records without a timestamp; defaults to the first record's or 0. */
  readonly baseTimestamp?: number;
  readonly partitionLeaderEpoch?: number;
  readonly producerId?: bigint;
  readonly producerEpoch?: number;
  readonly baseSequence?: number;
}

/** Builds one uncompressed RecordBatch v2 holding `records`, CRC included. */
export function encodeRecordBatch(records: readonly RecordInput[], options: BatchOptions = {}): Buffer {
  if (records.length === 0) throw new RangeError('a record batch holds at least one record');
  const baseTimestamp = options.baseTimestamp ?? records[0]?.timestamp ?? 0;
  let maxTimestamp = -1;
  const encoded = records.map((record, index) => {
    const timestamp = record.timestamp ?? baseTimestamp;
    if (timestamp > maxTimestamp) maxTimestamp = timestamp;
    const headerKeys = (record.headers ?? []).map((header) => Buffer.from(header.key, 'utf8'));
    const key = record.key ?? null;
    const value = record.value;
    let bodySize =
      1 +
      varlongSize(timestamp - baseTimestamp) +
      varintSize(index) +
      varintSize(key === null ? -1 : key.length) +
      (key?.length ?? 0) +
      varintSize(value === null ? -1 : value.length) +
      (value?.length ?? 0) +
      varintSize(headerKeys.length);
    (record.headers ?? []).forEach((header, headerIndex) => {
      const headerKey = headerKeys[headerIndex] ?? Buffer.alloc(0);
      bodySize += varintSize(headerKey.length) + headerKey.length;
      bodySize += varintSize(header.value === null ? -1 : header.value.length) + (header.value?.length ?? 0);
    });
    return { record, timestamp, headerKeys, key, value, bodySize, index };
  });
  const recordsSize = encoded.reduce((sum, item) => sum + varintSize(item.bodySize) + item.bodySize, 0);
  const batch = Buffer.alloc(RECORD_BATCH_OVERHEAD + recordsSize);
  batch.writeBigInt64BE(options.baseOffset ?? 0n, 0);
  batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  batch.writeInt32BE(options.partitionLeaderEpoch ?? -1, PARTITION_LEADER_EPOCH_OFFSET);
  batch.writeInt8(CURRENT_MAGIC, MAGIC_OFFSET);
  batch.writeInt16BE(0, ATTRIBUTES_OFFSET);
  batch.writeInt32BE(records.length - 1, LAST_OFFSET_DELTA_OFFSET);
  batch.writeBigInt64BE(BigInt(baseTimestamp), BASE_TIMESTAMP_OFFSET);
  batch.writeBigInt64BE(BigInt(maxTimestamp), MAX_TIMESTAMP_OFFSET);
  batch.writeBigInt64BE(options.producerId ?? -1n, PRODUCER_ID_OFFSET);
  batch.writeInt16BE(options.producerEpoch ?? -1, PRODUCER_EPOCH_OFFSET);
  batch.writeInt32BE(options.baseSequence ?? -1, BASE_SEQUENCE_OFFSET);
  batch.writeInt32BE(records.length, RECORDS_COUNT_OFFSET);
  let position = RECORD_BATCH_OVERHEAD;
  for (const item of encoded) {
    position = writeVarint(batch, position, item.bodySize);
    batch.writeInt8(0, position++);
    position = writeVarlong(batch, position, item.timestamp - baseTimestamp);
    position = writeVarint(batch, position, item.index);
    position = writeBytes(batch, position, item.key);
    position = writeBytes(batch, position, item.value);
    position = writeVarint(batch, position, item.headerKeys.length);
    (item.record.headers ?? []).forEach((header, headerIndex) => {
      position = writeBytes(batch, position, item.headerKeys[headerIndex] ?? Buffer.alloc(0));
      position = writeBytes(batch, position, header.value);
    });
  }
  writeBatchCrc(batch);
  return batch;
}

function writeBytes(target: Buffer, position: number, bytes: Buffer | null): number {
  if (bytes === null) return writeVarint(target, position, -1);
  const next = writeVarint(target, position, bytes.length);
  bytes.copy(target, next);
  return next + bytes.length;
}

/**
 * Decodes the records of the uncompressed batch at `position` in `bytes`. Keys, values and header
 * values are views into `bytes`, not copies.
 */
export function decodeRecords(bytes: Buffer, position = 0): Record[] {
  const header = readBatchHeader(bytes, position);
  if ((header.attributes & COMPRESSION_MASK) !== 0) {
    throw new KafkaProtocolError('UNSUPPORTED_COMPRESSION_TYPE', `compressed batches (codec ${header.attributes & COMPRESSION_MASK}) are not decoded here`);
  }
  const end = position + header.sizeInBytes;
  if (end > bytes.length) throw new KafkaProtocolError('CORRUPT_MESSAGE', 'record batch extends past the end of the bytes');
  const reader = new ByteReader(bytes, position + RECORD_BATCH_OVERHEAD, end);
  const baseTimestamp = Number(header.baseTimestamp);
  const records: Record[] = [];
  for (let index = 0; index < header.recordsCount; index += 1) {
    const length = reader.varint('record length');
    const recordEnd = reader.position + length;
    if (length < 1 || recordEnd > end) throw new KafkaProtocolError('CORRUPT_MESSAGE', `record ${index} length ${length} runs past its batch`);
    const record = new ByteReader(bytes, reader.position, recordEnd);
    record.int8('record attributes');
    const timestamp = baseTimestamp + record.varlong('timestamp delta');
    const offsetDelta = record.varint('offset delta');
    const key = record.bytesOrNull(record.varint('key length'), 'key');
    const value = record.bytesOrNull(record.varint('value length'), 'value');
    const headerCount = record.varint('headers count');
    if (headerCount < 0 || headerCount > record.remaining()) {
      throw new KafkaProtocolError('CORRUPT_MESSAGE', `record ${index} declares ${headerCount} headers in ${record.remaining()} bytes`);
    }
    const headers: RecordHeader[] = [];
    for (let h = 0; h < headerCount; h += 1) {
      const headerKey = record.bytesOrNull(record.varint('header key length'), 'header key');
      if (headerKey === null) throw new KafkaProtocolError('CORRUPT_MESSAGE', `record ${index} has a null header key`);
      headers.push({ key: headerKey.toString('utf8'), value: record.bytesOrNull(record.varint('header value length'), 'header value') });
    }
    if (record.remaining() !== 0) throw new KafkaProtocolError('CORRUPT_MESSAGE', `record ${index} has ${record.remaining()} stray bytes`);
    records.push({ offset: header.baseOffset + BigInt(offsetDelta), timestamp, key, value, headers });
    reader.position = recordEnd;
  }
  if (reader.remaining() !== 0) throw new KafkaProtocolError('CORRUPT_MESSAGE', `record batch has ${reader.remaining()} bytes after its last record`);
  return records;
}
