/**
 * The harness of the replication acceptance tests and the chaos runner (replication.md §6): one
 * ZooKeeper chroot and N real `tributary broker start` processes, the faults (SIGKILL, SIGTERM,
 * SIGSTOP/SIGCONT, restart on the same port and data dir, a wiped data dir), the views a test
 * waits on (leader, leader epoch, replicas and ISR from Metadata v8), and the workload whose
 * history the checker (replication-history.ts) judges:
 *
 * - a producer (our Producer, acks=-1 by default, idempotent when asked) sending unique integer
 *   values at a steady rate, one value per send, recording every outcome;
 * - consumers (our SimpleConsumer) polling each partition continuously, recording every record
 *   and every deliberate move of their position;
 * - a sampler asking every live broker for Metadata every ~250 ms (leader, epoch) for I7;
 * - after healing, `readAll`: each partition from its log start to its high watermark.
 *
 * Brokers are daemons of the given service run, so the run's guardian and the global teardown
 * stop them even when a test dies before its `afterAll`; `close()` stops everything sooner.
 *
 *   const cluster = await ReplicatedCluster.start({ run: openRun(services().runDir), zookeeper: zookeeperAddress().connectString });
 *   afterAll(() => cluster.close());
 *   await cluster.createTopic('events', { partitions: 3, replicationFactor: 3 });
 *   const workload = await cluster.startWorkload({ topic: 'events', idempotent: true });
 *   const sampler = cluster.startMetadataSampler('events');
 *   … faults …
 *   await workload.stopProducing();
 *   const finalRead = await cluster.readAll('events');
 *   await workload.waitForConsumers(finalRead);
 *   const result = checkReplicationHistory(cluster.history('events', finalRead));
 *   expect(result.violations, formatReport(result)).toEqual([]);
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../src/common/errors.js';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { KafkaConnection } from '../../src/client/connection.js';
import { Producer } from '../../src/client/producer.js';
import { SimpleConsumer } from '../../src/client/simple-consumer.js';
import { ZooKeeperStore } from '../../src/coordination/zookeeper-store.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { MetadataApi, type MetadataResponse } from '../../src/protocol/apis/metadata.js';
import { kafkaErrorName } from '../../src/protocol/kafka-errors.js';
import { LOOPBACK } from '../services/network.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from './brokers.js';
import { loseUnsyncedWrites, type PowerLossReport } from './power-loss.js';
import { compareReplicas, type ReplicaComparison } from './replica-files.js';
import {
  UNREADABLE_VALUE,
  type ConsumerEvent,
  type FinalPartition,
  type FinalRecord,
  type MetadataSample,
  type ReplicationHistory,
  type SendOutcome,
  type SendRecord,
} from './replication-history.js';

/** Settings every broker of the harness gets: ZooKeeper notices a dead broker after 6 s (§6). */
export const BASE_TEST_SETTINGS: Readonly<Record<string, string>> = {
  'zookeeper.session.timeout.ms': '6000',
};

/**
 * The replication settings of the acceptance tests (§6): lag 10 s, min ISR 2, RF 3. Only a broker
 * with replication knows them (the broker refuses unknown settings).
 */
export const REPLICATION_TEST_SETTINGS: Readonly<Record<string, string>> = {
  'replica.lag.time.max.ms': '10000',
  'min.insync.replicas': '2',
  'default.replication.factor': '3',
};

export interface ReplicatedClusterOptions {
  /** The service run the broker processes belong to, e.g. `openRun(services().runDir)`. */
  readonly run: ServiceRun;
  /** ZooKeeper's `host:port` list (no chroot): the cluster makes its own chroot under it. */
  readonly zookeeper: string;
  /** How many brokers; default 3, with ids `firstBrokerId` … (default 1). */
  readonly brokers?: number;
  readonly firstBrokerId?: number;
  /** Settings for every broker, applied over the defaults. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Whether to pass REPLICATION_TEST_SETTINGS; default true. False for a broker without replication. */
  readonly replicationDefaults?: boolean;
  /** Part of the ZooKeeper chroot's name, to find a test's cluster in logs; default "replicated". */
  readonly name?: string;
  /** Brokers journal their fsyncs, so `loseUnsyncedWrites` can simulate a power loss; default false. */
  readonly fsyncJournal?: boolean;
}

/** A partition as one broker's Metadata v8 answer describes it. */
export interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
  /** −1 when the partition has no leader. */
  readonly leader: number;
  /** −1 from a broker without leader epochs. */
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offlineReplicas: readonly number[];
  /** The broker that answered. */
  readonly observedBy: number;
}

/** What the harness did to a broker last: running, paused (SIGSTOP), or not running. */
export type BrokerState = 'running' | 'paused' | 'stopped';

export interface WaitOptions {
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
}

export interface CreateTopicOptions {
  readonly partitions: number;
  /** −1: the broker's default.replication.factor. */
  readonly replicationFactor: number;
  /** Topic configs, e.g. { 'min.insync.replicas': '2' }. */
  readonly configs?: Readonly<Record<string, string>>;
  /** Wait until every partition has a leader and (for an explicit factor) a full ISR; default true. */
  readonly waitForIsr?: boolean;
  readonly timeoutMs?: number;
}

const DEFAULT_WAIT_MS = 30_000;
/** Requests the harness makes itself must not hang on a paused broker. */
const ADMIN_REQUEST_TIMEOUT_MS = 5_000;
/** Each workload gets its own block of values, so values stay unique across workloads. */
const VALUES_PER_WORKLOAD = 100_000_000;

export class ReplicatedCluster {
  private readonly states = new Map<number, BrokerState>();
  private readonly workloads: Workload[] = [];
  private readonly samplers: MetadataSampler[] = [];
  private adminClient: ClusterClient | undefined;
  private zookeeperStore: Promise<ZooKeeperStore> | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    readonly zookeeperConnect: string,
    private readonly processes: readonly BrokerProcess[],
  ) {
    for (const broker of processes) this.states.set(broker.id, 'running');
  }

  /** Starts the brokers on a fresh ZooKeeper chroot and waits until each one lists all of them. */
  static async start(options: ReplicatedClusterOptions): Promise<ReplicatedCluster> {
    const count = options.brokers ?? 3;
    const firstId = options.firstBrokerId ?? 1;
    const zookeeperConnect = `${options.zookeeper}/${options.name ?? 'replicated'}-${process.pid}-${randomBytes(3).toString('hex')}`;
    const settings = { ...BASE_TEST_SETTINGS, ...(options.replicationDefaults === false ? {} : REPLICATION_TEST_SETTINGS), ...options.settings };
    const ids = Array.from({ length: count }, (_, index) => firstId + index);
    const started = await Promise.allSettled(ids.map((id) => startBrokerProcess({ run: options.run, id, zookeeper: zookeeperConnect, settings, fsyncJournal: options.fsyncJournal === true })));
    const processes = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const cluster = new ReplicatedCluster(zookeeperConnect, processes);
    const failure = started.find((result) => result.status === 'rejected');
    if (failure !== undefined) {
      await cluster.close();
      throw failure.reason;
    }
    try {
      await cluster.waitForRegistered(ids);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  // -----------------------------------------------------------------------------------------------
  // Brokers and faults

  get brokerIds(): number[] {
    return this.processes.map((broker) => broker.id);
  }

  broker(id: number): BrokerProcess {
    const found = this.processes.find((broker) => broker.id === id);
    if (found === undefined) throw new Error(`no broker ${id} in this cluster (brokers: ${this.brokerIds.join(', ')})`);
    return found;
  }

  /** What the harness did to the broker last; 'stopped' too when its process ended by itself (a crash). */
  state(id: number): BrokerState {
    const broker = this.broker(id);
    return broker.daemon.hasExited() ? 'stopped' : (this.states.get(id) ?? 'stopped');
  }

  /** Brokers that are running and not paused: the ones that can answer. */
  liveBrokerIds(): number[] {
    return this.brokerIds.filter((id) => this.state(id) === 'running');
  }

  /** `host:port` of every broker, for clients: they find the live ones. */
  bootstrap(): string[] {
    return this.processes.map((broker) => broker.bootstrap);
  }

  dataDir(id: number): string {
    return this.broker(id).dataDir;
  }

  /** SIGKILL (works on a paused broker too) and wait for the process to end. */
  async kill(id: number): Promise<void> {
    await this.broker(id).kill();
    this.states.set(id, 'stopped');
  }

  /** SIGTERM (a paused broker is resumed first, or it could not act on it); resolves with the exit code. */
  async stop(id: number): Promise<number | string> {
    const broker = this.broker(id);
    if (this.state(id) === 'paused') broker.daemon.signal('SIGCONT');
    const code = await broker.stop();
    this.states.set(id, 'stopped');
    return code;
  }

  /** SIGSTOP: the process stays, holds its ports and files, and answers nothing. */
  pause(id: number): void {
    if (this.state(id) !== 'running') throw new Error(`broker ${id} is ${this.state(id)}; only a running broker can be paused`);
    this.broker(id).daemon.signal('SIGSTOP');
    this.states.set(id, 'paused');
  }

  /** SIGCONT. */
  resume(id: number): void {
    if (this.state(id) !== 'paused') throw new Error(`broker ${id} is ${this.state(id)}, not paused`);
    this.broker(id).daemon.signal('SIGCONT');
    this.states.set(id, 'running');
  }

  /** Empties a stopped broker's data dir: a replaced disk. */
  wipe(id: number): void {
    if (this.state(id) !== 'stopped') throw new Error(`broker ${id} is ${this.state(id)}; stop or kill it before wiping its data dir`);
    const dataDir = this.dataDir(id);
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
  }

  /**
   * Power loss after the fact: cuts a killed broker's data dir back to what its fsync journal says
   * was durable (test/support/power-loss.ts). The cluster must have been started with `fsyncJournal: true`.
   */
  loseUnsyncedWrites(id: number): PowerLossReport {
    if (this.state(id) !== 'stopped') throw new Error(`broker ${id} is ${this.state(id)}; kill it before cutting its files back`);
    const journal = this.broker(id).fsyncJournal;
    if (journal === undefined) throw new Error(`broker ${id} keeps no fsync journal: start the cluster with fsyncJournal: true`);
    return loseUnsyncedWrites(this.dataDir(id), journal);
  }

  /** Starts a stopped broker again with the same id, port, settings and data dir (wiped first with `wipe: true`). */
  async restart(id: number, options: { readonly wipe?: boolean } = {}): Promise<void> {
    if (this.state(id) !== 'stopped') throw new Error(`broker ${id} is ${this.state(id)}; kill or stop it before restarting it`);
    if (options.wipe === true) this.wipe(id);
    await this.broker(id).restart();
    this.states.set(id, 'running');
  }

  // -----------------------------------------------------------------------------------------------
  // What the brokers say

  /**
   * Runs `run` on a fresh connection to `via`, or to each live broker in turn until one answers
   * (a broker can die between the choice and the request). Short-lived connections: a broker
   * that was killed or restarted leaves nothing stale behind.
   */
  private async withConnection<T>(via: number | undefined, run: (connection: KafkaConnection, brokerId: number) => Promise<T>): Promise<T> {
    const candidates = via === undefined ? this.liveBrokerIds() : [via];
    const failures: string[] = [];
    for (const id of candidates) {
      let connection: KafkaConnection | undefined;
      try {
        connection = await KafkaConnection.open(LOOPBACK, this.broker(id).port, { clientId: 'replication-harness', requestTimeoutMs: ADMIN_REQUEST_TIMEOUT_MS, connectTimeoutMs: ADMIN_REQUEST_TIMEOUT_MS });
        return await run(connection, id);
      } catch (error) {
        failures.push(`broker ${id}: ${messageOf(error)}`);
      } finally {
        connection?.close();
      }
    }
    throw new Error(`no live broker answered (${failures.join('; ') || 'none is running'})`);
  }

  /** Metadata v8 of `topics` (null: all; []: brokers only) from `via` or any live broker. */
  async metadata(topics: readonly string[] | null, via?: number): Promise<MetadataResponse & { readonly observedBy: number }> {
    return this.withConnection(via, async (connection, brokerId) => ({
      ...(await connection.request(MetadataApi, 8, {
        topics: topics === null ? null : topics.map((name) => ({ name })),
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      })),
      observedBy: brokerId,
    }));
  }

  /** Every partition of `topic`, as `via` (or any live broker) describes them; throws if the topic is unknown. */
  async topicState(topic: string, via?: number): Promise<PartitionState[]> {
    const response = await this.metadata([topic], via);
    const described = response.topics.find((entry) => entry.name === topic);
    if (described === undefined || described.errorCode !== 0) {
      throw new Error(`broker ${response.observedBy} does not describe topic ${topic}: ${described === undefined ? 'not in the answer' : kafkaErrorName(described.errorCode)}`);
    }
    return [...described.partitions]
      .sort((a, b) => a.partitionIndex - b.partitionIndex)
      .map((entry) => ({
        topic,
        partition: entry.partitionIndex,
        errorCode: entry.errorCode,
        leader: entry.leaderId,
        leaderEpoch: entry.leaderEpoch,
        replicas: entry.replicaNodes,
        isr: entry.isrNodes,
        offlineReplicas: entry.offlineReplicas,
        observedBy: response.observedBy,
      }));
  }

  /** Leader, leader epoch, replicas and ISR of one partition (Metadata v8). */
  async partitionState(topic: string, partition: number, via?: number): Promise<PartitionState> {
    const found = (await this.topicState(topic, via)).find((entry) => entry.partition === partition);
    if (found === undefined) throw new Error(`topic ${topic} has no partition ${partition}`);
    return found;
  }

  /** The partition's leader, −1 when it has none. */
  async leaderOf(topic: string, partition: number, via?: number): Promise<number> {
    return (await this.partitionState(topic, partition, via)).leader;
  }

  /**
   * Polls `probe` until it returns a value; fails naming `what` and the last thing seen. A probe
   * throws to say what it saw instead ("leader 2 at epoch 5"): that is the "last" of the failure.
   */
  async waitFor<T>(what: string, probe: () => Promise<T | undefined>, options: WaitOptions = {}): Promise<T> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
    const deadline = Date.now() + timeoutMs;
    let last = 'nothing yet';
    for (;;) {
      try {
        const value = await probe();
        if (value !== undefined) return value;
        last = 'not yet';
      } catch (error) {
        last = messageOf(error);
      }
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last})`);
      await sleep(options.intervalMs ?? 250);
    }
  }

  /**
   * Until every live broker lists every broker in `ids` (default: the live ones) in its Metadata:
   * each has seen the others register (a restarted broker included).
   */
  async waitForRegistered(ids: readonly number[] = this.liveBrokerIds(), options: WaitOptions = {}): Promise<void> {
    await this.waitFor(
      `brokers ${ids.join(', ')} to be registered and seen by every live broker`,
      async () => {
        for (const via of this.liveBrokerIds()) {
          const listed = new Set((await this.metadata([], via)).brokers.map((broker) => broker.nodeId));
          const missing = ids.filter((id) => !listed.has(id));
          if (missing.length > 0) throw new Error(`broker ${via} does not list ${missing.join(', ')}`);
        }
        return true;
      },
      options,
    );
  }

  /**
   * The partition as ZooKeeper holds it and as its leader (asked directly) serves it, once the two
   * agree. A broker just back from a pause answers from a cache it has not refreshed yet, so no
   * other broker's answer is trusted for a wait.
   */
  private async authoritativeState(topic: string, partition: number): Promise<PartitionState> {
    const stored = await this.zookeeperPartitionState(topic, partition);
    if (stored === undefined) throw new Error(`${topic}-${partition} has no state in ZooKeeper yet`);
    if (stored.leader < 0) throw new Error(`${topic}-${partition} has no leader in ZooKeeper (epoch ${stored.leaderEpoch}, ISR [${stored.isr.join(',')}])`);
    if (this.state(stored.leader) !== 'running') throw new Error(`${topic}-${partition}: ZooKeeper names broker ${stored.leader} leader, which is ${this.state(stored.leader)}`);
    const served = await this.partitionState(topic, partition, stored.leader);
    const sameIsr = [...served.isr].sort((a, b) => a - b).join(',') === [...stored.isr].sort((a, b) => a - b).join(',');
    if (served.leader !== stored.leader || served.leaderEpoch !== stored.leaderEpoch || !sameIsr) {
      throw new Error(`${topic}-${partition}: broker ${stored.leader} serves ${describeState(served)}, ZooKeeper holds leader ${stored.leader} epoch ${stored.leaderEpoch} ISR [${stored.isr.join(',')}]`);
    }
    return served;
  }

  /** Until the partition has a leader (in ZooKeeper, and that broker serves it so). */
  async waitForLeader(topic: string, partition: number, options: WaitOptions = {}): Promise<PartitionState> {
    return this.waitFor(`a leader of ${topic}-${partition}`, () => this.authoritativeState(topic, partition), options);
  }

  /**
   * Until the partition has a leader other than `from`'s, or the same one under a newer epoch
   * (a leader that died and came back is a change too).
   */
  async waitForLeaderChange(from: PartitionState, options: WaitOptions = {}): Promise<PartitionState> {
    return this.waitFor(`${from.topic}-${from.partition} to change leader from ${from.leader} (epoch ${from.leaderEpoch})`, async () => {
      const state = await this.authoritativeState(from.topic, from.partition);
      if (state.leader === from.leader && state.leaderEpoch <= from.leaderEpoch) throw new Error(describeState(state));
      return state;
    }, options);
  }

  /** Until the partition's ISR is exactly `expected` (in any order), in ZooKeeper and at its leader. */
  async waitForIsr(topic: string, partition: number, expected: readonly number[], options: WaitOptions = {}): Promise<PartitionState> {
    const wanted = [...expected].sort((a, b) => a - b).join(',');
    return this.waitFor(`${topic}-${partition} to have ISR [${wanted}]`, async () => {
      const state = await this.authoritativeState(topic, partition);
      if ([...state.isr].sort((a, b) => a - b).join(',') !== wanted) throw new Error(describeState(state));
      return state;
    }, options);
  }

  /** Creates a topic with CreateTopics v4 (replication factor included) and waits until it is usable. */
  async createTopic(topic: string, options: CreateTopicOptions): Promise<PartitionState[]> {
    const configs = Object.entries(options.configs ?? {}).map(([name, value]) => ({ name, value }));
    const result = await this.withConnection(undefined, async (connection) =>
      connection.request(CreateTopicsApi, 4, {
        topics: [{ name: topic, numPartitions: options.partitions, replicationFactor: options.replicationFactor, assignments: [], configs }],
        timeoutMs: 30_000,
        validateOnly: false,
      }),
    );
    const answer = result.topics[0];
    if (answer === undefined || answer.errorCode !== 0) {
      throw new Error(`could not create topic ${topic}: ${answer === undefined ? 'no answer' : `${kafkaErrorName(answer.errorCode)} ${answer.errorMessage ?? ''}`}`);
    }
    if (options.waitForIsr === false) return this.topicState(topic);
    const fullIsr = options.replicationFactor > 0 ? options.replicationFactor : 1;
    return this.waitFor(
      `every partition of ${topic} to have a leader and ${fullIsr} in-sync replicas`,
      async () => {
        const states = await this.topicState(topic);
        if (states.length !== options.partitions || states.some((state) => state.leader < 0 || state.isr.length < fullIsr)) throw new Error(states.map(describeState).join('; '));
        return states;
      },
      { timeoutMs: options.timeoutMs ?? DEFAULT_WAIT_MS },
    );
  }

  /** A client of the whole cluster for the harness's own reads (high watermarks, the final read). */
  private admin(): Promise<ClusterClient> {
    if (this.adminClient !== undefined) return Promise.resolve(this.adminClient);
    return ClusterClient.connect({ bootstrap: this.bootstrap(), clientId: 'replication-harness', allowAutoTopicCreation: false, requestTimeoutMs: 10_000 }).then((client) => {
      if (this.adminClient !== undefined) {
        client.close();
        return this.adminClient;
      }
      this.adminClient = client;
      return client;
    });
  }

  /** The partition's high watermark (ListOffsets latest at its leader). */
  async highWatermark(topic: string, partition: number): Promise<number> {
    const cluster = await this.admin();
    return Number(await new SimpleConsumer(cluster, { retries: 8 }).listOffset(topic, partition, 'latest'));
  }

  /**
   * Reads every partition of `topic` from its log start to its high watermark: the final read
   * after healing. A partition whose read fails (its leader moved, say) is read again from its
   * start; the read goes on while the high watermark still moves (answers to retried sends).
   */
  async readAll(topic: string, options: WaitOptions = {}): Promise<FinalPartition[]> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    const cluster = await this.admin();
    await cluster.refreshMetadata([topic]);
    const partitions = await cluster.partitionsFor(topic);
    const consumer = new SimpleConsumer(cluster, { retries: 8 });
    const finalRead: FinalPartition[] = [];
    for (const partition of partitions) {
      for (let attempt = 1; ; attempt += 1) {
        try {
          finalRead.push({ partition, records: await readPartition(consumer, topic, partition) });
          break;
        } catch (error) {
          if (Date.now() > deadline) throw new Error(`could not read ${topic}-${partition} to its end after ${attempt} attempts: ${messageOf(error)}`);
          await sleep(500);
          await cluster.refreshMetadata([topic]).catch(() => undefined);
        }
      }
    }
    return finalRead;
  }

  /**
   * I6 for one partition: the replica files of its ISR (leader first), compared batch by batch
   * below the high watermark. The ISR is ZooKeeper's (the partition's state znode) when it has
   * one, else a broker's Metadata; the high watermark is the leader's. Both can be given instead.
   */
  async checkReplicaFiles(topic: string, partition: number, options: { readonly highWatermark?: number; readonly isr?: readonly number[]; readonly byteIdentical?: boolean } = {}): Promise<ReplicaComparison> {
    const stored = options.isr === undefined ? await this.zookeeperPartitionState(topic, partition).catch(() => undefined) : undefined;
    const usable = stored !== undefined && stored.isr.length > 0 ? stored : undefined;
    const described = options.isr === undefined && usable === undefined ? await this.partitionState(topic, partition) : undefined;
    const isr = options.isr ?? usable?.isr ?? described?.isr ?? [];
    const leader = usable?.leader ?? described?.leader ?? -1;
    // An empty list would compare nothing and pass: that is a failure to find the ISR, not I6 holding.
    if (isr.length === 0) throw new Error(`${topic}-${partition}: no ISR to compare (ZooKeeper: ${JSON.stringify(stored)}; metadata: ${JSON.stringify(described)})`);
    const ordered = [...isr].sort((a, b) => Number(b === leader) - Number(a === leader));
    const highWatermark = options.highWatermark ?? (await this.highWatermark(topic, partition));
    const replicas = ordered.map((brokerId) => ({ brokerId, dataDir: this.dataDir(brokerId) }));
    return compareReplicas(replicas, topic, partition, highWatermark, options.byteIdentical === undefined ? {} : { byteIdentical: options.byteIdentical });
  }

  // -----------------------------------------------------------------------------------------------
  // ZooKeeper, as the replication design lays it out (§1.1, §5.2)

  /** A ZooKeeper session on the cluster's chroot, opened on first use. */
  zookeeper(): Promise<ZooKeeperStore> {
    this.zookeeperStore ??= ZooKeeperStore.connect(this.zookeeperConnect);
    return this.zookeeperStore;
  }

  /** The JSON in a znode under the chroot, or undefined when the znode does not exist. */
  async zookeeperJson(path: string): Promise<unknown> {
    const node = await (await this.zookeeper()).get(path);
    return node === undefined ? undefined : (JSON.parse(node.data.toString('utf8')) as unknown);
  }

  /**
   * The partition's state znode, `/brokers/topics/<topic>/partitions/<partition>/state`:
   * `{"leader":L,"leader_epoch":E,"isr":[…],"controller_epoch":C}`; undefined when there is none.
   */
  async zookeeperPartitionState(topic: string, partition: number): Promise<{ readonly leader: number; readonly leaderEpoch: number; readonly isr: readonly number[]; readonly controllerEpoch: number } | undefined> {
    const state = (await this.zookeeperJson(`/brokers/topics/${topic}/partitions/${partition}/state`)) as
      | { leader?: unknown; leader_epoch?: unknown; isr?: unknown; controller_epoch?: unknown }
      | undefined;
    if (state === undefined) return undefined;
    const isr = Array.isArray(state.isr) ? state.isr.filter((id): id is number => typeof id === 'number') : [];
    const number = (value: unknown): number => (typeof value === 'number' ? value : -1);
    return { leader: number(state.leader), leaderEpoch: number(state.leader_epoch), isr, controllerEpoch: number(state.controller_epoch) };
  }

  /** The controller's broker id (`/controller`) and the controller epoch (`/controller_epoch`); undefined parts when absent. */
  async controller(): Promise<{ readonly brokerId: number | undefined; readonly epoch: number | undefined }> {
    const store = await this.zookeeper();
    const controller = (await this.zookeeperJson('/controller')) as { brokerid?: unknown } | undefined;
    const epochNode = await store.get('/controller_epoch');
    const epoch = epochNode === undefined ? undefined : Number(epochNode.data.toString('utf8'));
    return { brokerId: typeof controller?.brokerid === 'number' ? controller.brokerid : undefined, epoch: Number.isInteger(epoch) ? epoch : undefined };
  }

  // -----------------------------------------------------------------------------------------------
  // Workload, sampler, history

  /** Starts producing and consuming `options.topic`; values are unique across the cluster's workloads. */
  async startWorkload(options: WorkloadOptions): Promise<Workload> {
    const firstValue = options.firstValue ?? this.workloads.length * VALUES_PER_WORKLOAD;
    const workload = await Workload.start(this.bootstrap(), { ...options, firstValue });
    this.workloads.push(workload);
    return workload;
  }

  /** Samples every live broker's Metadata for `topic` every `intervalMs` (default 250). */
  startMetadataSampler(topic: string, options: { readonly intervalMs?: number } = {}): MetadataSampler {
    const sampler = new MetadataSampler(topic, options.intervalMs ?? 250, () =>
      this.liveBrokerIds().map((id) => ({ id, port: this.broker(id).port, pid: this.broker(id).daemon.pid })),
    );
    this.samplers.push(sampler);
    return sampler;
  }

  /** Everything the cluster's workloads and samplers recorded about `topic`, with the final read: the checker's input. */
  history(topic: string, finalRead: readonly FinalPartition[]): ReplicationHistory {
    const workloads = this.workloads.filter((workload) => workload.topic === topic);
    return {
      sends: workloads.flatMap((workload) => workload.sends),
      polls: workloads.flatMap((workload) => workload.polls),
      finalRead,
      metadataSamples: this.samplers.filter((sampler) => sampler.topic === topic).flatMap((sampler) => sampler.samples),
    };
  }

  /** Stops workloads and samplers, closes the clients, and stops every broker (SIGKILL after 5 s). Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled(this.samplers.map((sampler) => sampler.stop()));
      await Promise.allSettled(this.workloads.map((workload) => workload.stop({ drainTimeoutMs: 5_000 })));
      this.adminClient?.close();
      if (this.zookeeperStore !== undefined) await (await this.zookeeperStore.catch(() => undefined))?.close().catch(() => undefined);
      // daemon.stop sends SIGCONT first: a paused broker could not act on SIGTERM.
      await Promise.allSettled(this.processes.map((broker) => broker.daemon.stop(5_000)));
      for (const broker of this.processes) this.states.set(broker.id, 'stopped');
    })();
    return this.closing;
  }
}

/** Reads one partition from its log start to its high watermark, following the high watermark while it moves. */
async function readPartition(consumer: SimpleConsumer, topic: string, partition: number): Promise<FinalRecord[]> {
  const records: FinalRecord[] = [];
  let offset = await consumer.listOffset(topic, partition, 'earliest');
  let end = await consumer.listOffset(topic, partition, 'latest');
  for (;;) {
    while (offset < end) {
      const fetched = await consumer.fetch(topic, partition, offset, { maxBytes: 4 * 1024 * 1024 });
      if (fetched.records.length === 0) throw new Error(`${topic}-${partition}: nothing served at offset ${offset} below the high watermark ${end}`);
      for (const record of fetched.records) records.push({ offset: Number(record.offset), value: decodeValue(record.value) });
      offset = fetched.nextOffset;
    }
    const now = await consumer.listOffset(topic, partition, 'latest');
    if (now <= end) return records;
    end = now;
  }
}

// -------------------------------------------------------------------------------------------------
// Values on the wire

export function encodeValue(value: number): Buffer {
  return Buffer.from(String(value), 'utf8');
}

/** The test value a record holds, or UNREADABLE_VALUE when it holds something else. */
export function decodeValue(bytes: Buffer | null): number {
  if (bytes === null) return UNREADABLE_VALUE;
  const text = bytes.toString('utf8');
  return /^\d{1,15}$/.test(text) ? Number(text) : UNREADABLE_VALUE;
}

/** Failures after which the record may be stored although no one said so (the producer's own list). */
const OUTCOME_UNKNOWN_CODES: ReadonlySet<string> = new Set(['CONNECTION_LOST', 'REQUEST_TIMED_OUT', 'NETWORK_EXCEPTION', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'UNKNOWN']);

/**
 * What a failed send tells about its record. The producer's error names its last attempt only, so
 * a send that took more than one attempt is unknown: an earlier attempt may have timed out after
 * the broker stored it. Only a refusal on the first and only attempt is a sure failure.
 */
export function classifySendError(error: unknown): Exclude<SendOutcome, { type: 'acknowledged' }> {
  const code = error instanceof TributaryError ? error.code : 'UNKNOWN';
  if (code === 'PRODUCER_CLOSED') return { type: 'failed', error: code };
  const attempts = error instanceof TributaryError ? error.details['attempts'] : undefined;
  if (OUTCOME_UNKNOWN_CODES.has(code) || typeof attempts !== 'number' || attempts > 1) return { type: 'unknown', error: code };
  return { type: 'failed', error: code };
}

// -------------------------------------------------------------------------------------------------
// Workload

export interface WorkloadOptions {
  readonly topic: string;
  /** Partitions written and read; default every partition of the topic. */
  readonly partitions?: readonly number[];
  /** Sends per second over all partitions; default 200. */
  readonly ratePerSecond?: number;
  /** Default false. */
  readonly idempotent?: boolean;
  /** Default −1. With 1, losses on failover are allowed (the checker counts them apart). */
  readonly acks?: -1 | 1;
  /**
   * Producer retries per batch; default 30 (with backoff up to 1 s: rides out a failover). A
   * failure after retries is recorded as unknown (an earlier attempt may have stored the record);
   * to see refusals such as NOT_ENOUGH_REPLICAS as sure failures, use 0 (and idempotent false).
   */
  readonly retries?: number;
  /** How long the broker may take to answer a Produce; default 10 s. */
  readonly requestTimeoutMs?: number;
  /** Sends waiting for an answer beyond which no new one starts; default 2000. */
  readonly maxPending?: number;
  /** Consumers per partition; default 1 (0: no consumers). */
  readonly consumersPerPartition?: number;
  /** Fetch long-poll; default 500 ms. */
  readonly fetchMaxWaitMs?: number;
  /** How long a consumer keeps asking at an out-of-range position before resetting to the log start; default 10 s. */
  readonly outOfRangeResetMs?: number;
  /** The first value sent; the cluster gives each workload its own range. */
  readonly firstValue?: number;
}

interface PendingSend {
  readonly partition: number;
  readonly time: number;
}

interface ConsumerLoop {
  readonly id: string;
  readonly partition: number;
  /** The offset it will fetch next. */
  position: number;
  /** Settles when the loop has ended. */
  done: Promise<void>;
}

/**
 * A producer sending unique integer values at a rate and consumers polling every partition, all
 * recording into `sends` and `polls` (the checker's input). Values go round-robin over the
 * partitions (value modulo their count), one record per send so every value has its own outcome.
 */
export class Workload {
  readonly sends: SendRecord[] = [];
  readonly polls: ConsumerEvent[] = [];
  /** Errors seen by the producer (per send) and the consumers (per fetch), by code: diagnostics. */
  readonly errors = new Map<string, number>();
  private readonly pending = new Map<number, PendingSend>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly consumers: ConsumerLoop[] = [];
  private producing = true;
  private consuming = true;
  private nextValue: number;
  private acknowledgedCount = 0;
  private producerLoop: Promise<void> = Promise.resolve();
  private stoppedProducing: Promise<void> | undefined;
  private stoppedConsuming: Promise<void> | undefined;

  private constructor(
    readonly topic: string,
    readonly partitions: readonly number[],
    private readonly options: WorkloadOptions,
    private readonly producer: Producer,
    private readonly consumerCluster: ClusterClient,
  ) {
    this.nextValue = options.firstValue ?? 0;
  }

  static async start(bootstrap: readonly string[], options: WorkloadOptions): Promise<Workload> {
    const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    const consumerCluster = await ClusterClient.connect({ bootstrap, clientId: 'workload-consumer', allowAutoTopicCreation: false, requestTimeoutMs: requestTimeoutMs + (options.fetchMaxWaitMs ?? 500) });
    let producer: Producer;
    try {
      producer = await Producer.connect({
        bootstrap,
        clientId: 'workload-producer',
        allowAutoTopicCreation: false,
        acks: options.acks ?? -1,
        idempotent: options.idempotent ?? false,
        retries: options.retries ?? 30,
        retryBackoffMs: 100,
        retryBackoffMaxMs: 1000,
        requestTimeoutMs,
        lingerMs: 5,
      });
    } catch (error) {
      consumerCluster.close();
      throw error;
    }
    const partitions = options.partitions ?? (await consumerCluster.partitionsFor(options.topic));
    const workload = new Workload(options.topic, partitions, options, producer, consumerCluster);
    workload.producerLoop = workload.produce();
    for (const partition of partitions) {
      for (let index = 0; index < (options.consumersPerPartition ?? 1); index += 1) workload.startConsumer(partition, `consumer-${partition}-${index}`);
    }
    return workload;
  }

  get idempotent(): boolean {
    return this.producer.idempotent;
  }

  /** Sends acknowledged so far. */
  acknowledged(): number {
    return this.acknowledgedCount;
  }

  /** Until `count` sends are acknowledged. */
  async waitForAcknowledged(count: number, options: WaitOptions = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
    const deadline = Date.now() + timeoutMs;
    while (this.acknowledgedCount < count) {
      if (Date.now() > deadline) throw new Error(`only ${this.acknowledgedCount} of ${count} sends acknowledged after ${timeoutMs} ms (errors: ${this.describeErrors()})`);
      await sleep(options.intervalMs ?? 100);
    }
  }

  /** Error counts as text, for failure messages. */
  describeErrors(): string {
    return [...this.errors].map(([code, count]) => `${code} ×${count}`).join(', ') || 'none';
  }

  /** Each consumer's next offset, by consumer id. */
  consumerPositions(): Map<string, number> {
    return new Map(this.consumers.map((consumer) => [consumer.id, consumer.position]));
  }

  /** Until every consumer has read its partition up to the end of the final read (more evidence for I3 and I5). */
  async waitForConsumers(finalRead: readonly FinalPartition[], options: WaitOptions = {}): Promise<void> {
    const ends = new Map(finalRead.map(({ partition, records }) => [partition, (records.at(-1)?.offset ?? -1) + 1]));
    const behind = () => this.consumers.filter((consumer) => consumer.position < (ends.get(consumer.partition) ?? 0));
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
    const deadline = Date.now() + timeoutMs;
    while (behind().length > 0) {
      if (Date.now() > deadline) {
        const list = behind().map((consumer) => `${consumer.id} at ${consumer.position} of ${ends.get(consumer.partition) ?? 0}`);
        throw new Error(`consumers did not reach the end of the log in ${timeoutMs} ms: ${list.join(', ')} (errors: ${this.describeErrors()})`);
      }
      await sleep(options.intervalMs ?? 100);
    }
  }

  /**
   * Stops sending, waits up to `drainTimeoutMs` (default 60 s) for answers to the sends in flight,
   * records those still unanswered as unknown, and closes the producer.
   */
  stopProducing(options: { readonly drainTimeoutMs?: number } = {}): Promise<void> {
    this.stoppedProducing ??= (async () => {
      this.producing = false;
      await this.producerLoop;
      const drained = Promise.allSettled([...this.inFlight]);
      await Promise.race([drained, sleep(options.drainTimeoutMs ?? 60_000)]);
      for (const [value, pending] of this.pending) {
        this.sends.push({ partition: pending.partition, value, idempotent: this.producer.idempotent, acks: this.producer.acks, outcome: { type: 'unknown', error: 'NO_ANSWER_BEFORE_STOP' }, time: pending.time });
      }
      this.pending.clear();
      // close() delivers what is left, which can take all the retries: closing the cluster client
      // ends them now (their late answers are ignored: those sends were recorded as unknown).
      const closed = this.producer.close();
      await Promise.race([closed, sleep(1_000)]);
      this.producer.cluster.close();
      await closed.catch(() => undefined);
    })();
    return this.stoppedProducing;
  }

  /** Stops the consumers after their current fetch. */
  stopConsuming(): Promise<void> {
    this.stoppedConsuming ??= (async () => {
      this.consuming = false;
      await Promise.allSettled(this.consumers.map((consumer) => consumer.done));
      this.consumerCluster.close();
    })();
    return this.stoppedConsuming;
  }

  async stop(options: { readonly drainTimeoutMs?: number } = {}): Promise<void> {
    await Promise.all([this.stopProducing(options), this.stopConsuming()]);
  }

  private count(code: string): void {
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  /** Starts the sends that are due at the rate, in ticks of 10 ms, while fewer than maxPending wait. */
  private async produce(): Promise<void> {
    const rate = this.options.ratePerSecond ?? 200;
    const maxPending = this.options.maxPending ?? 2000;
    const began = Date.now();
    let started = 0;
    while (this.producing) {
      const due = Math.floor(((Date.now() - began) / 1000) * rate);
      // A stalled cluster does not build a backlog to burst out later: the schedule moves on.
      while (started < due && this.pending.size < maxPending) {
        this.send();
        started += 1;
      }
      if (started < due) started = due;
      await sleep(10);
    }
  }

  private send(): void {
    const value = this.nextValue;
    this.nextValue += 1;
    const partition = this.partitions[value % this.partitions.length] as number;
    const time = Date.now();
    this.pending.set(value, { partition, time });
    const record = (outcome: SendOutcome): void => {
      // Recorded as unknown already if the workload stopped waiting for it.
      if (!this.pending.delete(value)) return;
      this.sends.push({ partition, value, idempotent: this.producer.idempotent, acks: this.producer.acks, outcome, time });
    };
    const sent = this.producer.send(this.topic, [{ partition, value: encodeValue(value) }]).then(
      ([metadata]) => {
        this.acknowledgedCount += 1;
        record({ type: 'acknowledged', offset: Number(metadata?.offset ?? -1n) });
      },
      (error: unknown) => {
        const outcome = classifySendError(error);
        this.count(`send ${outcome.error}`);
        record(outcome);
      },
    );
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  private startConsumer(partition: number, id: string): void {
    const consumer = new SimpleConsumer(this.consumerCluster, { retries: 3, retryBackoffMs: 200 });
    const entry: ConsumerLoop = { id, partition, position: 0, done: Promise.resolve() };
    // The consumer starts at offset 0 on purpose, as a seek: its first record must be the first the log holds.
    this.polls.push({ type: 'seek', consumer: id, partition, offset: 0, reason: 'start', time: Date.now() });
    entry.done = (async () => {
      let outOfRangeSince: number | undefined;
      while (this.consuming) {
        try {
          const fetched = await consumer.fetch(this.topic, partition, BigInt(entry.position), { maxWaitMs: this.options.fetchMaxWaitMs ?? 500 });
          outOfRangeSince = undefined;
          const time = Date.now();
          for (const record of fetched.records) {
            this.polls.push({ type: 'record', consumer: id, partition, offset: Number(record.offset), value: decodeValue(record.value), time });
          }
          entry.position = Number(fetched.nextOffset);
        } catch (error) {
          if (!this.consuming) break;
          const code = error instanceof TributaryError ? error.code : 'UNKNOWN';
          this.count(`fetch ${code}`);
          if (code === 'OFFSET_OUT_OF_RANGE') {
            // Right after a failover the new leader may not have caught up to where this consumer
            // is; only when that lasts does the consumer reset, as a seek the checker knows about.
            outOfRangeSince ??= Date.now();
            if (Date.now() - outOfRangeSince > (this.options.outOfRangeResetMs ?? 10_000)) {
              const start = await consumer.listOffset(this.topic, partition, 'earliest').catch(() => undefined);
              if (start !== undefined) {
                this.polls.push({ type: 'seek', consumer: id, partition, offset: Number(start), reason: `reset after OFFSET_OUT_OF_RANGE at ${entry.position}`, time: Date.now() });
                entry.position = Number(start);
                outOfRangeSince = undefined;
              }
            }
          } else {
            await this.consumerCluster.refreshMetadata([this.topic]).catch(() => undefined);
          }
          await sleep(250);
        }
      }
    })();
    this.consumers.push(entry);
  }
}

// -------------------------------------------------------------------------------------------------
// Metadata sampler (I7)

interface SampledBroker {
  readonly id: number;
  readonly port: number;
  /** The process: a restarted broker is a new observer (its own view starts afresh). */
  readonly pid: number;
}

/**
 * Asks every live broker for the topic's Metadata every interval, one request in flight per
 * broker, over one connection per broker process; each answer becomes one sample per partition,
 * observed by `broker-<id> pid <pid>`.
 */
export class MetadataSampler {
  readonly samples: MetadataSample[] = [];
  /** Requests that failed (a broker that died or was paused mid-request): diagnostics. */
  failures = 0;
  private running = true;
  private readonly connections = new Map<string, Promise<KafkaConnection>>();
  private readonly busy = new Set<string>();
  private readonly loop: Promise<void>;

  constructor(
    readonly topic: string,
    private readonly intervalMs: number,
    private readonly liveBrokers: () => SampledBroker[],
  ) {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    const connections = await Promise.allSettled(this.connections.values());
    for (const connection of connections) if (connection.status === 'fulfilled') connection.value.close();
    this.connections.clear();
  }

  private async run(): Promise<void> {
    const requests = new Set<Promise<void>>();
    while (this.running) {
      for (const broker of this.liveBrokers()) {
        const observer = `broker-${broker.id} pid ${broker.pid}`;
        if (this.busy.has(observer)) continue;
        this.busy.add(observer);
        const request = this.sample(broker, observer).finally(() => {
          this.busy.delete(observer);
          requests.delete(request);
        });
        requests.add(request);
      }
      await sleep(this.intervalMs);
    }
    await Promise.allSettled([...requests]);
  }

  private async sample(broker: SampledBroker, observer: string): Promise<void> {
    let connection = this.connections.get(observer);
    if (connection === undefined) {
      connection = KafkaConnection.open(LOOPBACK, broker.port, { clientId: 'metadata-sampler', requestTimeoutMs: 2_000, connectTimeoutMs: 2_000 });
      this.connections.set(observer, connection);
    }
    try {
      const response = await (await connection).request(MetadataApi, 8, {
        topics: [{ name: this.topic }],
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      });
      const time = Date.now();
      for (const topic of response.topics) {
        if (topic.name !== this.topic || topic.errorCode !== 0) continue;
        for (const partition of topic.partitions) {
          this.samples.push({ time, observer, partition: partition.partitionIndex, leader: partition.leaderId, leaderEpoch: partition.leaderEpoch, isr: partition.isrNodes });
        }
      }
    } catch {
      this.failures += 1;
      // A failed connection cannot be used again: the next round opens a new one.
      this.connections.delete(observer);
      void connection.then((open) => open.close(), () => undefined);
    }
  }
}

/** "events-0: leader 2, epoch 5, replicas [1,2,3], ISR [2,3] (as broker 3 says)", for wait failures. */
export function describeState(state: PartitionState): string {
  const error = state.errorCode === 0 ? '' : `, ${kafkaErrorName(state.errorCode)}`;
  return `${state.topic}-${state.partition}: leader ${state.leader}, epoch ${state.leaderEpoch}, replicas [${state.replicas.join(',')}], ISR [${state.isr.join(',')}]${error} (as broker ${state.observedBy} says)`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
