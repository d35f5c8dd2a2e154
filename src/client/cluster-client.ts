/**
 * A client's view of a cluster: which brokers there are, which partitions each topic has and who
 * leads each one, and one connection per broker to reach them.
 *
 * Metadata (v8) comes from any broker that answers: the brokers learned from the last answer
 * first, then the bootstrap addresses. Topics are cached once they have partitions; a topic that
 * is not ready yet (LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION, as right after it was
 * auto-created) is asked for again with backoff, a bounded number of times, and then fails with a
 * retriable error naming the topic.
 *
 * Connections are opened on first use and shared by every caller. When one fails (the broker went
 * away, a request timed out) it is dropped, and the next use opens a new one after a backoff that
 * doubles with each consecutive failure (with jitter), up to `reconnectBackoffMaxMs`. The
 * connection object itself has no "closed" signal, so the client watches the outcome of the
 * requests sent on it: a connection-level failure (CONNECTION_LOST, REQUEST_TIMED_OUT) marks it
 * dead, a success resets the backoff.
 */
import { TributaryError, isRetriable } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { MetadataApi, type MetadataRequest, type MetadataResponse } from '../protocol/apis/metadata.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import type { ApiSchema } from '../protocol/schema.js';
import { KafkaConnection } from './connection.js';
import type { ClientSecurity } from './security-config.js';

export const METADATA_VERSION = 8;

export interface ClusterClientOptions {
  /** `host:port` addresses to learn the cluster from (`[::1]:9092` for IPv6). */
  readonly bootstrap: readonly string[];
  readonly clientId?: string;
  /** How long a request may go unanswered before its connection is dropped; default 30 s. */
  readonly requestTimeoutMs?: number;
  /** How long opening a connection may take; default 10 s. */
  readonly connectTimeoutMs?: number;
  /** Whether asking for an unknown topic creates it (when the broker allows it); default true. */
  readonly allowAutoTopicCreation?: boolean;
  /** First wait before reconnecting to a broker whose connection failed; doubles per failure. Default 100 ms. */
  readonly reconnectBackoffMs?: number;
  /** Longest wait between reconnection attempts; default 2 s. */
  readonly reconnectBackoffMaxMs?: number;
  /** How often to ask again for a topic that has no usable metadata yet; default 10. */
  readonly metadataRetries?: number;
  /** First wait between those attempts; doubles up to 1 s. Default 100 ms. */
  readonly metadataRetryBackoffMs?: number;
  readonly logger?: Logger;
  /** TLS and SASL of every broker connection (security-config.ts); absent: PLAINTEXT. */
  readonly security?: ClientSecurity;
}

export interface BrokerMetadata {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
}

export interface PartitionMetadata {
  readonly partition: number;
  /** The leader's broker id, −1 when the partition has none right now. */
  readonly leader: number;
  readonly leaderEpoch: number;
  /** The partition's error in the last metadata answer (0, or LEADER_NOT_AVAILABLE when it has no leader). */
  readonly errorCode: number;
}

export interface TopicMetadata {
  readonly name: string;
  /** Sorted by partition number; the array index is the partition number. */
  readonly partitions: readonly PartitionMetadata[];
}

interface Address {
  readonly host: string;
  readonly port: number;
  readonly key: string;
}

/** One broker address's connection state. */
interface Link {
  readonly address: Address;
  connection: KafkaConnection | undefined;
  opening: Promise<KafkaConnection> | undefined;
  /** Consecutive failures: connections that could not be opened or that broke. */
  failures: number;
  /** No new connection before this time (ms since the epoch). */
  retryAt: number;
}

/** Connection-level failures: after one of these the connection cannot be used again. */
const CONNECTION_FAILURES: ReadonlySet<string> = new Set(['CONNECTION_LOST', 'REQUEST_TIMED_OUT']);

/** Failures of TLS or SASL when opening a connection (connection.ts, client-authenticator.ts). */
const SECURITY_FAILURES: ReadonlySet<string> = new Set([
  'TLS_HANDSHAKE_FAILED',
  'SASL_AUTHENTICATION_FAILED',
  'UNSUPPORTED_SASL_MECHANISM',
  'ILLEGAL_SASL_STATE',
  'SASL_NOT_ENABLED',
]);

/** Parses `host:port` or `[ipv6]:port`. */
export function parseAddress(text: string): { host: string; port: number } {
  const match = /^\[([^\]]+)\]:(\d+)$/.exec(text.trim()) ?? /^([^:]+):(\d+)$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (match === null || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `bootstrap address "${text}" is not host:port (e.g. localhost:9092)` });
  }
  return { host: match[1] ?? '', port };
}

export class ClusterClient {
  private readonly links = new Map<string, Link>();
  private readonly bootstrap: readonly Address[];
  private brokers = new Map<number, BrokerMetadata>();
  private readonly topics = new Map<string, TopicMetadata>();
  private refreshing: { readonly topics: ReadonlySet<string> | null; readonly done: Promise<Map<string, number>> } | undefined;
  private closed = false;
  /** Rotates which broker answers metadata first, so one slow broker is not asked every time. */
  private metadataRotation = 0;
  clusterId: string | null = null;

  private constructor(private readonly options: ClusterClientOptions) {
    if (options.bootstrap.length === 0) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: 'no bootstrap brokers given: pass at least one host:port' });
    }
    this.bootstrap = options.bootstrap.map((text) => {
      const { host, port } = parseAddress(text);
      return { host, port, key: `${host}:${port}` };
    });
  }

  /** Creates a client and loads the list of brokers, so a wrong address fails here. */
  static async connect(options: ClusterClientOptions): Promise<ClusterClient> {
    const client = new ClusterClient(options);
    try {
      await client.refreshMetadata([]);
    } catch (error) {
      client.close();
      throw error;
    }
    return client;
  }

  get allowAutoTopicCreation(): boolean {
    return this.options.allowAutoTopicCreation ?? true;
  }

  /** The brokers of the last metadata answer. */
  knownBrokers(): readonly BrokerMetadata[] {
    return [...this.brokers.values()];
  }

  /** The cached metadata of `topic`, without asking anyone. */
  cachedTopic(topic: string): TopicMetadata | undefined {
    return this.topics.get(topic);
  }

  /** The cached leader of a partition, or undefined when unknown or leaderless. */
  leaderFor(topic: string, partition: number): number | undefined {
    const leader = this.topics.get(topic)?.partitions[partition]?.leader;
    return leader === undefined || leader < 0 ? undefined : leader;
  }

  /** The partition numbers of `topic` (0 … n−1), from the cache or, creating the topic if allowed, from a broker. */
  async partitionsFor(topic: string): Promise<number[]> {
    return (await this.topicMetadata(topic)).partitions.map((partition) => partition.partition);
  }

  /** The partitions of `topic` with their leaders, from the cache or (creating the topic if allowed) from a broker. */
  async topicMetadata(topic: string): Promise<TopicMetadata> {
    this.checkOpen();
    return this.topics.get(topic) ?? (await this.loadTopic(topic));
  }

  /** A connection to the current leader of a partition; waits (bounded) for a leader to appear. */
  async leaderConnection(topic: string, partition: number): Promise<KafkaConnection> {
    const attempts = this.metadataRetries + 1;
    for (let attempt = 1; ; attempt += 1) {
      const { partitions } = await this.topicMetadata(topic);
      const found = partitions[partition];
      if (found === undefined && attempt === 1) {
        // The topic may have grown since the cache was filled: ask once before saying no.
        await this.refreshMetadata([topic]);
        continue;
      }
      if (found === undefined) {
        throw new TributaryError({
          code: 'UNKNOWN_TOPIC_OR_PARTITION',
          message: `topic "${topic}" has ${partitions.length} partitions, so partition ${partition} does not exist`,
          details: { topic, partition, partitions: partitions.length },
        });
      }
      if (found.leader >= 0 && this.brokers.has(found.leader)) return this.connectionTo(found.leader);
      if (attempt >= attempts) {
        throw new TributaryError({
          code: 'LEADER_NOT_AVAILABLE',
          retriable: true,
          message: `partition ${partition} of topic "${topic}" has no reachable leader after ${attempts} metadata requests; is its broker running?`,
          details: { topic, partition, leader: found.leader },
        });
      }
      await sleep(this.metadataBackoff(attempt));
      await this.refreshMetadata([topic]);
    }
  }

  /** The connection to broker `brokerId`, opened now if there is none (after any backoff). */
  async connectionTo(brokerId: number): Promise<KafkaConnection> {
    this.checkOpen();
    let broker = this.brokers.get(brokerId);
    if (broker === undefined) {
      await this.refreshMetadata();
      broker = this.brokers.get(brokerId);
    }
    if (broker === undefined) {
      throw new TributaryError({
        code: 'BROKER_NOT_AVAILABLE',
        retriable: true,
        message: `broker ${brokerId} is not in the cluster's metadata (it may have stopped); known brokers: ${[...this.brokers.keys()].join(', ') || 'none'}`,
        details: { brokerId },
      });
    }
    return this.connect(this.linkFor({ host: broker.host, port: broker.port, key: `${broker.host}:${broker.port}` }));
  }

  /**
   * Asks a broker for the metadata of `topics` (creating unknown ones if allowed) and updates the
   * cache. Without `topics`, refreshes the topics already cached (only the broker list when there
   * are none). Concurrent calls for topics already being fetched share one request.
   */
  async refreshMetadata(topics?: readonly string[]): Promise<void> {
    await this.fetchMetadata(topics ?? [...this.topics.keys()]);
  }

  /** Closes every connection; later calls fail with CLIENT_CLOSED. */
  close(): void {
    this.closed = true;
    for (const link of this.links.values()) {
      link.connection?.close();
      link.connection = undefined;
    }
    this.links.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // Metadata

  private get metadataRetries(): number {
    return this.options.metadataRetries ?? 10;
  }

  private metadataBackoff(attempt: number): number {
    return jitter(Math.min(1000, (this.options.metadataRetryBackoffMs ?? 100) * 2 ** (attempt - 1)));
  }

  /** Asks (with bounded retries) until `topic` has partitions. */
  private async loadTopic(topic: string): Promise<TopicMetadata> {
    const attempts = this.metadataRetries + 1;
    let lastError: TributaryError | undefined;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      if (attempt > 1) await sleep(this.metadataBackoff(attempt - 1));
      this.checkOpen();
      let errorCode: number | undefined;
      try {
        errorCode = (await this.fetchMetadata([topic])).get(topic);
      } catch (error) {
        if (!isRetriable(error)) throw error;
        lastError = error as TributaryError;
        continue;
      }
      const loaded = this.topics.get(topic);
      if (loaded !== undefined) return loaded;
      const name = kafkaErrorName(errorCode ?? KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
      if (errorCode === KafkaErrorCode.INVALID_TOPIC_EXCEPTION) {
        throw new TributaryError({
          code: name,
          message: `"${topic}" is not a valid topic name: use 1–249 characters of a–z, A–Z, 0–9, '.', '_' and '-'`,
          details: { topic },
        });
      }
      if (errorCode !== undefined && errorCode !== KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION && errorCode !== KafkaErrorCode.LEADER_NOT_AVAILABLE) {
        throw new TributaryError({ code: name, message: `the broker refused metadata for topic "${topic}" with ${name}`, details: { topic, errorCode } });
      }
      lastError = new TributaryError({ code: name, retriable: true, message: `topic "${topic}": ${name}`, details: { topic } });
    }
    const code = lastError?.code ?? 'UNKNOWN_TOPIC_OR_PARTITION';
    const hint =
      code === 'UNKNOWN_TOPIC_OR_PARTITION'
        ? this.allowAutoTopicCreation
          ? 'it does not exist and the broker did not create it (auto.create.topics.enable off?): create it first'
          : 'it does not exist and this client does not create topics (allowAutoTopicCreation is false): create it first'
        : 'it may still be being created, or its broker is down: try again, or check the brokers';
    throw new TributaryError({
      code,
      retriable: true,
      message: `topic "${topic}" has no usable metadata after ${attempts} attempts (last: ${lastError?.message ?? code}); ${hint}`,
      cause: lastError,
      details: { topic, attempts },
    });
  }

  /**
   * One Metadata request (shared with a concurrent one that covers the same topics); resolves with
   * the error code of each requested topic that came back with one.
   */
  private fetchMetadata(topics: readonly string[] | null): Promise<Map<string, number>> {
    this.checkOpen();
    const current = this.refreshing;
    if (current !== undefined && (current.topics === null || (topics !== null && topics.every((topic) => current.topics?.has(topic) === true)))) {
      return current.done;
    }
    const done = this.requestMetadata(topics).finally(() => {
      if (this.refreshing?.done === done) this.refreshing = undefined;
    });
    this.refreshing = { topics: topics === null ? null : new Set(topics), done };
    return done;
  }

  private async requestMetadata(topics: readonly string[] | null): Promise<Map<string, number>> {
    const request: MetadataRequest = {
      topics: topics === null ? null : topics.map((name) => ({ name })),
      allowAutoTopicCreation: this.allowAutoTopicCreation,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    };
    const failures: string[] = [];
    let lastError: unknown;
    for (const address of this.metadataCandidates()) {
      this.checkOpen();
      let response: MetadataResponse;
      try {
        const connection = await this.connect(this.linkFor(address));
        response = await connection.request(MetadataApi, METADATA_VERSION, request);
      } catch (error) {
        if (error instanceof TributaryError && error.code === 'CLIENT_CLOSED') throw error;
        // A refused authentication or an untrusted certificate: the other brokers share the settings, and trying again changes nothing.
        if (error instanceof TributaryError && SECURITY_FAILURES.has(error.code)) throw error;
        lastError = error;
        failures.push(`${address.key} (${error instanceof Error ? error.message : String(error)})`);
        continue;
      }
      return this.applyMetadata(response);
    }
    throw new TributaryError({
      code: 'BROKER_UNREACHABLE',
      retriable: true,
      message: `no broker answered a Metadata request: ${failures.join('; ')}; check the bootstrap addresses and that the brokers are running`,
      cause: lastError,
      details: { tried: failures.length },
    });
  }

  /** Known brokers first (rotating), then bootstrap addresses not among them. */
  private metadataCandidates(): Address[] {
    const known = [...this.brokers.values()].map((broker) => ({ host: broker.host, port: broker.port, key: `${broker.host}:${broker.port}` }));
    const start = known.length === 0 ? 0 : this.metadataRotation++ % known.length;
    const rotated = [...known.slice(start), ...known.slice(0, start)];
    // A broker with a live connection is asked before one that would need a new connection.
    rotated.sort((a, b) => Number(this.links.get(b.key)?.connection !== undefined) - Number(this.links.get(a.key)?.connection !== undefined));
    const keys = new Set(rotated.map((address) => address.key));
    return [...rotated, ...this.bootstrap.filter((address) => !keys.has(address.key))];
  }

  private applyMetadata(response: MetadataResponse): Map<string, number> {
    this.clusterId = response.clusterId;
    if (response.brokers.length > 0) {
      this.brokers = new Map(response.brokers.map((broker) => [broker.nodeId, { nodeId: broker.nodeId, host: broker.host, port: broker.port, rack: broker.rack }]));
    }
    const errors = new Map<string, number>();
    for (const topic of response.topics) {
      if (topic.errorCode !== KafkaErrorCode.NONE || topic.partitions.length === 0) {
        errors.set(topic.name, topic.errorCode === KafkaErrorCode.NONE ? KafkaErrorCode.LEADER_NOT_AVAILABLE : topic.errorCode);
        // A topic that no longer exists leaves the cache; one without leaders keeps its last view.
        if (topic.errorCode === KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION) this.topics.delete(topic.name);
        continue;
      }
      const partitions = [...topic.partitions]
        .sort((a, b) => a.partitionIndex - b.partitionIndex)
        .map((partition) => ({ partition: partition.partitionIndex, leader: partition.leaderId, leaderEpoch: partition.leaderEpoch, errorCode: partition.errorCode }));
      if (partitions.some((partition, index) => partition.partition !== index)) {
        errors.set(topic.name, KafkaErrorCode.LEADER_NOT_AVAILABLE);
        this.options.logger?.warn({ topic: topic.name, partitions: partitions.map((p) => p.partition) }, 'metadata lists a topic with gaps in its partition numbers; ignored');
        continue;
      }
      this.topics.set(topic.name, { name: topic.name, partitions });
    }
    return errors;
  }

  // ---------------------------------------------------------------------------------------------
  // Connections

  private linkFor(address: Address): Link {
    let link = this.links.get(address.key);
    if (link === undefined) {
      link = { address, connection: undefined, opening: undefined, failures: 0, retryAt: 0 };
      this.links.set(address.key, link);
    }
    return link;
  }

  private connect(link: Link): Promise<KafkaConnection> {
    this.checkOpen();
    if (link.connection !== undefined) return Promise.resolve(link.connection);
    link.opening ??= this.open(link).finally(() => {
      link.opening = undefined;
    });
    return link.opening;
  }

  private async open(link: Link): Promise<KafkaConnection> {
    const wait = link.retryAt - Date.now();
    if (wait > 0) await sleep(wait);
    this.checkOpen();
    const { host, port } = link.address;
    let connection: KafkaConnection;
    try {
      connection = await KafkaConnection.open(host, port, {
        clientId: this.options.clientId ?? 'tributary',
        requestTimeoutMs: this.options.requestTimeoutMs ?? 30_000,
        connectTimeoutMs: this.options.connectTimeoutMs ?? 10_000,
        ...(this.options.security === undefined ? {} : { security: this.options.security }),
      });
    } catch (error) {
      this.backOff(link, error);
      throw error;
    }
    if (this.closed) {
      connection.close();
      this.checkOpen();
    }
    this.watch(link, connection);
    link.connection = connection;
    return connection;
  }

  /**
   * Observes every request on `connection`: a connection-level failure drops it from its link (so
   * the next use reconnects, after backoff); an answer resets the link's failure count.
   */
  private watch(link: Link, connection: KafkaConnection): void {
    const request = connection.request.bind(connection);
    const sendWithoutResponse = connection.sendWithoutResponse.bind(connection);
    const observe = async <T>(sent: Promise<T>): Promise<T> => {
      try {
        const result = await sent;
        link.failures = 0;
        return result;
      } catch (error) {
        if (error instanceof TributaryError && CONNECTION_FAILURES.has(error.code) && link.connection === connection) {
          link.connection = undefined;
          connection.close();
          this.backOff(link, error);
        }
        throw error;
      }
    };
    connection.request = <Request, Response>(api: ApiSchema<Request, Response>, version: number, body: Request): Promise<Response> => observe(request(api, version, body));
    connection.sendWithoutResponse = <Request, Response>(api: ApiSchema<Request, Response>, version: number, body: Request): Promise<void> =>
      observe(sendWithoutResponse(api, version, body));
  }

  private backOff(link: Link, error: unknown): void {
    link.failures += 1;
    const base = this.options.reconnectBackoffMs ?? 100;
    const delay = jitter(Math.min(this.options.reconnectBackoffMaxMs ?? 2000, base * 2 ** (link.failures - 1)));
    link.retryAt = Date.now() + delay;
    this.options.logger?.warn({ broker: link.address.key, failures: link.failures, retryInMs: Math.round(delay), err: error }, 'broker connection failed');
  }

  private checkOpen(): void {
    if (this.closed) throw new TributaryError({ code: 'CLIENT_CLOSED', message: 'the cluster client is closed; create a new one' });
  }
}

/** ±20 % so that many clients do not retry in step. */
export function jitter(ms: number): number {
  return ms * (0.8 + Math.random() * 0.4);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
