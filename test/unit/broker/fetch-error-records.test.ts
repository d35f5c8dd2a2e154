/**
 * A partition answered with an error in a Fetch response carries an empty record set, never a
 * null one (size −1): Kafka always sends an empty set, and librdkafka (kcat, confluent-kafka)
 * rejects MessageSetSize −1 as a parse failure of the whole response, so such a consumer never
 * heard OFFSET_OUT_OF_RANGE after retention deleted its committed offset, and read nothing
 * (found by the chaos suite `consumers`, scenario off-retention). Failed before the fix: records
 * was null.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { FetchApi } from '../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { Conversation } from '../../support/conversation.js';

let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1', 'log.flush.interval.messages': '1' });
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger: createLogger({ name: 'test', level: 'silent' }) });
  await producer.send('fetched', [{ partition: 0, key: null, value: Buffer.from('one') }]);
  await producer.close();
});
afterAll(async () => {
  await broker.stop();
});

describe('Fetch answers an errored partition with an empty record set', () => {
  it.each([4, 11])('v%i: an offset outside the log, and a partition that does not exist', async (version) => {
    const conversation = await Conversation.open(broker.broker.port);
    try {
      const response = await conversation.request(FetchApi, version, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          {
            topic: 'fetched',
            partitions: [
              { partition: 0, currentLeaderEpoch: -1, fetchOffset: 500n, logStartOffset: -1n, partitionMaxBytes: 1 << 20 },
              { partition: 7, currentLeaderEpoch: -1, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1 << 20 },
            ],
          },
        ],
        forgottenTopicsData: [],
        rackId: '',
      });
      const [outside, missing] = response.responses[0]?.partitions ?? [];
      expect(outside?.errorCode).toBe(KafkaErrorCode.OFFSET_OUT_OF_RANGE);
      expect(outside?.records).toEqual(Buffer.alloc(0));
      expect(missing?.errorCode).toBe(KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
      expect(missing?.records).toEqual(Buffer.alloc(0));
    } finally {
      conversation.close();
    }
  });
});
