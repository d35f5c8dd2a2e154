/**
 * One group id, one kind of group: a paper-style ZooKeeper group (ZooKeeperConsumer) and a group
 * the brokers coordinate (kafkajs) never share an id. Against a broker on real ZooKeeper:
 * - a ZooKeeperConsumer holds group X: a kafkajs member of X fails at its JoinGroup with
 *   INCONSISTENT_GROUP_PROTOCOL (the raw JoinGroup says 23 too), the broker logs what to do, and
 *   the ZooKeeper member keeps consuming; once it has closed, DeleteGroups frees the id and a
 *   kafkajs group can use it;
 * - a kafkajs group holds Y: a ZooKeeperConsumer of Y fails with GROUP_KIND_CONFLICT, its message
 *   naming the cause and the way out; once the kafkajs group is empty and deleted, a
 *   ZooKeeperConsumer can use the id.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { ZooKeeperConsumer, type MessageStream } from '../../../src/client/group/zookeeper-consumer.js';
import { TributaryError } from '../../../src/common/errors.js';
import { createLogger } from '../../../src/common/logger.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { JoinGroupApi } from '../../../src/protocol/apis/join-group.js';
import { encodeConsumerSubscription } from '../../../src/protocol/consumer-protocol.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { LOOPBACK } from '../../services/network.js';
import { waitUntil } from '../../services/process.js';
import { withConversation } from '../../support/group-requests.js';
import { zookeeperAddress } from '../services.js';

const TOPIC = 'kinds';
const quiet = createLogger({ name: 'kind-conflict-test', level: 'silent' });

let broker: Broker;
let bootstrap: string;
let zookeeper: string;
let kafka: Kafka;
const brokerLog: Record<string, unknown>[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  zookeeper = `${zookeeperAddress().connectString}/group-kinds-${process.pid}-${randomBytes(3).toString('hex')}`;
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').trim().split('\n')) if (line !== '') brokerLog.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  broker = await Broker.start({
    id: 1,
    listen: { host: LOOPBACK, port: 0 },
    dataDir: mkdtempSync(join(tmpdir(), 'tributary-kinds-')),
    config: parseBrokerConfig({ 'group.initial.rebalance.delay.ms': '0', 'zookeeper.session.timeout.ms': '4000' }, 'test settings'),
    store: await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs: 4000 }),
    logger: createLogger({ name: 'kinds-broker', level: 'info', destination }),
  });
  bootstrap = `${LOOPBACK}:${broker.port}`;
  kafka = new Kafka({ clientId: 'kinds', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { initialRetryTime: 100, retries: 3 } });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  await producer.send({ topic: TOPIC, acks: -1, messages: [0, 1].flatMap((partition) => [0, 1, 2].map((index) => ({ partition, value: `p${partition}-${index}` }))) });
  await producer.disconnect();
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await broker?.stop();
});

async function zooKeeperConsumer(group: string): Promise<ZooKeeperConsumer> {
  const consumer = await ZooKeeperConsumer.connect({
    zookeeper,
    bootstrap: [bootstrap],
    group,
    autoOffsetReset: 'smallest',
    autoCommitIntervalMs: 500,
    sessionTimeoutMs: 4000,
    rebalanceBackoffMs: 200,
    logger: quiet,
  });
  cleanups.push(() => consumer.close());
  return consumer;
}

/** The next `count` messages of the stream (no more is taken from it). */
async function take(stream: MessageStream | undefined, count: number): Promise<string[]> {
  if (stream === undefined) throw new Error('no stream');
  const iterator = stream[Symbol.asyncIterator]();
  const values: string[] = [];
  while (values.length < count) {
    const next = await iterator.next();
    if (next.done === true) break;
    values.push(next.value.value?.toString('utf8') ?? '');
  }
  return values;
}

/** A kafkajs member of `group`, with the errors it crashed with. */
async function kafkajsMember(group: string, received: string[] = []): Promise<{ consumer: Consumer; crashes: Error[]; joined: () => boolean }> {
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 300, retry: { retries: 2, initialRetryTime: 100, restartOnFailure: async () => false } });
  const crashes: Error[] = [];
  let joined = false;
  consumer.on(consumer.events.CRASH, (event) => crashes.push(event.payload.error));
  consumer.on(consumer.events.GROUP_JOIN, () => (joined = true));
  await consumer.connect();
  cleanups.push(() => consumer.disconnect());
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      received.push(message.value?.toString('utf8') ?? '');
    },
  });
  return { consumer, crashes, joined: () => joined };
}

function rawJoin(group: string): Promise<number> {
  return withConversation(bootstrap, async (conversation) => {
    const response = await conversation.request(JoinGroupApi, 5, {
      groupId: group,
      sessionTimeoutMs: 6000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      groupInstanceId: 'raw-join',
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: encodeConsumerSubscription({ topics: [TOPIC] }) }],
    });
    return response.errorCode;
  });
}

describe('a group id is either a ZooKeeper group or a broker-coordinated group', () => {
  it('refuses a kafkajs member of a ZooKeeper group with INCONSISTENT_GROUP_PROTOCOL, and takes the id once the group is deleted', async () => {
    const group = 'paper-group';
    const paper = await zooKeeperConsumer(group);
    const [stream] = (await paper.createMessageStreams({ [TOPIC]: 1 }))[TOPIC] ?? [];
    expect((await take(stream, 6)).sort()).toEqual(['p0-0', 'p0-1', 'p0-2', 'p1-0', 'p1-1', 'p1-2']);

    const member = await kafkajsMember(group);
    await waitUntil(async () => member.crashes.length > 0, { what: 'the kafkajs member to fail', timeoutMs: 30_000 });
    expect(member.crashes[0]).toMatchObject({ type: 'INCONSISTENT_GROUP_PROTOCOL', code: 23 });
    expect(member.joined()).toBe(false);
    expect(await rawJoin(group)).toBe(KafkaErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const warning = brokerLog.find((line) => line['group'] === group && Number(line['level']) === 40);
    expect(String(warning?.['msg'])).toBe(
      `consumer group ${group} is a ZooKeeper (paper-style) group; a broker-coordinated consumer (kafkajs, librdkafka, Java) cannot join it. Use another group id, or delete the group once it has no live member (tributary groups delete)`,
    );

    // The ZooKeeper member was not disturbed: it reads what comes next.
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({ topic: TOPIC, acks: -1, messages: [{ partition: 0, value: 'after-refusal' }] });
    await producer.disconnect();
    expect(await take(stream, 1)).toEqual(['after-refusal']);

    // What the message says to do works: with no live member the id can be deleted and reused.
    await paper.close();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.deleteGroups([group]);
    const received: string[] = [];
    const reuse = await kafkajsMember(group, received);
    await waitUntil(async () => received.length >= 7, { what: `the kafkajs group to read the topic under the freed id (read ${received.length})`, timeoutMs: 30_000 });
    expect(reuse.crashes).toEqual([]);
  });

  it('refuses a ZooKeeperConsumer of a broker-coordinated group with GROUP_KIND_CONFLICT, and takes the id once the group is deleted', async () => {
    const group = 'kafkajs-group';
    const received: string[] = [];
    const member = await kafkajsMember(group, received);
    await waitUntil(async () => member.joined() && received.length >= 6, { what: 'the kafkajs group to join and read', timeoutMs: 30_000 });

    // connect() registers nothing (it only opens the ZooKeeper session and the broker
    // connections); the group id is claimed, and refused, when the consumer subscribes.
    const paper = await zooKeeperConsumer(group);
    const refusal: unknown = await paper.createMessageStreams({ [TOPIC]: 1 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(TributaryError);
    expect(refusal).toMatchObject({
      code: 'GROUP_KIND_CONFLICT',
      details: { group, owner: 'broker' },
      message: `consumer group ${group} is coordinated by the brokers (a Kafka client's group: kafkajs, librdkafka, Java); a ZooKeeper (paper-style) consumer cannot join it. Use another group id, or delete the group once it is empty (kafka-consumer-groups.sh --delete, or tributary groups delete)`,
    });
    expect(member.crashes).toEqual([]);
    await paper.close();

    // Empty and deleted, the id is free for a ZooKeeper group, which reads from the beginning.
    await member.consumer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.deleteGroups([group]);
    const successor = await zooKeeperConsumer(group);
    const [stream] = (await successor.createMessageStreams({ [TOPIC]: 1 }))[TOPIC] ?? [];
    expect(await take(stream, 6)).toEqual(expect.arrayContaining(['p0-0', 'p1-0']));
  });
});
