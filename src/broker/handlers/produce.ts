/**
 * Produce: appends each partition's batch to its leader's log, stamped with the leader epoch.
 * On a partition with one replica, acks=1 is answered once the batch is in the file and acks=−1
 * once it is fsynced; on a replicated partition acks=1 waits for the leader's fsync and acks=−1
 * for the high watermark (fsynced on every in-sync replica), and acks=−1 is refused with
 * NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas. acks=0 is not answered at all
 * (an error then closes the connection so the producer notices, as Kafka does).
 *
 * Order matters across pipelined requests (an idempotent producer's sequences, and the offsets of
 * a non-idempotent one), so the handler runs in three steps: every await that precedes an append
 * (finding or opening the partition logs) completes first; then every append is started in
 * request order with no await between them — PartitionLog.append validates, checks producer
 * state and numbers the batch before its first await; then the request is admitted (the
 * connection may start the next one) and the handler waits for the writes or fsyncs. acks=0
 * requests are never admitted early: their failure closes the connection, and a later request
 * must not have been appended by then.
 *
 * A topic the principal may not WRITE gets TOPIC_AUTHORIZATION_FAILED on each of its partitions
 * and nothing is appended to it (the request's other topics go on).
 */
import { KafkaErrorCode, KafkaProtocolError, type RecordError } from '../../protocol/kafka-errors.js';
import { ProduceApi, type ProducePartitionResponse, type ProduceRequest, type ProduceResponse } from '../../protocol/apis/produce.js';
import { RECORDS_COUNT_OFFSET } from '../../protocol/record-batch.js';
import type { PartitionLog } from '../../storage/partition-log.js';
import type { PartitionReplica } from '../replication/partition-replica.js';
import type { BrokerContext, LocalPartition } from '../context.js';
import { localPartition } from '../context.js';
import { CloseConnection, NO_RESPONSE, type ApiHandler } from '../router.js';
import { AclOperation, ResourceType } from '../security/acl.js';

/** Kafka accepts zstd from Produce v7 on (KIP-110): older clients could not read it back. */
const ZSTD_MIN_PRODUCE_VERSION = 7;

/**
 * Errors Kafka answers without the partition's log start offset (ReplicaManager.appendToLocalLog):
 * the partition is not served here, the log is unusable, or the batch was refused before the log
 * saw it. Every other failure of a partition this broker leads carries the log start offset,
 * which the Java producer reads when it decides whether an UNKNOWN_PRODUCER_ID or
 * OUT_OF_ORDER_SEQUENCE_NUMBER may be retried.
 */
const ERRORS_WITHOUT_LOG_START_OFFSET: ReadonlySet<number> = new Set([
  KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  KafkaErrorCode.NOT_LEADER_OR_FOLLOWER,
  KafkaErrorCode.MESSAGE_TOO_LARGE,
  KafkaErrorCode.RECORD_LIST_TOO_LARGE,
  KafkaErrorCode.CORRUPT_MESSAGE,
  KafkaErrorCode.KAFKA_STORAGE_ERROR,
]);

/** The partition of a topic the principal may not write to: answered without looking it up. */
const REFUSED: LocalPartition = { log: undefined, replica: undefined, errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED };

interface PartitionTarget {
  readonly topic: string;
  readonly partition: number;
  readonly records: Buffer | null;
  readonly local: LocalPartition;
}

export function produceHandler(context: BrokerContext): ApiHandler<ProduceRequest, ProduceResponse> {
  return {
    api: ProduceApi,
    async handle(request, version, requestContext) {
      const acks = request.acks;
      if (acks !== 0 && acks !== 1 && acks !== -1) {
        return respondAll(request, KafkaErrorCode.INVALID_REQUIRED_ACKS, `acks must be -1, 0 or 1, not ${acks}`);
      }
      const mayWrite = (topic: string): boolean => context.authorizer.authorize(requestContext.identity, AclOperation.WRITE, ResourceType.TOPIC, topic);
      const targets = request.topicData.map((topic) => {
        const allowed = mayWrite(topic.name);
        return topic.partitionData.map(
          (data): PartitionTarget => ({ topic: topic.name, partition: data.index, records: data.records, local: allowed ? localPartition(context, topic.name, data.index) : REFUSED }),
        );
      });
      // No await from here until every append has been called.
      const answers = targets.map((partitions) => partitions.map((target) => appendOne(context, target, acks, version, request.timeoutMs)));
      if (acks !== 0) requestContext.admitted();
      const responses = await Promise.all(
        request.topicData.map(async (topic, index) => ({ name: topic.name, partitionResponses: await Promise.all(answers[index] ?? []) })),
      );
      if (acks === 0) {
        const failed = responses.flatMap((t) => t.partitionResponses).find((p) => p.errorCode !== 0);
        if (failed !== undefined) throw new CloseConnection(`acks=0 produce failed with error ${failed.errorCode}: ${failed.errorMessage ?? ''}`);
        return NO_RESPONSE;
      }
      return { responses, throttleTimeMs: 0 };
    },
  };
}

/** Calls `append` before its first await, so appends start in the order of these calls. */
async function appendOne(context: BrokerContext, target: PartitionTarget, acks: -1 | 0 | 1, version: number, timeoutMs: number): Promise<ProducePartitionResponse> {
  const { topic, partition, records, local } = target;
  const failure = (errorCode: number, errorMessage: string | null, log: PartitionLog | undefined, recordErrors: readonly RecordError[] = []): ProducePartitionResponse => ({
    index: partition,
    errorCode,
    baseOffset: -1n,
    logAppendTimeMs: -1n,
    logStartOffset: log === undefined || ERRORS_WITHOUT_LOG_START_OFFSET.has(errorCode) ? -1n : BigInt(log.logStartOffset),
    recordErrors: recordErrors.map((error) => ({ batchIndex: error.batchIndex, batchIndexErrorMessage: error.message })),
    errorMessage,
  });
  if (local.log === undefined) return failure(local.errorCode, local.errorMessage ?? null, undefined);
  const log = local.log;
  const replica: PartitionReplica = local.replica;
  if (records === null || records.length === 0) return failure(KafkaErrorCode.INVALID_RECORD, 'produce request carries no records', log);
  try {
    // The request buffer is ours alone: the base offset is rewritten in it and it is written as is.
    const result = await context.replicas.append(replica, records, acks, version >= ZSTD_MIN_PRODUCE_VERSION, timeoutMs);
    // A duplicate (a retry of a batch already stored) is answered as its original was: error 0
    // and the original's offsets, which `result` carries. It added nothing to the log.
    if (!result.duplicate) {
      context.metrics.bytesIn.inc({ topic }, records.length);
      context.metrics.recordsIn.inc({ topic }, records.length >= RECORDS_COUNT_OFFSET + 4 ? records.readInt32BE(RECORDS_COUNT_OFFSET) : 0);
    }
    return {
      index: partition,
      errorCode: 0,
      baseOffset: BigInt(result.baseOffset),
      logAppendTimeMs: result.logAppendTime,
      logStartOffset: BigInt(result.logStartOffset),
      recordErrors: [],
      errorMessage: null,
    };
  } catch (error) {
    if (error instanceof KafkaProtocolError) return failure(error.kafkaCode, error.message, log, error.recordErrors);
    context.logger.error({ err: error, topic, partition }, 'append failed');
    return failure(KafkaErrorCode.UNKNOWN_SERVER_ERROR, 'the broker failed to append; see its log', log);
  }
}

function respondAll(request: ProduceRequest, errorCode: number, message: string): ProduceResponse {
  return {
    responses: request.topicData.map((topic) => ({
      name: topic.name,
      partitionResponses: topic.partitionData.map((data) => ({
        index: data.index,
        errorCode,
        baseOffset: -1n,
        logAppendTimeMs: -1n,
        logStartOffset: -1n,
        recordErrors: [],
        errorMessage: message,
      })),
    })),
    throttleTimeMs: 0,
  };
}
