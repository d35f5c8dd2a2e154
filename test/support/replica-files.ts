/**
 * Invariant I6 ("strong ISR", replication.md §4 and §6): after the faults heal, every replica in
 * the ISR holds the same batches below the high watermark. Checked offline, from the files: each
 * broker keeps a partition in `<dataDir>/<topic>-<partition>/<20-digit base offset>.log`, RecordBatch
 * v2 bytes back to back, so the batches of each replica can be listed and compared batch by batch
 * (base offset, last offset, size, leader epoch, CRC, and the bytes themselves).
 *
 * The files are read as they are (no recovery): a replica's log is its batches in segment order up
 * to the first bytes that are not a whole batch. Damage above the high watermark (an unflushed
 * tail cut by a kill) is allowed; below it, it shows as a replica that is short or corrupt.
 * Reading a running broker's files is fine: it only appends.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  computeBatchCrc,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  readBatchHeader,
  RECORD_BATCH_OVERHEAD,
} from '../../src/protocol/record-batch.js';

/** One stored batch as a replica holds it. */
export interface ReplicaBatch {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly partitionLeaderEpoch: number;
  /** The CRC-32C stored in the header. */
  readonly crc: number;
  /** Whether the stored CRC matches the bytes it covers. */
  readonly crcValid: boolean;
  /** The whole batch, header included. */
  readonly size: number;
  /** The segment file name and where in it the batch starts. */
  readonly segment: string;
  readonly position: number;
  /** The batch's bytes (a view of the segment read into memory: test logs are small). */
  readonly bytes: Buffer;
}

/** Where a replica's files stop being whole batches. */
export interface ReplicaDamage {
  readonly segment: string;
  readonly position: number;
  readonly reason: string;
}

export interface ReplicaLog {
  /** The partition folder read. */
  readonly directory: string;
  /** False when the broker has no folder for the partition. */
  readonly exists: boolean;
  /** Segment file names, in offset order. */
  readonly segments: readonly string[];
  readonly batches: readonly ReplicaBatch[];
  /** The first damage found; the batches stop there. */
  readonly damage: ReplicaDamage | undefined;
}

/** The segment files of a partition folder: `<20-digit base offset>.log`, in offset order. */
function segmentNames(directory: string): string[] {
  return readdirSync(directory)
    .filter((name) => /^\d{20}\.log$/.test(name))
    .sort((a, b) => Number(a.slice(0, 20)) - Number(b.slice(0, 20)));
}

/** Lists the batches of one replica of `topic`/`partition` under a broker's data dir. */
export function readReplicaLog(dataDir: string, topic: string, partition: number): ReplicaLog {
  const directory = join(dataDir, `${topic}-${partition}`);
  if (!existsSync(directory)) return { directory, exists: false, segments: [], batches: [], damage: undefined };
  const segments = segmentNames(directory);
  const batches: ReplicaBatch[] = [];
  for (const segment of segments) {
    const bytes = readFileSync(join(directory, segment));
    const { damage } = readSegmentBatches(bytes, segment, batches);
    // What follows damage is not trusted by recovery either: the log ends at the first bad byte.
    if (damage !== undefined) return { directory, exists: true, segments, batches, damage };
  }
  return { directory, exists: true, segments, batches, damage: undefined };
}

/** Appends the batches of one segment's bytes to `batches`; stops at the first bytes that are not a whole batch. */
export function readSegmentBatches(bytes: Buffer, segment: string, batches: ReplicaBatch[]): { damage: ReplicaDamage | undefined } {
  let position = 0;
  const damaged = (reason: string) => ({ damage: { segment, position, reason } });
  while (position < bytes.length) {
    const remaining = bytes.length - position;
    if (remaining < RECORD_BATCH_OVERHEAD) return damaged(`${remaining} bytes at the end are too few for a batch header (a torn write)`);
    const header = readBatchHeader(bytes, position);
    if (header.sizeInBytes < RECORD_BATCH_OVERHEAD) return damaged(`batch length ${header.sizeInBytes - LOG_OVERHEAD} is shorter than a batch header`);
    if (header.sizeInBytes > remaining) return damaged(`a batch of ${header.sizeInBytes} bytes is cut short: ${remaining} bytes remain (a torn write)`);
    if (bytes.readInt8(position + MAGIC_OFFSET) !== CURRENT_MAGIC) return damaged(`magic byte ${bytes.readInt8(position + MAGIC_OFFSET)}, not ${CURRENT_MAGIC}`);
    const baseOffset = Number(header.baseOffset);
    batches.push({
      baseOffset,
      lastOffset: baseOffset + header.lastOffsetDelta,
      partitionLeaderEpoch: header.partitionLeaderEpoch,
      crc: header.crc,
      crcValid: computeBatchCrc(bytes, position, header.sizeInBytes) === header.crc,
      size: header.sizeInBytes,
      segment,
      position,
      bytes: bytes.subarray(position, position + header.sizeInBytes),
    });
    position += header.sizeInBytes;
  }
  return { damage: undefined };
}

/** One replica to compare: a broker and its data dir. */
export interface ReplicaLocation {
  readonly brokerId: number;
  readonly dataDir: string;
}

export type ReplicaProblem =
  /** The broker has no folder for the partition. */
  | { readonly kind: 'missing'; readonly brokerId: number; readonly directory: string }
  /** The replica's whole batches end before the high watermark. */
  | { readonly kind: 'short'; readonly brokerId: number; readonly endOffset: number; readonly highWatermark: number; readonly damage: ReplicaDamage | undefined }
  /** Two consecutive batches of one replica do not follow on (a hole, or an overlap). */
  | { readonly kind: 'offset-gap'; readonly brokerId: number; readonly expectedOffset: number; readonly baseOffset: number; readonly segment: string; readonly position: number }
  /** A batch below the high watermark fails its CRC. */
  | { readonly kind: 'bad-crc'; readonly brokerId: number; readonly baseOffset: number; readonly segment: string; readonly position: number }
  /** The first batch that differs from the reference replica's batch at the same place; later batches of this replica are not compared. */
  | {
      readonly kind: 'diverged';
      readonly brokerId: number;
      readonly referenceBrokerId: number;
      readonly baseOffset: number;
      /** "field: reference value ≠ this replica's value" for each field that differs. */
      readonly differences: readonly string[];
    };

export interface ReplicaSummary {
  readonly brokerId: number;
  /** First offset of the first batch, or undefined when the replica holds none. */
  readonly startOffset: number | undefined;
  /** One past the last offset of its last whole batch (its log end). */
  readonly endOffset: number | undefined;
  /** Batches that start below the high watermark. */
  readonly batchesBelowHighWatermark: number;
  readonly damage: ReplicaDamage | undefined;
}

export interface ReplicaComparison {
  readonly ok: boolean;
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: number;
  /** The offset comparison starts at: the highest log start among the replicas (retention may have removed older batches unevenly). */
  readonly comparedFrom: number | undefined;
  readonly replicas: readonly ReplicaSummary[];
  readonly problems: readonly ReplicaProblem[];
}

export interface CompareOptions {
  /** Compare the batches' bytes too, not only their headers; default true. */
  readonly byteIdentical?: boolean;
}

/**
 * Compares the replicas of `topic`/`partition` below `highWatermark`, batch by batch, against the
 * first replica given (pass the leader first, then the rest of the ISR). A batch is "below" the
 * high watermark when it starts below it: followers fetch whole batches, so the high watermark
 * falls on a batch boundary and every replica in the ISR holds the batches that start below it.
 */
export function compareReplicas(replicas: readonly ReplicaLocation[], topic: string, partition: number, highWatermark: number, options: CompareOptions = {}): ReplicaComparison {
  // Nothing to compare would pass vacuously: a caller that found no replicas has a bug to see.
  if (replicas.length === 0) throw new Error(`${topic}-${partition}: no replicas given to compare`);
  const byteIdentical = options.byteIdentical ?? true;
  const problems: ReplicaProblem[] = [];
  const logs = replicas.map((replica) => ({ replica, log: readReplicaLog(replica.dataDir, topic, partition) }));
  const summaries: ReplicaSummary[] = [];
  const below = new Map<number, ReplicaBatch[]>();
  for (const { replica, log } of logs) {
    if (!log.exists) {
      problems.push({ kind: 'missing', brokerId: replica.brokerId, directory: log.directory });
      continue;
    }
    const batches = log.batches.filter((batch) => batch.baseOffset < highWatermark);
    below.set(replica.brokerId, batches);
    const first = log.batches[0];
    const last = log.batches.at(-1);
    const endOffset = last === undefined ? undefined : last.lastOffset + 1;
    summaries.push({ brokerId: replica.brokerId, startOffset: first?.baseOffset, endOffset, batchesBelowHighWatermark: batches.length, damage: log.damage });
    if ((endOffset ?? 0) < highWatermark) problems.push({ kind: 'short', brokerId: replica.brokerId, endOffset: endOffset ?? 0, highWatermark, damage: log.damage });
    for (let index = 1; index < batches.length; index += 1) {
      const previous = batches[index - 1] as ReplicaBatch;
      const batch = batches[index] as ReplicaBatch;
      if (batch.baseOffset !== previous.lastOffset + 1) {
        problems.push({ kind: 'offset-gap', brokerId: replica.brokerId, expectedOffset: previous.lastOffset + 1, baseOffset: batch.baseOffset, segment: batch.segment, position: batch.position });
      }
    }
    for (const batch of batches) {
      if (!batch.crcValid) problems.push({ kind: 'bad-crc', brokerId: replica.brokerId, baseOffset: batch.baseOffset, segment: batch.segment, position: batch.position });
    }
  }

  const present = [...below.values()].filter((batches) => batches.length > 0);
  const comparedFrom = present.length === 0 ? undefined : Math.max(...present.map((batches) => (batches[0] as ReplicaBatch).baseOffset));
  const reference = replicas.find((replica) => below.has(replica.brokerId));
  if (reference !== undefined && comparedFrom !== undefined) {
    const referenceBatches = (below.get(reference.brokerId) ?? []).filter((batch) => batch.baseOffset >= comparedFrom);
    for (const [brokerId, all] of below) {
      if (brokerId === reference.brokerId) continue;
      const batches = all.filter((batch) => batch.baseOffset >= comparedFrom);
      // Walk both lists together; a replica that is merely shorter was reported as short above.
      const length = Math.min(batches.length, referenceBatches.length);
      for (let index = 0; index < length; index += 1) {
        const differences = batchDifferences(referenceBatches[index] as ReplicaBatch, batches[index] as ReplicaBatch, byteIdentical);
        if (differences.length === 0) continue;
        problems.push({ kind: 'diverged', brokerId, referenceBrokerId: reference.brokerId, baseOffset: (batches[index] as ReplicaBatch).baseOffset, differences });
        break;
      }
    }
  }
  return { ok: problems.length === 0, topic, partition, highWatermark, comparedFrom, replicas: summaries, problems };
}

function batchDifferences(reference: ReplicaBatch, other: ReplicaBatch, byteIdentical: boolean): string[] {
  const differences: string[] = [];
  const fields = ['baseOffset', 'lastOffset', 'size', 'partitionLeaderEpoch', 'crc'] as const;
  for (const field of fields) if (reference[field] !== other[field]) differences.push(`${field}: ${reference[field]} ≠ ${other[field]}`);
  if (byteIdentical && differences.length === 0 && !reference.bytes.equals(other.bytes)) {
    let at = 0;
    while (at < reference.bytes.length && reference.bytes[at] === other.bytes[at]) at += 1;
    differences.push(`bytes differ from byte ${at} of the batch`);
  }
  return differences;
}

/** One problem as one line of text. */
export function describeReplicaProblem(problem: ReplicaProblem): string {
  switch (problem.kind) {
    case 'missing':
      return `broker ${problem.brokerId}: no partition folder ${problem.directory}`;
    case 'short':
      return `broker ${problem.brokerId}: whole batches end at offset ${problem.endOffset}, below the high watermark ${problem.highWatermark}${problem.damage === undefined ? '' : ` (damage in ${problem.damage.segment} at byte ${problem.damage.position}: ${problem.damage.reason})`}`;
    case 'offset-gap':
      return `broker ${problem.brokerId}: batch at offset ${problem.baseOffset} (${problem.segment} byte ${problem.position}) follows a batch ending before ${problem.expectedOffset}`;
    case 'bad-crc':
      return `broker ${problem.brokerId}: batch at offset ${problem.baseOffset} (${problem.segment} byte ${problem.position}) fails its CRC`;
    case 'diverged':
      return `broker ${problem.brokerId} diverges from broker ${problem.referenceBrokerId} at the batch of offset ${problem.baseOffset}: ${problem.differences.join('; ')}`;
  }
}

/** The comparison as text: one line, then one line per problem. */
export function formatReplicaComparison(comparison: ReplicaComparison): string {
  const replicas = comparison.replicas.map((replica) => `broker ${replica.brokerId} [${replica.startOffset ?? '-'}, ${replica.endOffset ?? '-'}) ${replica.batchesBelowHighWatermark} batches below`).join(', ');
  const head = `${comparison.topic}-${comparison.partition} below high watermark ${comparison.highWatermark}: ${comparison.ok ? 'replicas identical' : `${comparison.problems.length} problems`} (${replicas})`;
  return [head, ...comparison.problems.map((problem) => `  ${describeReplicaProblem(problem)}`)].join('\n');
}
