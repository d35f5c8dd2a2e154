/**
 * Produce: appends each partition's batch to its log. acks=1 is answered once the batch is in the
 * file, acks=−1 once it is fsynced, acks=0 not at all (an error then closes the connection so the
 * producer notices, as Kafka does).
 */
import { KafkaErrorCode, KafkaProtocolError, type RecordError } from '../../protocol/kafka-errors.js';
import { ProduceApi, type ProducePartitionResponse, type ProduceRequest, type ProduceResponse } from '../../protocol/apis/produce.js';
import { RECORDS_COUNT_OFFSET } from '../../protocol/record-batch.js';
import type { BrokerContext } from '../context.js';
import { localPartition } from '../context.js';
import { CloseConnection, NO_RESPONSE, type ApiHandler } from '../router.js';

/** Kafka accepts zstd from Produce v7 on (KIP-110): older clients could not read it back. */
const ZSTD_MIN_PRODUCE_VERSION = 7;

export function produceHandler(context: BrokerContext): ApiHandler<ProduceRequest, ProduceResponse> {
  return {
    api: ProduceApi,
    async handle(request, version) {
      const acks = request.acks;
      if (acks !== 0 && acks !== 1 && acks !== -1) {
        return respondAll(request, KafkaErrorCode.INVALID_REQUIRED_ACKS, `acks must be -1, 0 or 1, not ${acks}`);
      }
      const responses = await Promise.all(
        request.topicData.map(async (topic) => ({
          name: topic.name,
          partitionResponses: await Promise.all(topic.partitionData.map((data) => appendOne(context, topic.name, data.index, data.records, acks, version))),
        })),
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

async function appendOne(context: BrokerContext, topic: string, partition: number, records: Buffer | null, acks: number, version: number): Promise<ProducePartitionResponse> {
  const failure = (errorCode: number, errorMessage: string | null, recordErrors: readonly RecordError[] = []): ProducePartitionResponse => ({
    index: partition,
    errorCode,
    baseOffset: -1n,
    logAppendTimeMs: -1n,
    logStartOffset: -1n,
    recordErrors: recordErrors.map((error) => ({ batchIndex: error.batchIndex, batchIndexErrorMessage: error.message })),
    errorMessage,
  });
  const local = await localPartition(context, topic, partition);
  if (local.log === undefined) return failure(local.errorCode, local.errorMessage ?? null);
  if (records === null || records.length === 0) return failure(KafkaErrorCode.INVALID_RECORD, 'produce request carries no records');
  try {
    // The request buffer is ours alone: the base offset is rewritten in it and it is written as is.
    const result = await local.log.append(records, { waitForFlush: acks === -1, allowZstd: version >= ZSTD_MIN_PRODUCE_VERSION });
    context.metrics.bytesIn.inc({ topic }, records.length);
    context.metrics.recordsIn.inc({ topic }, records.length >= RECORDS_COUNT_OFFSET + 4 ? records.readInt32BE(RECORDS_COUNT_OFFSET) : 0);
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
    if (error instanceof KafkaProtocolError) return failure(error.kafkaCode, error.message, error.recordErrors);
    context.logger.error({ err: error, topic, partition }, 'append failed');
    return failure(KafkaErrorCode.UNKNOWN_SERVER_ERROR, 'the broker failed to append; see its log');
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
