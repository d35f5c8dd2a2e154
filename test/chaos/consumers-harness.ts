/**
 * What the consumer fault runs (consumers-scenarios.ts) share: a broker process registered in a
 * ZooKeeper chroot of its own, a producer that keeps writing unique values and remembers where
 * each was acknowledged, group members as OS processes (the paper's ZooKeeper consumer through
 * test/support/group-member.ts, kafkajs through test/support/kafkajs-group-member.ts, kcat -G),
 * and a watcher of the group's committed offsets in the offset registry (both kinds of group keep
 * them at /consumers/<group>/offsets/<topic>/<partition>): an offset that goes backwards, or
 * beyond the log end, is a violation the moment it is seen.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { Producer } from '../../src/client/producer.js';
import { SimpleConsumer } from '../../src/client/simple-consumer.js';
import { createLogger } from '../../src/common/logger.js';
import { decodeCommittedOffset } from '../../src/coordination/group-registry.js';
import { brokerIdsPath, offsetPath } from '../../src/coordination/paths.js';
import { ZooKeeperStore } from '../../src/coordination/zookeeper-store.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../support/brokers.js';
import { startDaemon, type Daemon } from '../services/process.js';
import { residentBytes } from '../support/process-memory.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const silent = createLogger({ name: 'chaos-consumers', level: 'silent' });

export interface Cluster {
  readonly broker: BrokerProcess;
  /** ZooKeeper connect string with the scenario's chroot. */
  readonly zookeeper: string;
  readonly zk: ZooKeeperStore;
  readonly cluster: ClusterClient;
  readonly simple: SimpleConsumer;
  /** The broker's peak RSS sampled so far. */
  peakRss(): number;
  close(): Promise<void>;
}

/** One broker on ZooKeeper (a chroot per scenario), with a fast retention check and short group timeouts. */
export async function startCluster(run: ServiceRun, zookeeperRoot: string, name: string, settings: Record<string, string> = {}): Promise<Cluster> {
  const zookeeper = `${zookeeperRoot}/chaos-consumers-${name}-${process.pid}-${Date.now()}`;
  const broker = await startBrokerProcess({
    run,
    id: 1,
    zookeeper,
    settings: {
      'zookeeper.session.timeout.ms': '4000',
      'group.initial.rebalance.delay.ms': '0',
      'group.min.session.timeout.ms': '1000',
      'log.retention.check.interval.ms': '500',
      ...settings,
    },
  });
  const zk = await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs: 10_000 });
  const deadline = Date.now() + 60_000;
  while (((await zk.children(brokerIdsPath())) ?? []).length === 0) {
    if (Date.now() > deadline) throw new Error('the broker did not register in ZooKeeper within 60 s');
    await sleep(100);
  }
  const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, residentBytes(broker.daemon.pid))), 500);
  return {
    broker,
    zookeeper,
    zk,
    cluster,
    simple: new SimpleConsumer(cluster),
    peakRss: () => peak,
    async close() {
      clearInterval(timer);
      cluster.close();
      await zk.close().catch(() => undefined);
      await broker.stop().catch(() => undefined);
    },
  };
}

/** Creates a topic with per-topic settings (segment.bytes, retention.bytes, …) through kafkajs' admin. */
export async function createTopic(bootstrap: string, topic: string, partitions: number, config: Record<string, string> = {}): Promise<void> {
  const admin = new Kafka({ clientId: 'chaos-consumers-admin', brokers: [bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: partitions, configEntries: Object.entries(config).map(([name, value]) => ({ name, value })) }],
      waitForLeaders: true,
    });
    if (!created) throw new Error(`topic ${topic} existed already`);
  } finally {
    await admin.disconnect();
  }
}

/** `${partition}/${offset}` → value of every acknowledged record. */
export type Acknowledged = Map<string, string>;

export interface ContinuousProducer {
  readonly acknowledged: Acknowledged;
  /** Records acknowledged so far. */
  count(): number;
  stop(): Promise<void>;
}

/**
 * Sends `<tag>-<n>` values round-robin over the partitions in batches of `batch` every
 * `intervalMs` (acks=−1), until stopped. `padding` bytes make each value larger (segments fill
 * sooner). A failed send is not acknowledged and not expected.
 */
export async function produceContinuously(bootstrap: string, topic: string, partitions: number, options: { readonly tag: string; readonly batch: number; readonly intervalMs: number; readonly padding?: number }): Promise<ContinuousProducer> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1, lingerMs: 5, logger: silent });
  const acknowledged: Acknowledged = new Map();
  const pad = 'x'.repeat(options.padding ?? 0);
  let n = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const values = Array.from({ length: options.batch }, () => `${options.tag}-${(n += 1)}${pad === '' ? '' : `-${pad}`}`);
      try {
        const placed = await producer.send(topic, values.map((value, index) => ({ partition: (n + index) % partitions, key: null, value: Buffer.from(value) })));
        placed.forEach((metadata, index) => acknowledged.set(`${metadata.partition}/${metadata.offset}`, values[index] ?? ''));
      } catch {
        // Not acknowledged: not expected to be consumed.
      }
      if (options.intervalMs > 0) await sleep(options.intervalMs);
    }
  })();
  return {
    acknowledged,
    count: () => acknowledged.size,
    async stop() {
      stopped = true;
      await loop;
      await producer.close().catch(() => undefined);
    },
  };
}

/** Sends `count` records as fast as the broker takes them (batches of 500), for a backlog. */
export async function produceBacklog(bootstrap: string, topic: string, partitions: number, count: number, tag: string, padding: number, into: Acknowledged): Promise<void> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1, lingerMs: 5, logger: silent });
  const pad = 'x'.repeat(padding);
  try {
    for (let first = 0; first < count; first += 500) {
      const values = Array.from({ length: Math.min(500, count - first) }, (_, i) => `${tag}-${first + i}-${pad}`);
      const placed = await producer.send(topic, values.map((value, index) => ({ partition: (first + index) % partitions, key: null, value: Buffer.from(value) })));
      placed.forEach((metadata, index) => into.set(`${metadata.partition}/${metadata.offset}`, values[index] ?? ''));
    }
  } finally {
    await producer.close();
  }
}

// ---------------------------------------------------------------- members

export type MemberKind = 'zookeeper' | 'kafkajs';

export interface Delivery {
  readonly partition: number;
  readonly offset: bigint;
  readonly value: string | null;
  /** kafkajs: the generation it was received in (−1 for the ZooKeeper consumer). */
  readonly generation: number;
}

/**
 * A member process. Its stdout and stderr go to a log file, not a pipe: the members print each
 * record with a synchronous write, which on a full non-blocking pipe fails with EAGAIN and ends
 * the process (seen here when the runner was busy: members died that were never killed).
 */
export interface MemberProcess {
  readonly pid: number;
  readonly logFile: string;
  readonly exited: Promise<number | string>;
  hasExited(): boolean;
  /** SIGKILL, and waits until it is gone. */
  kill(): Promise<void>;
  /** SIGTERM, SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** Lines printed so far (a partial last line held back). */
  lines(): string[];
  /** The lines that are not JSON records: its log. */
  stderr(): string;
}

function memberProcess(daemon: Daemon): MemberProcess {
  const lines: string[] = [];
  let partial = '';
  let fd: number | undefined;
  let closed = false;
  const buffer = Buffer.alloc(1 << 20);
  const readMore = (): void => {
    if (closed) return;
    fd ??= openSync(daemon.logFile, 'r');
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read <= 0) break;
      const parts = (partial + buffer.toString('utf8', 0, read)).split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts);
    }
  };
  return {
    pid: daemon.pid,
    logFile: daemon.logFile,
    exited: daemon.exited,
    hasExited: () => daemon.hasExited(),
    async kill() {
      daemon.signal('SIGKILL');
      await daemon.exited;
    },
    async stop(graceMs = 5_000) {
      await daemon.stop(graceMs);
      readMore();
      closed = true;
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
    lines() {
      readMore();
      return lines;
    },
    stderr() {
      return this.lines()
        .filter((line) => !line.startsWith('{"partition"') && !line.startsWith('{"event"'))
        .join('\n');
    },
  };
}

export interface Member {
  readonly kind: MemberKind;
  readonly name: string;
  readonly process: MemberProcess;
  /** ZooKeeper consumer: its consumer id (from its log) once registered. */
  consumerId(): string | undefined;
  /** kafkajs: its member id and partitions of its latest assignment. */
  assignment(): Assignment | undefined;
  /** kafkajs: every assignment it received, in order. */
  assignments(): Assignment[];
  /** Every record it printed, in order. */
  deliveries(): Delivery[];
}

export interface Assignment {
  readonly generation: number;
  readonly memberId: string;
  readonly partitions: readonly number[];
}

export interface MemberOptions {
  readonly run: ServiceRun;
  readonly kind: MemberKind;
  readonly name: string;
  readonly zookeeper: string;
  readonly bootstrap: string;
  readonly group: string;
  readonly topic: string;
  readonly sessionTimeoutMs: number;
  /** ZooKeeper consumer: smallest | largest | none. */
  readonly reset?: string;
}

export function startMember(options: MemberOptions): Member {
  const args =
    options.kind === 'zookeeper'
      ? [
          '--import', 'tsx', join(root, 'test', 'support', 'group-member.ts'),
          '--zookeeper', options.zookeeper, '--bootstrap', options.bootstrap, '--group', options.group, '--topic', options.topic,
          '--streams', '1', '--reset', options.reset ?? 'smallest', '--session-timeout', String(options.sessionTimeoutMs),
          '--commit-interval', '500', '--rebalance-backoff', '500', '--rebalance-retries', '60',
        ]
      : [
          '--import', 'tsx', join(root, 'test', 'support', 'kafkajs-group-member.ts'),
          '--bootstrap', options.bootstrap, '--group', options.group, '--topic', options.topic, '--client-id', options.name,
          '--session-timeout', String(options.sessionTimeoutMs), '--heartbeat-interval', String(Math.max(100, Math.floor(options.sessionTimeoutMs / 10))), '--max-wait', '200',
        ];
  const child = memberProcess(startDaemon({ run: options.run, name: options.name, command: process.execPath, args, cwd: root, logFile: join(options.run.dir, `${options.name}.log`) }));
  let parsed = 0;
  const deliveries: Delivery[] = [];
  const assignments: Assignment[] = [];
  const parse = (): void => {
    const lines = child.lines();
    for (; parsed < lines.length; parsed += 1) {
      const line = lines[parsed] ?? '';
      if (!line.startsWith('{"partition"') && !line.startsWith('{"event"')) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (options.kind === 'zookeeper') {
        deliveries.push({ partition: Number(entry['partition']), offset: BigInt(String(entry['offset'])), value: (entry['value'] as string | null) ?? null, generation: -1 });
      } else if (entry['event'] === 'record') {
        deliveries.push({ partition: Number(entry['partition']), offset: BigInt(String(entry['offset'])), value: (entry['value'] as string | null) ?? null, generation: Number(entry['generation']) });
      } else if (entry['event'] === 'assignment') {
        assignments.push({ generation: Number(entry['generation']), memberId: String(entry['memberId']), partitions: entry['partitions'] as number[] });
      }
    }
  };
  let consumerId: string | undefined;
  return {
    kind: options.kind,
    name: options.name,
    process: child,
    consumerId() {
      consumerId ??= /"consumerId":"([^"]+)"/.exec(child.stderr())?.[1];
      return consumerId;
    },
    assignment() {
      parse();
      return assignments.at(-1);
    },
    assignments() {
      parse();
      return assignments;
    },
    deliveries() {
      parse();
      return deliveries;
    },
  };
}

// ---------------------------------------------------------------- committed offsets

export interface OffsetWatcher {
  /** The last committed offset seen per partition. */
  readonly latest: Map<number, bigint>;
  /** Reads now (between polls). */
  read(): Promise<Map<number, bigint>>;
  readonly violations: string[];
  /** Reads made. */
  polls(): number;
  stop(): Promise<void>;
}

/**
 * Polls the group's committed offsets every `intervalMs`, each poll followed by the log end of
 * the partitions: an offset below one seen before, or above the log end read after it, is a
 * violation (the log end only grows, so reading it second can only make the check kinder).
 */
export function watchCommittedOffsets(zk: ZooKeeperStore, simple: SimpleConsumer, group: string, topic: string, partitions: number, intervalMs = 200): OffsetWatcher {
  const latest = new Map<number, bigint>();
  const violations: string[] = [];
  let polls = 0;
  let stopped = false;
  const read = async (): Promise<Map<number, bigint>> => {
    const seen = new Map<number, bigint>();
    for (let partition = 0; partition < partitions; partition += 1) {
      const node = await zk.get(offsetPath(group, topic, partition));
      const value = node === undefined ? undefined : decodeCommittedOffset(node.data);
      if (value !== undefined) seen.set(partition, value.offset);
    }
    return seen;
  };
  const check = async (): Promise<void> => {
    const seen = await read();
    polls += 1;
    for (const [partition, offset] of seen) {
      const before = latest.get(partition);
      if (before !== undefined && offset < before) violations.push(`${group}: committed offset of ${topic}-${partition} went back from ${before} to ${offset}`);
      latest.set(partition, before === undefined || offset > before ? offset : before);
      const end = await simple.listOffset(topic, partition, 'latest');
      if (offset > end) violations.push(`${group}: committed offset ${offset} of ${topic}-${partition} is beyond the log end ${end}`);
    }
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        await check();
      } catch {
        // ZooKeeper or the broker busy: the next poll reads again.
      }
      await sleep(intervalMs);
    }
  })();
  return {
    latest,
    read,
    violations,
    polls: () => polls,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

// ---------------------------------------------------------------- checks

export interface ConsumedTally {
  readonly deliveries: number;
  readonly unique: number;
  readonly duplicates: number;
  /** Acknowledged records nobody delivered. */
  readonly missing: string[];
  /** Deliveries whose value differs from the one acknowledged at that position. */
  readonly wrong: string[];
}

export function tallyConsumed(acknowledged: Acknowledged, deliveries: readonly Delivery[]): ConsumedTally {
  const seen = new Map<string, string | null>();
  const wrong: string[] = [];
  for (const delivery of deliveries) {
    const position = `${delivery.partition}/${delivery.offset}`;
    const expected = acknowledged.get(position);
    if (expected !== undefined && delivery.value !== expected) wrong.push(`${position} delivered "${delivery.value}", acknowledged "${expected}"`);
    seen.set(position, delivery.value);
  }
  const missing = [...acknowledged.keys()].filter((position) => !seen.has(position));
  return { deliveries: deliveries.length, unique: seen.size, duplicates: deliveries.length - seen.size, missing, wrong };
}

/** Waits until `probe` holds (polled every `intervalMs`); false after `timeoutMs`. */
export async function eventually(probe: () => Promise<boolean> | boolean, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
}
