/**
 * Group coordinator failover in a three-broker ZooKeeper cluster (broker processes): three kafkajs
 * members consume a 6-partition topic while a kafkajs producer keeps producing, and the broker
 * that coordinates their group goes away — SIGKILLed, then (restarted, so the group moves back to
 * it) stopped cleanly with SIGTERM. Each time the group carries on at the broker that now ranks
 * first for it:
 * - FindCoordinator, asked of every live broker, answers that live broker;
 * - the group is Stable there with all three members, the six partitions assigned once each;
 * - the members resume from the committed offsets (fromBeginning is set, so offsets lost at the
 *   move would restart them at 0), and commits are accepted there (they advance in ZooKeeper);
 * - no committed offset in ZooKeeper ever goes backwards (sampled all along the run);
 * - every record the producer had acknowledged is received (at least once; redeliveries of the
 *   uncommitted window are allowed).
 *
 * Where the partitions live: there is no replication yet, so a partition whose leader dies is
 * unavailable until that broker returns, and its records could not be "received by the group on
 * another broker". The topic is therefore created while only brokers 1 and 2 are up (partitions
 * are spread over the live brokers at creation), broker 3 joins afterwards, and the group id is
 * chosen so that broker 3 coordinates it (rendezvous hashing over brokers 1–3, as every broker
 * computes it). Killing broker 3 then takes the coordinator away and nothing else: the test is
 * about the group, not about partitions going offline.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, type Consumer, type LogEntry, type Producer } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { coordinatorFor } from '../../../src/broker/group/coordinator-placement.js';
import { readOffsets } from '../../../src/coordination/group-registry.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { waitUntil } from '../../services/process.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { describeGroup, findCoordinator, type DescribedGroup } from '../../support/group-requests.js';
import { services, zookeeperAddress } from '../services.js';

const TOPIC = 'failover-events';
const PARTITIONS = 6;
const MEMBERS = 3;
const ALL_PARTITIONS = Array.from({ length: PARTITIONS }, (_, partition) => `${TOPIC}/${partition}`);

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** The first group id that broker `brokerId` coordinates while `live` are the live brokers. */
function groupCoordinatedBy(brokerId: number, live: readonly number[]): string {
  for (let index = 0; ; index += 1) {
    const group = `failover-${index}`;
    if (coordinatorFor(group, live) === brokerId) return group;
  }
}

/** kafkajs warnings and errors, the last few hundred, for the failure messages. */
const clientLog: string[] = [];
const logCreator = () => (entry: LogEntry) => {
  clientLog.push(`${entry.log.timestamp} ${entry.namespace} ${entry.log.message} ${JSON.stringify({ ...entry.log, timestamp: undefined, message: undefined })}`);
  if (clientLog.length > 300) clientLog.shift();
};

describe('group coordinator failover (three brokers on ZooKeeper)', () => {
  it('moves the group to a live broker when its coordinator is SIGKILLed, comes back, and is stopped with SIGTERM; nothing acknowledged is missed and no commit goes backwards', { timeout: 240_000 }, async () => {
    const run = openRun(services().runDir);
    const zookeeper = `${zookeeperAddress().connectString}/group-failover-${process.pid}-${randomBytes(3).toString('hex')}`;
    // Short ZooKeeper sessions: a SIGKILLed broker leaves /brokers/ids 3 s later, and only then
    // do the other brokers take its groups over. No initial rebalance delay: members that come
    // back one by one rebalance at once.
    const settings = { 'zookeeper.session.timeout.ms': '3000', 'group.initial.rebalance.delay.ms': '0', 'shutdown.grace.ms': '3000' };
    const [b1, b2] = await Promise.all([1, 2].map((id) => startBrokerProcess({ run, id, zookeeper, settings })));
    if (b1 === undefined || b2 === undefined) throw new Error('brokers 1 and 2 did not start');
    cleanups.push(() => b1.stop(), () => b2.stop());

    const kafka = new Kafka({ clientId: 'failover', brokers: [b1.bootstrap, b2.bootstrap], logLevel: logLevel.WARN, logCreator, retry: { initialRetryTime: 200, retries: 10 } });
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await waitUntil(async () => (await admin.describeCluster()).brokers.length === 2, { what: 'brokers 1 and 2 to see each other', timeoutMs: 30_000 });
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true });

    const b3 = await startBrokerProcess({ run, id: 3, zookeeper, settings });
    cleanups.push(() => b3.stop());
    const everyBroker = [b1, b2, b3];
    const group = groupCoordinatedBy(3, [1, 2, 3]);
    const survivorCoordinator = coordinatorFor(group, [1, 2]);
    const survivor = everyBroker.find((broker) => broker.id === survivorCoordinator);
    if (survivor === undefined) throw new Error(`no survivor coordinates ${group}`);

    // The premise: broker 3 leads no partition of the topic.
    const leaders = (await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics[0]?.partitions.map((partition) => partition.leader) ?? [];
    expect(leaders).toHaveLength(PARTITIONS);
    expect(leaders.every((leader) => leader === 1 || leader === 2), `leaders ${leaders.join(',')}`).toBe(true);

    // ZooKeeper, read by the test: the committed offsets, sampled one read after the other.
    const observer = await ZooKeeperStore.connect(zookeeper);
    cleanups.push(() => observer.close());
    const highest = new Map<number, bigint>();
    const regressions: string[] = [];
    const sampleOffsets = async (): Promise<Map<number, bigint>> => {
      const now = new Map((await readOffsets(observer, group, [TOPIC])).map((entry) => [entry.partition, entry.value.offset]));
      for (const [partition, offset] of now) {
        const top = highest.get(partition);
        if (top !== undefined && offset < top) regressions.push(`${TOPIC}/${partition}: ${top} then ${offset}`);
        if (top === undefined || offset > top) highest.set(partition, offset);
      }
      return now;
    };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sampleOffsets().catch(() => undefined);
        await sleep(200);
      }
    })();
    cleanups.push(async () => {
      sampling = false;
      await sampler;
    });

    // The producer: 5 records at a time, to each partition in turn; only acknowledged ones count.
    const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const acknowledged: string[] = [];
    let producerErrors = 0;
    let producing = true;
    const production = (async () => {
      for (let batch = 0; producing; batch += 1) {
        const partition = batch % PARTITIONS;
        const values = Array.from({ length: 5 }, (_, index) => `p${partition}-b${batch}-${index}`);
        try {
          await producer.send({ topic: TOPIC, acks: -1, messages: values.map((value) => ({ partition, value })) });
          acknowledged.push(...values);
        } catch {
          producerErrors += 1;
        }
        await sleep(15);
      }
    })();
    cleanups.push(async () => {
      producing = false;
      await production;
    });

    // The members, in this process.
    const received = new Set<string>();
    const deliveries: { partition: number; offset: bigint }[] = [];
    let deliveryCount = 0;
    const consumers: Consumer[] = [];
    const crashes: string[] = [];
    for (let index = 0; index < MEMBERS; index += 1) {
      // kafkajs keeps retrying the connection to a coordinator that is gone, and looks the
      // coordinator up again only when it restarts the consumer: few retries, so it restarts soon.
      const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 15_000, maxWaitTimeInMs: 300, retry: { initialRetryTime: 200, retries: 4 } });
      consumer.on(consumer.events.CRASH, (event) => crashes.push(`${event.payload.error.name}: ${event.payload.error.message} (restart: ${String(event.payload.restart)})`));
      await consumer.connect();
      await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          deliveryCount += 1;
          received.add(message.value?.toString('utf8') ?? '');
          deliveries.push({ partition, offset: BigInt(message.offset) });
        },
      });
      consumers.push(consumer);
      cleanups.push(() => consumer.disconnect());
    }

    const context = (): string =>
      `\ncrashes: ${crashes.slice(-10).join(' | ')}\nkafkajs: ${clientLog.slice(-25).join('\n')}\ncommitted: ${[...highest].map(([p, o]) => `${p}=${o}`).join(' ')}`;

    /** The group as its coordinator describes it, if that is every member with every partition once. */
    const settled = (described: DescribedGroup): boolean => {
      const assigned = described.members.flatMap((member) => member.partitions).sort();
      return described.errorCode === 0 && described.state === 'Stable' && described.members.length === MEMBERS && JSON.stringify(assigned) === JSON.stringify([...ALL_PARTITIONS].sort());
    };

    /**
     * After `event`: every live broker names `coordinator`; the group settles there; commits
     * advance past what was committed before the event; every acknowledged record arrives; and
     * what the members read after settling starts no earlier than the offsets committed before.
     */
    const expectGroupAt = async (coordinator: BrokerProcess, live: readonly BrokerProcess[], event: string, committedBefore: ReadonlyMap<number, bigint>): Promise<void> => {
      const daemons = live.map((broker) => broker.daemon);
      await waitUntil(
        async () => {
          const answers = await Promise.all(live.map((broker) => findCoordinator(broker.bootstrap, group)));
          return answers.every((answer) => answer.errorCode === 0 && answer.nodeId === coordinator.id && answer.port === coordinator.port);
        },
        { what: `every live broker to name broker ${coordinator.id} the coordinator of ${group} after ${event}`, timeoutMs: 60_000, daemons },
      );
      let last: DescribedGroup | undefined;
      await waitUntil(
        async () => {
          last = await describeGroup(coordinator.bootstrap, group);
          return settled(last);
        },
        { what: `${group} to be Stable at broker ${coordinator.id} with ${MEMBERS} members and every partition once, after ${event} (last: ${JSON.stringify(last)})${context()}`, timeoutMs: 90_000, daemons },
      );
      const settledAt = deliveries.length;
      const acknowledgedNow = acknowledged.slice();
      await waitUntil(
        async () => {
          const now = await sampleOffsets();
          return Array.from({ length: PARTITIONS }, (_, partition) => partition).every((partition) => (now.get(partition) ?? -1n) > (committedBefore.get(partition) ?? -1n));
        },
        { what: `commits at broker ${coordinator.id} to advance every partition past ${[...committedBefore].map(([p, o]) => `${p}=${o}`).join(' ')} after ${event}${context()}`, timeoutMs: 60_000, daemons },
      );
      await waitUntil(async () => acknowledgedNow.every((value) => received.has(value)), {
        what: `every record acknowledged so far to be received after ${event} (missing ${acknowledgedNow.filter((value) => !received.has(value)).slice(0, 5).join(', ')})${context()}`,
        timeoutMs: 60_000,
        daemons,
      });
      for (let partition = 0; partition < PARTITIONS; partition += 1) {
        const after = deliveries.slice(settledAt).filter((delivery) => delivery.partition === partition);
        const first = after.reduce<bigint | undefined>((lowest, delivery) => (lowest === undefined || delivery.offset < lowest ? delivery.offset : lowest), undefined);
        expect(first === undefined || first >= (committedBefore.get(partition) ?? 0n), `${TOPIC}/${partition} re-read from ${String(first)}, below its committed ${String(committedBefore.get(partition))}, after ${event}`).toBe(true);
      }
    };

    // Before: broker 3 coordinates the group, which consumes and commits every partition.
    await expectGroupAt(b3, everyBroker, 'the start', new Map());

    // 1. SIGKILL the coordinator.
    const beforeKill = await sampleOffsets();
    await b3.kill();
    await expectGroupAt(survivor, [b1, b2], 'SIGKILL of broker 3', beforeKill);

    // 2. Broker 3 comes back: it ranks first for the group again, so the group moves back to it.
    const beforeReturn = await sampleOffsets();
    await b3.restart();
    await expectGroupAt(b3, everyBroker, 'the return of broker 3', beforeReturn);

    // 3. SIGTERM the coordinator: it answers its parked requests NOT_COORDINATOR and deregisters.
    const beforeStop = await sampleOffsets();
    expect(await b3.stop()).toBe(0);
    await expectGroupAt(survivor, [b1, b2], 'SIGTERM of broker 3', beforeStop);

    producing = false;
    await production;
    const everything = acknowledged.slice();
    await waitUntil(async () => everything.every((value) => received.has(value)), {
      what: `every acknowledged record to be received (missing ${everything.filter((value) => !received.has(value)).length})${context()}`,
      timeoutMs: 60_000,
      daemons: [b1.daemon, b2.daemon],
    });
    expect(regressions, context()).toEqual([]);
    expect(everything.length).toBeGreaterThan(0);
    console.info(`group failover: ${everything.length} records acknowledged (${producerErrors} failed sends), ${deliveryCount} deliveries (${deliveryCount - received.size} redelivered), ${crashes.length} kafkajs consumer restarts`);
  });
});
