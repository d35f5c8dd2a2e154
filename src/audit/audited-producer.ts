/**
 * A Producer whose records carry their origin and are counted at the PRODUCER tier: what the
 * paper's producers do. Audit events go to AUDIT_TOPIC of the same cluster through a second,
 * acks=-1 producer on the same connections, whatever `acks` the records use.
 */
import { hostname } from 'node:os';
import { ClusterClient } from '../client/cluster-client.js';
import { Producer, type ProducerConnectOptions, type ProducerRecord, type RecordMetadata } from '../client/producer.js';
import type { RegistryClient } from '../registry/client.js';
import { AvroSerializer } from '../registry/serde/serializer.js';
import { AuditCounter, type AuditCounterOptions } from './counter.js';

export interface AuditedProducerOptions extends Omit<ProducerConnectOptions, 'onAcknowledged'> {
  /** The registry AuditCount events are framed with. */
  readonly registry: RegistryClient;
  /** The counter's settings (window, lateness, publish interval, cluster name, clock). */
  readonly audit?: Omit<AuditCounterOptions, 'tier' | 'publisher' | 'encoder'>;
}

export class AuditedProducer {
  private constructor(
    readonly producer: Producer,
    readonly counter: AuditCounter,
    private readonly auditProducer: Producer,
    private readonly cluster: ClusterClient,
  ) {}

  /** Connects; records get ORIGIN_HEADER = `origin` (the host name by default) unless they have one. */
  static async connect(options: AuditedProducerOptions): Promise<AuditedProducer> {
    const cluster = await ClusterClient.connect({
      bootstrap: options.bootstrap,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(options.allowAutoTopicCreation === undefined ? {} : { allowAutoTopicCreation: options.allowAutoTopicCreation }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.security === undefined ? {} : { security: options.security }),
    });
    try {
      const auditProducer = new Producer(cluster, { acks: -1, ...(options.logger === undefined ? {} : { logger: options.logger }) });
      const counter = new AuditCounter({
        ...(options.logger === undefined ? {} : { logger: options.logger }),
        ...options.audit,
        tier: 'PRODUCER',
        publisher: auditProducer,
        encoder: new AvroSerializer(options.registry),
      });
      const producer = new Producer(cluster, { ...options, origin: options.origin ?? hostname(), onAcknowledged: counter.observer });
      return new AuditedProducer(producer, counter, auditProducer, cluster);
    } catch (error) {
      cluster.close();
      throw error;
    }
  }

  send(topic: string, records: readonly ProducerRecord[]): Promise<RecordMetadata[]> {
    return this.producer.send(topic, records);
  }

  /** Delivers what was sent, then publishes its counts; resolves when both are acknowledged. */
  async flush(): Promise<void> {
    await this.producer.flush();
    await this.counter.flush();
  }

  /** Delivers what was sent, publishes the last counts, closes both producers and the connections. */
  async close(): Promise<void> {
    try {
      await this.producer.close();
      await this.counter.close();
      await this.auditProducer.close();
    } finally {
      this.cluster.close();
    }
  }
}
