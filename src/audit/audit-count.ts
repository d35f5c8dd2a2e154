/**
 * The AuditCount event (schemas/AuditCount.avsc) as TypeScript, where it is published, and the
 * schema itself, read from the project's schemas/ folder once.
 */
import { readFileSync } from 'node:fs';
import { parseAvroSchema, type ParsedSchema } from '../registry/avro-schema.js';

/** The topic every counter publishes to, on its own cluster (the mirror copies it offline). */
export const AUDIT_TOPIC = '_audit';
/** The registry subject of AuditCount values in AUDIT_TOPIC (Confluent's topic-name strategy). */
export const AUDIT_SUBJECT = `${AUDIT_TOPIC}-value`;

/** The tiers of the AuditTier enum; a reader puts a symbol it does not know under UNKNOWN. */
export const AUDIT_TIERS = ['PRODUCER', 'BROKER', 'MIRROR', 'LOADER', 'UNKNOWN', 'CONSUMER'] as const;
export type AuditTier = (typeof AUDIT_TIERS)[number];

export interface LatencyBucket {
  /** Latencies above the previous bucket's bound and at most this many milliseconds. */
  readonly upperBoundMs: number;
  readonly count: number;
}

/** One AuditCount event: a delta of one counter for one (topic, window, origin). */
export interface AuditCountEvent {
  readonly topic: string;
  readonly tier: AuditTier;
  readonly cluster: string | null;
  readonly server: string;
  readonly windowStart: number;
  readonly windowEnd: number;
  readonly count: number;
  readonly publishedAt: number;
  /** null from writers older than the field. */
  readonly origin: string | null;
  /** With `sequence`, the event's identity; null from writers older than the fields. */
  readonly counterId: string | null;
  readonly sequence: number | null;
  readonly latency: readonly LatencyBucket[];
}

let schema: ParsedSchema | undefined;

/** schemas/AuditCount.avsc, parsed (the writer schema of counters, the reader schema of reports). */
export function auditCountSchema(): ParsedSchema {
  schema ??= parseAvroSchema(readFileSync(new URL('../../schemas/AuditCount.avsc', import.meta.url), 'utf8'));
  return schema;
}
