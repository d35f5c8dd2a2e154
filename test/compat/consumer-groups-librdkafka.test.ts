/**
 * librdkafka 2.0.2 consumer groups (kcat 1.7.1 -G, its balanced KafkaConsumer) against a
 * standalone Tributary broker.
 *
 * - Two `kcat -G` members of one group: together they receive every record, before and after the
 *   second joins; DescribeGroups shows both with disjoint assignments (decoded with
 *   consumer-protocol.ts) covering the topic; kafka-consumer-groups.sh --describe shows both
 *   members and CURRENT-OFFSET = LOG-END-OFFSET once they have auto-committed, and again after
 *   both are stopped (the group then has no active members).
 * - Static membership (KIP-345, group.instance.id): a static member SIGKILLed and restarted
 *   within its session timeout rejoins without a rebalance. The broker logs no new rebalance for
 *   the group, the other member is never reassigned, the restarted member gets its old
 *   partitions back under a new member id, and the two keep consuming everything.
 *
 * librdkafka logs protocol trouble at syslog levels 0–3 (`%3|…` lines on stderr); none may appear,
 * nor any broker warning.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openRun } from '../services/run-dir.js';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeGroup, ownersOf, type DescribedGroup } from '../support/describe-group.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { kcat } from '../support/kcat.js';
import { startLineProcess, type LineProcess } from '../support/line-process.js';

const { runDir, kafkaToolsDir } = inject('compat');
const run = openRun(runDir);

let broker: InProcessBroker;
let admin: Admin;
const started: LineProcess[] = [];

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1', 'group.initial.rebalance.delay.ms': '0', 'group.min.session.timeout.ms': '1000' });
  admin = new Kafka({ clientId: 'rdkafka-group-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
});
afterAll(async () => {
  await Promise.all(started.map((member) => member.kill()));
  await admin?.disconnect();
  await broker?.stop();
  // Nothing the clients sent made the broker log a warning or an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 40) ?? []).toEqual([]);
});

async function createTopic(topic: string, partitions: number): Promise<void> {
  expect(await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true })).toBe(true);
}

/** `count` records into each partition, value `<tag>-<partition>-<i>`; waits until all are readable. */
async function produce(topic: string, partitions: number, count: number, tag: string): Promise<string[]> {
  const values: string[] = [];
  for (let partition = 0; partition < partitions; partition += 1) {
    const batch = Array.from({ length: count }, (_, i) => `${tag}-${partition}-${i}`);
    const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', String(partition)], `${batch.join('\n')}\n`);
    expect(result.status, result.stderr).toBe(0);
    values.push(...batch);
  }
  return values;
}

let memberCount = 0;
function kcatMember(group: string, topic: string, clientId: string, extra: readonly string[] = []): LineProcess {
  memberCount += 1;
  const member = startLineProcess({
    run,
    name: `kcat-member-${clientId}-${process.pid}-${memberCount}`,
    command: 'kcat',
    args: [
      '-b', broker.bootstrap, '-u', '-f', '%p %o %s\\n',
      '-X', `client.id=${clientId}`, '-X', 'auto.offset.reset=earliest', '-X', 'auto.commit.interval.ms=500',
      '-X', 'session.timeout.ms=6000', '-X', 'heartbeat.interval.ms=500', ...extra,
      '-G', group, topic,
    ],
  });
  started.push(member);
  return member;
}

interface Received {
  readonly partition: number;
  readonly offset: number;
  readonly value: string;
}
function received(member: LineProcess): Received[] {
  return member.lines
    .filter((line) => line !== '')
    .map((line) => {
      const [partition, offset, value] = line.split(' ');
      return { partition: Number(partition), offset: Number(offset), value: value ?? '' };
    });
}

/** librdkafka's own error lines (syslog levels 0–3). */
function librdkafkaErrors(member: LineProcess): string[] {
  return member.stderr().split('\n').filter((line) => /^%[0-3]\|/.test(line));
}

/** kcat's "% Group … rebalanced (memberid …): assigned: t [0], t [1]" lines, as partition lists. */
function kcatAssignments(member: LineProcess, topic: string): number[][] {
  return member
    .stderr()
    .split('\n')
    .filter((line) => line.includes('rebalanced') && line.includes('assigned:'))
    .map((line) => [...line.matchAll(new RegExp(`${topic} \\[(\\d+)\\]`, 'g'))].map((match) => Number(match[1])).sort((a, b) => a - b));
}

/** Stable, with these client ids as members, whose assignments are disjoint and cover every partition. */
async function settled(group: string, topic: string, partitions: number, clientIds: readonly string[]): Promise<DescribedGroup | undefined> {
  const described = await describeGroup(broker.broker.port, group, topic);
  if (described.state !== 'Stable') return undefined;
  if (described.members.map((m) => m.clientId).sort().join() !== [...clientIds].sort().join()) return undefined;
  if (ownersOf(described).size !== partitions) return undefined;
  return described;
}

async function waitSettled(group: string, topic: string, partitions: number, clientIds: readonly string[]): Promise<DescribedGroup> {
  let found: DescribedGroup | undefined;
  await waitUntil(async () => (found = await settled(group, topic, partitions, clientIds)) !== undefined, {
    what: `${group} Stable with members ${clientIds.join(', ')} owning all ${partitions} partitions`,
    timeoutMs: 60_000,
  });
  return found!;
}

async function committed(group: string, topic: string): Promise<number[]> {
  const [fetched] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  return (fetched?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
}

function seen(members: readonly LineProcess[]): Set<string> {
  return new Set(members.flatMap((member) => received(member).map((r) => r.value)));
}

async function consumerGroups(args: readonly string[]): Promise<JavaToolResult> {
  const result = await runKafkaTool('org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', broker.bootstrap, ...args], { kafkaToolsDir, runDir, timeoutMs: 100_000 });
  expect(result.status, describeRun(result)).toBe(0);
  expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
  return result;
}

/** The rows of kafka-consumer-groups.sh --describe (offsets view) for `topic`, split on whitespace. */
function offsetRows(stdout: string, group: string, topic: string): string[][] {
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((cells) => cells[0] === group && cells[1] === topic)
    .sort((a, b) => Number(a[2]) - Number(b[2]));
}

/** Broker log lines about `group` with this message. */
function brokerLog(group: string, msg: string): Record<string, unknown>[] {
  return broker.logLines.filter((line) => line['group'] === group && line['msg'] === msg);
}

describe('librdkafka (kcat -G) consumer groups', () => {
  it('two kcat -G members receive every record between them, both are described, and their offsets are committed', async () => {
    const topic = 'rdk-two-members';
    const group = 'rdk-two';
    const partitions = 6;
    await createTopic(topic, partitions);
    const before = await produce(topic, partitions, 200, 'before');

    const a = kcatMember(group, topic, 'kcat-a');
    await a.waitFor(() => received(a).length > 0, 'kcat-a to receive records');
    const b = kcatMember(group, topic, 'kcat-b');
    const described = await waitSettled(group, topic, partitions, ['kcat-a', 'kcat-b']);
    expect(described.members.map((m) => m.partitions.length)).toEqual([3, 3]);
    const after = await produce(topic, partitions, 200, 'after');

    const everything = new Set([...before, ...after]);
    await waitUntil(async () => seen([a, b]).size === everything.size, { what: `all ${everything.size} records received by kcat-a and kcat-b`, timeoutMs: 60_000 });
    expect(seen([a, b])).toEqual(everything);
    // Each received records of its own partitions once the group had both.
    for (const [member, clientId] of [[a, 'kcat-a'], [b, 'kcat-b']] as const) {
      const own = described.members.find((m) => m.clientId === clientId)?.partitions ?? [];
      const afterValues = new Set(received(member).filter((r) => r.value.startsWith('after-')).map((r) => r.partition));
      expect([...afterValues].sort((x, y) => x - y), clientId).toEqual(own);
    }

    // Auto-commit (every 500 ms) catches up with the log end while both are still members.
    const end = Array.from({ length: partitions }, () => 400);
    await waitUntil(async () => (await committed(group, topic)).join() === end.join(), { what: `${group} committed at the log end`, timeoutMs: 30_000 });
    const active = (await consumerGroups(['--describe', '--group', group])).stdout;
    const rows = offsetRows(active, group, topic);
    expect(rows.map((cells) => cells.slice(2, 6)), active).toEqual(end.map((_, p) => [String(p), '400', '400', '0']));
    // CONSUMER-ID, HOST, CLIENT-ID: each partition's owner as DescribeGroups names it.
    for (const cells of rows) {
      const owner = described.members.find((m) => m.partitions.includes(Number(cells[2])));
      expect(cells.slice(6), active).toEqual([owner?.memberId, '/127.0.0.1', owner?.clientId]);
    }

    expect(await a.stop()).toBe(0);
    expect(await b.stop()).toBe(0);
    expect([...librdkafkaErrors(a), ...librdkafkaErrors(b)]).toEqual([]);
    const stopped = await consumerGroups(['--describe', '--group', group]);
    expect(stopped.stderr).toContain(`Consumer group '${group}' has no active members.`);
    // No owners any more: CONSUMER-ID, HOST and CLIENT-ID are "-".
    expect(offsetRows(stopped.stdout, group, topic).map((cells) => cells.slice(2)), stopped.stdout).toEqual(end.map((_, p) => [String(p), '400', '400', '0', '-', '-', '-']));
  });

  it('a static member (group.instance.id) SIGKILLed and restarted within its session timeout rejoins without a rebalance', async () => {
    const topic = 'rdk-static';
    const group = 'rdk-static-group';
    const partitions = 4;
    await createTopic(topic, partitions);
    // A 10 s session: the restarted member must be back well before the old one would expire.
    const staticMember = (instance: string, clientId: string): LineProcess =>
      kcatMember(group, topic, clientId, ['-X', `group.instance.id=${instance}`, '-X', 'session.timeout.ms=10000']);
    const a = staticMember('instance-a', 'kcat-static-a');
    const b = staticMember('instance-b', 'kcat-static-b');
    const first = await waitSettled(group, topic, partitions, ['kcat-static-a', 'kcat-static-b']);
    expect(first.members.map((m) => m.groupInstanceId).sort()).toEqual(['instance-a', 'instance-b']);
    const oldA = first.members.find((m) => m.groupInstanceId === 'instance-a')!;
    const oldB = first.members.find((m) => m.groupInstanceId === 'instance-b')!;
    const batch1 = await produce(topic, partitions, 100, 'one');
    await waitUntil(async () => seen([a, b]).size === batch1.length, { what: 'the first batch received', timeoutMs: 60_000 });
    await waitUntil(async () => (await committed(group, topic)).every((offset) => offset === 100), { what: 'the first batch committed', timeoutMs: 30_000 });

    const rebalancesBefore = brokerLog(group, 'preparing to rebalance group').length;
    const generations = brokerLog(group, 'group rebalanced; waiting for the leader to assign').map((line) => Number(line['generation']));
    const generationBefore = generations.at(-1);
    expect(generationBefore).toBeGreaterThan(0);

    const bBefore = b.stderr().length;
    await a.kill();
    const restarted = staticMember('instance-a', 'kcat-static-a');
    await restarted.waitFor(() => kcatAssignments(restarted, topic).length > 0, 'the restarted instance-a to be assigned');
    expect(kcatAssignments(restarted, topic)).toEqual([oldA.partitions]);
    const second = await waitSettled(group, topic, partitions, ['kcat-static-a', 'kcat-static-b']);
    const newA = second.members.find((m) => m.groupInstanceId === 'instance-a')!;
    expect(newA.memberId).not.toBe(oldA.memberId);
    expect(newA.partitions).toEqual(oldA.partitions);
    expect(second.members.find((m) => m.groupInstanceId === 'instance-b')).toEqual(oldB);

    const batch2 = await produce(topic, partitions, 100, 'two');
    await waitUntil(async () => batch2.every((value) => seen([restarted, b]).has(value)), { what: 'the second batch received by the restarted a and b', timeoutMs: 60_000 });
    // The restarted member resumed at a's committed offsets: it read none of the first batch.
    expect(received(restarted).filter((r) => r.value.startsWith('one-'))).toEqual([]);
    expect(new Set(received(restarted).map((r) => r.partition))).toEqual(new Set(oldA.partitions));

    // No rebalance: no new one was prepared, the generation stayed, and b was neither revoked nor
    // assigned again since the kill (kcat prints "% Group … rebalanced …" for each).
    expect(brokerLog(group, 'preparing to rebalance group').length).toBe(rebalancesBefore);
    expect(brokerLog(group, 'group rebalanced; waiting for the leader to assign').map((line) => Number(line['generation'])).at(-1)).toBe(generationBefore);
    expect(kcatAssignments(b, topic).at(-1)).toEqual(oldB.partitions);
    expect(b.stderr().slice(bBefore)).not.toContain('rebalanced');
    expect([...librdkafkaErrors(restarted), ...librdkafkaErrors(b)]).toEqual([]);

    await restarted.stop();
    await b.stop();
  });
});
