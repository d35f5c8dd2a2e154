/**
 * Per-topic log settings, with Kafka's names for the overrides kept in `/config/topics/<topic>`,
 * and the catalog of those names (type, broker setting that gives the default, what is allowed)
 * that CreateTopics, DescribeConfigs and the AlterConfigs APIs share.
 *
 * Records become readable when flushed (the paper's rule): `flush.messages` or `flush.ms`,
 * whichever comes first, triggers an fsync and moves the high watermark. A topic may set
 * `visible.on.append=true` to expose records as soon as they are written to the page cache.
 */
import { z } from 'zod';
import { parseConfig } from '../common/config.js';
import { TributaryError } from '../common/errors.js';

const GiB = 1024 * 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A timestamp bound in milliseconds. Kafka's "no bound" is Long.MAX_VALUE (9223372036854775807),
 * which no JS number holds exactly: any value of 2^53 or more means "unbounded" and becomes Infinity.
 */
export const timestampBoundMs = z.preprocess((value) => {
  if (typeof value === 'string' && /^\d+$/.test(value.trim())) value = BigInt(value.trim()) >= 2n ** 53n ? Infinity : Number(value);
  if (typeof value === 'number' && value >= 2 ** 53) return Infinity;
  return value;
}, z.union([z.number().int().nonnegative(), z.literal(Infinity)]));

export const logConfigSchema = z.object({
  /** Roll the active segment when it would grow past this size. */
  segmentBytes: z.number().int().min(14).max(2 * GiB - 1).default(GiB),
  /** Roll the active segment when it is older than this, even if small. */
  segmentMs: z.number().int().positive().default(7 * DAY_MS),
  /** Bytes of batches between two sparse index entries. */
  indexIntervalBytes: z.number().int().nonnegative().default(4096),
  /** Flush after this many unflushed records. */
  flushMessages: z.number().int().positive().default(10_000),
  /** Flush when the oldest unflushed record is this old. */
  flushMs: z.number().int().nonnegative().default(100),
  /** Delete closed segments whose newest record is older than this; −1 keeps them forever. */
  retentionMs: z.number().int().min(-1).default(7 * DAY_MS),
  /** Delete the oldest closed segments while the log is larger than this; −1 = no limit. */
  retentionBytes: z.number().int().min(-1).default(-1),
  /** Largest batch accepted (Kafka's default: 1 MiB + 12 bytes of log overhead). */
  maxMessageBytes: z.number().int().positive().default(1_048_588),
  /** Expose records on append instead of on flush (lower latency, no durability before exposure). */
  visibleOnAppend: z.boolean().default(false),
  /** Whose clock a record's timestamp is: the producer's (CreateTime) or the broker's at append (LogAppendTime). */
  timestampType: z.enum(['CreateTime', 'LogAppendTime']).default('CreateTime'),
  /** CreateTime records older than now − this are refused with INVALID_TIMESTAMP (Kafka's default: no bound). */
  timestampBeforeMaxMs: timestampBoundMs.default(Infinity),
  /** CreateTime records newer than now + this are refused with INVALID_TIMESTAMP (Kafka 4's default: 1 hour). */
  timestampAfterMaxMs: timestampBoundMs.default(3_600_000),
  /**
   * What happens to old segments: `delete` (retention by time and size), `compact` (the log cleaner
   * keeps each key's latest value), or both. Normalised to this order whatever order it was given in.
   */
  cleanupPolicy: z.enum(['delete', 'compact', 'compact,delete']).default('delete'),
  /** A compacted log is cleaned once its uncleaned share of bytes is above this ratio. */
  minCleanableDirtyRatio: z.number().min(0).max(1).default(0.5),
  /** Records younger than this stay uncompacted (their segment is not cleaned). */
  minCompactionLagMs: z.number().int().nonnegative().default(0),
  /** A record older than this is compacted even below the dirty ratio (Kafka's default: no bound). */
  maxCompactionLagMs: timestampBoundMs.refine((value) => value >= 1).default(Infinity),
  /** How long a tombstone stays readable after the cleaning pass that first saw it. */
  deleteRetentionMs: z.number().int().nonnegative().default(86_400_000),
  /**
   * Replication: acks=−1 is refused while fewer replicas are in sync, and the high watermark moves
   * only while at least this many are (read by the replica manager; the log itself ignores it).
   */
  minInsyncReplicas: z.number().int().min(1).default(1),
});

export type LogConfig = z.output<typeof logConfigSchema>;
export type LogConfigOverrides = Partial<LogConfig>;

export const DEFAULT_LOG_CONFIG: LogConfig = logConfigSchema.parse({});

/** Kafka's names for config data types (DescribeConfigs' ConfigType). */
export type TopicConfigType = 'BOOLEAN' | 'STRING' | 'INT' | 'LONG' | 'DOUBLE' | 'LIST';

/** One topic config Tributary honours. */
export interface TopicConfigDefinition {
  /** Kafka's topic-config name, as stored in `/config/topics/<topic>`. */
  readonly name: string;
  readonly field: keyof LogConfig;
  readonly type: TopicConfigType;
  /** The broker setting whose value a topic without an override gets (Kafka's synonym). */
  readonly brokerSynonym: string;
  /** What values are accepted, in words, for error messages. */
  readonly allowed: string;
  readonly documentation: string;
}

const INT_MAX = 2 ** 31 - 1;
const LONG_BOUND = 'an integer up to 9223372036854775807 (Long.MAX_VALUE, no bound)';

/** The topic configs Tributary honours, in the order DescribeConfigs lists them. */
export const TOPIC_CONFIGS: readonly TopicConfigDefinition[] = [
  { name: 'cleanup.policy', field: 'cleanupPolicy', type: 'LIST', brokerSynonym: 'log.cleanup.policy', allowed: 'a list of "delete" and "compact": delete, compact or compact,delete', documentation: 'What happens to old segments: "delete" removes them by retention.ms and retention.bytes; "compact" keeps the latest value of each key (the log cleaner); both may be given.' },
  { name: 'delete.retention.ms', field: 'deleteRetentionMs', type: 'LONG', brokerSynonym: 'log.cleaner.delete.retention.ms', allowed: 'an integer of at least 0 (milliseconds)', documentation: 'How long a tombstone (a record with a null value) of a compacted topic stays readable after the cleaning pass that first kept it.' },
  { name: 'flush.messages', field: 'flushMessages', type: 'LONG', brokerSynonym: 'log.flush.interval.messages', allowed: 'an integer of at least 1', documentation: 'Flush (fsync) the log after this many unflushed records; records become readable once flushed.' },
  { name: 'flush.ms', field: 'flushMs', type: 'LONG', brokerSynonym: 'log.flush.interval.ms', allowed: 'an integer of at least 0 (milliseconds)', documentation: 'Flush (fsync) the log when its oldest unflushed record is this many milliseconds old.' },
  { name: 'index.interval.bytes', field: 'indexIntervalBytes', type: 'INT', brokerSynonym: 'log.index.interval.bytes', allowed: `an integer from 0 to ${INT_MAX}`, documentation: 'Bytes of batches between two entries of the sparse offset index.' },
  { name: 'max.compaction.lag.ms', field: 'maxCompactionLagMs', type: 'LONG', brokerSynonym: 'log.cleaner.max.compaction.lag.ms', allowed: `${LONG_BOUND}, at least 1 and not below min.compaction.lag.ms (milliseconds)`, documentation: 'A record of a compacted topic older than this is cleaned even when the log is below min.cleanable.dirty.ratio; its segment rolls by then too.' },
  { name: 'max.message.bytes', field: 'maxMessageBytes', type: 'INT', brokerSynonym: 'message.max.bytes', allowed: `an integer from 1 to ${INT_MAX} (bytes)`, documentation: 'The largest record batch the topic accepts, in bytes.' },
  { name: 'message.timestamp.after.max.ms', field: 'timestampAfterMaxMs', type: 'LONG', brokerSynonym: 'log.message.timestamp.after.max.ms', allowed: `${LONG_BOUND}, at least 0 (milliseconds)`, documentation: 'CreateTime records more than this many milliseconds ahead of the broker clock are refused.' },
  { name: 'message.timestamp.before.max.ms', field: 'timestampBeforeMaxMs', type: 'LONG', brokerSynonym: 'log.message.timestamp.before.max.ms', allowed: `${LONG_BOUND}, at least 0 (milliseconds)`, documentation: 'CreateTime records more than this many milliseconds behind the broker clock are refused.' },
  { name: 'min.cleanable.dirty.ratio', field: 'minCleanableDirtyRatio', type: 'DOUBLE', brokerSynonym: 'log.cleaner.min.cleanable.ratio', allowed: 'a number from 0 to 1', documentation: 'A compacted log is cleaned once the uncleaned part is more than this share of its bytes.' },
  { name: 'min.compaction.lag.ms', field: 'minCompactionLagMs', type: 'LONG', brokerSynonym: 'log.cleaner.min.compaction.lag.ms', allowed: 'an integer of at least 0 (milliseconds)', documentation: 'Records of a compacted topic younger than this are not cleaned.' },
  { name: 'min.insync.replicas', field: 'minInsyncReplicas', type: 'INT', brokerSynonym: 'min.insync.replicas', allowed: `an integer from 1 to ${INT_MAX}`, documentation: 'acks=-1 writes are refused with NOT_ENOUGH_REPLICAS while fewer replicas are in sync, and records become readable only while at least this many are.' },
  { name: 'message.timestamp.type', field: 'timestampType', type: 'STRING', brokerSynonym: 'log.message.timestamp.type', allowed: 'CreateTime or LogAppendTime', documentation: "Whose clock a record's timestamp is: the producer's (CreateTime) or the broker's at append (LogAppendTime)." },
  { name: 'retention.bytes', field: 'retentionBytes', type: 'LONG', brokerSynonym: 'log.retention.bytes', allowed: 'an integer of at least -1 (bytes; -1 = no size limit)', documentation: 'Delete the oldest closed segments of a partition while it is larger than this; -1 means no limit.' },
  { name: 'retention.ms', field: 'retentionMs', type: 'LONG', brokerSynonym: 'log.retention.ms', allowed: 'an integer of at least -1 (milliseconds; -1 = keep forever)', documentation: 'Delete closed segments whose newest record is older than this many milliseconds; -1 keeps them forever.' },
  { name: 'segment.bytes', field: 'segmentBytes', type: 'INT', brokerSynonym: 'log.segment.bytes', allowed: `an integer from 14 to ${INT_MAX} (bytes)`, documentation: 'Roll to a new segment file when the active one would grow past this many bytes.' },
  { name: 'segment.ms', field: 'segmentMs', type: 'LONG', brokerSynonym: 'log.roll.ms', allowed: 'an integer of at least 1 (milliseconds)', documentation: 'Roll to a new segment file when the active one is older than this, even if it is small.' },
  { name: 'visible.on.append', field: 'visibleOnAppend', type: 'BOOLEAN', brokerSynonym: 'log.visible.on.append', allowed: 'true or false', documentation: 'Tributary only: expose records as soon as they are appended rather than once flushed (lower latency, no durability before exposure).' },
];

const BY_NAME: ReadonlyMap<string, TopicConfigDefinition> = new Map(TOPIC_CONFIGS.map((definition) => [definition.name, definition]));

export const TOPIC_CONFIG_NAMES: readonly string[] = TOPIC_CONFIGS.map((definition) => definition.name);

/** The definition of a topic config, or undefined when Tributary does not know the name. */
export function topicConfigDefinition(name: string): TopicConfigDefinition | undefined {
  return BY_NAME.get(name);
}

export function unknownTopicConfigMessage(name: string): string {
  return `unknown topic config ${name}; the topic configs Tributary honours are ${TOPIC_CONFIG_NAMES.join(', ')}`;
}

/** Why one `name=value` is refused, naming the config and what it allows. */
export interface TopicConfigProblem {
  readonly name: string;
  readonly value: string | null;
  readonly message: string;
}

/** The reason `value` is not valid for topic config `name`, or undefined when it is. */
export function topicConfigProblem(name: string, value: string | null): TopicConfigProblem | undefined {
  const definition = BY_NAME.get(name);
  if (definition === undefined) {
    return { name, value, message: unknownTopicConfigMessage(name) };
  }
  if (value === null) return { name, value, message: `topic config ${name} needs a value: ${definition.allowed}` };
  const parsed = logConfigSchema.shape[definition.field].safeParse(topicConfigValue(definition, value));
  if (parsed.success) return undefined;
  return { name, value, message: `invalid value ${JSON.stringify(value)} for topic config ${name}: expected ${definition.allowed}` };
}

/**
 * Turns Kafka-style `name → string value` overrides (CreateTopics configs, `/config/topics`) into
 * a full config over `base`. Unknown names and bad values fail with CONFIG_INVALID naming every
 * one of them and what it allows.
 */
export function logConfigFromTopicConfigs(
  configs: Readonly<Record<string, string>>,
  base: LogConfig = DEFAULT_LOG_CONFIG,
  source = 'topic configs',
): LogConfig {
  const problems = Object.entries(configs).flatMap(([name, value]) => topicConfigProblem(name, value) ?? []);
  if (problems.length > 0) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `${problems.map((problem) => problem.message).join('; ')} (in ${source})`,
      details: { source, problems },
    });
  }
  const overrides: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(configs)) {
    const definition = BY_NAME.get(name);
    if (definition !== undefined) overrides[definition.field] = topicConfigValue(definition, value);
  }
  const config = parseConfig(logConfigSchema, { ...base, ...overrides }, source);
  checkCompactionLags(config, source);
  return config;
}

/** Kafka refuses a max compaction lag below the min one: the log could never be cleaned in time. */
export function checkCompactionLags(config: LogConfig, source: string): void {
  if (config.maxCompactionLagMs >= config.minCompactionLagMs) return;
  const problem = {
    name: 'max.compaction.lag.ms',
    value: String(config.maxCompactionLagMs),
    message: `max.compaction.lag.ms (${config.maxCompactionLagMs}) must not be below min.compaction.lag.ms (${config.minCompactionLagMs})`,
  };
  throw new TributaryError({ code: 'CONFIG_INVALID', message: `${problem.message} (in ${source})`, details: { source, problems: [problem] } });
}

/** A cleanup.policy list in the one order the schema takes (`delete,compact` → `compact,delete`). */
export function normalizeCleanupPolicy(value: string): string {
  return [...new Set(value.split(',').map((item) => item.trim()).filter((item) => item !== ''))].sort().join(',');
}

/** Whether the log cleaner keeps this log (its policy includes compact). */
export function isCompacted(config: LogConfig): boolean {
  return config.cleanupPolicy !== 'delete';
}

/** Whether retention deletes old segments of this log (its policy includes delete). */
export function deletesByRetention(config: LogConfig): boolean {
  return config.cleanupPolicy !== 'compact';
}

/** When the active segment rolls by age: a compacted log rolls by max.compaction.lag.ms too, so it can be cleaned in time. */
export function rollAfterMs(config: LogConfig): number {
  return isCompacted(config) ? Math.min(config.segmentMs, config.maxCompactionLagMs) : config.segmentMs;
}

/** The largest batch any topic setting allows: what recovery accepts, and so what a follower may store. */
export function largestBatchBytes(config: LogConfig): number {
  return Math.max(config.maxMessageBytes, 1_048_588);
}

/** A config's value as a string, the way DescribeConfigs reports it (no bound = Long.MAX_VALUE). */
export function formatTopicConfigValue(definition: TopicConfigDefinition, config: LogConfig): string {
  const value = config[definition.field];
  if (value === Infinity) return '9223372036854775807';
  return String(value);
}

/**
 * A topic config's string value as its field holds it. Numbers must be plain decimal integers
 * (`Number` would take "", "1e3" and "0x10"); timestamp bounds stay strings so Long.MAX_VALUE parses.
 */
function topicConfigValue(definition: TopicConfigDefinition, raw: string): unknown {
  const value = raw.trim();
  switch (definition.type) {
    case 'BOOLEAN':
      return value === 'true' ? true : value === 'false' ? false : value;
    case 'LIST': {
      // Sorted, so "delete,compact" and "compact,delete" are one policy.
      return normalizeCleanupPolicy(value);
    }
    case 'DOUBLE':
      return /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(value) ? Number(value) : value;
    case 'STRING':
      return value;
    case 'INT':
    case 'LONG':
      if (definition.field === 'timestampBeforeMaxMs' || definition.field === 'timestampAfterMaxMs' || definition.field === 'maxCompactionLagMs') return value;
      return /^-?\d+$/.test(value) ? Number(value) : value;
  }
}
