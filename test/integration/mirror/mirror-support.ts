/**
 * Shared parts of the mirror integration tests: clusters of broker processes, each in its own
 * ZooKeeper chroot of the real ZooKeeper; `tributary mirror start` as a daemon; reading a topic
 * back whole; scraping /metrics.
 */
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../../services/process.js';
import type { ServiceRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { runTributary } from '../../support/cli.js';
import { zookeeperAddress } from '../services.js';

const root = join(import.meta.dirname, '..', '..', '..');

export interface TestCluster {
  readonly name: string;
  /** `host:port/chroot` of the cluster. */
  readonly zookeeper: string;
  readonly brokers: BrokerProcess[];
  readonly bootstrap: string;
  readonly store: ZooKeeperStore;
  stop(): Promise<void>;
}

/** A cluster of `brokers` broker processes in a fresh chroot; resolves once all are registered. */
export async function startCluster(run: ServiceRun, name: string, options: { brokers?: number; settings?: Record<string, string> } = {}): Promise<TestCluster> {
  const zookeeper = chroot(name);
  const brokers: BrokerProcess[] = [];
  const settings = { 'zookeeper.session.timeout.ms': '4000', ...options.settings };
  for (let id = 1; id <= (options.brokers ?? 1); id += 1) {
    brokers.push(await startBrokerProcess({ run, id, zookeeper, settings }));
  }
  const store = await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs: 10_000 });
  for (;;) {
    if (((await store.children('/brokers/ids')) ?? []).length === brokers.length) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    name,
    zookeeper,
    brokers,
    bootstrap: brokers[0]?.bootstrap ?? '',
    store,
    async stop() {
      await Promise.all(brokers.map((broker) => broker.stop().catch(() => undefined)));
      await store.close();
    },
  };
}

/** A fresh chroot for a cluster whose brokers the test starts itself. */
export function chroot(name: string): string {
  return `${zookeeperAddress().connectString}/mirror-test-${process.pid}-${Date.now()}-${name}`;
}

export interface EmbeddingBroker {
  readonly daemon: Daemon;
  readonly bootstrap: string;
}

/** `tributary broker start … --mirror-config FILE` as a daemon; resolves once it accepts connections. */
export async function startBrokerWithMirror(
  run: ServiceRun,
  options: { id: number; zookeeper: string; mirrorConfig: string; port?: number; settings?: Readonly<Record<string, string>> },
): Promise<EmbeddingBroker> {
  const port = options.port ?? (await freePort());
  const dataDir = join(run.dir, `broker-embedding-${options.id}-${port}`);
  const name = `broker-embedding-${process.pid}-${port}`;
  const daemon = startDaemon({
    run,
    name,
    command: process.execPath,
    args: [
      join(root, 'bin', 'tributary.js'), 'broker', 'start', '--id', String(options.id), '--listen', `${LOOPBACK}:${port}`, '--data-dir', dataDir,
      '--zookeeper', options.zookeeper, '--set', 'zookeeper.session.timeout.ms=4000', '--mirror-config', options.mirrorConfig,
      ...Object.entries(options.settings ?? {}).flatMap(([key, value]) => ['--set', `${key}=${value}`]),
    ],
    logFile: join(run.dir, `${name}.log`),
    cwd: root,
  });
  await waitUntil(() => portOpen(port), { what: `broker ${options.id} with an embedded mirror on port ${port}`, timeoutMs: 60_000, daemons: [daemon] });
  return { daemon, bootstrap: `${LOOPBACK}:${port}` };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: LOOPBACK, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function createTopic(cluster: TestCluster, topic: string, partitions: number): Promise<void> {
  const result = await runTributary(['topics', 'create', '--bootstrap-server', cluster.bootstrap, '--topic', topic, '--partitions', String(partitions)]);
  if (result.status !== 0) throw new Error(`creating ${topic} on ${cluster.name} failed: ${result.output}`);
}

export interface MirrorProcess {
  readonly daemon: Daemon;
  /** `host:port` of its /metrics. */
  readonly metrics: string;
}

let mirrors = 0;

/** `tributary mirror start <args> --metrics <free port>` as a daemon of the run (its log in the run folder). */
export async function startMirrorProcess(run: ServiceRun, args: readonly string[]): Promise<MirrorProcess> {
  mirrors += 1;
  const metrics = `${LOOPBACK}:${await freePort()}`;
  const name = `mirror-${process.pid}-${Date.now()}-${mirrors}`;
  const daemon = startDaemon({
    run,
    name,
    command: process.execPath,
    args: [join(root, 'bin', 'tributary.js'), 'mirror', 'start', ...args, '--metrics', metrics],
    logFile: join(run.dir, `${name}.log`),
    cwd: root,
  });
  return { daemon, metrics };
}

/** Every record of every partition of `topic`, from the log start to the current end. */
export async function readTopic(bootstrap: string, topic: string): Promise<Map<number, KafkaRecord[]>> {
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], allowAutoTopicCreation: false });
  try {
    const consumer = new SimpleConsumer(cluster);
    const result = new Map<number, KafkaRecord[]>();
    for (const partition of await cluster.partitionsFor(topic)) {
      const records: KafkaRecord[] = [];
      const end = await consumer.listOffset(topic, partition, 'latest');
      for (let offset = await consumer.listOffset(topic, partition, 'earliest'); offset < end; ) {
        const fetched = await consumer.fetch(topic, partition, offset, { maxBytes: 4 * 1024 * 1024 });
        records.push(...fetched.records.filter((record) => record.offset < end));
        offset = fetched.nextOffset;
      }
      result.set(partition, records);
    }
    return result;
  } finally {
    cluster.close();
  }
}

/** Whether the cluster has the topic (without creating it). */
export async function topicExists(bootstrap: string, topic: string): Promise<boolean> {
  const result = await runTributary(['topics', 'list', '--bootstrap-server', bootstrap]);
  return result.stdout.split('\n').includes(topic);
}

/** The value of one sample of a Prometheus text exposition, e.g. `tributary_mirror_lag_records{source="dc1",…}`. */
export async function scrapeMetric(address: string, name: string, labels: Readonly<Record<string, string>>): Promise<number | undefined> {
  let text: string;
  try {
    text = await (await fetch(`http://${address}/metrics`)).text();
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.indexOf('}');
    const present = Object.entries(labels).every(([key, value]) => line.slice(name.length, close).includes(`${key}="${value}"`));
    if (present) return Number(line.slice(close + 1).trim());
  }
  return undefined;
}

export function header(record: KafkaRecord, key: string): string | undefined {
  return record.headers.find((h) => h.key === key)?.value?.toString('utf8');
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Percentile (nearest rank) of a non-empty list. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}
