/**
 * A consumer whose committed offset fell off retention (issue #22, "Consumers"). A 2-partition
 * topic with 4 KiB segments and retention.bytes of 16 KiB per partition: groups commit offset 5
 * of each partition, then enough is written that retention deletes the segments below it (the
 * broker then answers a fetch there with OFFSET_OUT_OF_RANGE). Then each group starts with one
 * reset policy:
 *
 *   zookeeper-smallest / -largest  the paper's consumer (group-member.ts --reset): moves to the log
 *                                  start / end, and its log says so naming both offsets
 *   zookeeper-none                 fails: exits 3 with an error naming topic, partition, the offset
 *                                  and the log start; consumes nothing
 *   kafkajs-earliest               kafkajs (fromBeginning): resets to the log start and logs
 *                                  "Offset out of range, resetting to default offset" (it has no
 *                                  'none')
 *   kcat-earliest / -latest        librdkafka (kcat -G, auto.offset.reset): moves to the start / end
 *   kcat-error                     librdkafka with auto.offset.reset=error: reports the error naming
 *                                  the partition and offset, consumes nothing
 *
 * "As configured": after an earliest reset every record from the log start (read before the
 * member started) on is delivered, gapless; after a latest reset nothing before the log end at the
 * reset, and every record written after it; with none/error nothing at all. "Announced": the line
 * each client prints (checked by its text). Never silent: a case that resets without a word, or
 * fails without naming the offset, is a violation.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { offsetPath, offsetsPath } from '../../src/coordination/paths.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startLineProcess } from '../support/line-process.js';
import { createTopic, eventually, produceBacklog, startCluster, startMember, type Acknowledged, type Cluster, type Delivery } from './consumers-harness.js';

export interface OffRetentionOptions {
  readonly run: ServiceRun;
  readonly zookeeperRoot: string;
  /** Cases to run (default all). */
  readonly cases?: readonly OffRetentionCaseName[];
  readonly say?: (line: string) => void;
}

export const OFF_RETENTION_CASES = ['zookeeper-smallest', 'zookeeper-largest', 'zookeeper-none', 'kafkajs-earliest', 'kcat-earliest', 'kcat-latest', 'kcat-error'] as const;
export type OffRetentionCaseName = (typeof OFF_RETENTION_CASES)[number];

export interface OffRetentionCase {
  readonly name: OffRetentionCaseName;
  readonly ok: boolean;
  /** What happened, in a few words (the first delivered offsets, or the error). */
  readonly outcome: string;
  /** The client's own line announcing the reset or the failure. */
  readonly announcement: string;
}

export interface OffRetentionResult {
  readonly cases: readonly OffRetentionCase[];
  /** Records between the committed offsets and the log start when the groups started. */
  readonly deletedBelowCommitted: number;
  readonly peakBrokerRssBytes: number;
  readonly violations: readonly string[];
  readonly seconds: number;
}

/** What a case needs of its client process (a member process or kcat). */
interface Child {
  readonly exited: Promise<number | string>;
  hasExited(): boolean;
  stderr(): string;
  stop(graceMs?: number): Promise<unknown>;
}

const TOPIC = 'retained';
const PARTITIONS = 2;
const COMMITTED = 5n;

export async function runOffRetention(options: OffRetentionOptions): Promise<OffRetentionResult> {
  const began = Date.now();
  const say = options.say ?? (() => undefined);
  const names = options.cases ?? OFF_RETENTION_CASES;
  const cluster = await startCluster(options.run, options.zookeeperRoot, 'off-retention');
  const violations: string[] = [];
  const cases: OffRetentionCase[] = [];
  const processes: Child[] = [];
  const acknowledged: Acknowledged = new Map();
  let deletedBelowCommitted = 0;
  try {
    await createTopic(cluster.broker.bootstrap, TOPIC, PARTITIONS, { 'segment.bytes': '4096', 'retention.bytes': '16384', 'retention.ms': '-1' });
    await produceBacklog(cluster.broker.bootstrap, TOPIC, PARTITIONS, 40, 'early', 100, acknowledged);
    // Every group commits offset 5 of each partition, the way its kind stores offsets.
    for (const name of names) await commit(cluster, groupOf(name), name.startsWith('zookeeper') ? 'zookeeper' : 'broker');
    // Write until retention has deleted the segments below the committed offset, and a bit more.
    let starts: bigint[] = [];
    const trimmed = await eventually(async () => {
      await produceBacklog(cluster.broker.bootstrap, TOPIC, PARTITIONS, 200, `fill${Date.now()}`, 100, acknowledged);
      starts = await Promise.all(Array.from({ length: PARTITIONS }, (_, partition) => cluster.simple.listOffset(TOPIC, partition, 'earliest')));
      return starts.every((start) => start > COMMITTED + 20n);
    }, 60_000, 600);
    if (!trimmed) throw new Error(`retention did not delete the segments below offset ${COMMITTED} within 60 s (log starts ${starts.join(', ')})`);
    // Retention keeps deleting what the last writes pushed past retention.bytes: wait until it is done.
    let previous = '';
    await eventually(async () => {
      const now = (await ends(cluster, 'earliest')).join(',');
      const stable = now === previous;
      previous = now;
      return stable;
    }, 30_000, 1500);
    starts = await ends(cluster, 'earliest');
    deletedBelowCommitted = starts.reduce((sum, start) => sum + Number(start - COMMITTED), 0);
    say(`log starts ${starts.join(', ')}; committed offset ${COMMITTED} of every group is gone`);
    for (const name of names) {
      const result = await runCase(name, cluster, options.run, processes);
      cases.push(result);
      if (!result.ok) violations.push(`${name}: ${result.outcome}`);
      if (!result.ok) say(`${name} stderr: ${processes.at(-1)?.stderr().split('\n').slice(-15).join(' | ') ?? ''}`);
      say(`${name}: ${result.ok ? 'ok' : 'VIOLATION'}: ${result.outcome}; announced: ${result.announcement}`);
    }
    return { cases, deletedBelowCommitted, peakBrokerRssBytes: cluster.peakRss(), violations, seconds: Math.round((Date.now() - began) / 1000) };
  } finally {
    await Promise.all(processes.map((child) => child.stop(5_000).catch(() => undefined)));
    await cluster.close();
  }
}

const groupOf = (name: OffRetentionCaseName): string => `off-${name}`;

async function commit(cluster: Cluster, group: string, kind: 'zookeeper' | 'broker'): Promise<void> {
  if (kind === 'zookeeper') {
    // What `tributary groups reset-offsets` writes for a paper-style group.
    await cluster.zk.ensurePath(offsetsPath(group, TOPIC));
    for (let partition = 0; partition < PARTITIONS; partition += 1) await cluster.zk.create(offsetPath(group, TOPIC, partition), Buffer.from(COMMITTED.toString()), 'persistent');
    return;
  }
  const admin = new Kafka({ clientId: 'chaos-off-retention', brokers: [cluster.broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.setOffsets({ groupId: group, topic: TOPIC, partitions: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, offset: COMMITTED.toString() })) });
  } finally {
    await admin.disconnect();
  }
}

async function ends(cluster: Cluster, which: 'earliest' | 'latest'): Promise<bigint[]> {
  return Promise.all(Array.from({ length: PARTITIONS }, (_, partition) => cluster.simple.listOffset(TOPIC, partition, which)));
}

async function runCase(name: OffRetentionCaseName, cluster: Cluster, run: ServiceRun, processes: Child[]): Promise<OffRetentionCase> {
  const group = groupOf(name);
  const policy = name.split('-')[1] ?? '';
  const startsBefore = await ends(cluster, 'earliest');
  const endsBefore = await ends(cluster, 'latest');
  let deliveries: () => Delivery[];
  let child: Child;
  let announced: () => string | undefined;
  if (name.startsWith('zookeeper') || name.startsWith('kafkajs')) {
    const member = startMember({ run, kind: name.startsWith('zookeeper') ? 'zookeeper' : 'kafkajs', name: `${group}-${Date.now()}`, zookeeper: cluster.zookeeper, bootstrap: cluster.broker.bootstrap, group, topic: TOPIC, sessionTimeoutMs: 6000, reset: policy });
    child = member.process;
    deliveries = () => member.deliveries();
    announced = () => {
      const lines = child.stderr().split('\n');
      if (name.startsWith('kafkajs')) return lines.find((line) => line.includes('Offset out of range, resetting to default offset'));
      const wanted = policy === 'none' ? '"code":"OFFSET_OUT_OF_RANGE"' : `autoOffsetReset=${policy} moved it to`;
      return lines.find((line) => line.includes(wanted));
    };
  } else {
    const kcat = startLineProcess({
      run,
      name: `${group}-${Date.now()}`,
      command: 'kcat',
      // -u: unbuffered, so every record line reaches us as it is consumed.
      args: ['-b', cluster.broker.bootstrap, '-u', '-G', group, TOPIC, '-X', `auto.offset.reset=${policy}`, '-f', 'R %p %o %s\n'],
    });
    child = kcat;
    deliveries = () =>
      kcat.lines
        .filter((line) => line.startsWith('R '))
        .map((line) => {
          const [, partition, offset, value] = line.split(' ');
          return { partition: Number(partition), offset: BigInt(offset ?? '-1'), value: value ?? null, generation: -1 };
        });
    announced = () => child.stderr().split('\n').find((line) => /out of range|offset reset|Offset out/i.test(line));
  }
  processes.push(child);
  // earliest/smallest: from the log start read before it started, everything to the end.
  if (policy === 'smallest' || policy === 'earliest') {
    const done = await eventually(() => PARTITIONS === new Set(deliveries().filter((d) => d.offset === (endsBefore[d.partition] ?? 0n) - 1n).map((d) => d.partition)).size || child.hasExited(), 60_000, 200);
    await eventually(() => announced() !== undefined, 5_000, 200);
    const firsts = firstOffsets(deliveries());
    const gaps = gapsFrom(deliveries(), startsBefore);
    const announcement = announced() ?? '';
    const ok = done && !child.hasExited() && gaps.length === 0 && announcement !== '' && firsts.every((first, partition) => first !== undefined && first >= (startsBefore[partition] ?? 0n) && first > COMMITTED);
    return { name, ok, outcome: `${done ? '' : 'did not reach the log end; '}first offsets ${firsts.join(', ')} (log starts ${startsBefore.join(', ')})${gaps.length > 0 ? `; gaps: ${gaps.join(', ')}` : ''}${announcement === '' ? '; said nothing' : ''}`, announcement: trim(announcement) };
  }
  if (policy === 'largest' || policy === 'latest') {
    // Once it has moved, new records are what it gets.
    const moved = await eventually(() => announced() !== undefined || child.hasExited(), 30_000, 200);
    if (name.startsWith('kcat')) await sleep(2000); // librdkafka may say nothing: give it time to reach the end first
    const added: Acknowledged = new Map();
    await produceBacklog(cluster.broker.bootstrap, TOPIC, PARTITIONS, 10, `after-${name}`, 10, added);
    const got = await eventually(() => [...added.keys()].every((position) => deliveries().some((d) => `${d.partition}/${d.offset}` === position)) || child.hasExited(), 30_000, 200);
    const early = deliveries().filter((d) => d.offset < (endsBefore[d.partition] ?? 0n));
    const announcement = announced() ?? '';
    const ok = moved && got && early.length === 0 && announcement !== '';
    return { name, ok, outcome: `${got ? 'got every record written after the reset' : 'missed records written after the reset'}, ${early.length} from before the log end ${endsBefore.join(', ')}${announcement === '' ? '; said nothing' : ''}`, announcement: trim(announcement) };
  }
  // none / error: a clear failure naming the offset, and nothing consumed.
  const failed = await eventually(() => announced() !== undefined || child.hasExited(), 30_000, 200);
  await sleep(1000);
  const announcement = announced() ?? '';
  // Ours names topic, partition, offset and log start; librdkafka's own error names the topic and
  // partition and the broker's answer, not the offset (its wording, reported as it is).
  const named = name.startsWith('zookeeper')
    ? announcement.includes(`offset ${COMMITTED} of group ${group}`) && announcement.includes('log start') && announcement.includes(`${TOPIC}-`)
    : /Topic retained \[\d\] error: .*Offset out of range/.test(announcement);
  const exited = child.hasExited() ? String(await child.exited) : 'still running';
  const ok = failed && announcement !== '' && named && deliveries().length === 0 && (name.startsWith('kcat') || exited === '3');
  return { name, ok, outcome: `${deliveries().length} records consumed, process ${/^\d+$/.test(exited) ? `exited ${exited}` : exited}${named ? '' : '; the error does not name what failed'}`, announcement: trim(announcement) };
}

function trim(line: string): string {
  // A log line of ours: the error's message when it carries one, else the line's message.
  const message = /"message":"((?:[^"\\]|\\.)*)"/.exec(line)?.[1] ?? /"msg":"((?:[^"\\]|\\.)*)"/.exec(line)?.[1] ?? line;
  return message.length > 200 ? `${message.slice(0, 200)}…` : message;
}

function firstOffsets(deliveries: readonly Delivery[]): (bigint | undefined)[] {
  const firsts: (bigint | undefined)[] = Array.from({ length: PARTITIONS }, () => undefined);
  for (const delivery of deliveries) if (firsts[delivery.partition] === undefined) firsts[delivery.partition] = delivery.offset;
  return firsts;
}

/** Offsets missing between each partition's first delivery and its last. */
function gapsFrom(deliveries: readonly Delivery[], _starts: readonly bigint[]): string[] {
  const gaps: string[] = [];
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const offsets = [...new Set(deliveries.filter((d) => d.partition === partition).map((d) => d.offset))].sort((a, b) => (a < b ? -1 : 1));
    for (let index = 1; index < offsets.length; index += 1) {
      const before = offsets[index - 1] ?? 0n;
      const after = offsets[index] ?? 0n;
      if (after !== before + 1n) gaps.push(`${TOPIC}-${partition} ${before}→${after}`);
    }
  }
  return gaps;
}
