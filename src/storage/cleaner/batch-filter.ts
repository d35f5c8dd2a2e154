/**
 * What the cleaner keeps of one stored RecordBatch v2 (Kafka's `MemoryRecords.filterTo` with the
 * cleaner's `shouldRetainRecord`), as bytes to write in its place, or nothing.
 *
 * A record is kept when it is past the key map's end, or its key's latest offset in the map is not
 * later than its own, and it is not a tombstone whose delete horizon has passed. Records without a
 * key are dropped (a compacted topic refuses them; older data may hold some).
 *
 * A kept batch keeps its base offset, last offset (LastOffsetDelta), partition leader epoch,
 * producer id, epoch, base sequence, attributes and codec (not the level); its MaxTimestamp becomes
 * its kept records' newest (CreateTime; LogAppendTime keeps it), as Kafka's cleaner rebuilds it; its
 * records keep their offset deltas, timestamps, keys, values and headers. When nothing is removed
 * and no horizon is to be set, the original bytes are kept (a compressed batch is not recompressed).
 *
 * Delete horizon (KIP-534): a kept batch holding a tombstone and no horizon yet gets attribute bit 6
 * (0x40) and BaseTimestamp = now + delete.retention.ms, its records' timestamp deltas recomputed
 * so every record's timestamp is unchanged. A later pass drops its tombstones once now ≥ horizon.
 *
 * A batch left with no record is dropped, unless the caller must keep it (a producer's last batch,
 * or the last batch of a segment group): then it is written as a header alone, with no records,
 * no codec and BaseTimestamp −1, which still names its offsets and producer sequence.
 */
import { compress, compressionName, decompress } from '../../protocol/compression.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_LENGTH_OFFSET,
  COMPRESSION_MASK,
  CONTROL_FLAG,
  LOG_OVERHEAD,
  MAX_TIMESTAMP_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT_OFFSET,
  TIMESTAMP_TYPE_FLAG,
  readBatchHeader,
  writeBatchCrc,
  type RecordBatchHeader,
} from '../../protocol/record-batch.js';
import { ByteReader, varlongSize, writeVarint, writeVarlong } from '../../protocol/varint.js';
import { KeyOffsetMap } from './key-offset-map.js';

/** Attribute bit 6: BaseTimestamp holds the batch's delete horizon (KIP-534). */
export const DELETE_HORIZON_FLAG = 0x40;

export interface RetentionRules {
  readonly map: KeyOffsetMap;
  /** Records after this offset are past what the map covers and are all kept. */
  readonly mapEnd: number;
  readonly now: number;
  readonly deleteRetentionMs: number;
  /** Keep the batch as a header even when no record survives. */
  readonly keepEmpty: boolean;
}

export interface FilteredBatch {
  /** What to write in the batch's place; undefined to drop it. */
  readonly bytes: Buffer | undefined;
  readonly keptRecords: number;
  readonly removedRecords: number;
  readonly keylessRecords: number;
  /** The delete horizon of the kept batch when it keeps tombstones (a later pass drops them then). */
  readonly tombstoneHorizon: number | undefined;
}

/** One record of a batch: where its bytes are, and what the filter needs of it. */
interface RecordSpan {
  readonly start: number;
  /** Where the fields after the timestamp delta start (offset delta onwards). */
  readonly afterTimestamp: number;
  readonly end: number;
  readonly attributes: number;
  readonly timestampDelta: number;
  readonly offsetDelta: number;
  readonly key: Buffer | null;
  readonly tombstone: boolean;
}

/** The records of a stored batch and the buffer they are in (the decompressed copy, or the batch). */
function recordSpans(batch: Buffer, header: RecordBatchHeader): { section: Buffer; spans: RecordSpan[] } {
  const codec = header.attributes & COMPRESSION_MASK;
  const payload = batch.subarray(RECORD_BATCH_OVERHEAD, header.sizeInBytes);
  const section = codec === 0 || header.recordsCount === 0 ? payload : decompress(codec, payload);
  const spans: RecordSpan[] = [];
  const reader = new ByteReader(section, 0, section.length);
  for (let index = 0; index < header.recordsCount; index += 1) {
    const length = reader.varint('record length');
    const start = reader.position;
    const end = start + length;
    const record = new ByteReader(section, start, end);
    const attributes = record.int8('record attributes');
    const timestampDelta = record.varlong('timestamp delta');
    const afterTimestamp = record.position;
    const offsetDelta = record.varint('offset delta');
    const key = record.bytesOrNull(record.varint('key length'), 'key');
    const valueLength = record.varint('value length');
    spans.push({ start, afterTimestamp, end, attributes, timestampDelta, offsetDelta, key, tombstone: valueLength < 0 });
    reader.position = end;
  }
  return { section, spans };
}

/** Filters one stored batch by the rules; control batches are the caller's business (kept whole). */
export function filterBatch(batch: Buffer, rules: RetentionRules): FilteredBatch {
  const header = readBatchHeader(batch);
  if ((header.attributes & CONTROL_FLAG) !== 0) return { bytes: batch, keptRecords: 0, removedRecords: 0, keylessRecords: 0, tombstoneHorizon: undefined };
  const baseOffset = Number(header.baseOffset);
  const hasHorizon = (header.attributes & DELETE_HORIZON_FLAG) !== 0;
  const { section, spans } = recordSpans(batch, header);
  const kept: RecordSpan[] = [];
  let keyless = 0;
  let needsHorizon = false;
  let keepsTombstone = false;
  for (const span of spans) {
    const offset = baseOffset + span.offsetDelta;
    if (offset > rules.mapEnd) {
      kept.push(span);
      continue;
    }
    if (span.key === null) {
      keyless += 1;
      continue;
    }
    const latest = rules.map.get(KeyOffsetMap.digest(span.key));
    if (offset < latest) continue;
    if (span.tombstone) {
      if (hasHorizon && rules.now >= Number(header.baseTimestamp)) continue;
      if (!hasHorizon) needsHorizon = true;
      keepsTombstone = true;
    }
    kept.push(span);
  }
  const removed = spans.length - kept.length;
  const horizon = needsHorizon ? BigInt(rules.now + rules.deleteRetentionMs) : undefined;
  const tombstoneHorizon = keepsTombstone ? Number(horizon ?? header.baseTimestamp) : undefined;
  const result = (bytes: Buffer | undefined): FilteredBatch => ({ bytes, keptRecords: kept.length, removedRecords: removed, keylessRecords: keyless, tombstoneHorizon });
  if (removed === 0 && !needsHorizon) return result(batch);
  if (kept.length === 0) return result(rules.keepEmpty ? emptyHeader(batch, header) : undefined);
  return result(rebuild(batch, header, section, kept, horizon));
}

/** The batch with only `kept` records, re-based on `horizon` when one is set. */
function rebuild(batch: Buffer, header: RecordBatchHeader, section: Buffer, kept: readonly RecordSpan[], horizon: bigint | undefined): Buffer {
  const shift = horizon === undefined ? 0 : Number(header.baseTimestamp - horizon);
  const parts: Buffer[] = [];
  for (const span of kept) {
    const timestampDelta = span.timestampDelta + shift;
    const bodyLength = 1 + varlongSize(timestampDelta) + (span.end - span.afterTimestamp);
    const record = Buffer.allocUnsafe(5 + bodyLength);
    let position = writeVarint(record, 0, bodyLength);
    record.writeInt8(span.attributes, position);
    position = writeVarlong(record, position + 1, timestampDelta);
    position += section.copy(record, position, span.afterTimestamp, span.end);
    parts.push(record.subarray(0, position));
  }
  const codec = header.attributes & COMPRESSION_MASK;
  const plain = Buffer.concat(parts);
  const records = codec === 0 ? plain : compress(compressionName(codec), plain);
  const rebuilt = Buffer.concat([batch.subarray(0, RECORD_BATCH_OVERHEAD), records]);
  rebuilt.writeInt32BE(rebuilt.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  rebuilt.writeInt32BE(kept.length, RECORDS_COUNT_OFFSET);
  if (horizon !== undefined) {
    rebuilt.writeInt16BE(header.attributes | DELETE_HORIZON_FLAG, ATTRIBUTES_OFFSET);
    rebuilt.writeBigInt64BE(horizon, BASE_TIMESTAMP_OFFSET);
  }
  if ((header.attributes & TIMESTAMP_TYPE_FLAG) === 0) {
    // The kept records' newest (CreateTime), as Kafka's cleaner rebuilds a batch: the time index
    // and ListOffsets read it, and kafka-dump-log.sh checks it against the records.
    const newest = kept.reduce((max, span) => Math.max(max, span.timestampDelta), -Infinity);
    rebuilt.writeBigInt64BE(header.baseTimestamp + BigInt(newest), MAX_TIMESTAMP_OFFSET);
  }
  writeBatchCrc(rebuilt);
  return rebuilt;
}

/** The header alone: offsets, producer and sequence kept, no records, no codec, BaseTimestamp −1. */
function emptyHeader(batch: Buffer, header: RecordBatchHeader): Buffer {
  const empty = Buffer.from(batch.subarray(0, RECORD_BATCH_OVERHEAD));
  empty.writeInt32BE(RECORD_BATCH_OVERHEAD - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  empty.writeInt32BE(0, RECORDS_COUNT_OFFSET);
  empty.writeInt16BE(header.attributes & ~COMPRESSION_MASK & ~DELETE_HORIZON_FLAG, ATTRIBUTES_OFFSET);
  empty.writeBigInt64BE(-1n, BASE_TIMESTAMP_OFFSET);
  writeBatchCrc(empty);
  return empty;
}

/** The keys of a batch's records with their offsets, for building the key map (keyless records skipped). */
export function keyedOffsets(batch: Buffer): { readonly key: Buffer; readonly offset: number }[] {
  const header = readBatchHeader(batch);
  if ((header.attributes & CONTROL_FLAG) !== 0) return [];
  const baseOffset = Number(header.baseOffset);
  return recordSpans(batch, header).spans.flatMap((span) => (span.key === null ? [] : [{ key: span.key, offset: baseOffset + span.offsetDelta }]));
}
