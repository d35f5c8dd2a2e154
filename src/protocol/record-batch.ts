/**
 * RecordBatch v2 (magic 2) header: reading, its CRC, and the base-offset rewrite (validation for
 * append is in batch-validation.ts).
 *
 * Wire grammar (big-endian; positions from the batch start), after Kafka's DefaultRecordBatch:
 *
 *   RecordBatch =
 *     BaseOffset            int64   0   assigned by the broker; not covered by the CRC
 *     BatchLength           int32   8   bytes after this field (batch size − 12)
 *     PartitionLeaderEpoch  int32  12   not covered by the CRC
 *     Magic                 int8   16   2
 *     CRC                   uint32 17   CRC-32C (Castagnoli) of bytes 21 … end of batch
 *     Attributes            int16  21   bits 0–2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
 *                                       4 zstd), bit 3 timestamp type, bit 4 transactional,
 *                                       bit 5 control
 *     LastOffsetDelta       int32  23   records count − 1
 *     BaseTimestamp         int64  27
 *     MaxTimestamp          int64  35
 *     ProducerId            int64  43
 *     ProducerEpoch         int16  51
 *     BaseSequence          int32  53
 *     RecordsCount          int32  57
 *     Records               bytes  61   records back to back, or one compressed blob of them
 *
 * Only the 8-byte BaseOffset changes between what a producer sends and what is stored and served,
 * and the CRC does not cover it, so a stored batch is the producer's bytes.
 */
import { crc32c } from '@node-rs/crc32';

export const BASE_OFFSET_OFFSET = 0;
export const BATCH_LENGTH_OFFSET = 8;
export const PARTITION_LEADER_EPOCH_OFFSET = 12;
export const MAGIC_OFFSET = 16;
export const CRC_OFFSET = 17;
export const ATTRIBUTES_OFFSET = 21;
export const LAST_OFFSET_DELTA_OFFSET = 23;
export const BASE_TIMESTAMP_OFFSET = 27;
export const MAX_TIMESTAMP_OFFSET = 35;
export const PRODUCER_ID_OFFSET = 43;
export const PRODUCER_EPOCH_OFFSET = 51;
export const BASE_SEQUENCE_OFFSET = 53;
export const RECORDS_COUNT_OFFSET = 57;
/** Size of the header, and of the smallest possible batch (no records). */
export const RECORD_BATCH_OVERHEAD = 61;
/** BaseOffset + BatchLength: the bytes that precede what BatchLength counts. */
export const LOG_OVERHEAD = 12;
export const CURRENT_MAGIC = 2;

export const COMPRESSION_MASK = 0x07;
export const TIMESTAMP_TYPE_FLAG = 0x08;
export const TRANSACTIONAL_FLAG = 0x10;
export const CONTROL_FLAG = 0x20;

export const Compression = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;
export type CompressionName = keyof typeof Compression;

export interface RecordBatchHeader {
  readonly baseOffset: bigint;
  /** Whole batch size in bytes, BatchLength + 12. */
  readonly sizeInBytes: number;
  readonly partitionLeaderEpoch: number;
  readonly magic: number;
  readonly crc: number;
  readonly attributes: number;
  readonly lastOffsetDelta: number;
  readonly baseTimestamp: bigint;
  readonly maxTimestamp: bigint;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly recordsCount: number;
}

/** Reads the header of the batch at `position`; the caller ensures 61 bytes are there. */
export function readBatchHeader(bytes: Buffer, position = 0): RecordBatchHeader {
  return {
    baseOffset: bytes.readBigInt64BE(position + BASE_OFFSET_OFFSET),
    sizeInBytes: bytes.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD,
    partitionLeaderEpoch: bytes.readInt32BE(position + PARTITION_LEADER_EPOCH_OFFSET),
    magic: bytes.readInt8(position + MAGIC_OFFSET),
    crc: bytes.readUInt32BE(position + CRC_OFFSET),
    attributes: bytes.readInt16BE(position + ATTRIBUTES_OFFSET),
    lastOffsetDelta: bytes.readInt32BE(position + LAST_OFFSET_DELTA_OFFSET),
    baseTimestamp: bytes.readBigInt64BE(position + BASE_TIMESTAMP_OFFSET),
    maxTimestamp: bytes.readBigInt64BE(position + MAX_TIMESTAMP_OFFSET),
    producerId: bytes.readBigInt64BE(position + PRODUCER_ID_OFFSET),
    producerEpoch: bytes.readInt16BE(position + PRODUCER_EPOCH_OFFSET),
    baseSequence: bytes.readInt32BE(position + BASE_SEQUENCE_OFFSET),
    recordsCount: bytes.readInt32BE(position + RECORDS_COUNT_OFFSET),
  };
}

/** CRC-32C over Attributes … end of the batch that spans `bytes[position, position + size)`. */
export function computeBatchCrc(bytes: Buffer, position: number, size: number): number {
  return crc32c(bytes.subarray(position + ATTRIBUTES_OFFSET, position + size)) >>> 0;
}

/** Writes the CRC of the batch at `position` (used when building batches). */
export function writeBatchCrc(bytes: Buffer, position = 0): void {
  const size = bytes.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
  bytes.writeUInt32BE(computeBatchCrc(bytes, position, size), position + CRC_OFFSET);
}

/** Rewrites BaseOffset in place; the CRC stays valid because it does not cover that field. */
export function setBaseOffset(bytes: Buffer, baseOffset: bigint, position = 0): void {
  bytes.writeBigInt64BE(baseOffset, position + BASE_OFFSET_OFFSET);
}
