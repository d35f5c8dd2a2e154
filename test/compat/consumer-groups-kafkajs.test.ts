/**
 * kafkajs 2.2.4 consumer groups against a standalone Tributary broker: three `consumer.run`
 * members, each its own OS process (test/support/kafkajs-group-member.ts), share a 12-partition
 * topic while records are produced; one is SIGKILLed mid-stream.
 *
 * - Ownership: in every generation the members' assignments (as each received it from SyncGroup)
 *   are disjoint, and each member received records only of partitions it was assigned in the
 *   generation it was in. DescribeGroups (assignments decoded with consumer-protocol.ts) agrees
 *   with what the members were told.
 * - After the kill, the member's partitions move to the two others once its session expires.
 * - Nothing is lost: every produced record is received at least once. Duplicates are only of
 *   records at or after the offset committed for their partition just before the kill (OffsetFetch
 *   through kafkajs' admin). That bound holds for any partition: commits only move forward, and a
 *   new owner starts at the committed offset.
 * - Stopping the others cleanly (commit, LeaveGroup) leaves every partition committed at its end
 *   and the group Empty.
 *
 * The broker logs no warning. It runs with group.initial.rebalance.delay.ms=0 and
 * group.min.session.timeout.ms=1000, so the members can ask for a 6 s session and the test need
 * not wait long for the expiry.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeConsumerAssignment } from '../../src/protocol/consumer-protocol.js';
import { openRun } from '../services/run-dir.js';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { startLineProcess, type LineProcess } from '../support/line-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { runDir } = inject('compat');
const run = openRun(runDir);

const TOPIC = 'kjs-group-topic';
const GROUP = 'kjs-three-members';
const PARTITIONS = 12;
const RECORDS = 6000;
const SESSION_TIMEOUT_MS = 6000;

let broker: InProcessBroker;
let kafka: Kafka;
let admin: Admin;
let producer: Producer;
const members: LineProcess[] = [];

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1', 'group.initial.rebalance.delay.ms': '0', 'group.min.session.timeout.ms': '1000' });
  kafka = new Kafka({ clientId: 'kjs-group-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  producer = kafka.producer();
  await admin.connect();
  await producer.connect();
  expect(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true })).toBe(true);
});
afterAll(async () => {
  await Promise.all(members.map((member) => member.kill()));
  await producer?.disconnect();
  await admin?.disconnect();
  await broker?.stop();
  // Nothing the clients sent made the broker log a warning or an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 40) ?? []).toEqual([]);
});

interface AssignmentLine {
  readonly event: 'assignment';
  readonly generation: number;
  readonly memberId: string;
  readonly partitions: number[];
}
interface RecordLine {
  readonly event: 'record';
  readonly generation: number;
  readonly memberId: string;
  readonly partition: number;
  readonly offset: string;
  readonly value: string;
}
type MemberLine = AssignmentLine | RecordLine;

function parsed(member: LineProcess): MemberLine[] {
  return member.lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as MemberLine);
}
const assignments = (member: LineProcess): AssignmentLine[] => parsed(member).filter((line): line is AssignmentLine => line.event === 'assignment');
const records = (member: LineProcess): RecordLine[] => parsed(member).filter((line): line is RecordLine => line.event === 'record');

function startMember(index: number): LineProcess {
  const member = startLineProcess({
    run,
    name: `kafkajs-member-${index}-${process.pid}-${Date.now()}`,
    command: process.execPath,
    args: [
      '--import', 'tsx', join(root, 'test', 'support', 'kafkajs-group-member.ts'),
      '--bootstrap', broker.bootstrap, '--group', GROUP, '--topic', TOPIC, '--client-id', `kjs-member-${index}`,
      '--session-timeout', String(SESSION_TIMEOUT_MS), '--heartbeat-interval', '500', '--max-wait', '200',
      // A little work per record, so the kill tends to land inside a batch, between records
      // printed and their commit (those come again from the new owner).
      '--delay-ms', '2',
    ],
    cwd: root,
  });
  members.push(member);
  return member;
}

/** The latest assignment of each member, when all are of one generation and together hold every partition once. */
function settledGeneration(group: readonly LineProcess[]): number | undefined {
  const latest = group.map((member) => assignments(member).at(-1));
  if (latest.some((line) => line === undefined)) return undefined;
  const generations = new Set(latest.map((line) => line?.generation));
  const owned = latest.flatMap((line) => line?.partitions ?? []).sort((a, b) => a - b);
  if (generations.size !== 1 || owned.length !== PARTITIONS || owned.some((p, i) => p !== i)) return undefined;
  return latest[0]?.generation;
}

/** Partition → member id, from DescribeGroups' stored assignments (only a Stable group has them). */
async function describedOwners(): Promise<{ state: string; owners: Map<number, string>; memberIds: string[] }> {
  const { groups } = await admin.describeGroups([GROUP]);
  const group = groups[0];
  if (group === undefined) throw new Error('DescribeGroups returned no group');
  const owners = new Map<number, string>();
  for (const member of group.members) {
    if (member.memberAssignment.length === 0) continue;
    for (const { topic, partitions } of decodeConsumerAssignment(member.memberAssignment).assignedPartitions) {
      for (const partition of partitions) {
        if (topic !== TOPIC) throw new Error(`member ${member.memberId} was assigned ${topic}`);
        if (owners.has(partition)) throw new Error(`partition ${partition} is assigned to ${owners.get(partition)} and ${member.memberId}`);
        owners.set(partition, member.memberId);
      }
    }
  }
  return { state: group.state, owners, memberIds: group.members.map((member) => member.memberId).sort() };
}

async function committedOffsets(): Promise<Map<number, number>> {
  const [fetched] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
  return new Map((fetched?.partitions ?? []).map(({ partition, offset }) => [partition, Number(offset)]));
}

describe('kafkajs consumer groups', () => {
  it('three consumer.run members share 12 partitions; one SIGKILLed mid-stream hands its partitions over; nothing is lost', async () => {
    const group = [startMember(1), startMember(2), startMember(3)];
    await waitUntil(async () => settledGeneration(group) !== undefined, { what: 'three members settled on one generation owning all 12 partitions', timeoutMs: 60_000 });
    const firstGeneration = settledGeneration(group) ?? -1;
    for (const member of group) expect(assignments(member).at(-1)?.partitions, member.name).toHaveLength(4);

    // The broker stored and describes what each member was told.
    const described = await describedOwners();
    expect(described.state).toBe('Stable');
    expect(described.memberIds).toEqual(group.map((member) => assignments(member).at(-1)?.memberId).sort());
    for (const member of group) {
      const last = assignments(member).at(-1);
      for (const partition of last?.partitions ?? []) expect(described.owners.get(partition)).toBe(last?.memberId);
    }

    // Produce in the background, 60 records every 50 ms, value = sequence number, round robin over
    // partitions. The last HELD_BACK wait for the kill, so it always comes mid-stream.
    const HELD_BACK = 1200;
    let sent = 0;
    let killed = false;
    const producing = (async () => {
      while (sent < RECORDS) {
        if (!killed && sent >= RECORDS - HELD_BACK) {
          await sleep(50);
          continue;
        }
        const batch = Array.from({ length: Math.min(60, RECORDS - sent) }, (_, i) => ({ value: String(sent + i), partition: (sent + i) % PARTITIONS }));
        await producer.send({ topic: TOPIC, acks: -1, messages: batch });
        sent += batch.length;
        await sleep(50);
      }
    })();

    const victim = group[1]!;
    const survivors = [group[0]!, group[2]!];
    await victim.waitFor(() => records(victim).length >= 300, 'the victim to receive 300 records', 60_000);
    const victimPartitions = assignments(victim).at(-1)?.partitions ?? [];
    const committedBeforeKill = await committedOffsets();
    await victim.kill();
    killed = true;

    await producing;
    const seen = (): Set<string> => new Set(group.flatMap((member) => records(member).map((line) => line.value)));
    await waitUntil(async () => seen().size === RECORDS, { what: `all ${RECORDS} records received (have ${seen().size})`, timeoutMs: 90_000 });

    // The victim's partitions moved to the two survivors in a later generation, split evenly.
    await waitUntil(async () => (settledGeneration(survivors) ?? -1) > firstGeneration, { what: 'the two survivors settled on a later generation owning all 12 partitions', timeoutMs: 30_000 });
    for (const member of survivors) expect(assignments(member).at(-1)?.partitions, member.name).toHaveLength(6);
    const survivorsOwn = new Set(survivors.flatMap((member) => assignments(member).at(-1)?.partitions ?? []));
    for (const partition of victimPartitions) expect(survivorsOwn.has(partition)).toBe(true);
    const after = await describedOwners();
    expect(after.state).toBe('Stable');
    expect(after.memberIds).toEqual(survivors.map((member) => assignments(member).at(-1)?.memberId).sort());
    expect(after.owners.size).toBe(PARTITIONS);

    // Each generation's assignments are disjoint; each record came from a partition its receiver owned then.
    const byGeneration = new Map<number, Map<number, string>>();
    for (const member of group) {
      for (const line of assignments(member)) {
        const owners = byGeneration.get(line.generation) ?? new Map<number, string>();
        byGeneration.set(line.generation, owners);
        for (const partition of line.partitions) {
          expect(owners.get(partition), `partition ${partition} owned twice in generation ${line.generation}`).toBeUndefined();
          owners.set(partition, line.memberId);
        }
      }
    }
    const strays = group.flatMap((member) => records(member).filter((line) => byGeneration.get(line.generation)?.get(line.partition) !== line.memberId));
    expect(strays.slice(0, 5)).toEqual([]);
    // No other rebalance happened while all three were up: the victim only ever saw the first generation's.
    expect(new Set(records(victim).map((line) => line.generation))).toEqual(new Set([firstGeneration]));

    // Every record at least once; duplicates only at or after the offset committed before the kill.
    const copies = new Map<string, RecordLine[]>();
    for (const line of group.flatMap(records)) copies.set(line.value, [...(copies.get(line.value) ?? []), line]);
    const duplicates = [...copies.values()].filter((lines) => lines.length > 1);
    const early = duplicates.filter((lines) => {
      const first = lines[0]!;
      return Number(first.offset) < Math.max(committedBeforeKill.get(first.partition) ?? -1, 0);
    });
    expect(early.slice(0, 3)).toEqual([]);
    for (const lines of duplicates) expect(new Set(lines.map((line) => `${line.partition}/${line.offset}`)).size).toBe(1);
    process.stdout.write(
      `[kafkajs-groups] ${RECORDS} records, ${duplicates.length} received twice (all at or after the pre-kill commit; ` +
        `partitions ${[...new Set(duplicates.map((lines) => lines[0]!.partition))].sort((a, b) => a - b).join(',') || 'none'}), ` +
        `victim owned ${victimPartitions.join(',')}, generations ${[...byGeneration.keys()].sort((a, b) => a - b).join(',')}\n`,
    );

    // A clean stop commits what was consumed and leaves: every partition committed at its end, group Empty.
    for (const member of survivors) expect(await member.stop()).toBe(0);
    const committed = await committedOffsets();
    expect([...committed.entries()].sort((a, b) => a[0] - b[0])).toEqual(Array.from({ length: PARTITIONS }, (_, p) => [p, RECORDS / PARTITIONS]));
    const { groups } = await admin.describeGroups([GROUP]);
    expect(groups[0]).toMatchObject({ groupId: GROUP, state: 'Empty', members: [] });
  });
});
