/**
 * The mirror's audit publisher (tier MIRROR, src/audit/counter.ts): publishes the counts of one
 * source range at a time under an identity fixed by the range (range-audit.ts says why), to the
 * offline cluster's audit topic.
 */
import { securityOption, type ClientSecurity } from '../client/security-config.js';
import { AuditCounter, type AuditEncoder, type AuditPublisher } from '../audit/counter.js';
import { windowStartOf, DEFAULT_WINDOW_MS } from '../audit/windows.js';
import { ClusterClient } from '../client/cluster-client.js';
import { Producer } from '../client/producer.js';
import type { Logger } from '../common/logger.js';
import { RegistryClient } from '../registry/client.js';
import { AvroSerializer } from '../registry/serde/serializer.js';
import type { CountedRecord, RangeCountPublisher } from './range-audit.js';

export interface MirrorAuditPublisher extends RangeCountPublisher {
  /** Waits for the publishes under way and closes the connections. */
  close(): Promise<void>;
}

export interface MirrorAuditOptions {
  /** The offline cluster's brokers: the counts go to its audit topic. */
  readonly bootstrap: readonly string[];
  /** Schema registry the AuditCount events are framed with. */
  readonly registryUrl: string;
  /** Must equal the other tiers' window (the audit's default unless set). */
  readonly windowMs?: number;
  readonly latenessMs?: number;
  readonly logger: Logger;
  /** TLS and SASL of the connections to the offline cluster. */
  readonly security?: ClientSecurity;
}

/** The MIRROR-tier publisher, to the offline cluster's audit topic with acks=-1. */
export async function connectMirrorAudit(options: MirrorAuditOptions): Promise<MirrorAuditPublisher> {
  const cluster = await ClusterClient.connect({ bootstrap: options.bootstrap, clientId: 'tributary-mirror-audit', logger: options.logger, ...securityOption(options.security) });
  const producer = new Producer(cluster, { acks: -1, logger: options.logger });
  const publisher = rangeCountPublisher({
    publisher: producer,
    encoder: new AvroSerializer(new RegistryClient({ url: options.registryUrl, logger: options.logger })),
    logger: options.logger,
    ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }),
    ...(options.latenessMs === undefined ? {} : { latenessMs: options.latenessMs }),
  });
  return {
    publish: (counterId, topic, records) => publisher.publish(counterId, topic, records),
    async close(): Promise<void> {
      try {
        await publisher.settled();
        await producer.close();
      } finally {
        cluster.close();
      }
    },
  };
}

export interface RangeCountPublisherOptions {
  readonly publisher: AuditPublisher;
  readonly encoder: AuditEncoder;
  readonly windowMs?: number;
  readonly latenessMs?: number;
  readonly logger: Logger;
}

/** Publishes each range through its own AuditCounter, named by the range. */
export function rangeCountPublisher(options: RangeCountPublisherOptions): RangeCountPublisher & { settled(): Promise<void> } {
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
  const publishing = new Set<Promise<void>>();
  return {
    publish(counterId: string, topic: string, records: readonly CountedRecord[]): Promise<void> {
      // Fed in a fixed order (origin, then window), the counter numbers its events the same way
      // each time the range is counted, whatever order the records were acknowledged in.
      const counter = new AuditCounter({
        tier: 'MIRROR',
        cluster: 'offline',
        counterId,
        publisher: options.publisher,
        encoder: options.encoder,
        windowMs,
        publishIntervalMs: 0,
        logger: options.logger,
        ...(options.latenessMs === undefined ? {} : { latenessMs: options.latenessMs }),
      });
      const ordered = [...records].sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : windowStartOf(a.timestamp, windowMs) - windowStartOf(b.timestamp, windowMs)));
      for (const record of ordered) counter.count(topic, record.timestamp, record.origin, record.seenAt);
      const published = counter.flush();
      const tracked: Promise<void> = published.catch(() => undefined).finally(() => publishing.delete(tracked));
      publishing.add(tracked);
      return published;
    },
    async settled(): Promise<void> {
      await Promise.all(publishing);
    },
  };
}
