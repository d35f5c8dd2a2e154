/**
 * Records inside a RecordBatch v2, and a builder of whole batches.
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
 * Compressed batches (Attributes bits 0–2 ≠ 0) hold the same records, back to back, inside one
 * compressed blob that fills the batch after its 61-byte header; RecordsCount stays uncompressed
 * in the header. The codecs and their wire formats are in compression.ts.
 */
import { compress, decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from './compression.js';
import { KafkaProtocolError } from './kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_LENGTH_OFFSET,
  Compression,
  COMPRESSION_MASK,
  type CompressionName,
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
  type RecordBatchHeader,
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
  /** Codec of the records section (Attributes bits 0–2); uncompressed when absent or 'none'. */
  readonly compression?: CompressionName;
}

export interface DecodeOptions {
  /** Ceiling on a compressed batch's decompressed records; larger is CORRUPT_MESSAGE. */
  readonly maxDecompressedBytes?: number;
}

/** Builds one RecordBatch v2 holding `records`, compressed as `options.compression` says, CRC included. */
export function encodeRecordBatch(records: readonly RecordInput[], options: BatchOptions = {}): Buffer {
  const count = records.length;
  if (count === 0) throw new RangeError('a record batch holds at least one record');
  const baseTimestamp = options.baseTimestamp ?? records[0]?.timestamp ?? 0;
  // Sizes first (a record's length prefix precedes it), without an object per record: batches
  // of thousands of records are the producer's hot path.
  const bodySizes = new Int32Array(count);
  let maxTimestamp = -1;
  let recordsSize = 0;
  for (let index = 0; index < count; index++) {
    const record = records[index] as RecordInput;
    const timestamp = record.timestamp ?? baseTimestamp;
    if (timestamp > maxTimestamp) maxTimestamp = timestamp;
    const bodySize = recordBodySize(record, index, timestamp - baseTimestamp);
    bodySizes[index] = bodySize;
    recordsSize += varintSize(bodySize) + bodySize;
  }
  const codec = options.compression ?? 'none';
  let batch: Buffer;
  if (codec === 'none') {
    batch = Buffer.alloc(RECORD_BATCH_OVERHEAD + recordsSize);
    writeRecords(batch, RECORD_BATCH_OVERHEAD, records, bodySizes, baseTimestamp);
  } else {
    const plain = Buffer.alloc(recordsSize);
    writeRecords(plain, 0, records, bodySizes, baseTimestamp);
    const compressed = compress(codec, plain);
    batch = Buffer.alloc(RECORD_BATCH_OVERHEAD + compressed.length);
    compressed.copy(batch, RECORD_BATCH_OVERHEAD);
  }
  batch.writeBigInt64BE(options.baseOffset ?? 0n, 0);
  batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  batch.writeInt32BE(options.partitionLeaderEpoch ?? -1, PARTITION_LEADER_EPOCH_OFFSET);
  batch.writeInt8(CURRENT_MAGIC, MAGIC_OFFSET);
  batch.writeInt16BE(Compression[codec], ATTRIBUTES_OFFSET);
  batch.writeInt32BE(count - 1, LAST_OFFSET_DELTA_OFFSET);
  batch.writeBigInt64BE(BigInt(baseTimestamp), BASE_TIMESTAMP_OFFSET);
  batch.writeBigInt64BE(BigInt(maxTimestamp), MAX_TIMESTAMP_OFFSET);
  batch.writeBigInt64BE(options.producerId ?? -1n, PRODUCER_ID_OFFSET);
  batch.writeInt16BE(options.producerEpoch ?? -1, PRODUCER_EPOCH_OFFSET);
  batch.writeInt32BE(options.baseSequence ?? -1, BASE_SEQUENCE_OFFSET);
  batch.writeInt32BE(count, RECORDS_COUNT_OFFSET);
  writeBatchCrc(batch);
  return batch;
}

/** Bytes of a record after its length prefix: attributes, deltas, key, value, headers. */
function recordBodySize(record: RecordInput, offsetDelta: number, timestampDelta: number): number {
  const key = record.key ?? null;
  const value = record.value;
  const headers = record.headers;
  let size =
    1 +
    varlongSize(timestampDelta) +
    varintSize(offsetDelta) +
    (key === null ? 1 : varintSize(key.length) + key.length) +
    (value === null ? 1 : varintSize(value.length) + value.length) +
    varintSize(headers?.length ?? 0);
  if (headers !== undefined) {
    for (const header of headers) {
      const keyLength = Buffer.byteLength(header.key, 'utf8');
      size += varintSize(keyLength) + keyLength;
      size += header.value === null ? 1 : varintSize(header.value.length) + header.value.length;
    }
  }
  return size;
}

/** Writes the records back to back into `target` from `start`; returns the end position. */
function writeRecords(target: Buffer, start: number, records: readonly RecordInput[], bodySizes: Int32Array, baseTimestamp: number): number {
  let position = start;
  for (let index = 0; index < records.length; index++) {
    const record = records[index] as RecordInput;
    position = writeVarint(target, position, bodySizes[index] ?? 0);
    target[position++] = 0; // attributes: unused
    position = writeVarlong(target, position, (record.timestamp ?? baseTimestamp) - baseTimestamp);
    position = writeVarint(target, position, index);
    position = writeBytes(target, position, record.key ?? null);
    position = writeBytes(target, position, record.value);
    const headers = record.headers;
    position = writeVarint(target, position, headers?.length ?? 0);
    if (headers !== undefined) {
      for (const header of headers) {
        const keyLength = Buffer.byteLength(header.key, 'utf8');
        position = writeVarint(target, position, keyLength);
        position += target.write(header.key, position, keyLength, 'utf8');
        position = writeBytes(target, position, header.value);
      }
    }
  }
  return position;
}

function writeBytes(target: Buffer, position: number, bytes: Buffer | null): number {
  if (bytes === null) return writeVarint(target, position, -1);
  const next = writeVarint(target, position, bytes.length);
  bytes.copy(target, next);
  return next + bytes.length;
}

/**
 * Decodes the records of the batch at `position` in `bytes`. An uncompressed batch's keys, values
 * and header values are views into `bytes`; a compressed batch is decompressed first (at most
 * `options.maxDecompressedBytes`, 64 MiB by default) and they are views into that buffer.
 */
export function decodeRecords(bytes: Buffer, position = 0, options: DecodeOptions = {}): Record[] {
  const header = readBatchHeader(bytes, position);
  const end = position + header.sizeInBytes;
  if (end > bytes.length) throw new KafkaProtocolError('CORRUPT_MESSAGE', 'record batch extends past the end of the bytes');
  if (end < position + RECORD_BATCH_OVERHEAD) {
    throw new KafkaProtocolError('CORRUPT_MESSAGE', `record batch of ${header.sizeInBytes} bytes is shorter than its ${RECORD_BATCH_OVERHEAD}-byte header`);
  }
  const codec = header.attributes & COMPRESSION_MASK;
  if (codec === 0) return decodeRecordsSection(header, bytes, position + RECORD_BATCH_OVERHEAD, end);
  const plain = decompress(codec, bytes.subarray(position + RECORD_BATCH_OVERHEAD, end), options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES);
  return decodeRecordsSection(header, plain, 0, plain.length);
}

/** Parses `header.recordsCount` records that fill `bytes[start, end)` exactly. */
function decodeRecordsSection(header: RecordBatchHeader, bytes: Buffer, start: number, end: number): Record[] {
  const reader = new ByteReader(bytes, start, end);
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
