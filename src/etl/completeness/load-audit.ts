/**
 * The audit connections of a load with an `audit` section (load-file.ts): an acks=-1 producer that
 * publishes the LOADER counts to the audit topic, and a reader of the PRODUCER counts there, both
 * on the audit cluster and framed with the load's registry. Connected on first use, so an audit
 * cluster that is down fails only the audit steps (logged, tried again next run), never the load.
 */
import type { AuditCountEvent } from '../../audit/audit-count.js';
import { readAuditTopic, type AuditReadWindow } from '../../audit/read-audit-topic.js';
import { securityOption, type ClientSecurity } from '../../client/security-config.js';
import { ClusterClient } from '../../client/cluster-client.js';
import { Producer, type ProducerRecord } from '../../client/producer.js';
import type { Logger } from '../../common/logger.js';
import type { RegistryClient } from '../../registry/client.js';
import { AvroDeserializer } from '../../registry/serde/deserializer.js';
import { AvroSerializer } from '../../registry/serde/serializer.js';
import type { LoaderAuditSink } from './audit-tier.js';
import type { LoadDefinition } from '../load-file.js';

export interface LoadAudit {
  readonly sink: LoaderAuditSink;
  /**
   * The AuditCount events of `topic` in the audit topic now (all tiers, duplicates included): of
   * the records stamped at or after `window.since` when given, else of every record retained.
   */
  readEvents(topic: string, window?: AuditReadWindow): Promise<readonly AuditCountEvent[]>;
  close(): Promise<void>;
}

export interface LoadAuditOptions {
  /** The LOADER counter's cluster name in its events (null by default). */
  readonly cluster?: string;
  /** TLS and SASL of the audit cluster's connections (loadClientSecurity(load, 'audit', …)). */
  readonly security?: ClientSecurity;
}

/** The load's audit connections, or undefined when the load has no `audit` section. */
export function openLoadAudit(load: LoadDefinition, registry: RegistryClient, logger: Logger, options: LoadAuditOptions = {}): LoadAudit | undefined {
  const settings = load.audit;
  if (settings === undefined) return undefined;
  let connected: Promise<{ cluster: ClusterClient; producer: Producer }> | undefined;
  const connect = (): Promise<{ cluster: ClusterClient; producer: Producer }> => {
    connected ??= (async () => {
      const cluster = await ClusterClient.connect({ bootstrap: settings.bootstrap, clientId: `tributary-etl-audit-${load.name}`, logger, ...securityOption(options.security) });
      return { cluster, producer: new Producer(cluster, { acks: -1, logger }) };
    })();
    // A failed connection is tried again by the next use, not remembered.
    connected.catch(() => (connected = undefined));
    return connected;
  };
  const deserializer = new AvroDeserializer(registry);
  return {
    sink: {
      publisher: {
        acks: -1,
        send: async (topic: string, records: readonly ProducerRecord[]) => (await connect()).producer.send(topic, records),
      },
      encoder: new AvroSerializer(registry),
      auditTopic: settings.topic,
      ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    },
    async readEvents(topic, window) {
      const { cluster } = await connect();
      const since = window?.since === undefined ? {} : { since: window.since };
      return (await readAuditTopic({ cluster, deserializer, topic, auditTopic: settings.topic, ...since })).events;
    },
    async close() {
      const open = connected;
      connected = undefined;
      if (open === undefined) return;
      const { cluster, producer } = await open.catch(() => ({ cluster: undefined, producer: undefined }));
      try {
        await producer?.close();
      } finally {
        cluster?.close();
      }
    },
  };
}
