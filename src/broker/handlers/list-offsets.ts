/**
 * ListOffsets: −1 → the high watermark (the next offset a consumer can read), −2 → the log start,
 * T ≥ 0 → the first record with timestamp ≥ T (offset −1 and timestamp −1 when there is none).
 */
import { KafkaErrorCode, KafkaProtocolError } from '../../protocol/kafka-errors.js';
import {
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  ListOffsetsApi,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  type ListOffsetsResponsePartition,
} from '../../protocol/apis/list-offsets.js';
import type { BrokerContext } from '../context.js';
import { localPartition } from '../context.js';
import type { ApiHandler } from '../router.js';

export function listOffsetsHandler(context: BrokerContext): ApiHandler<ListOffsetsRequest, ListOffsetsResponse> {
  return {
    api: ListOffsetsApi,
    async handle(request) {
      const topics = [];
      for (const topic of request.topics) {
        const partitions: ListOffsetsResponsePartition[] = [];
        for (const wanted of topic.partitions) partitions.push(await lookup(context, topic.name, wanted.partitionIndex, wanted.timestamp));
        topics.push({ name: topic.name, partitions });
      }
      return { throttleTimeMs: 0, topics };
    },
  };
}

async function lookup(context: BrokerContext, topic: string, partition: number, timestamp: bigint): Promise<ListOffsetsResponsePartition> {
  const answer = (errorCode: number, offset: bigint, at: bigint): ListOffsetsResponsePartition => ({ partitionIndex: partition, errorCode, timestamp: at, offset, leaderEpoch: -1 });
  const local = await localPartition(context, topic, partition);
  if (local.log === undefined) return answer(local.errorCode, -1n, -1n);
  const log = local.log;
  if (timestamp === LATEST_TIMESTAMP) return answer(0, BigInt(log.highWatermark), -1n);
  if (timestamp === EARLIEST_TIMESTAMP) return answer(0, BigInt(log.logStartOffset), -1n);
  if (timestamp < 0n) return answer(KafkaErrorCode.INVALID_REQUEST, -1n, -1n);
  try {
    // The timestamp stays exact: any int64 ≥ 0 may be asked for and stored.
    const found = await log.offsetForTimestamp(timestamp);
    return found === undefined ? answer(0, -1n, -1n) : answer(0, BigInt(found.offset), found.timestamp);
  } catch (error) {
    if (error instanceof KafkaProtocolError) return answer(error.kafkaCode, -1n, -1n);
    throw error;
  }
}
