/**
 * One pump per consumer stream: takes the messages the group consumer hands out, in batches of
 * what is already queued, and sends each batch to the offline cluster without waiting for the
 * previous one (the producer keeps call order per partition, so the order of a source partition
 * is kept in its target partition). Each record carries its mirror origin (origin-header.ts), from
 * which a restarted mirror finds where to resume; on a compacted source it also names the source
 * offsets before the record that hold nothing, so a resume steps over them. When the target
 * acknowledges a batch, its records are counted by the audit, then reported to the commit gate
 * with where the target stored them, which only then lets their offsets be committed.
 *
 * Every record taken is sent: `stopping` only stops taking more. A send the target refuses for
 * good is fatal (the mirror never skips a record); its offsets then never become committable.
 */
import type { Message, MessageStream } from '../client/group/zookeeper-consumer.js';
import type { ProducerRecord, RecordMetadata } from '../client/producer.js';
import { TributaryError } from '../common/errors.js';
import type { CommitGate } from './commit-gate.js';
import type { MirrorMetrics } from './metrics.js';
import { withMirrorOrigin } from './origin-header.js';
import { targetPartition } from './placement.js';
import type { RangeAudit } from './range-audit.js';
import type { MirrorTarget } from './target.js';
import { AUDIT_TOPIC } from './topic-filter.js';

export interface StreamPumpContext {
  readonly source: string;
  readonly topic: string;
  readonly gate: CommitGate;
  readonly target: MirrorTarget;
  readonly audit: RangeAudit | undefined;
  readonly metrics: MirrorMetrics;
  /** The source topic's current partition count. */
  readonly sourcePartitions: () => number;
  readonly maxBatchRecords: number;
  readonly maxInFlightRecords: number;
  readonly stopping: () => boolean;
  readonly onFatal: (error: Error) => void;
}

/** Runs until the stream ends or `stopping()`; resolves once every record it took was acknowledged or failed. */
export async function pumpStream(stream: MessageStream, context: StreamPumpContext): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  const room = new InFlightRecords(context.maxInFlightRecords);
  const sends = new Set<Promise<void>>();
  try {
    while (!context.stopping()) {
      await room.wait();
      if (context.stopping()) break;
      const first = await iterator.next();
      if (first.done === true) break;
      const batch: Message[] = [first.value];
      context.gate.pulled(first.value.topic, first.value.partition, first.value.offset);
      while (batch.length < context.maxBatchRecords && stream.size > 0) {
        const next = await iterator.next();
        if (next.done === true) break;
        batch.push(next.value);
        context.gate.pulled(next.value.topic, next.value.partition, next.value.offset);
      }
      room.take(batch.length);
      const sent = send(batch, context).finally(() => {
        room.give(batch.length);
        sends.delete(sent);
      });
      sends.add(sent);
    }
  } finally {
    await Promise.all(sends);
  }
}

async function send(batch: readonly Message[], context: StreamPumpContext): Promise<void> {
  const { topic, source } = context;
  let stored: RecordMetadata[];
  try {
    const targetPartitions = await context.target.partitionCount(topic);
    const sourcePartitions = context.sourcePartitions();
    const records: ProducerRecord[] = batch.map((message) => {
      const partition = targetPartition(message.partition, sourcePartitions, targetPartitions, message.key);
      const headers = withMirrorOrigin(message.headers, { source, partition: message.partition, offset: message.offset, from: message.from });
      const record = { key: message.key, value: message.value, headers, timestamp: message.timestamp };
      return partition === undefined ? record : { ...record, partition };
    });
    stored = await context.target.send(topic, records);
  } catch (error) {
    context.onFatal(
      new TributaryError({
        code: 'MIRROR_SEND_FAILED',
        message: `the offline cluster refused records of ${topic} from source ${source}: ${(error as Error).message}. The mirror stops so that nothing is skipped; fix the cause and start it again (it resumes from the committed offsets)`,
        cause: error,
        details: { source, topic, records: batch.length, firstOffset: batch[0]?.offset.toString(), partition: batch[0]?.partition },
      }),
    );
    return;
  }
  const acknowledgedAt = Date.now();
  // Counted before the gate hears of them: a commit (which flushes the counts first) then always covers them.
  if (context.audit !== undefined && topic !== AUDIT_TOPIC) for (const message of batch) context.audit.count(topic, message.partition, message, acknowledgedAt);
  for (const [index, message] of batch.entries()) {
    const at = stored[index];
    context.gate.acknowledged(message.topic, message.partition, message.offset, at === undefined || at.offset < 0n ? undefined : { partition: at.partition, offset: at.offset });
    context.metrics.latencySeconds.observe({ source }, Math.max(0, acknowledgedAt - message.timestamp) / 1000);
  }
  context.metrics.recordsMirrored.inc({ source, topic }, batch.length);
}

/** Bounds the records a pump has pulled and not yet seen acknowledged. */
class InFlightRecords {
  private count = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** Resolves when there is room for more records. */
  wait(): Promise<void> {
    if (this.count < this.limit) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  take(records: number): void {
    this.count += records;
  }

  give(records: number): void {
    this.count -= records;
    if (this.count >= this.limit) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
