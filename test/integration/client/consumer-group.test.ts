/**
 * ZooKeeper consumer groups (the paper's §3.3, Algorithm 1) with every member a separate OS
 * process (test/support/group-member.ts) and two broker processes on one real ZooKeeper:
 * 1. three members share a 12-partition topic: each partition has exactly one owner, the union
 *    of what they consume is what was produced, in order within each partition;
 * 2. one member is SIGKILLed: once its session expires the others take its partitions over and
 *    nothing is lost (duplicates, from the uncommitted window only, are counted and printed);
 * 3. a second group gets the whole stream as well.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { consumerIdsPath, ownerPath, ownersPath } from '../../../src/coordination/paths.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { startDaemon, type Daemon } from '../../services/process.js';
import { openRun, type ServiceRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { services, zookeeperAddress } from '../services.js';

const root = join(import.meta.dirname, '..', '..', '..');
const TOPIC = 'clicks';
const PARTITIONS = 12;
const N = 600;

const brokers: BrokerProcess[] = [];
const members: Daemon[] = [];
let store: ZooKeeperStore | undefined;
afterAll(async () => {
  await Promise.all(members.map((member) => member.stop(5_000).catch(() => undefined)));
  await Promise.all(brokers.map((broker) => broker.stop().catch(() => undefined)));
  await store?.close();
});

interface Consumed {
  readonly partition: number;
  readonly offset: string;
  readonly value: string | null;
}

function consumed(member: Daemon): Consumed[] {
  let text = '';
  try {
    text = readFileSync(member.logFile, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.startsWith('{"partition"'))
    .map((line) => JSON.parse(line) as Consumed);
}

function tributary(...args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'tributary.js'), ...args]);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('close', (status) => resolve({ status, output }));
  });
}

let memberCount = 0;
function startMember(run: ServiceRun, zookeeper: string, bootstrap: string, group: string): Daemon {
  memberCount += 1;
  const name = `group-member-${group}-${memberCount}-${Date.now()}`;
  const daemon = startDaemon({
    run,
    name,
    command: process.execPath,
    args: [
      '--import', 'tsx', join(root, 'test', 'support', 'group-member.ts'),
      '--zookeeper', zookeeper, '--bootstrap', bootstrap, '--group', group, '--topic', TOPIC,
      '--streams', '1', '--reset', 'smallest', '--session-timeout', '4000', '--commit-interval', '500',
    ],
    logFile: join(run.dir, `${name}.log`),
    cwd: root,
  });
  members.push(daemon);
  return daemon;
}

/** Owner thread id per partition (missing partitions absent). */
async function owners(zk: ZooKeeperStore, group: string): Promise<Map<number, string>> {
  const result = new Map<number, string>();
  for (const child of (await zk.children(ownersPath(group, TOPIC))) ?? []) {
    const node = await zk.get(ownerPath(group, TOPIC, Number(child)));
    if (node !== undefined) result.set(Number(child), node.data.toString('utf8'));
  }
  return result;
}

/** Whether all partitions are owned, by exactly `count` threads (those of the registered members), evenly. */
async function settled(zk: ZooKeeperStore, group: string, count: number): Promise<boolean> {
  const ids = (await zk.children(consumerIdsPath(group))) ?? [];
  if (ids.length !== count) return false;
  const owned = await owners(zk, group);
  if (owned.size !== PARTITIONS) return false;
  const threads = new Set(owned.values());
  if (threads.size !== count) return false;
  if (![...threads].every((thread) => ids.some((id) => thread === `${id}-0`))) return false;
  const perThread = [...threads].map((thread) => [...owned.values()].filter((t) => t === thread).length);
  return Math.max(...perThread) - Math.min(...perThread) <= 1;
}

async function produce(bootstrap: string, from: number, count: number): Promise<Map<string, string>> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1 });
  try {
    const records = Array.from({ length: count }, (_, i) => ({ key: Buffer.from(`user-${(from + i) % 37}`), value: Buffer.from(`event-${from + i}`) }));
    const metadata = await producer.send(TOPIC, records);
    const placed = new Map<string, string>();
    metadata.forEach((m, i) => placed.set(`${m.partition}/${m.offset}`, `event-${from + i}`));
    return placed;
  } finally {
    await producer.close();
  }
}

function union(all: readonly Consumed[]): Map<string, string | null> {
  return new Map(all.map((c) => [`${c.partition}/${c.offset}`, c.value]));
}

function expectOrderedPerPartition(lines: readonly Consumed[]): void {
  const last = new Map<number, bigint>();
  for (const line of lines) {
    const previous = last.get(line.partition);
    expect(previous === undefined || BigInt(line.offset) > previous, `partition ${line.partition} went back to ${line.offset}`).toBe(true);
    last.set(line.partition, BigInt(line.offset));
  }
}

describe('ZooKeeper consumer groups, members as processes', () => {
  it('spreads a topic over a group, survives a SIGKILLed member, and serves every group the whole topic', { timeout: 300_000 }, async () => {
    const run = openRun(services().runDir);
    const zookeeper = `${zookeeperAddress().connectString}/groups-${process.pid}-${Date.now()}`;
    const settings = { 'zookeeper.session.timeout.ms': '4000' };
    for (const id of [1, 2]) brokers.push(await startBrokerProcess({ run, id, zookeeper, settings }));
    const bootstrap = brokers[0]!.bootstrap;
    store = await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs: 10_000 });
    const zk = store;
    await expect.poll(async () => ((await zk.children('/brokers/ids')) ?? []).length, { timeout: 60_000 }).toBe(2);
    const created = await tributary('topics', 'create', '--bootstrap-server', bootstrap, '--topic', TOPIC, '--partitions', String(PARTITIONS));
    expect(created.status, created.output).toBe(0);

    // (1) Three members, one stream each.
    const group = 'analytics';
    const trio = [1, 2, 3].map(() => startMember(run, zookeeper, bootstrap, group));
    await expect.poll(() => settled(zk, group, 3), { timeout: 120_000, interval: 500 }).toBe(true);
    const owned = await owners(zk, group);
    expect([...owned.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: PARTITIONS }, (_, i) => i));
    expect(new Set(owned.values()).size).toBe(3);

    const produced = await produce(bootstrap, 0, N);
    expect(produced.size).toBe(N);
    await expect.poll(() => union(trio.flatMap(consumed)).size, { timeout: 120_000, interval: 500 }).toBe(N);
    const firstRound = union(trio.flatMap(consumed));
    for (const [position, value] of produced) expect(firstRound.get(position), position).toBe(value);
    for (const member of trio) expectOrderedPerPartition(consumed(member));
    // Each partition was read by one member only.
    const readers = new Map<number, Set<number>>();
    trio.forEach((member, index) => consumed(member).forEach((c) => readers.set(c.partition, (readers.get(c.partition) ?? new Set()).add(index))));
    for (const set of readers.values()) expect(set.size).toBe(1);

    // (2) SIGKILL one member; the others take its partitions over after its session expires.
    const [victim, ...survivors] = trio as [Daemon, Daemon, Daemon];
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // let a commit or two happen
    victim.signal('SIGKILL');
    await victim.exited;
    const more = await produce(bootstrap, N, N);
    await expect.poll(() => settled(zk, group, 2), { timeout: 120_000, interval: 500 }).toBe(true);
    const all = new Map([...produced, ...more]);
    await expect.poll(() => union(trio.flatMap(consumed)).size, { timeout: 120_000, interval: 500 }).toBe(2 * N);
    const everything = trio.flatMap(consumed);
    const seen = union(everything);
    for (const [position, value] of all) expect(seen.get(position), position).toBe(value);
    const duplicates = everything.length - seen.size;
    console.log(`consumer group: ${duplicates} duplicate deliveries after SIGKILL of one member (of ${2 * N} records)`);
    // Duplicates only come from the victim's uncommitted window: everything it had not read past.
    const victimLines = consumed(victim).length;
    expect(duplicates).toBeLessThanOrEqual(victimLines);
    for (const member of survivors) expect(member.hasExited()).toBe(false);
    // The victim's partitions were taken over: the survivors read them after the kill.
    const victimPartitions = new Set(consumed(victim).map((c) => c.partition));
    const survivorPartitions = new Set(survivors.flatMap(consumed).map((c) => c.partition));
    for (const partition of victimPartitions) expect(survivorPartitions.has(partition), `partition ${partition}`).toBe(true);

    // (3) A second group receives the whole stream too.
    const other = startMember(run, zookeeper, bootstrap, 'archive');
    await expect.poll(() => union(consumed(other)).size, { timeout: 120_000, interval: 500 }).toBe(2 * N);
    const archived = union(consumed(other));
    for (const [position, value] of all) expect(archived.get(position), position).toBe(value);
    expectOrderedPerPartition(consumed(other));
    expect(consumed(other).length).toBe(2 * N);
  });
});
