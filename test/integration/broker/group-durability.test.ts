/**
 * Committed offsets outlive the broker: a standalone broker (in this process, its store a file in
 * the data dir) stopped and started again on the same data dir, and a broker process on ZooKeeper
 * SIGKILLed and restarted. Before the restart a kafkajs member commits offsets of its own choosing
 * and a raw OffsetCommit v7 commits offsets with a leader epoch and a metadata string of non-ASCII
 * text (and one with null metadata); after it, OffsetFetch v5 returns every offset, leader epoch
 * and metadata string exactly as committed, kafkajs's admin reads the same offsets, and a kafkajs
 * member of the group resumes exactly at them.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../../services/process.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, startInProcessBroker } from '../../support/brokers.js';
import { commitOffsets, fetchOffsets, simpleCommit } from '../../support/group-requests.js';
import { services, zookeeperAddress } from '../services.js';

const TOPIC = 'durable';
const PARTITIONS = 3;
const PER_PARTITION = 10;
/** What the kafkajs member commits: partition → next offset to read. */
const MEMBER_COMMITS = new Map([
  [0, 4n],
  [1, 7n],
  [2, 10n],
]);
const METADATA = 'résumé ✓ 東京 🚀 «ünïcødé»';

/** A broker that can be restarted; `bootstrap` may change with a restart. */
interface RestartableBroker {
  bootstrap(): string;
  restart(): Promise<void>;
  stop(): Promise<unknown>;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const settings = { 'group.initial.rebalance.delay.ms': '0', 'zookeeper.session.timeout.ms': '3000' };

const setups: [string, string, () => Promise<RestartableBroker>][] = [
  [
    'a standalone broker',
    'stopped and started again on the same data dir',
    async () => {
      let current = await startInProcessBroker(settings);
      const dataDir = current.dataDir;
      return {
        bootstrap: () => current.bootstrap,
        async restart() {
          await current.stop();
          current = await startInProcessBroker(settings, dataDir);
        },
        stop: () => current.stop(),
      };
    },
  ],
  [
    'a broker on ZooKeeper',
    'SIGKILLed and restarted',
    async () => {
      const zookeeper = `${zookeeperAddress().connectString}/group-durability-${process.pid}-${randomBytes(3).toString('hex')}`;
      const broker = await startBrokerProcess({ run: openRun(services().runDir), id: 1, zookeeper, settings });
      return {
        bootstrap: () => broker.bootstrap,
        async restart() {
          await broker.kill();
          await broker.restart();
        },
        stop: () => broker.stop(),
      };
    },
  ],
];

describe.each(setups)('committed offsets on %s', (_name, how, start) => {
  it(`are returned exactly as committed after the broker is ${how}`, { timeout: 120_000 }, async () => {
    const broker = await start();
    cleanups.push(() => broker.stop());
    const kafka = (): Kafka => new Kafka({ clientId: 'durability', brokers: [broker.bootstrap()], logLevel: logLevel.NOTHING, retry: { initialRetryTime: 200, retries: 8 } });

    let admin = kafka().admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true });
    const producer = kafka().producer({ allowAutoTopicCreation: false });
    await producer.connect();
    for (let partition = 0; partition < PARTITIONS; partition += 1) {
      await producer.send({ topic: TOPIC, acks: -1, messages: Array.from({ length: PER_PARTITION }, (_, index) => ({ partition, value: `p${partition}-${index}` })) });
    }
    await producer.disconnect();

    // A kafkajs member reads everything, then commits offsets of its own choosing and leaves.
    const memberGroup = 'kafkajs-member';
    const consumer: Consumer = kafka().consumer({ groupId: memberGroup, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 300 });
    await consumer.connect();
    cleanups.push(() => consumer.disconnect());
    await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
    let read = 0;
    await consumer.run({
      autoCommit: false,
      eachMessage: async () => {
        read += 1;
      },
    });
    await waitUntil(async () => read === PARTITIONS * PER_PARTITION, { what: `the kafkajs member to read ${PARTITIONS * PER_PARTITION} records (read ${read})`, timeoutMs: 30_000 });
    await consumer.commitOffsets([...MEMBER_COMMITS].map(([partition, offset]) => ({ topic: TOPIC, partition, offset: String(offset) })));
    await consumer.disconnect();

    // A raw commit without membership (OffsetCommit v7, generation −1) with leader epochs and metadata.
    const rawGroup = 'raw-commit';
    const rawCommits = [
      { partition: 0, offset: 5n, leaderEpoch: 17, metadata: METADATA },
      { partition: 1, offset: 9n, leaderEpoch: 0, metadata: null },
      { partition: 2, offset: 1n, leaderEpoch: -1, metadata: '' },
    ];
    expect(await commitOffsets(broker.bootstrap(), simpleCommit(rawGroup, TOPIC, rawCommits))).toEqual([0, 0, 0]);

    const request = [{ name: TOPIC, partitionIndexes: [0, 1, 2] }];
    const expectedMember = {
      errorCode: 0,
      throttleTimeMs: 0,
      topics: [{ name: TOPIC, partitions: [...MEMBER_COMMITS].map(([partitionIndex, committedOffset]) => ({ partitionIndex, committedOffset, committedLeaderEpoch: -1, metadata: '', errorCode: 0 })) }],
    };
    // Null metadata is kept as "" (Kafka's OffsetAndMetadata.NoMetadata).
    const expectedRaw = {
      errorCode: 0,
      throttleTimeMs: 0,
      topics: [{ name: TOPIC, partitions: rawCommits.map(({ partition, offset, leaderEpoch, metadata }) => ({ partitionIndex: partition, committedOffset: offset, committedLeaderEpoch: leaderEpoch, metadata: metadata ?? '', errorCode: 0 })) }],
    };
    expect(await fetchOffsets(broker.bootstrap(), memberGroup, request)).toEqual(expectedMember);
    expect(await fetchOffsets(broker.bootstrap(), rawGroup, request)).toEqual(expectedRaw);

    await admin.disconnect();
    await broker.restart();

    expect(await fetchOffsets(broker.bootstrap(), memberGroup, request)).toEqual(expectedMember);
    expect(await fetchOffsets(broker.bootstrap(), rawGroup, request)).toEqual(expectedRaw);
    // Topics null (v2+): every committed offset of the group, the same.
    expect(await fetchOffsets(broker.bootstrap(), rawGroup, null)).toEqual(expectedRaw);
    admin = kafka().admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    // kafkajs's admin reports an empty metadata string as null (its own `metadata || null`).
    const viaAdmin = await admin.fetchOffsets({ groupId: rawGroup, topics: [TOPIC] });
    expect(viaAdmin[0]?.partitions.sort((a, b) => a.partition - b.partition)).toEqual(
      rawCommits.map(({ partition, offset, metadata }) => ({ partition, offset: String(offset), metadata: metadata === '' ? null : metadata })),
    );

    // The member's group resumes exactly where it committed: one more record per partition makes
    // the end visible (a partition restarted from 0 would show its old records first).
    const more = kafka().producer({ allowAutoTopicCreation: false });
    await more.connect();
    for (let partition = 0; partition < PARTITIONS; partition += 1) await more.send({ topic: TOPIC, acks: -1, messages: [{ partition, value: `p${partition}-after` }] });
    await more.disconnect();
    const resumed = kafka().consumer({ groupId: memberGroup, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 300 });
    await resumed.connect();
    cleanups.push(() => resumed.disconnect());
    await resumed.subscribe({ topics: [TOPIC], fromBeginning: true });
    const deliveries = new Map<number, bigint[]>();
    await resumed.run({
      eachMessage: async ({ partition, message }) => {
        deliveries.set(partition, [...(deliveries.get(partition) ?? []), BigInt(message.offset)]);
      },
    });
    const end = BigInt(PER_PARTITION);
    await waitUntil(async () => [0, 1, 2].every((partition) => deliveries.get(partition)?.at(-1) === end), {
      what: `the resumed member to read offset ${end} of every partition (read ${JSON.stringify([...deliveries].map(([p, o]) => [p, o.map(String)]))})`,
      timeoutMs: 30_000,
    });
    for (const [partition, committed] of MEMBER_COMMITS) {
      const expected = Array.from({ length: Number(end - committed) + 1 }, (_, index) => committed + BigInt(index));
      expect(deliveries.get(partition), `partition ${partition}`).toEqual(expected);
    }
  });
});
