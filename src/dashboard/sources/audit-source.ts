/**
 * The audit counts, read as `tributary audit report` reads them: the `_audit` topic of the
 * cluster given by --bootstrap-server (normally the offline one, where the mirror brings every
 * tier's counts), decoded with the registry given by --registry. A connection per request: the
 * dashboard is looked at now and then, and a broker restart between two looks must not matter.
 */
import { readAuditTopic, type AuditTopicContents } from '../../audit/read-audit-topic.js';
import { reconcile, type Reconciliation } from '../../audit/reconcile.js';
import { securityOption, type ClientSecurity } from '../../client/security-config.js';
import { ClusterClient } from '../../client/cluster-client.js';
import { isCompactedTopic } from '../../client/topic-configs.js';
import type { Logger } from '../../common/logger.js';
import { RegistryClient, type RegistryClientSecurity } from '../../registry/client.js';
import { AvroDeserializer } from '../../registry/serde/deserializer.js';

export interface AuditSourceOptions {
  readonly bootstrap: readonly string[];
  readonly registry: string;
  /** Credentials and CA of the registry (registry/client-config.ts). */
  readonly registrySecurity?: RegistryClientSecurity;
  readonly logger: Logger;
  /** TLS and SASL of the broker connections. */
  readonly security?: ClientSecurity;
}

export interface AuditRange {
  readonly from: number;
  readonly to: number;
  readonly now: number;
  readonly latenessMs: number;
}

export interface TopicAudit {
  readonly reconciliation: Reconciliation;
  readonly contents: Omit<AuditTopicContents, 'events'>;
}

export class AuditSource {
  /** Kept for the dashboard's life: it caches writer schemas by id, which never change. */
  private readonly deserializer: AvroDeserializer;

  constructor(private readonly options: AuditSourceOptions) {
    this.deserializer = new AvroDeserializer(new RegistryClient({ url: options.registry, logger: options.logger, ...options.registrySecurity }));
  }

  describe(): string {
    return `the _audit topic of ${this.options.bootstrap.join(',')} (registry ${this.options.registry})`;
  }

  /** Reconciles `topic` over `range`: completeness per window and tier. */
  async reconcile(topic: string, range: AuditRange): Promise<TopicAudit> {
    // Reading must never create the audit topic where it is missing.
    const cluster = await ClusterClient.connect({ bootstrap: this.options.bootstrap, clientId: 'tributary-dashboard', allowAutoTopicCreation: false, metadataRetries: 2, logger: this.options.logger, ...securityOption(this.options.security) });
    try {
      const { events, ...contents } = await readAuditTopic({ cluster, deserializer: this.deserializer, topic });
      const compacted = await isCompactedTopic(cluster, topic);
      return { reconciliation: reconcile(events, { topic, ...range, compacted }), contents };
    } finally {
      cluster.close();
    }
  }
}
