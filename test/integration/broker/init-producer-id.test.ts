/**
 * InitProducerId over the wire on a standalone broker: fresh ids with epoch 0, a transactional
 * id refused with 53, and ids that keep growing across a restart on the same data dir (the
 * standalone store's file holds the claimed block).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FindCoordinatorApi } from '../../../src/protocol/apis/find-coordinator.js';
import { InitProducerIdApi } from '../../../src/protocol/apis/init-producer-id.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { Conversation } from '../../support/conversation.js';

const started: InProcessBroker[] = [];
afterEach(async () => {
  for (const broker of started.splice(0)) await broker.stop();
});

async function start(dataDir?: string): Promise<InProcessBroker> {
  const broker = await startInProcessBroker({}, dataDir);
  started.push(broker);
  return broker;
}

async function initProducerIds(port: number, count: number, version = 1): Promise<{ producerId: bigint; producerEpoch: number; errorCode: number }[]> {
  const conversation = await Conversation.open(port);
  try {
    const answers = [];
    for (let i = 0; i < count; i += 1) answers.push(await conversation.request(InitProducerIdApi, version, { transactionalId: null, transactionTimeoutMs: 2_147_483_647 }));
    return answers;
  } finally {
    conversation.close();
  }
}

describe('InitProducerId', () => {
  it('gives every idempotent producer a fresh id with epoch 0, in v0 and v1', async () => {
    const broker = await start();
    const answers = [...(await initProducerIds(broker.broker.port, 3, 0)), ...(await initProducerIds(broker.broker.port, 3, 1))];
    expect(answers.map((a) => [a.errorCode, a.producerEpoch])).toEqual(Array.from({ length: 6 }, () => [0, 0]));
    expect(new Set(answers.map((a) => a.producerId)).size).toBe(6);
  });

  it('refuses a transactional id with TRANSACTIONAL_ID_AUTHORIZATION_FAILED', async () => {
    const broker = await start();
    const conversation = await Conversation.open(broker.broker.port);
    const answer = await conversation.request(InitProducerIdApi, 1, { transactionalId: 'orders-tx', transactionTimeoutMs: 60_000 });
    conversation.close();
    expect(answer).toEqual({ throttleTimeMs: 0, errorCode: KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producerId: -1n, producerEpoch: -1 });
  });

  it('refuses a transaction coordinator lookup the same way, and still answers group lookups with this broker', async () => {
    const broker = await start();
    const conversation = await Conversation.open(broker.broker.port);
    const transaction = await conversation.request(FindCoordinatorApi, 1, { key: 'orders-tx', keyType: 1 });
    const group = await conversation.request(FindCoordinatorApi, 1, { key: 'reports', keyType: 0 });
    conversation.close();
    expect(transaction.errorCode).toBe(KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    expect(transaction.errorMessage).toContain('transactional.id');
    expect(group).toMatchObject({ errorCode: KafkaErrorCode.NONE, nodeId: broker.broker.id, port: broker.broker.port });
  });

  it('never reissues an id after a restart', async () => {
    const first = await start();
    const before = await initProducerIds(first.broker.port, 5);
    await first.stop();
    started.splice(started.indexOf(first), 1);
    const second = await start(first.dataDir);
    const after = await initProducerIds(second.broker.port, 5);
    const highestBefore = before.reduce((max, a) => (a.producerId > max ? a.producerId : max), -1n);
    for (const answer of after) expect(answer.producerId).toBeGreaterThan(highestBefore);
  });
});
