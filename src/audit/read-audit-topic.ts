/**
 * Reads the audit topic from the start of every partition (or, given `since`, from the first
 * record stamped at or after it: ListOffsets by time) up to the high watermark it had when
 * reading began, and decodes the AuditCount events of one topic (records are keyed by the counted
 * topic, so the others are skipped without decoding). A record that does not decode is counted
 * and skipped: one bad record must not hide every count.
 *
 * `since` bounds the read by the records' timestamps, which counters set to the time they publish
 * (counter.ts): a reader that needs the counts of windows from time W on passes a `since` a
 * little before W (hour-completeness.ts says how much) and reads only what was published since,
 * not the whole retained topic. ListOffsets finds the first record whose timestamp is ≥ since
 * wherever it lies in the log, so records appended late with older timestamps are still found.
 */
import type { ClusterClient } from '../client/cluster-client.js';
import { SimpleConsumer } from '../client/simple-consumer.js';
import { TributaryError } from '../common/errors.js';
import type { AvroDeserializer } from '../registry/serde/deserializer.js';
import { AUDIT_TOPIC, auditCountSchema, type AuditCountEvent } from './audit-count.js';

export interface AuditTopicReadOptions {
  readonly cluster: ClusterClient;
  readonly deserializer: AvroDeserializer;
  /** Only events counting this topic. */
  readonly topic: string;
  readonly auditTopic?: string;
  /** Start at the first record of each partition stamped at or after this time (ms), not at the log start. */
  readonly since?: number;
}

/** Which audit records a reader needs: those stamped at or after `since` (every one when absent). */
export interface AuditReadWindow {
  readonly since?: number;
}

export interface UndecodableAuditRecord {
  readonly partition: number;
  readonly offset: bigint;
  readonly reason: string;
}

export interface AuditTopicContents {
  readonly events: AuditCountEvent[];
  /** Records of the audit topic read (all topics). */
  readonly recordsRead: number;
  readonly undecodable: readonly UndecodableAuditRecord[];
}

const FETCH_MAX_BYTES = 4 * 1024 * 1024;

export async function readAuditTopic(options: AuditTopicReadOptions): Promise<AuditTopicContents> {
  const auditTopic = options.auditTopic ?? AUDIT_TOPIC;
  const partitions = await partitionsOf(options.cluster, auditTopic);
  const consumer = new SimpleConsumer(options.cluster);
  const topicKey = Buffer.from(options.topic, 'utf8');
  const schema = auditCountSchema();
  const events: AuditCountEvent[] = [];
  const undecodable: UndecodableAuditRecord[] = [];
  let recordsRead = 0;
  for (const partition of partitions) {
    const end = await consumer.listOffset(auditTopic, partition, 'latest');
    let offset = await startOffset(consumer, auditTopic, partition, options.since, end);
    while (offset < end) {
      const fetched = await consumer.fetch(auditTopic, partition, offset, { maxBytes: FETCH_MAX_BYTES });
      if (fetched.records.length === 0 && fetched.nextOffset === offset) {
        throw new TributaryError({
          code: 'AUDIT_READ_STALLED',
          retriable: true,
          message: `${auditTopic}-${partition}: a fetch at offset ${offset} returned nothing before the high watermark ${end}; a record batch may be larger than ${FETCH_MAX_BYTES} bytes`,
          details: { topic: auditTopic, partition, offset, highWatermark: end },
        });
      }
      for (const record of fetched.records) {
        if (record.offset >= end) break;
        recordsRead += 1;
        if (record.key !== null && !record.key.equals(topicKey)) continue;
        if (record.value === null) {
          undecodable.push({ partition, offset: record.offset, reason: 'the record has no value' });
          continue;
        }
        try {
          const event = await options.deserializer.decode<AuditCountEvent>(record.value, schema);
          if (event.topic === options.topic) events.push(event);
        } catch (error) {
          undecodable.push({ partition, offset: record.offset, reason: error instanceof Error ? error.message : String(error) });
        }
      }
      offset = fetched.nextOffset;
    }
  }
  return { events, recordsRead, undecodable };
}

/** The log start, or the first offset stamped at or after `since` (the end when there is none: −1 from ListOffsets). */
async function startOffset(consumer: SimpleConsumer, auditTopic: string, partition: number, since: number | undefined, end: bigint): Promise<bigint> {
  if (since === undefined) return consumer.listOffset(auditTopic, partition, 'earliest');
  const found = await consumer.listOffset(auditTopic, partition, { timestamp: Math.max(0, Math.floor(since)) });
  return found < 0n ? end : found;
}

async function partitionsOf(cluster: ClusterClient, auditTopic: string): Promise<number[]> {
  try {
    return await cluster.partitionsFor(auditTopic);
  } catch (error) {
    if (error instanceof TributaryError && error.code === 'UNKNOWN_TOPIC_OR_PARTITION') {
      throw new TributaryError({
        code: 'AUDIT_TOPIC_MISSING',
        message: `the cluster has no "${auditTopic}" topic: no audit counter has published there yet (point --bootstrap-server at the cluster whose counts you want, e.g. the offline cluster)`,
        cause: error,
      });
    }
    throw error;
  }
}
