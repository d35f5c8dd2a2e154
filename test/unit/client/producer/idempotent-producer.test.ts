/**
 * The idempotent producer against a fake broker that keeps Kafka's sequence rules
 * (fake-idempotent-broker.ts): lost answers, errors in the middle of a pipeline, a broker that
 * forgot the producer, and what must hold through them — every record stored once, in send order
 * per partition, never more than 5 batches of a partition in flight.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../../src/client/cluster-client.js';
import { Producer } from '../../../../src/client/producer.js';
import { TributaryError } from '../../../../src/common/errors.js';
import { KafkaErrorCode } from '../../../../src/protocol/kafka-errors.js';
import { FakeIdempotentBroker } from './fake-idempotent-broker.js';

const brokers: FakeIdempotentBroker[] = [];
const producers: Producer[] = [];
afterEach(async () => {
  for (const producer of producers.splice(0)) await producer.close().catch(() => undefined);
  for (const broker of brokers.splice(0)) await broker.stop();
});

async function fakeBroker(partitions = 1): Promise<FakeIdempotentBroker> {
  const broker = await new FakeIdempotentBroker(partitions).start();
  brokers.push(broker);
  return broker;
}

async function connect(broker: FakeIdempotentBroker, options: Omit<Parameters<typeof Producer.connect>[0], 'bootstrap'> = {}): Promise<Producer> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], retryBackoffMs: 2, retryBackoffMaxMs: 10, lingerMs: 0, batchSize: 120, ...options });
  producers.push(producer);
  return producer;
}

const numbered = (count: number, partition?: number): { value: Buffer; partition?: number }[] =>
  Array.from({ length: count }, (_, i) => (partition === undefined ? { value: Buffer.from(`r${i}`) } : { value: Buffer.from(`r${i}`), partition }));
const names = (count: number): string[] => Array.from({ length: count }, (_, i) => `r${i}`);

/**
 * One send per record, a turn of the event loop apart: each drained on its own (queued batches
 * would be merged), so a partition has several small batches in flight.
 */
async function sendEach(producer: Producer, count: number, partition?: number): Promise<bigint[]> {
  const sends: Promise<{ offset: bigint }[]>[] = [];
  for (const record of numbered(count, partition)) {
    sends.push(producer.send('t', [record]));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const results = await Promise.all(sends);
  return results.map(([metadata]) => metadata?.offset ?? -2n);
}

describe('idempotent producer', () => {
  it('is the default: gets a producer id at connect and numbers each partition from 0, pipelining up to 5 batches', async () => {
    const broker = await fakeBroker(2);
    const producer = await connect(broker);
    expect(producer.idempotent).toBe(true);
    expect(broker.initProducerIdRequests).toEqual([1]);
    const offsets = await sendEach(producer, 200, 0);
    expect(broker.stored.get(0)).toEqual(names(200));
    expect(offsets).toEqual(names(200).map((_, i) => BigInt(i)));
    const batches = broker.seen.filter((batch) => batch.partition === 0);
    expect(batches.every((batch) => batch.producerId === 1000n && batch.epoch === 0)).toBe(true);
    let expected = 0;
    for (const batch of batches) {
      expect(batch.baseSequence).toBe(expected);
      expected += batch.count;
    }
    expect(broker.maxInFlightPerPartition).toBeGreaterThan(1);
    expect(broker.maxInFlightPerPartition).toBeLessThanOrEqual(5);
  });

  it('lost answers: a batch stored and resent is stored once, and its sends get the original offsets', async () => {
    const broker = await fakeBroker();
    broker.fault = (_partition, attempt) => (attempt % 7 === 3 ? 'store-then-drop' : 'none');
    const producer = await connect(broker, { retries: 20 });
    const offsets = await sendEach(producer, 300);
    expect(broker.stored.get(0)).toEqual(names(300));
    expect(offsets).toEqual(names(300).map((_, i) => BigInt(i)));
    expect(broker.seen.some((batch) => batch.answer === 'duplicate')).toBe(true);
    expect(broker.maxInFlightPerPartition).toBeLessThanOrEqual(5);
  });

  it('a batch refused in the middle of a pipeline: the later ones come back (OUT_OF_ORDER) and all go again in sequence order', async () => {
    const broker = await fakeBroker();
    broker.fault = (_partition, attempt) => (attempt === 4 || attempt === 30 ? { errorCode: KafkaErrorCode.NOT_LEADER_OR_FOLLOWER } : attempt === 50 ? 'drop' : 'none');
    const producer = await connect(broker, { retries: 10 });
    const offsets = await sendEach(producer, 200);
    expect(broker.stored.get(0)).toEqual(names(200));
    expect(offsets).toEqual(names(200).map((_, i) => BigInt(i)));
    expect(broker.seen.some((batch) => batch.answer === `error ${KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER}`)).toBe(true);
    // Once numbered, a batch is always resent with the same numbers.
    const sequenceOf = new Map<number, number>();
    for (const batch of broker.seen) {
      const first = sequenceOf.get(batch.baseSequence);
      if (first !== undefined) expect(batch.count).toBe(first);
      sequenceOf.set(batch.baseSequence, batch.count);
    }
  });

  it('a broker whose sequence for the producer went wrong (OUT_OF_ORDER for the very next batch): bumps the epoch itself and restarts the partition at sequence 0', async () => {
    const broker = await fakeBroker();
    const producer = await connect(broker);
    await sendEach(producer, 20);
    broker.desynchronize();
    await sendEach(producer, 20);
    expect(broker.stored.get(0)).toEqual([...names(20), ...names(20)]);
    const bumped = broker.seen.filter((batch) => batch.epoch === 1);
    expect(bumped[0]?.baseSequence).toBe(0);
    expect(broker.initProducerIdRequests).toHaveLength(1);
  });

  it('at epoch 32767 a new epoch means a new producer id (InitProducerId again)', async () => {
    const broker = await fakeBroker();
    broker.initialEpoch = 32_767;
    const producer = await connect(broker);
    await sendEach(producer, 10);
    broker.desynchronize();
    await sendEach(producer, 10);
    expect(broker.stored.get(0)).toEqual([...names(10), ...names(10)]);
    expect(broker.initProducerIdRequests).toHaveLength(2);
    expect(broker.seen.find((batch) => batch.producerId === 1001n)).toMatchObject({ baseSequence: 0, answer: 'stored' });
  });

  it('UNKNOWN_PRODUCER_ID: new epoch and the batch is stored once', async () => {
    const broker = await fakeBroker();
    broker.fault = (_partition, attempt) => (attempt === 2 ? { errorCode: KafkaErrorCode.UNKNOWN_PRODUCER_ID } : 'none');
    const producer = await connect(broker, { lingerMs: 50, batchSize: 16_384 });
    await producer.send('t', numbered(3));
    await producer.send('t', numbered(3));
    expect(broker.stored.get(0)).toEqual([...names(3), ...names(3)]);
    expect(broker.seen.at(-1)).toMatchObject({ epoch: 1, baseSequence: 0, answer: 'stored' });
  });

  it('DUPLICATE_SEQUENCE_NUMBER counts as success; INVALID_PRODUCER_EPOCH fails the batch with a clear error', async () => {
    const broker = await fakeBroker(2);
    broker.fault = (partition) => (partition === 0 ? { errorCode: KafkaErrorCode.DUPLICATE_SEQUENCE_NUMBER } : { errorCode: KafkaErrorCode.INVALID_PRODUCER_EPOCH });
    const producer = await connect(broker);
    const [duplicate, fenced] = await Promise.allSettled([producer.send('t', numbered(2, 0)), producer.send('t', numbered(2, 1))]);
    expect(duplicate.status).toBe('fulfilled');
    expect(fenced.status).toBe('rejected');
    const error = (fenced as PromiseRejectedResult).reason as TributaryError;
    expect(error).toBeInstanceOf(TributaryError);
    expect(error).toMatchObject({ code: 'INVALID_PRODUCER_EPOCH', retriable: false });
    expect(error.message).toMatch(/newer epoch/);
    expect(broker.seen.filter((batch) => batch.partition === 1)).toHaveLength(1);
  });

  it('a broker without InitProducerId fails connect, saying what to do; idempotent: false works with it', async () => {
    const broker = await fakeBroker();
    broker.serveInitProducerId = false;
    const error = await connect(broker).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNSUPPORTED_VERSION', retriable: false });
    expect((error as Error).message).toMatch(/InitProducerId \(API key 22\).*upgrade the broker, or create the producer with idempotent: false/);
    const plain = await connect(broker, { idempotent: false });
    await plain.send('t', numbered(2));
    expect(broker.seen.at(-1)).toMatchObject({ producerId: -1n, baseSequence: -1 });
  });

  it('built on a cluster client (as the audit and the mirror do), gets its producer id at the first send; a broker without one fails the sends', async () => {
    const broker = await fakeBroker();
    const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
    const producer = new Producer(cluster, { lingerMs: 0, retryBackoffMs: 2 }, true);
    producers.push(producer);
    expect(broker.initProducerIdRequests).toHaveLength(0);
    await producer.send('t', numbered(2));
    expect(broker.initProducerIdRequests).toHaveLength(1);
    expect(broker.seen.at(-1)).toMatchObject({ producerId: 1000n, epoch: 0, baseSequence: 0 });

    const old = await fakeBroker();
    old.serveInitProducerId = false;
    const oldCluster = await ClusterClient.connect({ bootstrap: [old.bootstrap] });
    const refused = new Producer(oldCluster, { lingerMs: 0 }, true);
    producers.push(refused);
    await expect(refused.send('t', numbered(1))).rejects.toMatchObject({ code: 'UNSUPPORTED_VERSION', message: expect.stringMatching(/idempotent: false/) as unknown });
    expect(old.seen).toHaveLength(0);
  });

  it('acks 0/1 or retries 0: off when left unset (as the Java client), refused when idempotent: true is explicit', async () => {
    const broker = await fakeBroker();
    expect((await connect(broker, { acks: 1 })).idempotent).toBe(false);
    expect((await connect(broker, { retries: 0 })).idempotent).toBe(false);
    await expect(connect(broker, { idempotent: true, acks: 1 })).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringMatching(/idempotent: true needs acks -1/) as unknown });
    await expect(connect(broker, { idempotent: true, acks: 0 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(connect(broker, { idempotent: true, retries: 0 })).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringMatching(/retries > 0/) as unknown });
    expect(broker.initProducerIdRequests).toHaveLength(0);
  });

  it('with idempotent: false the same lost answers store records twice (what idempotence prevents)', async () => {
    const broker = await fakeBroker();
    // One batch in flight and queued batches merged behind it: few attempts, so lose the first answers.
    broker.fault = (_partition, attempt) => (attempt <= 2 ? 'store-then-drop' : 'none');
    const producer = await connect(broker, { idempotent: false, retries: 20 });
    await sendEach(producer, 100);
    const stored = broker.stored.get(0) ?? [];
    expect(new Set(stored)).toEqual(new Set(names(100)));
    expect(stored.length).toBeGreaterThan(100);
  });
});
