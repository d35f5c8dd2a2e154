/**
 * Group members SIGKILLed in and around rebalances (issue #22, "Consumers"), for both kinds of
 * group: the paper's ZooKeeper-coordinated group (Algorithm 1, src/client/group/zookeeper-consumer.ts,
 * one test/support/group-member.ts process per member) and a broker-coordinated group (the group
 * coordinator of src/broker/group/, kafkajs members through test/support/kafkajs-group-member.ts).
 *
 * A producer writes unique values to an 8-partition topic all along. Three members share it.
 * Each round: start a fourth member (the group rebalances for it), wait a random time, SIGKILL a
 * random one of the four (the joining one included), and wait until the group of three is settled
 * again. The wait is random up to a bound that adapts (shrinks after a kill that found the group
 * already settled, grows after one that did not), so most kills land while the group is joining,
 * syncing, claiming ownership or committing; commits go on all along (every 500 ms for the
 * ZooKeeper consumer, after every batch for kafkajs).
 *
 * Invariants, each a violation when broken:
 *   - after every round, within 120 s: every partition owned by exactly one live member and
 *     nothing unowned (ZooKeeper: every owner node names a thread of a registered live member, the
 *     registry holds exactly the live members, the share is even; broker: DescribeGroups is Stable
 *     with exactly the live members, disjoint assignments covering the topic, each member told the
 *     assignment the coordinator holds);
 *   - broker groups: in every generation the assignments members received are disjoint, and a
 *     member only receives records of partitions assigned to it in the generation it is in;
 *   - a committed offset never goes backwards and never beyond the log end (polled all along);
 *   - every acknowledged record is consumed at least once, with the value acknowledged;
 *   - duplicates (counted) stay within the uncommitted windows of the kills: for each kill, per
 *     partition, from the committed offset read just after the kill to the last offset the victim
 *     printed.
 * Figures: kills (and how many landed while the group was rebalancing), records, duplicates and
 * their bound, time from the kill to full ownership by live members (median / max), peak RSS.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { consumerIdsPath, ownerPath, ownersPath } from '../../src/coordination/paths.js';
import type { ServiceRun } from '../services/run-dir.js';
import { describeGroup, ownersOf } from '../support/describe-group.js';
import { peakResidentBytes } from '../support/process-memory.js';
import {
  createTopic,
  eventually,
  produceContinuously,
  startCluster,
  startMember,
  tallyConsumed,
  watchCommittedOffsets,
  type Cluster,
  type Member,
  type MemberKind,
} from './consumers-harness.js';

export interface KillOptions {
  readonly run: ServiceRun;
  readonly zookeeperRoot: string;
  readonly kind: MemberKind;
  readonly kills: number;
  readonly random: () => number;
  readonly members?: number;
  readonly partitions?: number;
  readonly sessionTimeoutMs?: number;
  readonly say?: (line: string) => void;
}

export interface KillResult {
  readonly kind: MemberKind;
  readonly kills: number;
  /** Kills that landed while the group was not settled (joining, syncing, claiming). */
  readonly killsDuringRebalance: number;
  readonly acknowledged: number;
  readonly deliveries: number;
  readonly lost: number;
  readonly duplicates: number;
  /** The sum of the kills' uncommitted windows: what duplicates may reach. */
  readonly duplicateBound: number;
  /** Milliseconds from each kill to full ownership by live members. */
  readonly ownershipMs: readonly number[];
  readonly offsetPolls: number;
  readonly peakMemberRssBytes: number;
  readonly peakBrokerRssBytes: number;
  readonly violations: readonly string[];
  readonly seconds: number;
}

const SETTLE_TIMEOUT_MS = 120_000;

export async function runMemberKills(options: KillOptions): Promise<KillResult> {
  const began = Date.now();
  const say = options.say ?? (() => undefined);
  const memberCount = options.members ?? 3;
  const partitions = options.partitions ?? 8;
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 3000;
  const topic = 'kills';
  const group = `chaos-${options.kind}`;
  const cluster = await startCluster(options.run, options.zookeeperRoot, `kill-${options.kind}`);
  const violations: string[] = [];
  const ownershipMs: number[] = [];
  const everyone: Member[] = [];
  let live: Member[] = [];
  let killsDuringRebalance = 0;
  let duplicateBound = 0;
  let peakMemberRss = 0;
  let kills = 0;
  let spawned = 0;
  const spawn = (): Member => {
    spawned += 1;
    const member = startMember({
      run: options.run,
      kind: options.kind,
      name: `${group}-${spawned}-${Date.now()}`,
      zookeeper: cluster.zookeeper,
      bootstrap: cluster.broker.bootstrap,
      group,
      topic,
      sessionTimeoutMs,
    });
    everyone.push(member);
    return member;
  };
  await createTopic(cluster.broker.bootstrap, topic, partitions);
  const producer = await produceContinuously(cluster.broker.bootstrap, topic, partitions, { tag: 'k', batch: 16, intervalMs: 40 });
  const watcher = watchCommittedOffsets(cluster.zk, cluster.simple, group, topic, partitions);
  const settled = (): Promise<string | undefined> =>
    options.kind === 'zookeeper' ? zookeeperGroupUnsettled(cluster, group, topic, partitions, live) : brokerGroupUnsettled(cluster, group, topic, partitions, live);
  try {
    live = Array.from({ length: memberCount }, spawn);
    const startedAt = Date.now();
    let why: string | undefined;
    if (!(await eventually(async () => (why = await settled()) === undefined, SETTLE_TIMEOUT_MS, 200))) throw new Error(`the group never settled at the start: ${why}; a member's log: ${live[0]?.process.stderr().split('\n').slice(-12).join('\n')}`);
    // How long after a member is started the kill comes: random up to `window`, which adapts so
    // that most kills land while the group is still rebalancing for the new member.
    let window = Date.now() - startedAt;
    for (let round = 1; round <= options.kills; round += 1) {
      // A member joins (the rebalance this round's kill falls into), then one of them dies.
      const joiner = spawn();
      live.push(joiner);
      const joined = Date.now();
      const delay = Math.floor(options.random() * window);
      await sleep(Math.max(0, joined + delay - Date.now()));
      const victim = live[Math.floor(options.random() * live.length)] ?? live[0];
      if (victim === undefined) break;
      const rebalancing = (await settled()) !== undefined;
      if (rebalancing) killsDuringRebalance += 1;
      window = rebalancing ? Math.min(20_000, window * 1.05) : Math.max(300, window * 0.85);
      peakMemberRss = Math.max(peakMemberRss, peakResidentBytes(victim.process.pid));
      await victim.process.kill();
      const killedAt = Date.now();
      kills += 1;
      live = live.filter((member) => member !== victim);
      // The victim's uncommitted window: what it printed past the offsets committed when it died.
      const committed = await watcher.read();
      const printedEnd = new Map<number, bigint>();
      for (const delivery of victim.deliveries()) printedEnd.set(delivery.partition, delivery.offset + 1n > (printedEnd.get(delivery.partition) ?? 0n) ? delivery.offset + 1n : (printedEnd.get(delivery.partition) ?? 0n));
      let uncommitted = 0n;
      for (const [partition, end] of printedEnd) {
        const from = committed.get(partition) ?? 0n;
        if (end > from) uncommitted += end - from;
      }
      duplicateBound += Number(uncommitted);
      const ok = await eventually(async () => (why = await settled()) === undefined, SETTLE_TIMEOUT_MS, 100);
      const now = Date.now();
      if (ok) ownershipMs.push(now - killedAt);
      else violations.push(`round ${round}: partitions not owned by exactly the live members ${SETTLE_TIMEOUT_MS / 1000} s after the kill: ${why}`);
      for (const member of live.filter((each) => each.process.hasExited())) {
        violations.push(`round ${round}: member ${member.name} exited on its own (${String(await member.process.exited)}): ${member.process.stderr().split('\n').slice(-5).join(' | ')}`);
        live = live.filter((each) => each !== member);
        live.push(spawn());
      }
      say(`kill ${round}: ${victim === joiner ? 'the joining member' : 'a member'} ${delay} ms after a member was started, ${rebalancing ? 'during the rebalance' : 'group already settled'}; uncommitted ${uncommitted}; full ownership after ${ok ? `${now - killedAt} ms` : 'never'}`);
      if (!ok) break;
    }
    await producer.stop();
    const acknowledged = producer.acknowledged;
    const allDeliveries = (): ReturnType<Member['deliveries']> => everyone.flatMap((member) => member.deliveries());
    await eventually(() => tallyConsumed(acknowledged, allDeliveries()).missing.length === 0, 120_000, 500);
    for (const member of live) peakMemberRss = Math.max(peakMemberRss, peakResidentBytes(member.process.pid));
    await watcher.stop();
    violations.push(...watcher.violations);
    const tally = tallyConsumed(acknowledged, allDeliveries());
    if (tally.missing.length > 0) violations.push(`${tally.missing.length} acknowledged records never consumed, e.g. ${tally.missing.slice(0, 5).join(', ')}`);
    violations.push(...tally.wrong.slice(0, 10));
    if (tally.duplicates > duplicateBound) violations.push(`${tally.duplicates} duplicate deliveries, more than the kills' uncommitted windows (${duplicateBound})`);
    if (options.kind === 'kafkajs') violations.push(...generationViolations(everyone));
    return {
      kind: options.kind,
      kills,
      killsDuringRebalance,
      acknowledged: acknowledged.size,
      deliveries: tally.deliveries,
      lost: tally.missing.length,
      duplicates: tally.duplicates,
      duplicateBound,
      ownershipMs,
      offsetPolls: watcher.polls(),
      peakMemberRssBytes: peakMemberRss,
      peakBrokerRssBytes: cluster.peakRss(),
      violations,
      seconds: Math.round((Date.now() - began) / 1000),
    };
  } finally {
    await producer.stop();
    await watcher.stop();
    await Promise.all(everyone.map((member) => member.process.stop(5_000).catch(() => undefined)));
    await cluster.close();
  }
}

/** Why the ZooKeeper group is not settled (undefined when it is). */
async function zookeeperGroupUnsettled(cluster: Cluster, group: string, topic: string, partitions: number, live: readonly Member[]): Promise<string | undefined> {
  const liveIds = live.map((member) => member.consumerId());
  if (liveIds.some((id) => id === undefined)) return 'a member has not registered yet';
  const registered = new Set((await cluster.zk.children(consumerIdsPath(group))) ?? []);
  const expected = new Set(liveIds as string[]);
  if (registered.size !== expected.size || [...registered].some((id) => !expected.has(id))) return `registered ${[...registered].join(', ')}; live ${[...expected].join(', ')}`;
  const owned = new Set((await cluster.zk.children(ownersPath(group, topic))) ?? []);
  const counts = new Map<string, number>();
  for (let partition = 0; partition < partitions; partition += 1) {
    if (!owned.has(String(partition))) return `partition ${partition} has no owner`;
    const node = await cluster.zk.get(ownerPath(group, topic, partition));
    if (node === undefined) return `partition ${partition} has no owner`;
    const thread = node.data.toString('utf8');
    const id = thread.replace(/-\d+$/, '');
    if (!expected.has(id)) return `partition ${partition} is owned by ${thread}, not a live member`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  const shares = [...expected].map((id) => counts.get(id) ?? 0);
  if (Math.max(...shares) - Math.min(...shares) > 1) return `uneven shares ${shares.join('/')}`;
  return undefined;
}

/** Why the broker-coordinated group is not settled (undefined when it is). */
async function brokerGroupUnsettled(cluster: Cluster, group: string, topic: string, partitions: number, live: readonly Member[]): Promise<string | undefined> {
  const described = await describeGroup(cluster.broker.port, group, topic);
  if (described.state !== 'Stable') return `group ${described.state || 'unknown'}`;
  const told = live.map((member) => member.assignment());
  if (told.some((assignment) => assignment === undefined)) return 'a member has no assignment yet';
  const memberIds = new Set(told.map((assignment) => assignment?.memberId));
  const held = new Map(described.members.map((member) => [member.memberId, member.partitions]));
  if (held.size !== memberIds.size || [...held.keys()].some((id) => !memberIds.has(id))) return `coordinator holds ${[...held.keys()].join(', ')}; live members ${[...memberIds].join(', ')}`;
  let owners: Map<number, string>;
  try {
    owners = ownersOf(described);
  } catch (error) {
    return (error as Error).message;
  }
  if (owners.size !== partitions) return `${partitions - owners.size} partitions unassigned`;
  for (const assignment of told) {
    if (assignment === undefined) continue;
    if ((held.get(assignment.memberId) ?? []).join(',') !== [...assignment.partitions].join(',')) return `member ${assignment.memberId} was told ${assignment.partitions.join(',')}, the coordinator holds ${(held.get(assignment.memberId) ?? []).join(',')}`;
  }
  const shares = [...held.values()].map((list) => list.length);
  if (Math.max(...shares) - Math.min(...shares) > 1) return `uneven shares ${shares.join('/')}`;
  return undefined;
}

/** Broker groups: assignments disjoint within a generation; records only of assigned partitions. */
function generationViolations(members: readonly Member[]): string[] {
  const violations: string[] = [];
  const byGeneration = new Map<number, Map<number, string>>();
  for (const member of members) {
    const assigned = new Map<number, Set<number>>();
    for (const assignment of member.assignments()) {
      assigned.set(assignment.generation, new Set(assignment.partitions));
      const owners = byGeneration.get(assignment.generation) ?? new Map<number, string>();
      for (const partition of assignment.partitions) {
        const other = owners.get(partition);
        if (other !== undefined && other !== member.name) violations.push(`generation ${assignment.generation}: partition ${partition} assigned to both ${other} and ${member.name}`);
        owners.set(partition, member.name);
      }
      byGeneration.set(assignment.generation, owners);
    }
    for (const delivery of member.deliveries()) {
      if (assigned.get(delivery.generation)?.has(delivery.partition) !== true) {
        violations.push(`${member.name} received ${delivery.partition}/${delivery.offset} in generation ${delivery.generation}, which did not assign it that partition`);
      }
    }
  }
  return violations.slice(0, 20);
}
