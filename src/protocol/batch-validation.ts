/**
 * What a broker checks before it appends a producer's RecordBatch v2: Kafka's LogValidator rules,
 * every record of every batch included, with Tributary's "disk bytes = wire bytes" design — a
 * batch Kafka would rewrite to repair (inner offsets that are not 0, 1, 2, …) is refused instead.
 *
 * The batch grammar is in record-batch.ts, the record grammar in records.ts. In order:
 *
 *   header   exactly one batch of magic 2, BaseOffset 0, size ≤ max.message.bytes     INVALID_RECORD / MESSAGE_TOO_LARGE
 *            CRC-32C of Attributes … end                                               CORRUPT_MESSAGE
 *            LastOffsetDelta + 1 = RecordsCount > 0                                    INVALID_RECORD
 *            codec bits 0–4 only; zstd only from Produce v7                           UNSUPPORTED_COMPRESSION_TYPE
 *            no control batch; ProducerId ≥ 0 ⇒ BaseSequence ≥ 0                      INVALID_RECORD
 *            no transactional batch (transactions are not served)                      INVALID_TXN_STATE
 *            TimestampType bit clear (LogAppendTime is the broker's to set)            INVALID_TIMESTAMP
 *   records  decompressed once, at most maxDecompressedBytes (a bomb is refused)       CORRUPT_MESSAGE
 *            exactly RecordsCount records fill the section, no byte left over;
 *            each record: Length ≥ 6 and within the section, varints ≤ 5 bytes and
 *            varlongs ≤ 10, OffsetDelta = its index, key/value length −1 or ≥ 0 and
 *            within the record, HeadersCount ≥ 0, header keys non-null, the record's
 *            fields end exactly at Length                                               INVALID_RECORD (+ record_errors)
 *   keys     on a compacted topic every record has a key (the cleaner keeps values by key)   INVALID_RECORD (+ record_errors)
 *   clock    CreateTime: every record's timestamp (BaseTimestamp + delta, int64) other
 *            than −1 within [now − before.max.ms, now + after.max.ms]                  INVALID_TIMESTAMP (+ record_errors)
 *
 * Then, as Kafka does, the header's MaxTimestamp is set to the records' true maximum (CreateTime),
 * or MaxTimestamp to `now` and the TimestampType bit set (LogAppendTime), recomputing the CRC only
 * when a byte changed. Nothing here allocates per record: the records are walked in place (or in
 * the one decompressed copy) with a cursor.
 */
import { decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from './compression.js';
import { KafkaProtocolError, type RecordError } from './kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  Compression,
  COMPRESSION_MASK,
  computeBatchCrc,
  CONTROL_FLAG,
  CRC_OFFSET,
  CURRENT_MAGIC,
  MAX_TIMESTAMP_OFFSET,
  RECORD_BATCH_OVERHEAD,
  readBatchHeader,
  type RecordBatchHeader,
  TIMESTAMP_TYPE_FLAG,
  TRANSACTIONAL_FLAG,
} from './record-batch.js';

export type TimestampType = 'CreateTime' | 'LogAppendTime';

export interface BatchRules {
  /** The topic's max.message.bytes. */
  readonly maxBatchBytes: number;
  /** Produce v7+ may carry zstd (Kafka: older requests get UNSUPPORTED_COMPRESSION_TYPE). */
  readonly allowZstd: boolean;
  readonly timestampType: TimestampType;
  /** message.timestamp.before.max.ms; Infinity = no bound. */
  readonly timestampBeforeMaxMs: number;
  /** message.timestamp.after.max.ms; Infinity = no bound. */
  readonly timestampAfterMaxMs: number;
  /** The broker's clock, milliseconds since the epoch. */
  readonly now: number;
  /** Ceiling on a compressed batch's decompressed records (64 MiB by default). */
  readonly maxDecompressedBytes?: number;
  /** The topic is compacted (cleanup.policy has `compact`): a record without a key is refused, as Kafka does. */
  readonly requireKeys?: boolean;
}

export interface ValidatedBatch {
  /** The header as stored (after MaxTimestamp and attributes were set). */
  readonly header: RecordBatchHeader;
  readonly recordCount: number;
  /** The batch's MaxTimestamp as stored: the records' maximum, or the append time. Exact int64. */
  readonly maxTimestamp: bigint;
  /** The append time for a LogAppendTime topic, −1 otherwise (Produce's log_append_time_ms). */
  readonly logAppendTime: bigint;
}

/** Below this a record cannot be: attributes, two deltas, key and value lengths, header count. */
const MIN_RECORD_BODY = 6;
const NO_TIMESTAMP = -1n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Validates a producer's batch (the whole records field of one partition) for appending, and
 * sets its MaxTimestamp (and TimestampType) as Kafka does. Throws KafkaProtocolError; on a throw
 * the bytes are unchanged.
 */
export function validateProducerBatch(bytes: Buffer, rules: BatchRules): ValidatedBatch {
  const header = checkHeader(bytes, rules.maxBatchBytes);
  const codec = header.attributes & COMPRESSION_MASK;
  if (codec === Compression.zstd && !rules.allowZstd) {
    throw new KafkaProtocolError('UNSUPPORTED_COMPRESSION_TYPE', 'zstd-compressed batches need Produce v7 or later; upgrade the client or use another codec');
  }
  if ((header.attributes & TIMESTAMP_TYPE_FLAG) !== 0) {
    throw new KafkaProtocolError('INVALID_TIMESTAMP', 'the batch claims LogAppendTime; a producer must send CreateTime timestamps (the broker sets LogAppendTime)', {
      recordErrors: allRecords(header.recordsCount, 'producer set the timestamp type to LogAppendTime'),
    });
  }
  const walk = walkBatchRecords(bytes, header, rules.maxDecompressedBytes);
  if (rules.requireKeys === true && walk.keylessRecords.length > 0) {
    const shown = walk.keylessRecords.slice(0, 3);
    throw new KafkaProtocolError(
      'INVALID_RECORD',
      `compacted topic cannot accept a record without a key: ${walk.keylessRecords.length} of the batch's ${header.recordsCount} records have none (first: record ${shown.join(', ')}); give every record a key, or use cleanup.policy=delete`,
      { recordErrors: shown.map((batchIndex) => ({ batchIndex, message: 'Compacted topic cannot accept message without key' })) },
    );
  }
  if (rules.timestampType === 'CreateTime') {
    checkTimestamps(walk, header, rules);
    // Kafka's maximum starts at −1 ("no timestamp"): records all older than the epoch leave it there.
    const maxTimestamp = walk.maxTimestamp > NO_TIMESTAMP ? walk.maxTimestamp : NO_TIMESTAMP;
    if (header.maxTimestamp === maxTimestamp) return { header, recordCount: header.recordsCount, maxTimestamp, logAppendTime: -1n };
    rewriteMaxTimestamp(bytes, header.attributes, maxTimestamp);
    return { header: readBatchHeader(bytes), recordCount: header.recordsCount, maxTimestamp, logAppendTime: -1n };
  }
  const now = BigInt(Math.trunc(rules.now));
  rewriteMaxTimestamp(bytes, header.attributes | TIMESTAMP_TYPE_FLAG, now);
  // The header as stored: callers must not see the MaxTimestamp, attributes and CRC as sent.
  return { header: readBatchHeader(bytes), recordCount: header.recordsCount, maxTimestamp: now, logAppendTime: now };
}

/**
 * Structural checks of a batch as stored (recovery, tools, tests): the header rules, CRC and every
 * record, without the clock or codec-version rules. Returns the records' maximum timestamp as the
 * batch states it. Throws KafkaProtocolError.
 *
 * A stored batch may have been compacted by the log cleaner: it keeps its base and last offset but
 * fewer records (none, for a kept empty header), whose offset deltas rise with gaps up to
 * LastOffsetDelta, and its BaseTimestamp may be a delete horizon (attribute bit 6).
 */
export function validateStoredBatch(bytes: Buffer, options: { readonly maxDecompressedBytes?: number; readonly maxBatchBytes?: number } = {}): RecordBatchHeader {
  const header = checkHeader(bytes, options.maxBatchBytes ?? Number.MAX_SAFE_INTEGER, true);
  walkBatchRecords(bytes, header, options.maxDecompressedBytes, true);
  return header;
}

/** The header rules; `stored` leaves out the rules only a producer's batch must meet (base offset 0, sequence). */
function checkHeader(bytes: Buffer, maxBatchBytes: number, stored = false): RecordBatchHeader {
  if (bytes.length < RECORD_BATCH_OVERHEAD) {
    throw new KafkaProtocolError('CORRUPT_MESSAGE', `record batch of ${bytes.length} bytes is shorter than the ${RECORD_BATCH_OVERHEAD}-byte batch header`);
  }
  const header = readBatchHeader(bytes);
  if (header.magic !== CURRENT_MAGIC) {
    throw new KafkaProtocolError(
      'INVALID_RECORD',
      `record batch has magic ${header.magic}; only magic 2 (RecordBatch v2) is accepted — upgrade the client or set its message format to v2`,
    );
  }
  if (header.sizeInBytes !== bytes.length) {
    const truncated = header.sizeInBytes > bytes.length;
    throw new KafkaProtocolError(
      truncated ? 'CORRUPT_MESSAGE' : 'INVALID_RECORD',
      truncated
        ? `record batch declares ${header.sizeInBytes} bytes but only ${bytes.length} arrived (truncated)`
        : `records hold ${bytes.length} bytes but the batch declares ${header.sizeInBytes}: exactly one batch per partition is accepted`,
      { details: { declared: header.sizeInBytes, received: bytes.length } },
    );
  }
  if (header.sizeInBytes > maxBatchBytes) {
    throw new KafkaProtocolError('MESSAGE_TOO_LARGE', `record batch of ${header.sizeInBytes} bytes exceeds the topic's max.message.bytes of ${maxBatchBytes}`, {
      details: { size: header.sizeInBytes, limit: maxBatchBytes },
    });
  }
  if (!stored && header.baseOffset !== 0n) {
    throw new KafkaProtocolError('INVALID_RECORD', `record batch from a producer must have base offset 0, not ${header.baseOffset}`);
  }
  const crc = computeBatchCrc(bytes, 0, bytes.length);
  if (crc !== header.crc) {
    throw new KafkaProtocolError(
      'CORRUPT_MESSAGE',
      `record batch CRC-32C mismatch: stored ${header.crc.toString(16)}, computed ${crc.toString(16)}; the batch was damaged in transit`,
    );
  }
  const countFits = stored
    ? header.recordsCount >= 0 && header.lastOffsetDelta >= 0 && header.recordsCount <= header.lastOffsetDelta + 1
    : header.recordsCount > 0 && header.lastOffsetDelta + 1 === header.recordsCount;
  if (!countFits) {
    throw new KafkaProtocolError(
      'INVALID_RECORD',
      `record batch count ${header.recordsCount} does not match last offset delta ${header.lastOffsetDelta} + 1 (a batch holds at least one record)`,
    );
  }
  const codec = header.attributes & COMPRESSION_MASK;
  if (codec > Compression.zstd) {
    throw new KafkaProtocolError('UNSUPPORTED_COMPRESSION_TYPE', `record batch uses compression codec ${codec}; Kafka defines 0–4 (none, gzip, snappy, lz4, zstd)`);
  }
  if ((header.attributes & CONTROL_FLAG) !== 0) {
    throw new KafkaProtocolError('INVALID_RECORD', 'clients may not write control batches');
  }
  if ((header.attributes & TRANSACTIONAL_FLAG) !== 0) {
    throw new KafkaProtocolError('INVALID_TXN_STATE', 'transactional batches are refused: Tributary does not serve transactions; produce without a transactional.id');
  }
  if (!stored && header.producerId >= 0n && header.baseSequence < 0) {
    throw new KafkaProtocolError('INVALID_RECORD', `producer id ${header.producerId} with a negative base sequence ${header.baseSequence}`);
  }
  return header;
}

/** What a walk over the records learned. */
interface RecordsWalk {
  /** The records section the walk read (the batch itself, or its decompressed copy). */
  readonly section: Buffer;
  readonly start: number;
  /** Largest record timestamp, int64. */
  readonly maxTimestamp: bigint;
  readonly minTimestamp: bigint;
  /** Indexes of the records whose key is null. */
  readonly keylessRecords: readonly number[];
}

/** Walks every record; throws INVALID_RECORD (with the record's index) at the first one that does not parse. */
function walkBatchRecords(bytes: Buffer, header: RecordBatchHeader, maxDecompressedBytes = DEFAULT_MAX_DECOMPRESSED_BYTES, compacted = false): RecordsWalk {
  const codec = header.attributes & COMPRESSION_MASK;
  let section = bytes;
  let start = RECORD_BATCH_OVERHEAD;
  if (codec !== Compression.none) {
    // The one copy validation makes: the records of a compressed batch exist nowhere else.
    section = decompress(codec, bytes.subarray(RECORD_BATCH_OVERHEAD), maxDecompressedBytes);
    start = 0;
  }
  const cursor = new RecordCursor(section, start, section.length, compacted ? header.lastOffsetDelta : undefined);
  const count = header.recordsCount;
  if (count > (section.length - start) / (MIN_RECORD_BODY + 1)) {
    throw new KafkaProtocolError('INVALID_RECORD', `record batch declares ${count} records but its ${section.length - start} bytes of records hold at most ${Math.floor((section.length - start) / (MIN_RECORD_BODY + 1))}`, {
      recordErrors: [{ batchIndex: 0, message: 'the batch cannot hold the records it declares' }],
    });
  }
  for (let index = 0; index < count; index += 1) cursor.record(index);
  if (cursor.position !== section.length) {
    throw new KafkaProtocolError('INVALID_RECORD', `record batch has ${section.length - cursor.position} bytes after its last (${count}th) record: the declared count is wrong or the batch is damaged`);
  }
  return { section, start, keylessRecords: cursor.keylessRecords, ...timestampRange(section, start, header, cursor) };
}

/**
 * The smallest and largest record timestamp. From the deltas' extremes when no sum can leave
 * int64 (always, for real clients); otherwise record by record with Java's wrap-around.
 */
function timestampRange(section: Buffer, start: number, header: RecordBatchHeader, cursor: RecordCursor): { minTimestamp: bigint; maxTimestamp: bigint } {
  const base = header.baseTimestamp;
  // A compacted batch kept as an empty header: its MaxTimestamp is all that is left.
  if (header.recordsCount === 0) return { minTimestamp: header.maxTimestamp, maxTimestamp: header.maxTimestamp };
  if (!cursor.sawLargeDelta) {
    const low = base + BigInt(cursor.minDelta);
    const high = base + BigInt(cursor.maxDelta);
    if (low >= INT64_MIN && high <= INT64_MAX) return { minTimestamp: low, maxTimestamp: high };
  }
  let minTimestamp = INT64_MAX;
  let maxTimestamp = INT64_MIN;
  forEachTimestamp({ section, start }, header, (_index, timestamp) => {
    if (timestamp < minTimestamp) minTimestamp = timestamp;
    if (timestamp > maxTimestamp) maxTimestamp = timestamp;
  });
  return { minTimestamp, maxTimestamp };
}

/**
 * A cursor over records back to back, tracking the smallest and largest timestamp delta.
 * Deltas up to 2^53 are numbers; larger ones (hostile or exotic) are kept as int64 timestamps.
 */
class RecordCursor {
  maxDelta = -Infinity;
  minDelta = Infinity;
  /** A delta beyond 2^48 was seen: the extremes are then computed record by record. */
  sawLargeDelta = false;
  readonly keylessRecords: number[] = [];
  private index = 0;
  private limit: number;
  private previousOffsetDelta = -1;

  /** `lastOffsetDelta` set: a stored batch, whose deltas may have gaps left by compaction. */
  constructor(
    private readonly bytes: Buffer,
    public position: number,
    private readonly end: number,
    private readonly lastOffsetDelta?: number,
  ) {
    this.limit = end;
  }

  record(index: number): void {
    this.index = index;
    this.limit = this.end;
    const length = this.varint('record length');
    if (length < MIN_RECORD_BODY || length > this.end - this.position) {
      this.fail(`declares a length of ${length} bytes but ${this.end - this.position} remain in the batch (a record is at least ${MIN_RECORD_BODY})`);
    }
    const recordEnd = this.position + length;
    this.limit = recordEnd;
    this.position += 1; // attributes: unused by magic 2, any value (as Kafka)
    this.timestampDelta();
    const offsetDelta = this.varint('offset delta');
    if (this.lastOffsetDelta === undefined) {
      if (offsetDelta !== index) this.fail(`has offset delta ${offsetDelta}; the records of a batch are numbered 0, 1, 2, … (expected ${index})`);
    } else if (offsetDelta <= this.previousOffsetDelta || offsetDelta > this.lastOffsetDelta) {
      this.fail(`has offset delta ${offsetDelta}; a compacted batch's deltas rise from ${this.previousOffsetDelta + 1} up to its last offset delta ${this.lastOffsetDelta}`);
    }
    this.previousOffsetDelta = offsetDelta;
    if (this.skipBytes('key') === -1) this.keylessRecords.push(index);
    this.skipBytes('value');
    const headers = this.varint('headers count');
    if (headers < 0 || headers > (recordEnd - this.position) / 2) this.fail(`declares ${headers} headers in its ${recordEnd - this.position} remaining bytes`);
    for (let header = 0; header < headers; header += 1) {
      const keyLength = this.varint('header key length');
      if (keyLength < 0) this.fail(`header ${header} has a null or negative key length ${keyLength}`);
      this.skip(keyLength, `header ${header} key`);
      this.skipBytes(`header ${header} value`);
    }
    if (this.position !== recordEnd) this.fail(`declares ${length} bytes but its fields end ${recordEnd - this.position} bytes earlier`);
  }

  /** Skips a nullable byte field; returns its length (−1 for null). */
  private skipBytes(what: string): number {
    const length = this.varint(`${what} length`);
    if (length === -1) return length;
    if (length < -1) this.fail(`has ${what} length ${length}; only −1 (null) or a size is valid`);
    this.skip(length, what);
    return length;
  }

  private skip(length: number, what: string): void {
    if (length > this.limit - this.position) this.fail(`${what} of ${length} bytes runs past the end of the record`);
    this.position += length;
  }

  /** Zig-zag varint of at most 5 bytes (int32). */
  private varint(what: string): number {
    const bytes = this.bytes;
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.position >= this.limit) this.fail(`${what} runs past the end of the ${this.limit === this.end ? 'batch' : 'record'}`);
      const byte = bytes[this.position++] as number;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return (value >>> 1) ^ -(value & 1);
    }
    return this.fail(`${what} is a varint longer than 5 bytes`);
  }

  /** Zig-zag varlong of at most 10 bytes; tracks the min and max of the small ones. */
  private timestampDelta(): void {
    const bytes = this.bytes;
    const start = this.position;
    // Up to 7 bytes (49 bits) the zig-zag value is exact in a double.
    let value = 0;
    let scale = 1;
    for (let count = 0; count < 7; count += 1) {
      if (this.position >= this.limit) this.fail('timestamp delta runs past the end of the record');
      const byte = bytes[this.position++] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        const delta = value % 2 === 0 ? value / 2 : -(value + 1) / 2;
        if (delta > this.maxDelta) this.maxDelta = delta;
        if (delta < this.minDelta) this.minDelta = delta;
        return;
      }
      scale *= 128;
    }
    // Longer: only its length is checked here (up to 10 bytes); its value is read if needed.
    for (let count = 7; count < 10; count += 1) {
      if (this.position >= this.limit) this.fail('timestamp delta runs past the end of the record');
      if ((bytes[this.position++] as number) < 0x80) {
        this.sawLargeDelta = true;
        return;
      }
    }
    this.position = start;
    this.fail('timestamp delta is a varlong longer than 10 bytes');
  }

  private fail(problem: string): never {
    const message = `record ${this.index} ${problem}`;
    throw new KafkaProtocolError('INVALID_RECORD', `invalid record in batch: ${message}`, { recordErrors: [{ batchIndex: this.index, message }] });
  }
}

/**
 * CreateTime bounds. The batch's minimum and maximum decide in the common case; only when one is
 * out of range are the records walked again to name every offender (−1, "no timestamp", is exempt).
 */
function checkTimestamps(walk: RecordsWalk, header: RecordBatchHeader, rules: BatchRules): void {
  const before = rules.timestampBeforeMaxMs;
  const after = rules.timestampAfterMaxMs;
  if (before === Infinity && after === Infinity) return;
  const now = BigInt(Math.trunc(rules.now));
  const earliest = before === Infinity ? INT64_MIN : now - BigInt(before);
  const latest = after === Infinity ? INT64_MAX : now + BigInt(after);
  if (walk.minTimestamp >= earliest && walk.maxTimestamp <= latest) return;
  const errors: RecordError[] = [];
  forEachTimestamp(walk, header, (index, timestamp) => {
    if (timestamp === NO_TIMESTAMP || (timestamp >= earliest && timestamp <= latest)) return;
    errors.push({ batchIndex: index, message: `timestamp ${timestamp} is out of range: it should be within [${earliest}, ${latest}]` });
  });
  if (errors.length === 0) return;
  const first = errors.slice(0, 3).map((error) => `record ${error.batchIndex}: ${error.message}`).join('; ');
  throw new KafkaProtocolError(
    'INVALID_TIMESTAMP',
    `${errors.length} of ${header.recordsCount} records have timestamps outside the topic's bounds (message.timestamp.before.max.ms=${before}, after.max.ms=${after}, broker time ${now}): ${first}`,
    { recordErrors: errors },
  );
}

/** Every record's timestamp, for the slow path of a refusal (the walk already proved the records parse). */
function forEachTimestamp(walk: Pick<RecordsWalk, 'section' | 'start'>, header: RecordBatchHeader, visit: (index: number, timestamp: bigint) => void): void {
  const bytes = walk.section;
  let position = walk.start;
  for (let index = 0; index < header.recordsCount; index += 1) {
    const [length, afterLength] = readVarlong(bytes, position);
    const [delta] = readVarlong(bytes, afterLength + 1);
    // BaseTimestamp + delta with Java's int64 wrap-around, which is what every Kafka client reads.
    visit(index, BigInt.asIntN(64, header.baseTimestamp + delta));
    position = afterLength + Number(length);
  }
}

/** A zig-zag varlong at `position` of bytes known to be valid; returns it and the next position. */
function readVarlong(bytes: Buffer, position: number): [bigint, number] {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    const byte = bytes[position++] as number;
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return [BigInt.asIntN(64, (value >> 1n) ^ -(value & 1n)), position];
    shift += 7n;
  }
}

/** Sets MaxTimestamp and Attributes, and the CRC that covers them, only if a byte changes. */
function rewriteMaxTimestamp(bytes: Buffer, attributes: number, maxTimestamp: bigint): void {
  if (bytes.readBigInt64BE(MAX_TIMESTAMP_OFFSET) === maxTimestamp && bytes.readInt16BE(ATTRIBUTES_OFFSET) === attributes) return;
  bytes.writeInt16BE(attributes, ATTRIBUTES_OFFSET);
  bytes.writeBigInt64BE(maxTimestamp, MAX_TIMESTAMP_OFFSET);
  bytes.writeUInt32BE(computeBatchCrc(bytes, 0, bytes.length), CRC_OFFSET);
}

function allRecords(count: number, message: string): RecordError[] {
  const errors: RecordError[] = [];
  for (let index = 0; index < Math.min(count, 1000); index += 1) errors.push({ batchIndex: index, message });
  return errors;
}
