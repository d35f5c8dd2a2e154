/**
 * A Fetch naming no partition is answered at once, whatever its MaxWaitMs, as Kafka does
 * (ReplicaManager answers a fetch that "does not require any data" immediately). The Java
 * consumer sends one when it closes (its fetch-session close, epoch −1, no partitions) and waits
 * for the answer: Kafka Connect's workers took MaxWaitMs (500 ms) longer per consumer to stop.
 * Failed before the fix: the request was parked for the whole MaxWaitMs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FetchApi } from '../../../src/protocol/apis/index.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { Conversation } from '../../support/conversation.js';

let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1' });
});
afterAll(async () => {
  await broker.stop();
});

describe('Fetch with no partitions', () => {
  it.each([4, 11])('v%i: answers with no error and no partitions instead of waiting MaxWaitMs', async (version) => {
    const conversation = await Conversation.open(broker.broker.port);
    try {
      // MaxWaitMs far above the test's timeout: parked, the request would fail the test.
      const response = await conversation.request(FetchApi, version, {
        replicaId: -1,
        maxWaitMs: 600_000,
        minBytes: 1,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [],
        forgottenTopicsData: [],
        rackId: '',
      });
      expect(response.errorCode).toBe(0);
      expect(response.responses).toEqual([]);
    } finally {
      conversation.close();
    }
  });
});
