/**
 * Kafka's protocol error codes (from the Java client's `Errors`), the subset Tributary answers
 * with, and the error type that carries one. A `KafkaProtocolError` travels from storage or a
 * handler to the response encoder, which writes `kafkaCode` into the response.
 */
import { TributaryError } from '../common/errors.js';

export const KafkaErrorCode = {
  UNKNOWN_SERVER_ERROR: -1,
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  NOT_LEADER_OR_FOLLOWER: 6,
  REQUEST_TIMED_OUT: 7,
  REPLICA_NOT_AVAILABLE: 9,
  MESSAGE_TOO_LARGE: 10,
  STALE_CONTROLLER_EPOCH: 11,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_LOAD_IN_PROGRESS: 14,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  INVALID_TOPIC_EXCEPTION: 17,
  RECORD_LIST_TOO_LARGE: 18,
  NOT_ENOUGH_REPLICAS: 19,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: 20,
  INVALID_REQUIRED_ACKS: 21,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  GROUP_AUTHORIZATION_FAILED: 30,
  CLUSTER_AUTHORIZATION_FAILED: 31,
  INVALID_TIMESTAMP: 32,
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  UNSUPPORTED_VERSION: 35,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  INVALID_REPLICATION_FACTOR: 38,
  INVALID_REPLICA_ASSIGNMENT: 39,
  INVALID_CONFIG: 40,
  NOT_CONTROLLER: 41,
  INVALID_REQUEST: 42,
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 43,
  POLICY_VIOLATION: 44,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  DUPLICATE_SEQUENCE_NUMBER: 46,
  INVALID_PRODUCER_EPOCH: 47,
  INVALID_TXN_STATE: 48,
  INVALID_PRODUCER_ID_MAPPING: 49,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  KAFKA_STORAGE_ERROR: 56,
  SASL_AUTHENTICATION_FAILED: 58,
  UNKNOWN_PRODUCER_ID: 59,
  NON_EMPTY_GROUP: 68,
  GROUP_ID_NOT_FOUND: 69,
  FENCED_LEADER_EPOCH: 74,
  UNKNOWN_LEADER_EPOCH: 75,
  UNSUPPORTED_COMPRESSION_TYPE: 76,
  STALE_BROKER_EPOCH: 77,
  OFFSET_NOT_AVAILABLE: 78,
  MEMBER_ID_REQUIRED: 79,
  GROUP_MAX_SIZE_REACHED: 81,
  FENCED_INSTANCE_ID: 82,
  INVALID_RECORD: 87,
} as const;

export type KafkaErrorName = keyof typeof KafkaErrorCode;

/**
 * Errors a client may retry unchanged: those whose Java exception is a RetriableException
 * (InvalidMetadataException included: REPLICA_NOT_AVAILABLE, FENCED_LEADER_EPOCH). Not
 * STALE_CONTROLLER_EPOCH or STALE_BROKER_EPOCH: the sender is the stale one and must not resend.
 */
const RETRIABLE: ReadonlySet<KafkaErrorName> = new Set<KafkaErrorName>([
  'CORRUPT_MESSAGE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_OR_FOLLOWER',
  'REQUEST_TIMED_OUT',
  'REPLICA_NOT_AVAILABLE',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'NOT_CONTROLLER',
  'KAFKA_STORAGE_ERROR',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'OFFSET_NOT_AVAILABLE',
]);

const ERROR_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(KafkaErrorCode).map(([name, code]) => [code, name]));

/** The name of a Kafka error code, as the Java client's `Errors` enum spells it. */
export function kafkaErrorName(code: number): string {
  return ERROR_NAMES.get(code) ?? EXTRA_ERROR_NAMES.get(code) ?? `KAFKA_ERROR_${code}`;
}

/** Codes a broker may send that Tributary itself never does; names from the Java client. */
const EXTRA_ERROR_NAMES: ReadonlyMap<number, string> = new Map([
  [13, 'NETWORK_EXCEPTION'],
  [29, 'TOPIC_AUTHORIZATION_FAILED'],
]);

/** One refused record of a produced batch (Produce v8+ `record_errors`). */
export interface RecordError {
  /** Position of the record in its batch, from 0. */
  readonly batchIndex: number;
  readonly message: string;
}

export class KafkaProtocolError extends TributaryError {
  /** The numeric code written into responses. */
  readonly kafkaCode: number;
  /** The records that made a produced batch invalid, where Kafka names them. */
  readonly recordErrors: readonly RecordError[];

  constructor(
    name: KafkaErrorName,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown>; recordErrors?: readonly RecordError[] } = {},
  ) {
    const { recordErrors, ...rest } = options;
    super({ code: name, message, retriable: RETRIABLE.has(name), ...rest });
    this.name = 'KafkaProtocolError';
    this.kafkaCode = KafkaErrorCode[name];
    this.recordErrors = recordErrors ?? [];
  }
}
