import { describe, expect, it } from 'vitest';
import { KafkaErrorCode, KafkaProtocolError, kafkaErrorName, type KafkaErrorName } from '../../../src/protocol/kafka-errors.js';

describe('Kafka error codes', () => {
  // Codes and retriability as Kafka's Errors.java and the exception classes it builds: a
  // RetriableException (or an InvalidMetadataException, which is one) is retriable.
  it.each<[KafkaErrorName, number, boolean]>([
    ['REPLICA_NOT_AVAILABLE', 9, true],
    ['STALE_CONTROLLER_EPOCH', 11, false],
    ['NOT_ENOUGH_REPLICAS', 19, true],
    ['NOT_ENOUGH_REPLICAS_AFTER_APPEND', 20, true],
    ['INVALID_REPLICATION_FACTOR', 38, false],
    ['INVALID_REPLICA_ASSIGNMENT', 39, false],
    ['NOT_CONTROLLER', 41, true],
    ['FENCED_LEADER_EPOCH', 74, true],
    ['UNKNOWN_LEADER_EPOCH', 75, true],
    ['STALE_BROKER_EPOCH', 77, false],
    ['OFFSET_NOT_AVAILABLE', 78, true],
    ['NOT_LEADER_OR_FOLLOWER', 6, true],
    ['INVALID_PARTITIONS', 37, false],
  ])('%s is %i, retriable %s', (name, code, retriable) => {
    expect(KafkaErrorCode[name]).toBe(code);
    expect(kafkaErrorName(code)).toBe(name);
    const error = new KafkaProtocolError(name, 'for the test');
    expect([error.kafkaCode, error.code, error.retriable]).toEqual([code, name, retriable]);
  });

  it('names no code twice, and names codes it never sends', () => {
    const codes = Object.values(KafkaErrorCode);
    expect(new Set(codes).size).toBe(codes.length);
    expect(kafkaErrorName(29)).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect(kafkaErrorName(9999)).toBe('KAFKA_ERROR_9999');
  });
});
