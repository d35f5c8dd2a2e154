/**
 * Apache Kafka 3.9.1's Java group consumers and group tools against a standalone Tributary broker.
 *
 * - kafka-console-consumer.sh (ConsoleConsumer) with --group --from-beginning --max-messages N
 *   prints every record and commits on close: OffsetFetch shows every partition at its end, and a
 *   second run in the group prints only what was produced after.
 * - ConsumerPerformance with --group reads the topic's exact message count, and commits.
 * - kafka-consumer-groups.sh (ConsumerGroupCommand) on a group of two kafkajs members that
 *   committed known offsets: --list; --describe with the right CURRENT-OFFSET, LOG-END-OFFSET,
 *   LAG and owner of each partition; --members (with --verbose, the assignment); --state.
 *   --reset-offsets and --delete are refused while the group is active. Once the members have
 *   left (Empty): --reset-offsets --to-datetime --execute moves the offsets to the first record at
 *   that time (described again, and a consumer restarting in the group starts there), and
 *   --delete removes the group.
 * - kafka-topics.sh (TopicCommand) --list and --describe.
 *
 * Java clients log protocol trouble as WARN or ERROR; none may appear, nor any broker warning.
 */
import { Kafka, logLevel, type Admin, type Consumer, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeGroup, ownersOf } from '../support/describe-group.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir, kafkaToolsDir } = inject('compat');

let broker: InProcessBroker;
let kafka: Kafka;
let admin: Admin;
let producer: Producer;
const consumers: Consumer[] = [];

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1', 'group.initial.rebalance.delay.ms': '0', 'group.min.session.timeout.ms': '1000' });
  kafka = new Kafka({ clientId: 'java-group-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  producer = kafka.producer();
  await admin.connect();
  await producer.connect();
});
afterAll(async () => {
  await Promise.all(consumers.map((consumer) => consumer.disconnect()));
  await producer?.disconnect();
  await admin?.disconnect();
  await broker?.stop();
  // Nothing the clients sent made the broker log a warning or an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 40) ?? []).toEqual([]);
});

async function tool(mainClass: string, args: readonly string[]): Promise<JavaToolResult> {
  const result = await runKafkaTool(mainClass, args, { kafkaToolsDir, runDir, timeoutMs: 100_000 });
  expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
  return result;
}

async function consumerGroups(args: readonly string[]): Promise<JavaToolResult> {
  return tool('org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', broker.bootstrap, ...args]);
}

async function createTopic(topic: string, partitions: number): Promise<void> {
  expect(await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true })).toBe(true);
}

/** `count` records into each partition with kcat, value `<tag>-<partition>-<i>`. */
async function produceWithKcat(topic: string, partitions: number, count: number, tag: string): Promise<string[]> {
  const values: string[] = [];
  for (let partition = 0; partition < partitions; partition += 1) {
    const batch = Array.from({ length: count }, (_, i) => `${tag}-${partition}-${i}`);
    const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', String(partition)], `${batch.join('\n')}\n`);
    expect(result.status, result.stderr).toBe(0);
    values.push(...batch);
  }
  await waitUntil(async () => (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0) >= values.length, { what: `${values.length} more records readable in ${topic}`, timeoutMs: 30_000 });
  return values;
}

async function committed(group: string, topic: string): Promise<number[]> {
  const [fetched] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  return (fetched?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
}

/** Non-empty stdout lines. */
const lines = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '');

/** Table rows of a tool's output starting with `group`, split on whitespace. */
function rows(stdout: string, group: string): string[][] {
  return lines(stdout)
    .map((line) => line.trim().split(/\s+/))
    .filter((cells) => cells[0] === group);
}

describe('Java group consumers (Kafka 3.9.1)', () => {
  it('kafka-console-consumer.sh --group --from-beginning --max-messages prints every record and commits', async () => {
    const topic = 'java-console-group';
    const group = 'java-console';
    await createTopic(topic, 3);
    const sent = await produceWithKcat(topic, 3, 300, 'c');
    const consoleConsumer = (maxMessages: number): Promise<JavaToolResult> =>
      tool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
        '--bootstrap-server', broker.bootstrap, '--topic', topic, '--group', group, '--from-beginning',
        '--max-messages', String(maxMessages), '--timeout-ms', '60000',
      ]);

    const first = await consoleConsumer(sent.length);
    expect(first.status, describeRun(first)).toBe(0);
    expect(first.stderr).toContain(`Processed a total of ${sent.length} messages`);
    expect(lines(first.stdout).sort()).toEqual([...sent].sort());
    // Committed on close: every partition at its end.
    expect(await committed(group, topic)).toEqual([300, 300, 300]);

    // A second run in the group starts at the commits (--from-beginning only applies without them).
    const more = await produceWithKcat(topic, 3, 5, 'more');
    const second = await consoleConsumer(more.length);
    expect(second.status, describeRun(second)).toBe(0);
    expect(lines(second.stdout).sort()).toEqual([...more].sort());
    expect(await committed(group, topic)).toEqual([305, 305, 305]);
  });

  it('ConsumerPerformance --group consumes the exact message count and commits', async () => {
    const topic = 'java-perf-group';
    const group = 'java-perf';
    await createTopic(topic, 4);
    const perPartition = 5000;
    const count = 4 * perPartition;
    await produceWithKcat(topic, 4, perPartition, 'perf');
    const result = await tool('org.apache.kafka.tools.ConsumerPerformance', [
      '--bootstrap-server', broker.bootstrap, '--topic', topic, '--group', group, '--messages', String(count), '--timeout', '60000',
    ]);
    expect(result.status, describeRun(result)).toBe(0);
    // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, …
    const [header, data] = lines(result.stdout);
    expect(header?.split(',').map((name) => name.trim())[4], describeRun(result)).toBe('data.consumed.in.nMsg');
    expect(Number(data?.split(',')[4]), describeRun(result)).toBe(count);
    expect(result.stdout).not.toContain('WARNING: Exiting before consuming the expected number of messages');
    expect(await committed(group, topic)).toEqual([perPartition, perPartition, perPartition, perPartition]);
  });

  describe('kafka-consumer-groups.sh', () => {
    const topic = 'cg-topic';
    const group = 'cg-tool';
    const partitions = 4;
    /** Batch 1: 30 records per partition an hour ago; batch 2: 20 per partition 50 minutes ago. */
    const base = Date.now() - 3_600_000;
    const batch2At = base + 600_000;
    const batch2: string[] = [];
    let members: { consumer: Consumer; clientId: string }[] = [];

    beforeAll(async () => {
      await createTopic(topic, partitions);
      for (const [count, at, tag] of [[30, base, 'old'], [20, batch2At, 'new']] as const) {
        const messages = Array.from({ length: partitions * count }, (_, i) => ({ partition: i % partitions, value: `${tag}-${i % partitions}-${Math.floor(i / partitions)}`, timestamp: String(at + i) }));
        await producer.send({ topic, acks: -1, messages });
        if (tag === 'new') batch2.push(...messages.map((m) => m.value));
      }
      await waitUntil(async () => (await admin.fetchTopicOffsets(topic)).every((p) => p.high === '50'), { what: `${topic} at 50 per partition`, timeoutMs: 30_000 });

      // Two kafkajs members that commit by hand only: partition p at 10 + 5p.
      members = ['cg-member-1', 'cg-member-2'].map((clientId) => ({ clientId, consumer: new Kafka({ clientId, brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 200 }) }));
      for (const { consumer } of members) {
        consumers.push(consumer);
        await consumer.connect();
        await consumer.subscribe({ topics: [topic], fromBeginning: true });
        await consumer.run({ autoCommit: false, eachMessage: async () => {} });
      }
      await waitUntil(
        async () => {
          const described = await describeGroup(broker.broker.port, group, topic);
          return described.state === 'Stable' && described.members.length === 2 && ownersOf(described).size === partitions && described.members.every((m) => m.partitions.length === 2);
        },
        { what: `${group} Stable with two members of two partitions each`, timeoutMs: 60_000 },
      );
      const described = await describeGroup(broker.broker.port, group, topic);
      for (const member of described.members) {
        const { consumer } = members.find((m) => m.clientId === member.clientId)!;
        await consumer.commitOffsets(member.partitions.map((partition) => ({ topic, partition, offset: String(10 + 5 * partition) })));
      }
      await waitUntil(async () => (await committed(group, topic)).join() === '10,15,20,25', { what: `${group}'s hand commits`, timeoutMs: 30_000 });
    });

    it('--list, and --describe shows state, members, assignments and lag of the active group', async () => {
      const described = await describeGroup(broker.broker.port, group, topic);
      const owner = (partition: number): { memberId: string; clientId: string } => {
        const found = described.members.find((m) => m.partitions.includes(partition));
        if (found === undefined) throw new Error(`no owner of ${partition}`);
        return found;
      };

      const listed = await consumerGroups(['--list']);
      expect(listed.status, describeRun(listed)).toBe(0);
      expect(lines(listed.stdout)).toContain(group);

      const offsets = await consumerGroups(['--describe', '--group', group]);
      expect(offsets.status, describeRun(offsets)).toBe(0);
      expect(lines(offsets.stdout)[0]?.split(/\s+/)).toEqual(['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'CONSUMER-ID', 'HOST', 'CLIENT-ID']);
      expect(rows(offsets.stdout, group).sort((a, b) => Number(a[2]) - Number(b[2])), offsets.stdout).toEqual(
        Array.from({ length: partitions }, (_, p) => [group, topic, String(p), String(10 + 5 * p), '50', String(40 - 5 * p), owner(p).memberId, '/127.0.0.1', owner(p).clientId]),
      );

      const membersView = await consumerGroups(['--describe', '--group', group, '--members', '--verbose']);
      expect(membersView.status, describeRun(membersView)).toBe(0);
      expect(lines(membersView.stdout)[0]?.split(/\s+/)).toEqual(['GROUP', 'CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'ASSIGNMENT']);
      expect(rows(membersView.stdout, group).sort((a, b) => (a[3]! < b[3]! ? -1 : 1)), membersView.stdout).toEqual(
        described.members
          .sort((a, b) => (a.clientId < b.clientId ? -1 : 1))
          // The 3.9 tool prints each topic's partitions without the topic's name: "(0,2)".
          .map((m) => [group, m.memberId, '/127.0.0.1', m.clientId, '2', `(${m.partitions.join(',')})`]),
      );

      const state = await consumerGroups(['--describe', '--group', group, '--state']);
      expect(state.status, describeRun(state)).toBe(0);
      expect(lines(state.stdout)[0]?.split(/\s+/)).toEqual(['GROUP', 'COORDINATOR', '(ID)', 'ASSIGNMENT-STRATEGY', 'STATE', '#MEMBERS']);
      expect(rows(state.stdout, group), state.stdout).toEqual([[group, `${broker.bootstrap}`, '(0)', 'RoundRobinAssigner', 'Stable', '2']]);
    });

    it('--reset-offsets and --delete are refused while the group is active', async () => {
      const reset = await consumerGroups(['--reset-offsets', '--group', group, '--topic', topic, '--to-earliest', '--execute']);
      expect(`${reset.stdout}${reset.stderr}`, describeRun(reset)).toContain(`Assignments can only be reset if the group '${group}' is inactive, but the current state is Stable.`);
      const deleted = await consumerGroups(['--delete', '--group', group]);
      expect(`${deleted.stdout}${deleted.stderr}`, describeRun(deleted)).toMatch(new RegExp(`Group '${group}' could not be deleted due to: .*GroupNotEmptyException`));
      expect(await committed(group, topic)).toEqual([10, 15, 20, 25]);
      expect((await describeGroup(broker.broker.port, group, topic)).state).toBe('Stable');
    });

    it('--reset-offsets --to-datetime --execute on the empty group moves its offsets; a restarting consumer starts there', async () => {
      for (const { consumer } of members) await consumer.disconnect();
      await waitUntil(async () => (await describeGroup(broker.broker.port, group, topic)).state === 'Empty', { what: `${group} Empty`, timeoutMs: 30_000 });

      // Halfway between the batches: the first record at or after it is batch 2's first, offset 30.
      const target = new Date((base + batch2At) / 2).toISOString();
      const reset = await consumerGroups(['--reset-offsets', '--group', group, '--topic', topic, '--to-datetime', target, '--execute']);
      expect(reset.status, describeRun(reset)).toBe(0);
      // The 3.9 tool prints the rows without line breaks: read it as a header and cells of four.
      const cells = reset.stdout.trim().split(/\s+/);
      expect(cells.slice(0, 4), reset.stdout).toEqual(['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET']);
      const newOffsets = Array.from({ length: (cells.length - 4) / 4 }, (_, i) => cells.slice(4 + 4 * i, 8 + 4 * i));
      expect(newOffsets.sort((a, b) => Number(a[2]) - Number(b[2])), reset.stdout).toEqual(Array.from({ length: partitions }, (_, p) => [group, topic, String(p), '30']));
      expect(await committed(group, topic)).toEqual([30, 30, 30, 30]);

      // The tool says so for a group in state Empty.
      const described = await consumerGroups(['--describe', '--group', group]);
      expect(described.stderr).toContain(`Consumer group '${group}' has no active members.`);
      expect(rows(described.stdout, group).map((cells) => cells.slice(2)).sort((a, b) => Number(a[0]) - Number(b[0])), described.stdout).toEqual(
        Array.from({ length: partitions }, (_, p) => [String(p), '30', '50', '20', '-', '-', '-']),
      );

      // A consumer joining the group again starts at the reset offsets: exactly batch 2.
      const received: { partition: number; offset: number; value: string }[] = [];
      const restarted = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 200 });
      consumers.push(restarted);
      await restarted.connect();
      await restarted.subscribe({ topics: [topic], fromBeginning: true });
      await restarted.run({ eachMessage: async ({ partition, message }) => void received.push({ partition, offset: Number(message.offset), value: message.value?.toString() ?? '' }) });
      await waitUntil(async () => received.length >= batch2.length, { what: `${batch2.length} records from the reset offsets (have ${received.length})`, timeoutMs: 60_000 });
      await restarted.disconnect();
      expect(received.map((r) => r.value).sort()).toEqual([...batch2].sort());
      for (let p = 0; p < partitions; p += 1) expect(Math.min(...received.filter((r) => r.partition === p).map((r) => r.offset))).toBe(30);
    });

    it('--delete removes the empty group', async () => {
      await waitUntil(async () => (await describeGroup(broker.broker.port, group, topic)).state === 'Empty', { what: `${group} Empty`, timeoutMs: 30_000 });
      const deleted = await consumerGroups(['--delete', '--group', group]);
      expect(deleted.status, describeRun(deleted)).toBe(0);
      expect(deleted.stdout).toContain(`Deletion of requested consumer groups ('${group}') was successful.`);
      const listed = await consumerGroups(['--list']);
      expect(lines(listed.stdout)).not.toContain(group);
      expect(await committed(group, topic)).toEqual([-1, -1, -1, -1]);
      const described = await consumerGroups(['--describe', '--group', group]);
      expect(`${described.stdout}${described.stderr}`, describeRun(described)).toContain(`Error: Consumer group '${group}' does not exist.`);
    });
  });

  it('kafka-topics.sh --list and --describe still work', async () => {
    const listed = await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', broker.bootstrap, '--list']);
    expect(listed.status, describeRun(listed)).toBe(0);
    expect(lines(listed.stdout)).toEqual(expect.arrayContaining(['cg-topic', 'java-console-group', 'java-perf-group']));
    // No internal offsets topic: offsets live in the coordination store.
    expect(lines(listed.stdout)).not.toContain('__consumer_offsets');
    const described = await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', broker.bootstrap, '--describe', '--topic', 'cg-topic']);
    expect(described.status, describeRun(described)).toBe(0);
    expect(described.stdout).toMatch(/^Topic: cg-topic\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: ?$/m);
    for (let p = 0; p < 4; p += 1) expect(described.stdout).toMatch(new RegExp(`^\\tTopic: cg-topic\\tPartition: ${p}\\tLeader: 0\\t`, 'm'));
  });
});
