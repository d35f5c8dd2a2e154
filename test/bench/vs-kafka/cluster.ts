/**
 * The replicated systems of the `replication` scenario: three brokers of each on this machine,
 * each broker its own process with its own data folder in the session's folder, plus the process
 * that notices a dead broker. Never both systems at once (the session stops one before the other
 * starts).
 *
 *   kafka      Apache Kafka 3.9.1 in KRaft mode: THREE combined broker+controller nodes (ids 1–3,
 *              process.roles=broker,controller, a 3-voter quorum; -Xms/-Xmx as the single-broker
 *              sessions), every node's storage formatted with the same cluster id. That is the
 *              lightest layout: three JVMs, where one controller-only node and three brokers
 *              would be four to format and start (on 2 cores, start-up is most of a smoke run),
 *              and the voters' metadata-log replication costs next to nothing (a fetch answered
 *              every ~500 ms). It is also Tributary's shape: the controller lives in one of the
 *              brokers. The quorum leader (the active controller) is read from a node's
 *              `__cluster_metadata-0/quorum-state`, so the failover measure can leave it alone.
 *   tributary  ZooKeeper 3.8 (test/services/zookeeper.ts, standalone, tickTime 500 ms) and three
 *              `tributary broker start --zookeeper <zk>/<chroot>` processes (ids 1–3) of the
 *              checkout under test. One of the brokers is also Tributary's controller (elected
 *              through ZooKeeper, Metadata's ControllerId).
 *
 * On both, the failover measure kills a partition leader that is not the controller: a plain
 * broker dies, and what is timed is detection (the session timeout), election and the new
 * leader's first commit — not a controller failover on top.
 *
 * Settings (replicationSettings): replication factor 3 and min.insync.replicas=2 as broker
 * defaults (topics are also created with them explicitly), auto topic creation off, no group
 * rebalance delay, and the same dead-broker detection on both:
 *
 *   Tributary  zookeeper.session.timeout.ms = T: ZooKeeper ends a broker's session (its ephemeral
 *              registration goes, the controller moves its leaderships) once it has heard nothing
 *              from it for T; the client (node-zookeeper-client) pings every T/3.
 *   Kafka      broker.session.timeout.ms = T: the active controller fences a broker (and moves its
 *              leaderships) once it has had no heartbeat from it for T; broker.heartbeat.interval.ms
 *              = T/3 (2 s for T = 6 s, which is also Kafka's default interval).
 *
 * T is BENCH_SESSION_TIMEOUT_MS, 6000 by default (Tributary's default; Kafka's is 9000). Flush:
 * Kafka keeps its defaults, so it never fsyncs on the write path (an acks=all write is answered
 * once every ISR member has it in its page cache); Tributary keeps its defaults too, where an
 * acks=-1 write on a replicated partition is answered only once fsynced on every ISR member.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { javaCommand, javaEnvironment } from '../../services/java.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../../services/process.js';
import type { ServiceRun } from '../../services/run-dir.js';
import { startZooKeeper } from '../../services/zookeeper.js';
import { metadataOf } from './admin.js';
import { processCpuSeconds } from './machine.js';
import { expectSuccess, KAFKA_JVM_PERFORMANCE_OPTS, runJava } from './process.js';
import { clusterId, START_TIMEOUT_MS, STOP_GRACE_MS, writeKafkaLog4j, type SystemName } from './systems.js';

export const CLUSTER_BROKER_IDS = [1, 2, 3] as const;

/** What the replication scenario says about durability on each side (console and docs/benchmarks.md). */
export const FSYNC_NOTE = 'Kafka keeps its default flush settings and does not fsync on the write path (acks=all is answered once every in-sync replica has the record in its page cache); ' +
  'Tributary answers acks=-1 only once the record is fsynced on every in-sync replica';

export interface ClusterBroker {
  readonly id: number;
  readonly port: number;
  readonly bootstrap: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** The current process (a restart makes a new one). */
  readonly daemon: Daemon;
  /** CPU seconds (user + system) the broker process has used; NaN once it is gone. */
  cpuSeconds(): number;
  /** SIGKILL to the broker's process group; resolves once the process has ended. */
  kill(): Promise<void>;
  /** Starts a killed broker again (same id, port, settings and data); resolves once it runs (the cluster's `waitForAll` says when it is back in). */
  restart(): void;
  hasExited(): boolean;
}

export interface RunningCluster {
  readonly name: SystemName;
  /** Every broker, `host:port,host:port,host:port` (kcat -b, bootstrap.servers). */
  readonly bootstrap: string;
  readonly brokers: readonly ClusterBroker[];
  /** What notices a dead broker, for the console: "a KRaft quorum of the 3 nodes", "ZooKeeper …". */
  readonly coordinator: string;
  /** Seconds from the first launch until every broker listed all three. */
  readonly startSeconds: number;
  /** CPU seconds of the three brokers together (NaN when one is gone). */
  cpuSeconds(): number;
  /**
   * The broker that is also the cluster's controller: Tributary's from Metadata's ControllerId,
   * Kafka's the KRaft quorum leader (Metadata names a random broker there); undefined when unknown.
   */
  controllerBroker(): Promise<number | undefined>;
  /** Until every broker's Metadata lists all three (after a restart). */
  waitForAll(): Promise<void>;
  /** Ends every process: Tributary's with SIGTERM (then SIGKILL after the grace period), Kafka's with SIGKILL. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  readonly run: ServiceRun;
  /** The session's folder; each node's data go under it. */
  readonly dir: string;
  readonly heapMb: number;
  readonly kafkaServerJars: string;
  readonly tributaryDir: string;
  readonly sessionTimeoutMs: number;
  readonly cpuProfileDir?: string | undefined;
}

/** The settings every broker of the system gets (the report prints them). */
export function replicationSettings(name: SystemName, sessionTimeoutMs: number): Record<string, string> {
  const common = { 'default.replication.factor': '3', 'min.insync.replicas': '2', 'auto.create.topics.enable': 'false', 'group.initial.rebalance.delay.ms': '0' };
  if (name === 'kafka') {
    return {
      ...common,
      'broker.session.timeout.ms': String(sessionTimeoutMs),
      'broker.heartbeat.interval.ms': String(Math.round(sessionTimeoutMs / 3)),
      'offsets.topic.replication.factor': '3',
      'offsets.topic.num.partitions': '1',
      'transaction.state.log.replication.factor': '3',
      'transaction.state.log.min.isr': '2',
    };
  }
  return { ...common, 'zookeeper.session.timeout.ms': String(sessionTimeoutMs) };
}

export function startCluster(name: SystemName, options: ClusterOptions): Promise<RunningCluster> {
  return name === 'kafka' ? startKafkaCluster(options) : startTributaryCluster(options);
}

/** A broker whose process `launch` starts (again, on restart; `generation` names each start). */
function clusterBroker(id: number, port: number, dataDir: string, launch: (generation: number) => Daemon): ClusterBroker {
  let generation = 1;
  let daemon = launch(generation);
  return {
    id,
    port,
    bootstrap: `${LOOPBACK}:${port}`,
    dataDir,
    get logFile() {
      return daemon.logFile;
    },
    get daemon() {
      return daemon;
    },
    cpuSeconds: () => processCpuSeconds(daemon.pid),
    kill: () => killDaemon(daemon),
    restart: () => {
      if (!daemon.hasExited()) throw new Error(`broker ${id} is running; kill it before restarting it`);
      generation += 1;
      daemon = launch(generation);
    },
    hasExited: () => daemon.hasExited(),
  };
}

/**
 * SIGKILL to the daemon's process group; resolves once the process has ended. Polls rather than
 * only awaiting `exited`: daemons are unref'd, so nothing else may keep the event loop alive.
 */
async function killDaemon(daemon: Daemon): Promise<void> {
  daemon.signal('SIGKILL');
  while (!daemon.hasExited()) await sleep(10);
}

/** Ready = a broker's Metadata lists every broker of `ids` (KRaft lists a broker once it is unfenced). */
async function waitForBrokers(port: number, ids: readonly number[], daemons: readonly Daemon[], what: string): Promise<void> {
  let listed: number[] = [];
  try {
    await waitUntil(async () => {
      listed = (await metadataOf(port, [], 2000).catch(() => ({ brokers: [] }))).brokers.map((broker) => broker.nodeId);
      return ids.every((id) => listed.includes(id));
    }, { what: `${what}: brokers ${ids.join(', ')} listed by ${LOOPBACK}:${port}`, timeoutMs: START_TIMEOUT_MS, intervalMs: 500, daemons });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n(last listed: ${listed.join(', ') || 'none'})`);
  }
}

/** Until every broker's Metadata lists all of them (each has seen the others register, a restarted one included). */
async function waitForEveryBroker(brokers: readonly ClusterBroker[], what: string): Promise<void> {
  const ids = brokers.map((broker) => broker.id);
  for (const broker of brokers) await waitForBrokers(broker.port, ids, brokers.map((b) => b.daemon), what);
}

function sumCpu(brokers: readonly ClusterBroker[]): number {
  return brokers.reduce((sum, broker) => sum + broker.cpuSeconds(), 0);
}

// ---- Apache Kafka: 3 combined broker+controller nodes ---------------------------------------

/** The quorum leader as the newest `quorum-state` among the nodes' metadata logs says (undefined when none names one). */
function kraftLeader(dataDirs: readonly string[]): number | undefined {
  let best: { leaderId: number; leaderEpoch: number } | undefined;
  for (const dataDir of dataDirs) {
    try {
      const state = JSON.parse(readFileSync(join(dataDir, '__cluster_metadata-0', 'quorum-state'), 'utf8')) as { leaderId?: number; leaderEpoch?: number };
      if (typeof state.leaderId !== 'number' || state.leaderId < 0 || typeof state.leaderEpoch !== 'number') continue;
      if (best === undefined || state.leaderEpoch > best.leaderEpoch) best = { leaderId: state.leaderId, leaderEpoch: state.leaderEpoch };
    } catch {
      // not written yet, or being rewritten: the other nodes tell
    }
  }
  return best?.leaderId;
}

async function startKafkaCluster(options: ClusterOptions): Promise<RunningCluster> {
  const dir = join(options.dir, 'kafka-cluster');
  mkdirSync(dir, { recursive: true });
  const id = clusterId();
  const ports = new Map<number, { readonly broker: number; readonly controller: number }>();
  for (const node of CLUSTER_BROKER_IDS) ports.set(node, { broker: await freePort(), controller: await freePort() });
  const voters = CLUSTER_BROKER_IDS.map((node) => `${node}@${LOOPBACK}:${String(ports.get(node)?.controller)}`).join(',');
  const settings = replicationSettings('kafka', options.sessionTimeoutMs);
  // The controller's fencing and election decisions are the failover's first half: keep them in the logs.
  const log4j = writeKafkaLog4j(dir, ['org.apache.kafka.controller.BrokerHeartbeatManager', 'org.apache.kafka.controller.ReplicationControlManager']);
  const nodes = CLUSTER_BROKER_IDS.map((nodeId) => {
    const nodeDir = join(dir, `node-${nodeId}`);
    const dataDir = join(nodeDir, 'data');
    mkdirSync(dataDir, { recursive: true });
    const port = ports.get(nodeId) ?? { broker: 0, controller: 0 };
    const nodeSettings: Record<string, string> = {
      'process.roles': 'broker,controller',
      'node.id': String(nodeId),
      'controller.quorum.voters': voters,
      listeners: `PLAINTEXT://${LOOPBACK}:${port.broker},CONTROLLER://${LOOPBACK}:${port.controller}`,
      'advertised.listeners': `PLAINTEXT://${LOOPBACK}:${port.broker}`,
      'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      'controller.listener.names': 'CONTROLLER',
      'inter.broker.listener.name': 'PLAINTEXT',
      'log.dirs': dataDir,
      'num.partitions': '1',
      ...settings,
    };
    const properties = join(nodeDir, 'server.properties');
    writeFileSync(properties, `${Object.entries(nodeSettings).map(([k, v]) => `${k}=${v}`).join('\n')}\n`);
    return { nodeId, dir: nodeDir, dataDir, properties, port: port.broker };
  });
  const launchedAt = performance.now();
  await Promise.all(nodes.map(async (node) => {
    expectSuccess(`kafka-storage format node ${node.nodeId}`, await runJava('kafka.tools.StorageTool', ['format', '-t', id, '-c', node.properties], {
      run: options.run, label: `kafka-storage format node ${node.nodeId}`, timeoutMs: 120_000, classpathDir: options.kafkaServerJars, heap: '256m', log4jFile: log4j,
    }));
  }));
  const formatSeconds = (performance.now() - launchedAt) / 1000;
  const heap = `${options.heapMb}m`;
  const brokers = nodes.map((node) => clusterBroker(node.nodeId, node.port, node.dataDir, (generation) => startDaemon({
    run: options.run,
    name: `kafka-node-${node.nodeId}-${node.port}-${generation}`,
    command: javaCommand(),
    args: [`-Xms${heap}`, `-Xmx${heap}`, ...KAFKA_JVM_PERFORMANCE_OPTS, `-Dlog4j.configuration=file:${log4j}`, '-cp', `${options.kafkaServerJars}/*`, 'kafka.Kafka', node.properties],
    logFile: join(node.dir, 'kafka.log'),
    cwd: node.dir,
    env: javaEnvironment(),
  })));
  // Killed, not stopped: the data are thrown away, and a clean stop of a quorum that has lost a
  // voter waits on controlled shutdowns for seconds. (The single-broker sessions time clean stops.)
  const stopAll = async (): Promise<void> => {
    await Promise.all(brokers.map((broker) => killDaemon(broker.daemon)));
  };
  const waitForAll = (): Promise<void> => waitForEveryBroker(brokers, 'Apache Kafka cluster');
  try {
    await waitForAll();
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    name: 'kafka',
    bootstrap: brokers.map((broker) => broker.bootstrap).join(','),
    brokers,
    coordinator: `a KRaft quorum of the 3 nodes (each broker+controller; storage format ${formatSeconds.toFixed(1)} s of the start-up)`,
    startSeconds: (performance.now() - launchedAt) / 1000,
    cpuSeconds: () => sumCpu(brokers),
    controllerBroker: () => Promise.resolve(kraftLeader(brokers.filter((broker) => !broker.hasExited()).map((broker) => broker.dataDir))),
    waitForAll,
    stop: stopAll,
  };
}

// ---- Tributary: ZooKeeper + 3 brokers -------------------------------------------------------

async function startTributaryCluster(options: ClusterOptions): Promise<RunningCluster> {
  const dir = join(options.dir, 'tributary-cluster');
  mkdirSync(dir, { recursive: true });
  const launchedAt = performance.now();
  const zookeeper = await startZooKeeper(options.run);
  const chroot = `${zookeeper.connectString}/tributary-bench`;
  const settings = replicationSettings('tributary', options.sessionTimeoutMs);
  const nodeFlags = [`--max-old-space-size=${options.heapMb}`];
  if (options.cpuProfileDir !== undefined) {
    mkdirSync(options.cpuProfileDir, { recursive: true });
    nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`);
  }
  const brokers: ClusterBroker[] = [];
  for (const id of CLUSTER_BROKER_IDS) {
    const port = await freePort();
    const brokerDir = join(dir, `broker-${id}`);
    const dataDir = join(brokerDir, 'data');
    mkdirSync(dataDir, { recursive: true });
    brokers.push(clusterBroker(id, port, dataDir, (generation) => startDaemon({
      run: options.run,
      name: `tributary-broker-${id}-${port}-${generation}`,
      command: process.execPath,
      args: [...nodeFlags, join(options.tributaryDir, 'bin', 'tributary.js'), 'broker', 'start', '--id', String(id), '--listen', `${LOOPBACK}:${port}`,
        '--data-dir', dataDir, '--zookeeper', chroot, ...Object.entries(settings).flatMap(([k, v]) => ['--set', `${k}=${v}`])],
      logFile: join(brokerDir, 'broker.log'),
      cwd: options.tributaryDir,
    })));
  }
  const stopAll = async (): Promise<void> => {
    await Promise.all(brokers.map((broker) => broker.daemon.stop(STOP_GRACE_MS)));
    await zookeeper.stop();
  };
  const waitForAll = (): Promise<void> => waitForEveryBroker(brokers, 'Tributary cluster');
  try {
    await waitForAll();
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    name: 'tributary',
    bootstrap: brokers.map((broker) => broker.bootstrap).join(','),
    brokers,
    coordinator: `ZooKeeper ${zookeeper.connectString} (standalone, tickTime 500 ms); Tributary's controller is one of the brokers`,
    startSeconds: (performance.now() - launchedAt) / 1000,
    cpuSeconds: () => sumCpu(brokers),
    controllerBroker: async () => {
      for (const broker of brokers) {
        if (broker.hasExited()) continue;
        const id = await metadataOf(broker.port).then((response) => response.controllerId, () => -1);
        if (id >= 0) return id;
      }
      return undefined;
    },
    waitForAll,
    stop: stopAll,
  };
}
