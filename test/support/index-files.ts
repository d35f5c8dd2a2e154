/**
 * Segment index files as tests see them: a checker of Kafka's convention (what
 * kafka-dump-log.sh --verify-index-only checks, plus our entry at position 0), and a writer of
 * the convention of versions before it (base offsets), to test that data dirs they left are read.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BATCH_LENGTH_OFFSET, LAST_OFFSET_DELTA_OFFSET, LOG_OVERHEAD, MAX_TIMESTAMP_OFFSET, RECORDS_COUNT_OFFSET } from '../../src/protocol/record-batch.js';

export interface StoredBatchTimes {
  readonly position: number;
  readonly size: number;
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly maxTimestamp: bigint;
}

/** The batches laid end to end in a segment file's bytes, with their header's MaxTimestamp (−1 when they hold no record). */
export function segmentBatches(bytes: Buffer): StoredBatchTimes[] {
  const batches: StoredBatchTimes[] = [];
  for (let position = 0; position + LOG_OVERHEAD <= bytes.length; ) {
    const size = bytes.readInt32BE(position + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
    const baseOffset = Number(bytes.readBigInt64BE(position));
    batches.push({
      position,
      size,
      baseOffset,
      lastOffset: baseOffset + bytes.readInt32BE(position + LAST_OFFSET_DELTA_OFFSET),
      maxTimestamp: bytes.readInt32BE(position + RECORDS_COUNT_OFFSET) === 0 ? -1n : bytes.readBigInt64BE(position + MAX_TIMESTAMP_OFFSET),
    });
    position += size;
  }
  return batches;
}

function segmentNames(folder: string): string[] {
  return readdirSync(folder)
    .filter((name) => name.endsWith('.log'))
    .sort()
    .map((name) => name.slice(0, 20));
}

/**
 * What is wrong with the index files of every segment in `folder` by Kafka's convention: each
 * offset entry must name the last offset of the batch at its position, the first be at position
 * 0; time entries' timestamps must strictly increase, and each must name the last offset of a
 * batch whose max timestamp it is, every batch before that one being older. Empty when all hold.
 */
export function kafkaIndexProblems(folder: string): string[] {
  const problems: string[] = [];
  for (const name of segmentNames(folder)) {
    const base = Number(name);
    const batches = segmentBatches(readFileSync(join(folder, `${name}.log`)));
    const byPosition = new Map(batches.map((batch) => [batch.position, batch]));
    const offsets = readFileSync(join(folder, `${name}.index`));
    if (offsets.length % 8 !== 0) problems.push(`${name}.index: ${offsets.length} bytes`);
    if (batches.length > 0 && (offsets.length < 8 || offsets.readInt32BE(4) !== 0)) problems.push(`${name}.index: no entry at position 0`);
    for (let at = 0; at + 8 <= offsets.length; at += 8) {
      const offset = base + offsets.readInt32BE(at);
      const position = offsets.readInt32BE(at + 4);
      const batch = byPosition.get(position);
      if (batch?.lastOffset !== offset) problems.push(`${name}.index: entry (${offset}, ${position}) but the batch there ends at ${batch?.lastOffset ?? 'no batch'}`);
    }
    const times = readFileSync(join(folder, `${name}.timeindex`));
    if (times.length % 12 !== 0) problems.push(`${name}.timeindex: ${times.length} bytes`);
    let previous = -1n;
    for (let at = 0; at + 12 <= times.length; at += 12) {
      const timestamp = times.readBigInt64BE(at);
      const offset = base + times.readInt32BE(at + 8);
      if (timestamp <= previous) problems.push(`${name}.timeindex: timestamp ${timestamp} after ${previous}`);
      previous = timestamp;
      const holder = batches.findIndex((batch) => batch.lastOffset === offset);
      if (holder < 0) {
        problems.push(`${name}.timeindex: entry (${timestamp}, ${offset}) names no batch's last offset`);
        continue;
      }
      if (batches[holder]?.maxTimestamp !== timestamp) problems.push(`${name}.timeindex: entry (${timestamp}, ${offset}) but that batch's max is ${batches[holder]?.maxTimestamp}`);
      const newer = batches.slice(0, holder).find((batch) => batch.maxTimestamp >= timestamp);
      if (newer !== undefined) problems.push(`${name}.timeindex: entry (${timestamp}, ${offset}) but the earlier batch at ${newer.baseOffset} already holds ${newer.maxTimestamp}`);
    }
  }
  return problems;
}

/**
 * Rewrites the index files of every segment in `folder` as versions before Kafka's convention
 * wrote them: an entry for the first batch after every `indexIntervalBytes` bytes (never the
 * batch at position 0) naming its BASE offset, and a time entry with each (the max timestamp so
 * far, the same base offset). Returns how many segments it rewrote, and how many of them got no
 * entry (less than `indexIntervalBytes` before their last batch).
 */
export function writeEarlierConventionIndexes(folder: string, indexIntervalBytes: number): { segments: number; empty: number } {
  const names = segmentNames(folder);
  let empty = 0;
  for (const name of names) {
    const base = Number(name);
    const offsets: Buffer[] = [];
    const times: Buffer[] = [];
    let sinceEntry = 0;
    let maxTimestamp = -1n;
    for (const batch of segmentBatches(readFileSync(join(folder, `${name}.log`)))) {
      if (batch.maxTimestamp > maxTimestamp) maxTimestamp = batch.maxTimestamp;
      if (sinceEntry >= indexIntervalBytes && batch.position > 0) {
        const entry = Buffer.alloc(8);
        entry.writeInt32BE(batch.baseOffset - base, 0);
        entry.writeInt32BE(batch.position, 4);
        offsets.push(entry);
        const timeEntry = Buffer.alloc(12);
        timeEntry.writeBigInt64BE(maxTimestamp, 0);
        timeEntry.writeInt32BE(batch.baseOffset - base, 8);
        times.push(timeEntry);
        sinceEntry = 0;
      }
      sinceEntry += batch.size;
    }
    writeFileSync(join(folder, `${name}.index`), Buffer.concat(offsets));
    writeFileSync(join(folder, `${name}.timeindex`), Buffer.concat(times));
    if (offsets.length === 0) empty += 1;
  }
  return { segments: names.length, empty };
}
