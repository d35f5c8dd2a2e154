/**
 * The mirror's audit counter (tier MIRROR, src/audit/counter.ts): it counts each record the
 * offline cluster acknowledged, by creation window and origin, and publishes the counts (`flush`)
 * before source offsets are committed; the events go to the offline cluster's audit topic.
 */
import { AuditCounter } from '../audit/counter.js';
import { ClusterClient } from '../client/cluster-client.js';
import { Producer } from '../client/producer.js';
import type { Logger } from '../common/logger.js';
import type { RecordHeader } from '../protocol/records.js';
import { RegistryClient } from '../registry/client.js';
import { AvroSerializer } from '../registry/serde/serializer.js';

export interface MirrorAuditCounter {
  /** One record of `topic` the target acknowledged at `seenAt` (ms); its timestamp is its creation time. */
  count(topic: string, record: { readonly timestamp: number; readonly headers: readonly RecordHeader[] }, seenAt: number): void;
  /** Publishes every count so far; resolves once they are stored. */
  flush(): Promise<void>;
  /** Flushes and stops. */
  close(): Promise<void>;
}

/**
 * `flush` shared by concurrent callers: a caller that arrives while one runs waits for the next
 * one (which covers everything counted before the caller asked), and all callers arriving
 * meanwhile share that next one. Every consumer of every source commits through this.
 */
export function coalescedFlush(flush: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const start = (): Promise<void> => {
    running = flush().finally(() => {
      running = undefined;
    });
    return running;
  };
  const request = (): Promise<void> => {
    if (queued !== undefined) return queued;
    if (running === undefined) return start();
    queued = running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
  return request;
}

export interface MirrorAuditOptions {
  /** The offline cluster's brokers: the counts go to its audit topic. */
  readonly bootstrap: readonly string[];
  /** Schema registry the AuditCount events are framed with. */
  readonly registryUrl: string;
  /** Must equal the other tiers' window (the audit's default unless set). */
  readonly windowMs?: number;
  readonly latenessMs?: number;
  readonly publishIntervalMs?: number;
  readonly logger: Logger;
}

/** The MIRROR-tier audit counter, publishing to the offline cluster's audit topic with acks=-1. */
export async function connectMirrorAudit(options: MirrorAuditOptions): Promise<MirrorAuditCounter> {
  const cluster = await ClusterClient.connect({ bootstrap: options.bootstrap, clientId: 'tributary-mirror-audit', logger: options.logger });
  try {
    const publisher = new Producer(cluster, { acks: -1, logger: options.logger });
    const counter = new AuditCounter({
      tier: 'MIRROR',
      cluster: 'offline',
      publisher,
      encoder: new AvroSerializer(new RegistryClient({ url: options.registryUrl, logger: options.logger })),
      logger: options.logger,
      ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }),
      ...(options.latenessMs === undefined ? {} : { latenessMs: options.latenessMs }),
      ...(options.publishIntervalMs === undefined ? {} : { publishIntervalMs: options.publishIntervalMs }),
    });
    return {
      count: (topic, record, seenAt) => counter.countRecords(topic, [record], seenAt),
      flush: () => counter.flush(),
      close: async () => {
        try {
          await counter.close();
          await publisher.close();
        } finally {
          cluster.close();
        }
      },
    };
  } catch (error) {
    cluster.close();
    throw error;
  }
}
