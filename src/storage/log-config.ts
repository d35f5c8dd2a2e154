/**
 * Per-topic log settings, with Kafka's names for the overrides kept in `/config/topics/<topic>`.
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
});

export type LogConfig = z.output<typeof logConfigSchema>;
export type LogConfigOverrides = Partial<LogConfig>;

export const DEFAULT_LOG_CONFIG: LogConfig = logConfigSchema.parse({});

/** Kafka's topic-config names → our fields. */
const KAFKA_NAMES: Record<string, keyof LogConfig> = {
  'segment.bytes': 'segmentBytes',
  'segment.ms': 'segmentMs',
  'index.interval.bytes': 'indexIntervalBytes',
  'flush.messages': 'flushMessages',
  'flush.ms': 'flushMs',
  'retention.ms': 'retentionMs',
  'retention.bytes': 'retentionBytes',
  'max.message.bytes': 'maxMessageBytes',
  'visible.on.append': 'visibleOnAppend',
  'message.timestamp.type': 'timestampType',
  'message.timestamp.before.max.ms': 'timestampBeforeMaxMs',
  'message.timestamp.after.max.ms': 'timestampAfterMaxMs',
};

export const TOPIC_CONFIG_NAMES: readonly string[] = Object.keys(KAFKA_NAMES);

/**
 * Turns Kafka-style `name → string value` overrides (CreateTopics configs, `/config/topics`) into
 * a full config over `base`. Unknown names and bad values fail with CONFIG_INVALID naming them.
 */
export function logConfigFromTopicConfigs(
  configs: Readonly<Record<string, string>>,
  base: LogConfig = DEFAULT_LOG_CONFIG,
  source = 'topic configs',
): LogConfig {
  const overrides: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [name, value] of Object.entries(configs)) {
    const field = KAFKA_NAMES[name];
    if (field === undefined) {
      unknown.push(name);
      continue;
    }
    overrides[field] = topicConfigValue(field, value);
  }
  if (unknown.length > 0) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `unknown topic config ${unknown.join(', ')} in ${source}; known: ${TOPIC_CONFIG_NAMES.join(', ')}`,
      details: { source, unknown },
    });
  }
  return parseConfig(logConfigSchema, { ...base, ...overrides }, source);
}

/** A topic config's string value as its field holds it (bounds stay strings so Long.MAX_VALUE parses). */
function topicConfigValue(field: keyof LogConfig, value: string): unknown {
  if (field === 'visibleOnAppend') return value === 'true' ? true : value === 'false' ? false : value;
  if (field === 'timestampType' || field === 'timestampBeforeMaxMs' || field === 'timestampAfterMaxMs') return value;
  return Number(value);
}
