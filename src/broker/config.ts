/**
 * Broker settings, named as in Kafka where the concept is the same. They come from
 * `--config FILE` (Java-properties style `key=value` lines) and `--set key=value`, validated here.
 * The log settings become the defaults of every topic; `/config/topics/<topic>` overrides them.
 */
import { z } from 'zod';
import { parseConfig } from '../common/config.js';
import type { CleanerConfig } from '../storage/cleaner/log-cleaner.js';
import { logConfigSchema, normalizeCleanupPolicy, timestampBoundMs, type LogConfig } from '../storage/log-config.js';

const integer = z.coerce.number().int();
const bool = z.union([z.boolean(), z.enum(['true', 'false']).transform((value) => value === 'true')]);

export const brokerConfigSchema = z
  .object({
    'num.partitions': integer.min(1).default(1),
    /** Largest partition count a topic may be created with (each partition is a folder of open files). */
    'create.topic.max.partitions': integer.min(1).default(4096),
    'auto.create.topics.enable': bool.default(true),
    'socket.request.max.bytes': integer.min(1024).default(104_857_600),
    'connections.max.idle.ms': integer.min(1).default(600_000),
    /** Client connections held at once, over every listener and from one address (Kafka: unlimited). */
    'max.connections': integer.min(1).default(2_147_483_647),
    'max.connections.per.ip': integer.min(1).default(2_147_483_647),
    'message.max.bytes': integer.min(1).default(1_048_588),
    'log.segment.bytes': integer.min(1024).default(1_073_741_824),
    'log.roll.ms': integer.min(1).default(7 * 24 * 3_600_000),
    'log.index.interval.bytes': integer.min(0).default(4096),
    'log.retention.ms': integer.min(-1).default(7 * 24 * 3_600_000),
    'log.retention.bytes': integer.min(-1).default(-1),
    'log.retention.check.interval.ms': integer.min(1).default(300_000),
    /** The policy of topics without their own cleanup.policy: delete, compact or compact,delete. */
    'log.cleanup.policy': z.string().default('delete'),
    /** The log cleaner (storage/cleaner/): compacted topics are cleaned only while it is enabled. */
    'log.cleaner.enable': bool.default(true),
    'log.cleaner.threads': integer.min(1).default(1),
    /** Bytes of the cleaners' key maps (24 per key), shared by the threads: bounds one pass, not the log. */
    'log.cleaner.dedupe.buffer.size': integer.min(1024 * 1024).default(134_217_728),
    /** Share of the key map's slots a pass fills before it stops (Kafka's name, despite "io.buffer"). */
    'log.cleaner.io.buffer.load.factor': z.coerce.number().gt(0).max(1).default(0.9),
    /** Bytes read and written per chunk by a cleaner thread. */
    'log.cleaner.io.buffer.size': integer.min(1024).default(524_288),
    /** Bytes per second the cleaners read plus write, together (Kafka's default: no limit). */
    'log.cleaner.io.max.bytes.per.second': z.coerce.number().positive().default(Infinity),
    /** Pause of a cleaner thread that found no log to clean. */
    'log.cleaner.backoff.ms': integer.min(0).default(15_000),
    'log.cleaner.min.cleanable.ratio': z.coerce.number().min(0).max(1).default(0.5),
    'log.cleaner.min.compaction.lag.ms': integer.min(0).default(0),
    'log.cleaner.max.compaction.lag.ms': timestampBoundMs.default(Infinity),
    'log.cleaner.delete.retention.ms': integer.min(0).default(86_400_000),
    'log.flush.interval.messages': integer.min(1).default(10_000),
    'log.flush.interval.ms': integer.min(0).default(100),
    'log.visible.on.append': bool.default(false),
    'log.message.timestamp.type': z.enum(['CreateTime', 'LogAppendTime']).default('CreateTime'),
    /** Kafka's defaults: no bound before (Long.MAX_VALUE), one hour after (Kafka 4.0, KIP-1030). */
    'log.message.timestamp.before.max.ms': timestampBoundMs.default(Infinity),
    'log.message.timestamp.after.max.ms': timestampBoundMs.default(3_600_000),
    /** Idempotent producers idle this long are forgotten by each partition (KIP-854, Kafka 3.4+). */
    'producer.id.expiration.ms': integer.min(1).default(86_400_000),
    'producer.id.expiration.check.interval.ms': integer.min(1).default(600_000),
    /** Consumer groups (kafka-clients.md §3.1): the session timeouts a member may ask for, … */
    'group.min.session.timeout.ms': integer.min(1).default(6000),
    'group.max.session.timeout.ms': integer.min(1).default(1_800_000),
    /** … how long the first members of an empty group wait for more before the first rebalance, … */
    'group.initial.rebalance.delay.ms': integer.min(0).default(3000),
    'group.max.size': integer.min(1).default(2_147_483_647),
    /** … the longest metadata string a commit may carry, … */
    'offset.metadata.max.bytes': integer.min(0).default(4096),
    /** … and how long offsets outlive their group once it is empty (7 days, Kafka 2.0+). */
    'offsets.retention.minutes': integer.min(1).default(10_080),
    'offsets.retention.check.interval.ms': integer.min(1).default(600_000),
    'zookeeper.session.timeout.ms': integer.min(1000).default(6000),
    /** Replication (replication.md): copies per partition of a topic created without a replication factor. */
    'default.replication.factor': integer.min(1).default(1),
    /** acks=−1 is refused while a partition has fewer in-sync replicas; topics may override it. */
    'min.insync.replicas': integer.min(1).default(1),
    /** A follower not caught up for this long leaves the ISR (Kafka 2.5+: 30 s). */
    'replica.lag.time.max.ms': integer.min(100).default(30_000),
    /** Bytes a follower asks for per partition, and per fetch response. */
    'replica.fetch.max.bytes': integer.min(1024).default(1_048_576),
    'replica.fetch.response.max.bytes': integer.min(1024).default(10_485_760),
    /** How long a follower's fetch waits at the leader for new records. */
    'replica.fetch.wait.max.ms': integer.min(0).default(500),
    /** Pause before a follower retries a failed fetch. */
    'replica.fetch.backoff.ms': integer.min(0).default(1_000),
    /** How often each partition's high watermark is checkpointed (a restarted replica starts from it). */
    'replica.high.watermark.checkpoint.interval.ms': integer.min(100).default(5_000),
    /** This broker's rack ("" = none): replicas of a partition are spread over racks when every broker has one. */
    'broker.rack': z.string().default(''),
    'shutdown.grace.ms': integer.min(0).default(10_000),
    /** How fetched records reach the socket: streamed from the file in chunks, or read whole first. */
    'fetch.send.mode': z.enum(['stream', 'buffer']).default('stream'),
    /** `acl`: requests are checked against the ACLs in the coordination store (broker/security/authorizer.ts); `none` allows all. */
    authorizer: z.enum(['none', 'acl']).default('none'),
    /**
     * Principals allowed everything, `User:a;User:b` (Kafka's format). With authorizer=acl the
     * brokers' own principal belongs here (as in Kafka): followers fetch with CLUSTER_ACTION.
     */
    'super.users': z.string().default(''),
    /** With authorizer=acl, whether a resource without any ACL is open to everyone (Kafka's default: no). */
    'allow.everyone.if.no.acl.found': bool.default(false),
    /**
     * Listeners (Kafka's names; listeners.ts reads them): `NAME://host:port,…`. Unset: one
     * PLAINTEXT listener on the broker's --listen address. advertised.listeners defaults to these.
     */
    listeners: z.string().optional(),
    'advertised.listeners': z.string().optional(),
    'listener.security.protocol.map': z.string().default('PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL'),
    /** The listener other brokers' replica fetchers connect to (default: the first PLAINTEXT one, else the first). */
    'inter.broker.listener.name': z.string().optional(),
    /** TLS listeners: PEM private key + certificate chain, its passphrase, and PEM CAs that sign client certificates. */
    'ssl.keystore.location': z.string().optional(),
    'ssl.key.password': z.string().optional(),
    'ssl.truststore.location': z.string().optional(),
    /** `required`: a client without a certificate the truststore vouches for is refused; its subject becomes its principal. */
    'ssl.client.auth': z.enum(['none', 'requested', 'required']).default('none'),
    /** SASL listeners: mechanisms offered (PLAIN is never offered on SASL_PLAINTEXT: the password would travel in clear). */
    'sasl.enabled.mechanisms': z.string().default('SCRAM-SHA-512,SCRAM-SHA-256,PLAIN'),
    /** A failed authentication is answered after this pause, then the connection closes (slows password guessing). */
    'connection.failed.authentication.delay.ms': integer.min(0).default(100),
    /** Largest frame accepted before and during SASL authentication (CVE-2022-34917). */
    'sasl.server.max.receive.size': integer.min(64).default(524_288),
    /** How this broker's replica fetchers authenticate on a SASL inter-broker listener. */
    'sasl.mechanism.inter.broker.protocol': z.enum(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']).default('SCRAM-SHA-512'),
    'inter.broker.sasl.username': z.string().optional(),
    /** File holding the inter-broker password (or the CLI's env TRIBUTARY_INTER_BROKER_SASL_PASSWORD): never in the config itself. */
    'inter.broker.sasl.password.file': z.string().optional(),
    /** Whether replica fetchers check that a leader's certificate names its host (`https`, Kafka's default) or not (empty). */
    'ssl.endpoint.identification.algorithm': z.string().default('https'),
  })
  .strict()
  .refine((config) => config['group.min.session.timeout.ms'] <= config['group.max.session.timeout.ms'], {
    message: 'group.min.session.timeout.ms must not be above group.max.session.timeout.ms',
  })
  .refine((config) => config['replica.fetch.wait.max.ms'] < config['replica.lag.time.max.ms'], {
    message: 'replica.fetch.wait.max.ms must be below replica.lag.time.max.ms, or caught-up followers would be dropped from the ISR',
  });

export type BrokerConfig = z.output<typeof brokerConfigSchema>;

/** Parses `key=value` lines (blank lines and `#` comments ignored). */
export function parseProperties(text: string, source: string): Record<string, string> {
  const properties: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith('!')) return;
    const separator = trimmed.search(/[=:]/);
    if (separator <= 0) throw new Error(`${source} line ${index + 1}: expected key=value, got "${trimmed}"`);
    properties[trimmed.slice(0, separator).trim()] = trimmed.slice(separator + 1).trim();
  });
  return properties;
}

export function parseBrokerConfig(properties: Readonly<Record<string, string | number | boolean>>, source: string): BrokerConfig {
  return parseConfig(brokerConfigSchema, properties, source);
}

/** The log cleaner's settings (storage/cleaner/log-cleaner.ts) from the log.cleaner.* keys. */
export function cleanerConfig(config: BrokerConfig): CleanerConfig {
  return {
    enable: config['log.cleaner.enable'],
    threads: config['log.cleaner.threads'],
    dedupeBufferSize: config['log.cleaner.dedupe.buffer.size'],
    loadFactor: config['log.cleaner.io.buffer.load.factor'],
    ioBufferSize: config['log.cleaner.io.buffer.size'],
    maxIoBytesPerSecond: config['log.cleaner.io.max.bytes.per.second'],
    backoffMs: config['log.cleaner.backoff.ms'],
  };
}

/** The topic-log defaults this broker applies before per-topic overrides. */
export function defaultLogConfig(config: BrokerConfig): LogConfig {
  return logConfigSchema.parse({
    segmentBytes: config['log.segment.bytes'],
    segmentMs: config['log.roll.ms'],
    indexIntervalBytes: config['log.index.interval.bytes'],
    flushMessages: config['log.flush.interval.messages'],
    flushMs: config['log.flush.interval.ms'],
    retentionMs: config['log.retention.ms'],
    retentionBytes: config['log.retention.bytes'],
    maxMessageBytes: config['message.max.bytes'],
    visibleOnAppend: config['log.visible.on.append'],
    timestampType: config['log.message.timestamp.type'],
    timestampBeforeMaxMs: config['log.message.timestamp.before.max.ms'],
    timestampAfterMaxMs: config['log.message.timestamp.after.max.ms'],
    minInsyncReplicas: config['min.insync.replicas'],
    cleanupPolicy: normalizeCleanupPolicy(config['log.cleanup.policy']),
    minCleanableDirtyRatio: config['log.cleaner.min.cleanable.ratio'],
    minCompactionLagMs: config['log.cleaner.min.compaction.lag.ms'],
    maxCompactionLagMs: config['log.cleaner.max.compaction.lag.ms'],
    deleteRetentionMs: config['log.cleaner.delete.retention.ms'],
  });
}
