/**
 * Producer-state snapshots: `<20-digit offset>.snapshot` in the partition folder holds the
 * producer state (producer-state.ts) of every batch before that offset. Taken on every segment
 * roll (named for the new segment's base offset) and at a clean close (named for the log end).
 *
 * Format (big-endian), version 1:
 *
 *   int16   version = 1
 *   uint32  CRC-32C of every byte after this field
 *   int32   producer count
 *   per producer, by producer id:
 *     int64   producer id
 *     int16   epoch
 *     int64   last timestamp: broker clock (ms) of its last append, for producer.id.expiration.ms
 *     int8    batch count, 1..5
 *     per batch, oldest first:
 *       int32   first sequence
 *       int32   last sequence
 *       int64   first offset
 *       int32   offset delta (last offset − first offset)
 *       int64   max timestamp (the batch's MaxTimestamp as stored)
 *       int64   log append time (−1 on a CreateTime topic)
 *
 * Unlike Kafka's (which keeps only each producer's last batch and rebuilds the rest from the
 * log), the whole five-batch cache is kept: a restart then detects the same duplicates as before
 * it, with or without replay. A file that is short, long, of another version or whose checksum
 * does not match is refused whole (ProducerSnapshotCorrupt); the loader falls back to an older
 * snapshot or a replay of the log.
 *
 * Written through a temp file: the bytes go to a uniquely named `<name>.<n>.tmp` at once (the
 * state of that moment, in the page cache), then off the event loop its fsync, the rename over
 * `<name>` and the folder's fsync — a roll inside an append must not stall every partition for
 * two fsyncs. A snapshot is thus whole or absent (and a torn one fails its checksum anyway). The
 * temp name is unique, so if a topic deletion moves the folder meanwhile, the rename finds nothing
 * (ENOENT) instead of touching a new log that took the name. Leftover `.tmp` files are deleted at
 * load (partition-log.ts).
 */
import { closeSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32c } from '@node-rs/crc32';
import { TributaryError } from '../common/errors.js';
import { fsyncAsync, fsyncDirectoryAsync } from './durable-files.js';
import { BATCHES_RETAINED, type ProducerBatch, type ProducerEntry } from './producer-state.js';

export const SNAPSHOT_VERSION = 1;
const SNAPSHOT_FILE = /^(\d{20})\.snapshot$/;
const HEADER_BYTES = 2 + 4 + 4;
const ENTRY_BYTES = 8 + 2 + 8 + 1;
const BATCH_BYTES = 4 + 4 + 8 + 4 + 8 + 8;
/** The checksum covers everything from the producer count on. */
const CRC_START = 6;

export function snapshotFileName(offset: number): string {
  return `${String(offset).padStart(20, '0')}.snapshot`;
}

/** Offsets of the snapshot files in `directory`, ascending. */
export function listSnapshots(directory: string): number[] {
  let files: string[];
  try {
    files = readdirSync(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return files
    .map((file) => SNAPSHOT_FILE.exec(file)?.[1])
    .filter((offset): offset is string => offset !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

export function encodeSnapshot(entries: readonly ProducerEntry[]): Buffer {
  const size = HEADER_BYTES + entries.reduce((sum, entry) => sum + ENTRY_BYTES + entry.batches.length * BATCH_BYTES, 0);
  const bytes = Buffer.alloc(size);
  bytes.writeInt16BE(SNAPSHOT_VERSION, 0);
  bytes.writeInt32BE(entries.length, CRC_START);
  let at = HEADER_BYTES;
  for (const entry of entries) {
    at = bytes.writeBigInt64BE(entry.producerId, at);
    at = bytes.writeInt16BE(entry.epoch, at);
    at = bytes.writeBigInt64BE(BigInt(Math.trunc(entry.lastTimestamp)), at);
    at = bytes.writeInt8(entry.batches.length, at);
    for (const batch of entry.batches) {
      at = bytes.writeInt32BE(batch.firstSequence, at);
      at = bytes.writeInt32BE(batch.lastSequence, at);
      at = bytes.writeBigInt64BE(BigInt(batch.firstOffset), at);
      at = bytes.writeInt32BE(batch.lastOffset - batch.firstOffset, at);
      at = bytes.writeBigInt64BE(batch.maxTimestamp, at);
      at = bytes.writeBigInt64BE(batch.logAppendTime, at);
    }
  }
  bytes.writeUInt32BE(crc32c(bytes.subarray(CRC_START)) >>> 0, 2);
  return bytes;
}

/** Parses a snapshot taken at `offset`; throws PRODUCER_SNAPSHOT_CORRUPT on anything but a whole, valid file. */
export function decodeSnapshot(bytes: Buffer, offset: number, source: string): ProducerEntry[] {
  const corrupt = (why: string): TributaryError =>
    new TributaryError({
      code: 'PRODUCER_SNAPSHOT_CORRUPT',
      message: `producer snapshot ${source} is unusable (${why}); an older snapshot or a replay of the log is used instead`,
      details: { source, offset },
    });
  if (bytes.length < HEADER_BYTES) throw corrupt(`${bytes.length} bytes, shorter than its ${HEADER_BYTES}-byte header`);
  const version = bytes.readInt16BE(0);
  if (version !== SNAPSHOT_VERSION) throw corrupt(`version ${version}, not ${SNAPSHOT_VERSION}`);
  const crc = bytes.readUInt32BE(2);
  if ((crc32c(bytes.subarray(CRC_START)) >>> 0) !== crc) throw corrupt('checksum mismatch');
  const count = bytes.readInt32BE(CRC_START);
  if (count < 0) throw corrupt(`producer count ${count}`);
  const entries: ProducerEntry[] = [];
  let at = HEADER_BYTES;
  for (let index = 0; index < count; index += 1) {
    if (at + ENTRY_BYTES > bytes.length) throw corrupt(`producer ${index} of ${count} is cut short`);
    const producerId = bytes.readBigInt64BE(at);
    const epoch = bytes.readInt16BE(at + 8);
    const lastTimestamp = Number(bytes.readBigInt64BE(at + 10));
    const batchCount = bytes.readInt8(at + 18);
    at += ENTRY_BYTES;
    if (producerId < 0n) throw corrupt(`producer id ${producerId}`);
    if (batchCount < 1 || batchCount > BATCHES_RETAINED) throw corrupt(`producer ${producerId} holds ${batchCount} batches`);
    if (at + batchCount * BATCH_BYTES > bytes.length) throw corrupt(`the batches of producer ${producerId} are cut short`);
    const batches: ProducerBatch[] = [];
    for (let b = 0; b < batchCount; b += 1) {
      const firstOffset = Number(bytes.readBigInt64BE(at + 8));
      const offsetDelta = bytes.readInt32BE(at + 16);
      const batch: ProducerBatch = {
        firstSequence: bytes.readInt32BE(at),
        lastSequence: bytes.readInt32BE(at + 4),
        firstOffset,
        lastOffset: firstOffset + offsetDelta,
        maxTimestamp: bytes.readBigInt64BE(at + 20),
        logAppendTime: bytes.readBigInt64BE(at + 28),
      };
      at += BATCH_BYTES;
      if (firstOffset < 0 || offsetDelta < 0 || batch.lastOffset >= offset || batch.firstSequence < 0 || batch.lastSequence < 0) {
        throw corrupt(`producer ${producerId} has a batch at offsets ${firstOffset}..${batch.lastOffset}, sequences ${batch.firstSequence}..${batch.lastSequence}`);
      }
      batches.push(batch);
    }
    entries.push({ producerId, epoch, batches, lastTimestamp });
  }
  if (at !== bytes.length) throw corrupt(`${bytes.length - at} bytes after the last producer`);
  return entries;
}

let temporaryFiles = 0;

/**
 * Writes the snapshot at `offset` atomically and durably. The bytes are written before this
 * returns its promise (the caller's state may change right after); fsync, rename and the
 * folder's fsync follow asynchronously.
 */
export async function writeSnapshot(directory: string, offset: number, entries: readonly ProducerEntry[]): Promise<void> {
  const path = join(directory, snapshotFileName(offset));
  temporaryFiles += 1;
  const temporary = `${path}.${process.pid}-${temporaryFiles}.tmp`;
  const bytes = encodeSnapshot(entries);
  const fd = openSync(temporary, 'wx');
  try {
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    await fsyncAsync(fd);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  await fsyncDirectoryAsync(directory);
}

export function readSnapshot(directory: string, offset: number): ProducerEntry[] {
  const name = snapshotFileName(offset);
  return decodeSnapshot(readFileSync(join(directory, name)), offset, name);
}

export function deleteSnapshot(directory: string, offset: number): void {
  rmSync(join(directory, snapshotFileName(offset)), { force: true });
}
