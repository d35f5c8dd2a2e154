/**
 * The mirror's audit counts (tier MIRROR), kept consistent across kills: no record counted twice,
 * none left out, although a restarted mirror skips the records its predecessor already wrote to
 * the target (resume-point.ts) whether or not their counts were published.
 *
 * Counts are published per source partition in ranges of source offsets, each range's events
 * with an identity made of the range itself (counterId `mirror/<group>/<source>/<topic>/<p>/<from>`,
 * sequence = the cell's rank by origin and window), so counting the same range again publishes
 * the same events, which reconciliation keeps once (reconcile.ts, one event per key):
 *
 * - Before a commit of offset `to` (the commit gate's beforeCommit), the range [from, to) of
 *   acknowledged records is published: first `{from, to}` is written to the partition's
 *   counted-range node (progress-nodes.ts), then the events. So every count below the node's
 *   `from` is published, and [from, to) maybe, maybe partly.
 * - On resume at R (each time the mirror gains the partition), the node's [from, to) is counted
 *   again from the source and published (the same events again, or the ones a kill cut off), and
 *   then [to, R) — records the predecessor wrote to the target but never published, which the
 *   mirror now skips — is counted from the source as a new range (node first, then events).
 *   Counting goes on from R. A partition never counted before gets the node `{R, R}` first.
 *
 * A recount reads the source partition (records are kept there longer than one commit interval;
 * a range already deleted by retention cannot be recounted, and is reported as an error). On a
 * compacted source a range may hold fewer records by the time it is recounted than when it was
 * counted: the node records how many it counted, and a range of `from, to` whose source now
 * holds fewer is not published again (its events would replace the full ones under the same
 * identities: records the target holds would show as lost); the counts published then stand, and
 * the shrink is logged. The skipped range [to, R) is counted from the source as it is now.
 */
import { originOf } from '../audit/origin.js';
import type { Logger } from '../common/logger.js';
import type { CoordinationStore } from '../coordination/store.js';
import type { RecordHeader } from '../protocol/records.js';
import { countedRangePath, encodeCountedRange, readCountedRange, writeNode, type CountedRange } from './progress-nodes.js';

/** One record as the audit counts it. */
export interface CountedRecord {
  readonly offset: bigint;
  readonly timestamp: number;
  /** The audit origin (the server it was created on). */
  readonly origin: string;
  /** When the mirror saw it in the target (the latency's end). */
  readonly seenAt: number;
}

/** Publishes one range's counts under a fixed identity (mirror-audit.ts). */
export interface RangeCountPublisher {
  /** Resolves once the events are stored; the same `counterId` and records give the same events. */
  publish(counterId: string, topic: string, records: readonly CountedRecord[]): Promise<void>;
}

/** The source records of [from, to) of a partition, in offset order. */
export type ReadSourceRange = (topic: string, partition: number, from: bigint, to: bigint) => Promise<readonly { readonly offset: bigint; readonly timestamp: number; readonly headers: readonly RecordHeader[] }[]>;

interface PartitionCounts {
  /** Every count below it is published. */
  from: bigint;
  /** The range whose node is written and whose events are not all acknowledged yet. */
  publishing: bigint | undefined;
  /** Acknowledged records at or above `from`, not yet published. */
  records: CountedRecord[];
  /** Publishes of the partition run one after the other. */
  tail: Promise<void>;
}

export interface RangeAuditOptions {
  readonly group: string;
  readonly source: string;
  /** The source cluster's coordination store (the nodes live beside the group's offsets). */
  readonly store: CoordinationStore;
  readonly publisher: RangeCountPublisher;
  readonly readSource: ReadSourceRange;
  readonly logger: Logger;
}

const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export class RangeAudit {
  private readonly partitions = new Map<string, PartitionCounts>();

  constructor(private readonly options: RangeAuditOptions) {}

  /**
   * The mirror resumes the partition at `resumeAt`: publishes what its predecessors may have left
   * unpublished below it (see the file comment), then counts from `resumeAt` on.
   */
  async resume(topic: string, partition: number, resumeAt: bigint): Promise<void> {
    const path = countedRangePath(this.options.group, topic, partition);
    const range = await readCountedRange(this.options.store, path);
    let next = resumeAt;
    if (range === undefined) {
      await writeNode(this.options.store, path, encodeCountedRange({ from: resumeAt, to: resumeAt, records: 0 }));
    } else {
      await this.recount(topic, partition, range);
      next = range.to;
      if (next < resumeAt) {
        // Read before the node is written, so the node says how many records its events count.
        const records = await this.options.readSource(topic, partition, next, resumeAt);
        const skipped = { from: next, to: resumeAt, records: records.length };
        await writeNode(this.options.store, path, encodeCountedRange(skipped));
        await this.publishRecounted(topic, partition, skipped, records);
        next = resumeAt;
      } else if (next > resumeAt) {
        // Counts were published past the records the target holds (its log was cut, or an operator moved the group): not counted twice.
        this.options.logger.warn({ topic, partition, countedTo: next.toString(), resumeAt: resumeAt.toString() }, 'audit counts were published beyond the resume point; the records between are not counted again');
      }
    }
    this.partitions.set(partitionKey(topic, partition), { from: next, publishing: undefined, records: [], tail: Promise.resolve() });
  }

  /** A record of the partition the target acknowledged at `seenAt`. */
  count(topic: string, partition: number, record: { readonly offset: bigint; readonly timestamp: number; readonly headers: readonly RecordHeader[] }, seenAt: number): void {
    const counts = this.partitions.get(partitionKey(topic, partition));
    if (counts === undefined || record.offset < counts.from) return;
    counts.records.push({ offset: record.offset, timestamp: record.timestamp, origin: originOf(record.headers), seenAt });
  }

  /** Publishes the counts of every record of the partition below `offset` (all acknowledged: the commit gate waited). */
  publishThrough(topic: string, partition: number, offset: bigint): Promise<void> {
    const counts = this.partitions.get(partitionKey(topic, partition));
    if (counts === undefined) return Promise.resolve();
    const run = counts.tail.then(() => this.publishRanges(topic, partition, counts, offset));
    counts.tail = run.catch(() => undefined);
    return run;
  }

  private async publishRanges(topic: string, partition: number, counts: PartitionCounts, offset: bigint): Promise<void> {
    // A range whose node is written is published as it is, before any later one: its boundaries are what a successor recounts.
    if (counts.publishing !== undefined) await this.publishRange(topic, partition, counts, counts.publishing);
    if (offset > counts.from) {
      counts.publishing = offset;
      const records = counts.records.filter((record) => record.offset < offset).length;
      await writeNode(this.options.store, countedRangePath(this.options.group, topic, partition), encodeCountedRange({ from: counts.from, to: offset, records }));
      await this.publishRange(topic, partition, counts, offset);
    }
  }

  private async publishRange(topic: string, partition: number, counts: PartitionCounts, to: bigint): Promise<void> {
    const inRange = counts.records.filter((record) => record.offset < to);
    await this.options.publisher.publish(this.counterId(topic, partition, counts.from), topic, inRange);
    counts.records = counts.records.filter((record) => record.offset >= to);
    counts.from = to;
    counts.publishing = undefined;
  }

  /** Publishes a counted range's events again from the source, unless compaction removed some of its records since (see the file comment). */
  private async recount(topic: string, partition: number, range: CountedRange): Promise<void> {
    if (range.to <= range.from) return;
    const records = await this.options.readSource(topic, partition, range.from, range.to);
    if (range.records !== undefined && records.length < range.records) {
      this.options.logger.warn(
        { topic, partition, from: range.from.toString(), to: range.to.toString(), counted: range.records, inSourceNow: records.length },
        'the source holds fewer records of a counted range than were counted (compaction removed some since): its published counts stand and are not published again',
      );
      return;
    }
    await this.publishRecounted(topic, partition, range, records);
  }

  private async publishRecounted(topic: string, partition: number, range: CountedRange, records: Awaited<ReturnType<ReadSourceRange>>): Promise<void> {
    if (range.to <= range.from) return;
    const seenAt = Date.now();
    await this.options.publisher.publish(
      this.counterId(topic, partition, range.from),
      topic,
      records.map((record) => ({ offset: record.offset, timestamp: record.timestamp, origin: originOf(record.headers), seenAt })),
    );
    this.options.logger.info({ topic, partition, from: range.from.toString(), to: range.to.toString(), records: records.length }, 'audit counts of a range published again from the source');
  }

  private counterId(topic: string, partition: number, from: bigint): string {
    return `mirror/${this.options.group}/${this.options.source}/${topic}/${partition}/${from}`;
  }
}
