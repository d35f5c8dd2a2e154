/**
 * The producer-batch rules of issue 16 for tests: a REFERENCE implementation written here, apart
 * from the broker's validator, and a loader for the broker's validator itself
 * (src/protocol/batch-validation.ts `validateProducerBatch` / `validateStoredBatch`).
 *
 *   reference    Kafka's LogValidator rules plus "disk bytes = wire bytes": exactly one magic-2
 *                batch, base offset 0, size ≤ max.message.bytes, valid CRC-32C, LastOffsetDelta + 1
 *                = RecordsCount > 0 = records present, codec 0–4 (zstd only from Produce v7), no
 *                control batch, producer id ≥ 0 needs a base sequence ≥ 0, no LogAppendTime from a
 *                client, every record parsed exactly (offset deltas 0, 1, 2, …) within the batch or
 *                its bounded decompressed blob, CreateTime timestamps within [now − before,
 *                now + after]. The records are parsed twice: by src/protocol/records.ts
 *                `decodeRecords` (the project's decoder: lengths, stray bytes, headers) and by the
 *                small parser below, which keeps timestamps as exact int64 (decodeRecords holds
 *                them as JS numbers) and checks offset deltas. A header MaxTimestamp that is not
 *                the records' maximum is rewritten with the CRC, as Kafka does (`bytes` is changed
 *                in place, like the broker's).
 *
 *   loader       `loadBatchValidation()` gives the broker's validator, src/protocol/batch-validation.ts,
 *                which the fuzzer and the property test compare with the reference.
 *
 * Choices the issue leaves open, made here as src/protocol/records.ts decodes: a key, value or
 * header-value length below −1 is refused (Kafka reads any negative length as null); a null header
 * key is refused. The transactional attribute bit is not a rule of the brief: `ambiguous()` tells
 * callers to compare acceptance only where it is not set.
 */
import { decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from '../../src/protocol/compression.js';
import { KafkaProtocolError, type KafkaErrorName, type RecordError } from '../../src/protocol/kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  COMPRESSION_MASK,
  CONTROL_FLAG,
  CURRENT_MAGIC,
  MAX_TIMESTAMP_OFFSET,
  RECORD_BATCH_OVERHEAD,
  TIMESTAMP_TYPE_FLAG,
  TRANSACTIONAL_FLAG,
  computeBatchCrc,
  readBatchHeader,
  writeBatchCrc,
  type RecordBatchHeader,
} from '../../src/protocol/record-batch.js';
import { decodeRecords } from '../../src/protocol/records.js';
import { validateProducerBatch, validateStoredBatch, type BatchRules, type ValidatedBatch } from '../../src/protocol/batch-validation.js';

export type { BatchRules, ValidatedBatch };

export interface BatchValidation {
  validateProducerBatch(bytes: Buffer, rules: BatchRules): ValidatedBatch;
  validateStoredBatch(bytes: Buffer, options?: { maxDecompressedBytes?: number }): void;
}

/** Kafka's topic defaults: no bound before, one hour after, CreateTime. */
export function defaultRules(overrides: Partial<BatchRules> = {}): BatchRules {
  return {
    maxBatchBytes: 1_048_588,
    allowZstd: true,
    timestampType: 'CreateTime',
    timestampBeforeMaxMs: Infinity,
    timestampAfterMaxMs: 3_600_000,
    now: Date.now(),
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// the broker's validator

export interface LoadedValidation {
  readonly validation: BatchValidation;
  readonly source: 'src';
}

/** The broker's validator (src/protocol/batch-validation.ts), which the reference cross-checks. */
export function loadBatchValidation(): Promise<LoadedValidation> {
  return Promise.resolve({ validation: { validateProducerBatch, validateStoredBatch }, source: 'src' });
}

// ---------------------------------------------------------------------------------------------
// reference

function refuse(name: KafkaErrorName, message: string, recordErrors?: readonly RecordError[]): never {
  throw new KafkaProtocolError(name, message, recordErrors === undefined ? {} : { recordErrors });
}

/** Whether acceptance of this batch is left open by the brief (the transactional bit is set). */
export function ambiguous(bytes: Buffer): boolean {
  return bytes.length >= RECORD_BATCH_OVERHEAD && (bytes.readInt16BE(ATTRIBUTES_OFFSET) & TRANSACTIONAL_FLAG) !== 0;
}

interface ParsedRecord {
  readonly timestamp: bigint;
  readonly offsetDelta: number;
}

/** Reads a zig-zag varint of at most 5 bytes, as Kafka's ByteUtils.readVarint. */
function readVarint(bytes: Buffer, at: { p: number }, end: number): number {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    if (shift > 28) refuse('CORRUPT_MESSAGE', 'varint longer than 5 bytes');
    if (at.p >= end) refuse('CORRUPT_MESSAGE', 'varint runs past its record');
    const byte = bytes[at.p++] ?? 0;
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
  }
  return (value >>> 1) ^ -(value & 1);
}

/** Reads a zig-zag varlong of at most 10 bytes as an exact int64. */
function readVarlong(bytes: Buffer, at: { p: number }, end: number): bigint {
  let value = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (shift > 63n) refuse('CORRUPT_MESSAGE', 'varlong longer than 10 bytes');
    if (at.p >= end) refuse('CORRUPT_MESSAGE', 'varlong runs past its record');
    const byte = BigInt(bytes[at.p++] ?? 0);
    value |= (byte & 0x7fn) << shift;
    if ((byte & 0x80n) === 0n) break;
  }
  value = BigInt.asUintN(64, value);
  return BigInt.asIntN(64, (value >> 1n) ^ -(value & 1n));
}

function skipBytes(at: { p: number }, end: number, length: number, nullable: boolean, what: string): void {
  if (length === -1 && nullable) return;
  if (length < 0) refuse('CORRUPT_MESSAGE', `${what} length ${length}`);
  if (at.p + length > end) refuse('CORRUPT_MESSAGE', `${what} of ${length} bytes runs past its record`);
  at.p += length;
}

/** Parses `count` records filling `section` exactly; refuses anything else. */
function parseRecords(section: Buffer, count: number, baseTimestamp: bigint): ParsedRecord[] {
  const records: ParsedRecord[] = [];
  const at = { p: 0 };
  while (at.p < section.length) {
    if (records.length >= count) refuse('INVALID_RECORD', `bytes after record ${count - 1}, the last the batch declares`);
    const length = readVarint(section, at, section.length);
    if (length < 1 || at.p + length > section.length) refuse('CORRUPT_MESSAGE', `record ${records.length} length ${length} runs past its batch`);
    const end = at.p + length;
    at.p += 1; // attributes: unused
    if (at.p > end) refuse('CORRUPT_MESSAGE', 'record too short');
    const timestampDelta = readVarlong(section, at, end);
    const offsetDelta = readVarint(section, at, end);
    skipBytes(at, end, readVarint(section, at, end), true, 'key');
    skipBytes(at, end, readVarint(section, at, end), true, 'value');
    const headers = readVarint(section, at, end);
    if (headers < 0) refuse('CORRUPT_MESSAGE', `negative header count ${headers}`);
    for (let h = 0; h < headers; h += 1) {
      skipBytes(at, end, readVarint(section, at, end), false, 'header key');
      skipBytes(at, end, readVarint(section, at, end), true, 'header value');
    }
    if (at.p !== end) refuse('CORRUPT_MESSAGE', `record ${records.length} has ${end - at.p} stray bytes`);
    records.push({ timestamp: BigInt.asIntN(64, baseTimestamp + timestampDelta), offsetDelta });
  }
  if (records.length !== count) refuse('CORRUPT_MESSAGE', `batch declares ${count} records and holds ${records.length}`);
  return records;
}

/** Header, CRC, counts, codec and records: what holds for any batch, stored or produced. */
function structural(bytes: Buffer, maxDecompressedBytes: number, allowZstd: boolean, stored = false): { header: RecordBatchHeader; records: ParsedRecord[] } {
  if (bytes.length < RECORD_BATCH_OVERHEAD) refuse('CORRUPT_MESSAGE', `${bytes.length} bytes are shorter than a batch header`);
  const header = readBatchHeader(bytes);
  if (header.magic !== CURRENT_MAGIC) refuse('INVALID_RECORD', `magic ${header.magic}`);
  if (header.sizeInBytes > bytes.length) refuse('CORRUPT_MESSAGE', `batch declares ${header.sizeInBytes} bytes, ${bytes.length} arrived`);
  if (header.sizeInBytes !== bytes.length) refuse('INVALID_RECORD', `batch declares ${header.sizeInBytes} bytes of ${bytes.length}: one batch only`);
  if (computeBatchCrc(bytes, 0, bytes.length) !== header.crc) refuse('CORRUPT_MESSAGE', 'CRC-32C mismatch');
  // A stored batch may be compacted: fewer records than offsets (none at all for a kept header).
  const countFits = stored
    ? header.recordsCount >= 0 && header.lastOffsetDelta >= 0 && header.recordsCount <= header.lastOffsetDelta + 1
    : header.recordsCount > 0 && header.lastOffsetDelta + 1 === header.recordsCount;
  if (!countFits) refuse('INVALID_RECORD', `count ${header.recordsCount}, last offset delta ${header.lastOffsetDelta}`);
  const codec = header.attributes & COMPRESSION_MASK;
  if (codec > 4) refuse('UNSUPPORTED_COMPRESSION_TYPE', `codec ${codec}`);
  if (codec === 4 && !allowZstd) refuse('UNSUPPORTED_COMPRESSION_TYPE', 'zstd before Produce v7');
  const payload = bytes.subarray(RECORD_BATCH_OVERHEAD);
  const section = codec === 0 ? payload : decompress(codec, payload, maxDecompressedBytes);
  const records = parseRecords(section, header.recordsCount, header.baseTimestamp);
  records.forEach((record, index) => {
    const inSequence = stored ? record.offsetDelta > (records[index - 1]?.offsetDelta ?? -1) && record.offsetDelta <= header.lastOffsetDelta : record.offsetDelta === index;
    if (!inSequence) refuse('INVALID_RECORD', `record ${index} has offset delta ${record.offsetDelta}`, [{ batchIndex: index, message: 'offset delta out of sequence' }]);
  });
  // The project's decoder must agree that the records parse (a second, independent reading).
  decodeRecords(bytes, 0, { maxDecompressedBytes });
  return { header, records };
}

export function referenceValidateStoredBatch(bytes: Buffer, options: { maxDecompressedBytes?: number } = {}): void {
  const { header } = structural(bytes, options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES, true, true);
  // The log never stores control batches (clients may not write them; no transactions are served).
  if ((header.attributes & CONTROL_FLAG) !== 0) refuse('INVALID_RECORD', 'control batch in the log');
}

export function referenceValidateProducerBatch(bytes: Buffer, rules: BatchRules): ValidatedBatch {
  if (bytes.length >= RECORD_BATCH_OVERHEAD) {
    const header = readBatchHeader(bytes);
    if (header.magic === CURRENT_MAGIC && header.sizeInBytes === bytes.length) {
      if (header.sizeInBytes > rules.maxBatchBytes) refuse('MESSAGE_TOO_LARGE', `${header.sizeInBytes} bytes`);
      if (header.baseOffset !== 0n) refuse('INVALID_RECORD', `base offset ${header.baseOffset}`);
    }
  }
  const { header, records } = structural(bytes, rules.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES, rules.allowZstd);
  if ((header.attributes & CONTROL_FLAG) !== 0) refuse('INVALID_RECORD', 'control batch from a client');
  if (header.producerId >= 0n && header.baseSequence < 0) refuse('INVALID_RECORD', 'producer id without a base sequence');
  if ((header.attributes & TIMESTAMP_TYPE_FLAG) !== 0) refuse('INVALID_TIMESTAMP', 'a client batch claims LogAppendTime');
  let maxTimestamp = -1n;
  const errors: RecordError[] = [];
  records.forEach((record, index) => {
    if (record.timestamp > maxTimestamp) maxTimestamp = record.timestamp;
    if (rules.timestampType !== 'CreateTime' || record.timestamp === -1n) return;
    const now = BigInt(rules.now);
    const early = rules.timestampBeforeMaxMs !== Infinity && now - record.timestamp > BigInt(rules.timestampBeforeMaxMs);
    const late = rules.timestampAfterMaxMs !== Infinity && record.timestamp - now > BigInt(rules.timestampAfterMaxMs);
    if (early || late) errors.push({ batchIndex: index, message: `timestamp ${record.timestamp} out of range` });
  });
  if (errors.length > 0) refuse('INVALID_TIMESTAMP', 'timestamps out of range', errors);
  let logAppendTime = -1n;
  if (rules.timestampType === 'LogAppendTime') {
    logAppendTime = BigInt(rules.now);
    bytes.writeInt16BE(header.attributes | TIMESTAMP_TYPE_FLAG, ATTRIBUTES_OFFSET);
    bytes.writeBigInt64BE(logAppendTime, MAX_TIMESTAMP_OFFSET);
    writeBatchCrc(bytes);
  } else if (header.maxTimestamp !== maxTimestamp) {
    bytes.writeBigInt64BE(maxTimestamp, MAX_TIMESTAMP_OFFSET);
    writeBatchCrc(bytes);
  }
  // On a LogAppendTime topic the batch's timestamp is the append time (Kafka's maxTimestampMs = now).
  return { header: readBatchHeader(bytes), recordCount: records.length, maxTimestamp: logAppendTime === -1n ? maxTimestamp : logAppendTime, logAppendTime };
}

export const referenceValidation: BatchValidation = {
  validateProducerBatch: referenceValidateProducerBatch,
  validateStoredBatch: referenceValidateStoredBatch,
};

/** The Kafka error name a validation refuses with, or 'NONE'. */
export function outcome(action: () => unknown): string {
  try {
    action();
    return 'NONE';
  } catch (error) {
    if (error instanceof KafkaProtocolError) return error.code;
    throw error;
  }
}
