/**
 * How the producer reads a failed attempt: which errors are worth retrying, which mean the
 * metadata is stale, and the error the sends of a given-up batch reject with (Kafka's error name
 * as the code, and what to do about it).
 */
import { TributaryError, isRetriable } from '../../common/errors.js';
import type { ProducerBatch } from './batch.js';

/** Errors after which the partition's leader may have moved: ask for metadata before retrying. */
export const STALE_METADATA: ReadonlySet<string> = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'CONNECTION_LOST',
  'REQUEST_TIMED_OUT',
  'BROKER_UNREACHABLE',
  'BROKER_NOT_AVAILABLE',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'KAFKA_STORAGE_ERROR',
]);

/** Produce errors that are worth retrying, beyond kafka-errors.ts's own retriable set. */
export const RETRIABLE_PRODUCE_ERRORS: ReadonlySet<string> = new Set([
  'CORRUPT_MESSAGE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_OR_FOLLOWER',
  'REQUEST_TIMED_OUT',
  'KAFKA_STORAGE_ERROR',
  'NETWORK_EXCEPTION',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
]);

/**
 * Failures after which the batch may be stored although no one said so: the answer was lost, or
 * the broker appended and then failed to replicate or answer in time. Every other failure is an
 * answer that the batch was refused (or it never left the client).
 */
const OUTCOME_UNKNOWN: ReadonlySet<string> = new Set(['CONNECTION_LOST', 'REQUEST_TIMED_OUT', 'NETWORK_EXCEPTION', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'UNKNOWN']);

/** What to do about a Produce error that will not go away by itself. */
const ADVICE: Readonly<Record<string, string>> = {
  MESSAGE_TOO_LARGE: 'the batch is larger than the broker accepts (message.max.bytes): send smaller records, or lower batchSize',
  RECORD_LIST_TOO_LARGE: 'the request is larger than the broker accepts: lower batchSize',
  INVALID_RECORD: 'the broker found the batch invalid: check the records (keys, timestamps, headers) and report it if they are fine',
  CORRUPT_MESSAGE: 'the batch failed its CRC check at the broker every time: check the network path, and report it with the broker log',
  INVALID_TIMESTAMP: "a record's timestamp is outside what the topic accepts: send current timestamps",
  INVALID_REQUIRED_ACKS: 'acks must be -1, 0 or 1',
  UNSUPPORTED_COMPRESSION_TYPE: 'the broker does not accept this compression codec: choose another one',
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 'the topic uses an old message format: upgrade it or send without compression',
  INVALID_TOPIC_EXCEPTION: 'the topic name is invalid: use 1–249 characters of a–z, A–Z, 0–9, ".", "_" and "-"',
  TOPIC_AUTHORIZATION_FAILED: 'this client may not write to the topic: ask for write permission',
  UNKNOWN_SERVER_ERROR: 'the broker failed unexpectedly: see its log',
  INVALID_PRODUCER_EPOCH:
    'the broker has seen a newer epoch of this producer id on the partition, so it refused this older batch (not stored); another producer may share the id: create a new producer',
  OUT_OF_ORDER_SEQUENCE_NUMBER: 'the broker and the producer disagree on the sequence of this partition even after an epoch bump: see the broker log',
  UNKNOWN_PRODUCER_ID: 'the broker kept losing the state of this producer id: see the broker log (retention, restarts)',
};

export function errorCode(error: Error): string {
  return error instanceof TributaryError ? error.code : 'UNKNOWN';
}

/** Whether a failed attempt may have stored the batch anyway. */
export function mayHaveBeenStored(error: Error): boolean {
  return OUTCOME_UNKNOWN.has(errorCode(error));
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new TributaryError({ code: 'UNKNOWN', message: String(error), cause: error });
}

export function encodingError(batch: ProducerBatch, error: unknown): TributaryError {
  return new TributaryError({
    code: 'ENCODING_FAILED',
    message: `could not build a record batch for partition ${batch.partition} of topic "${batch.topic}": ${error instanceof Error ? error.message : String(error)}`,
    cause: error,
    details: { topic: batch.topic, partition: batch.partition },
  });
}

/** The error the sends of a given-up batch reject with: the Kafka error name, and what to do. */
export function finalError(batch: ProducerBatch, error: Error, retries: number, deliveryTimeoutMs: number): TributaryError {
  const code = errorCode(error);
  const where = `${batch.records.length} records for partition ${batch.partition} of topic "${batch.topic}"`;
  const retriable = isRetriable(error);
  const advice = retriable
    ? `gave up after ${batch.failures} attempts (${batch.failures > retries ? `retries: ${retries}` : `delivery timeout: ${deliveryTimeoutMs} ms`}); ${ADVICE[code] ?? 'the broker may be down or overloaded: check it, or raise retries / deliveryTimeoutMs'}`
    : (ADVICE[code] ?? 'see the broker log');
  return new TributaryError({
    code,
    retriable,
    message: `could not deliver ${where}: ${error.message}; ${advice}`,
    cause: error,
    details: { topic: batch.topic, partition: batch.partition, records: batch.records.length, attempts: batch.failures },
  });
}
