/**
 * The system the ZooKeeper fault runs (zookeeper.ts) break: a 3-node ZooKeeper ensemble
 * (test/services/zookeeper.ts) and, all on it as real OS processes,
 *
 *   - a standalone broker (one `tributary broker start --zookeeper …` process, its own chroot)
 *     with an acks=−1 idempotent producer (test/support/replicated-cluster.ts's Workload) on a
 *     topic of 4 partitions;
 *   - optionally a replicated cluster of 3 brokers (RF 3, min ISR 2) with its own workload;
 *   - a ZooKeeper-coordinated consumer group of group-member processes
 *     (test/support/group-member.ts) reading the standalone topic, each printing what it consumed;
 *   - optionally the loader (zookeeper-loader.ts): `tributary etl run` processes whose lease is
 *     `/etl/locks/<load>` in the standalone chroot.
 *
 * It answers what a scenario checks: who leads the ensemble, what is not yet re-registered or
 * owned (`unhealthy`), committed offsets that went backwards (a poller reads every offset node
 * every 100 ms: a stale commit by a consumer that lost its partitions would show as one), and at
 * the end the checks over everything recorded (`finish`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createLogger } from '../../src/common/logger.js';
import { ZooKeeperStore } from '../../src/coordination/zookeeper-store.js';
import { brokerIdsPath, consumerIdsPath, offsetPath, offsetsPath, ownerPath } from '../../src/coordination/paths.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startZooKeeperEnsemble, type ZooKeeperCluster } from '../services/zookeeper.js';
import { startLineProcess, type LineProcess } from '../support/line-process.js';
import { residentBytes } from '../support/process-memory.js';
import { ReplicatedCluster, type Workload } from '../support/replicated-cluster.js';
import { checkReplicationHistory, type CheckResult } from '../support/replication-history.js';
import { LoaderRig } from './zookeeper-loader.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const quiet = createLogger({ name: 'zookeeper-chaos-observer', level: 'silent' });

export const GROUP = 'zk-chaos';
export const GROUP_TOPIC = 'zk-events';
export const GROUP_PARTITIONS = 4;
export const REPLICATED_TOPIC = 'zk-replicated';
export const LOADER_TOPIC = 'zk-views';
/** Session timeout of the group members: a pause longer than this costs a member its partitions. */
export const MEMBER_SESSION_MS = 4_000;
/** Session timeout of the brokers (BASE_TEST_SETTINGS) and of the loader's store (its default). */
export const BROKER_SESSION_MS = 6_000;
export const LOADER_SESSION_MS = 6_000;

export interface WorldOptions {
  readonly run: ServiceRun;
  readonly members: number;
  readonly replicated: boolean;
  readonly loader: boolean;
  /** Sends per second of each workload; default 100. */
  readonly ratePerSecond?: number;
  readonly say?: (line: string) => void;
}

export interface Member {
  readonly index: number;
  readonly process: LineProcess;
  paused: boolean;
}

export interface GroupReport {
  /** Records in the standalone topic's final read. */
  readonly records: number;
  /** Of those, not consumed by any member. */
  readonly missing: number;
  /** Consumed records beyond the first copy of each (at-least-once redelivery). */
  readonly duplicates: number;
  readonly members: number;
  readonly memberExits: readonly string[];
}

export interface WorldReport {
  readonly standalone: CheckResult;
  readonly replicated: CheckResult | undefined;
  readonly group: GroupReport;
  readonly offsetRegressions: readonly string[];
  /** Session expiries logged by brokers and members (each followed by a re-registration). */
  readonly sessionsExpired: number;
  readonly peakRssBytes: number;
}

export class ZooKeeperWorld {
  readonly members: Member[] = [];
  readonly offsetRegressions: string[] = [];
  private readonly committed = new Map<number, { offset: bigint; version: number }>();
  private polling = true;
  private poller: Promise<void> = Promise.resolve();
  private peakRss = 0;
  private rssTimer: NodeJS.Timeout | undefined;
  private memberCount = 0;

  private constructor(
    private readonly options: WorldOptions,
    readonly ensemble: ZooKeeperCluster,
    readonly standalone: ReplicatedCluster,
    readonly standaloneWorkload: Workload,
    readonly replicated: ReplicatedCluster | undefined,
    readonly replicatedWorkload: Workload | undefined,
    /** A session on the standalone chroot, long enough to outlive any leader election. */
    readonly observer: ZooKeeperStore,
    /** The same on the replicated chroot. */
    readonly replicatedObserver: ZooKeeperStore | undefined,
    readonly loader: LoaderRig | undefined,
  ) {}

  static async start(options: WorldOptions): Promise<ZooKeeperWorld> {
    const say = options.say ?? (() => undefined);
    const ensemble = await startZooKeeperEnsemble(options.run);
    const cleanups: (() => Promise<unknown>)[] = [() => ensemble.stop()];
    try {
      say(`ZooKeeper ensemble ${ensemble.connectString}`);
      const standalone = await ReplicatedCluster.start({ run: options.run, zookeeper: ensemble.connectString, brokers: 1, firstBrokerId: 1, replicationDefaults: false, name: 'zk-chaos-standalone' });
      cleanups.push(() => standalone.close());
      await standalone.createTopic(GROUP_TOPIC, { partitions: GROUP_PARTITIONS, replicationFactor: 1 });
      const observer = await ZooKeeperStore.connect(standalone.zookeeperConnect, { sessionTimeoutMs: 30_000, operationTimeoutMs: 3_000, logger: quiet });
      cleanups.push(() => observer.close());
      let replicated: ReplicatedCluster | undefined;
      let replicatedObserver: ZooKeeperStore | undefined;
      if (options.replicated) {
        replicated = await ReplicatedCluster.start({ run: options.run, zookeeper: ensemble.connectString, brokers: 3, firstBrokerId: 11, name: 'zk-chaos-replicated' });
        cleanups.push(() => replicated!.close());
        await replicated.createTopic(REPLICATED_TOPIC, { partitions: 3, replicationFactor: 3 });
        replicatedObserver = await ZooKeeperStore.connect(replicated.zookeeperConnect, { sessionTimeoutMs: 30_000, operationTimeoutMs: 3_000, logger: quiet });
        cleanups.push(() => replicatedObserver!.close());
      }
      let loader: LoaderRig | undefined;
      if (options.loader) {
        await standalone.createTopic(LOADER_TOPIC, { partitions: 2, replicationFactor: 1 });
        loader = await LoaderRig.start({ run: options.run, bootstrap: standalone.bootstrap(), zookeeper: standalone.zookeeperConnect, topic: LOADER_TOPIC, partitions: 2 });
        cleanups.push(() => loader!.close());
      }
      const rate = options.ratePerSecond ?? 100;
      const standaloneWorkload = await standalone.startWorkload({ topic: GROUP_TOPIC, idempotent: true, acks: -1, ratePerSecond: rate, consumersPerPartition: 0 });
      const replicatedWorkload = replicated === undefined ? undefined : await replicated.startWorkload({ topic: REPLICATED_TOPIC, idempotent: true, acks: -1, ratePerSecond: rate, consumersPerPartition: 0 });
      const world = new ZooKeeperWorld(options, ensemble, standalone, standaloneWorkload, replicated, replicatedWorkload, observer, replicatedObserver, loader);
      for (let index = 0; index < options.members; index += 1) world.startMember();
      world.poller = world.pollOffsets();
      world.rssTimer = setInterval(() => world.sampleRss(), 500);
      await world.waitHealthy(90_000);
      say(`world up: ${options.members} group members, ${replicated === undefined ? 'standalone broker' : 'standalone broker and 3 replicated brokers'}${loader === undefined ? '' : ', loader'}`);
      return world;
    } catch (error) {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      throw error;
    }
  }

  private startMember(): Member {
    this.memberCount += 1;
    const index = this.memberCount;
    const child = startLineProcess({
      run: this.options.run,
      name: `zk-chaos-member-${index}-${Date.now()}`,
      command: process.execPath,
      args: [
        '--import', 'tsx', join(root, 'test', 'support', 'group-member.ts'),
        '--zookeeper', this.standalone.zookeeperConnect, '--bootstrap', this.standalone.bootstrap().join(','),
        '--group', GROUP, '--topic', GROUP_TOPIC, '--streams', '1', '--reset', 'smallest',
        '--session-timeout', String(MEMBER_SESSION_MS), '--commit-interval', '500', '--rebalance-backoff', '1000', '--rebalance-retries', '30',
      ],
      cwd: root,
    });
    const member: Member = { index, process: child, paused: false };
    this.members.push(member);
    return member;
  }

  /** The consumer id a member logged at its start ('member started'). */
  consumerIdOf(member: Member): string | undefined {
    return /"consumerId":"([^"]+)"[^\n]*"msg":"member started"/.exec(member.process.stderr())?.[1];
  }

  /** The node leading the ensemble now, undefined while none does (an election). */
  async leader(): Promise<number | undefined> {
    const modes = await Promise.all(this.ensemble.nodes.map(async (node) => (node.daemon.hasExited() ? 'down' : await this.ensemble.mode(node.id).catch(() => 'down'))));
    const leaders = this.ensemble.nodes.filter((_, index) => modes[index] === 'leader');
    return leaders.length === 1 ? leaders[0]?.id : undefined;
  }

  /** Whether the ensemble takes writes now (a quorum with a leader). */
  async quorumWrites(): Promise<boolean> {
    try {
      await this.observer.set('/', Buffer.from(String(Date.now())));
      return true;
    } catch {
      return false;
    }
  }

  /**
   * What is not as it should be, empty when all is well: brokers missing from /brokers/ids, group
   * members (not paused) missing from the consumer registry or registered twice, partitions of the
   * group without an owner among the registered members, members that exited.
   */
  async unhealthy(): Promise<string[]> {
    const problems: string[] = [];
    try {
      const ids = new Set((await this.observer.children(brokerIdsPath())) ?? []);
      for (const id of this.standalone.liveBrokerIds()) if (!ids.has(String(id))) problems.push(`standalone broker ${id} not in /brokers/ids`);
      if (this.replicated !== undefined && this.replicatedObserver !== undefined) {
        const replicatedIds = new Set((await this.replicatedObserver.children(brokerIdsPath())) ?? []);
        for (const id of this.replicated.liveBrokerIds()) if (!replicatedIds.has(String(id))) problems.push(`replicated broker ${id} not in /brokers/ids`);
      }
      const registered = (await this.observer.children(consumerIdsPath(GROUP))) ?? [];
      const live = this.members.filter((member) => !member.paused && !member.process.hasExited());
      for (const member of this.members) if (member.process.hasExited()) problems.push(`group member ${member.index} exited`);
      const liveIds = live.map((member) => this.consumerIdOf(member));
      for (const [position, id] of liveIds.entries()) if (id === undefined || !registered.includes(id)) problems.push(`group member ${live[position]?.index} not in the consumer registry`);
      const pausedIds = new Set(this.members.filter((member) => member.paused).map((member) => this.consumerIdOf(member)));
      const owners = new Set(registered.filter((id) => !pausedIds.has(id)));
      const owning = new Set<string>();
      for (let partition = 0; partition < GROUP_PARTITIONS; partition += 1) {
        const owner = await this.ownerOf(partition);
        if (owner !== undefined) owning.add(owner);
        if (owner === undefined || !owners.has(owner)) problems.push(`partition ${partition} ${owner === undefined ? 'has no owner' : `is owned by ${owner}, not a live member`}`);
      }
      // Full ownership: with no more members than partitions, the range assignment gives each one some.
      if (live.length <= GROUP_PARTITIONS) {
        for (const [position, id] of liveIds.entries()) if (id !== undefined && !owning.has(id)) problems.push(`group member ${live[position]?.index} owns no partition`);
      }
    } catch (error) {
      problems.push(`ZooKeeper: ${(error as Error).message}`);
    }
    return problems;
  }

  /** The consumer id owning a partition of the group's topic now (undefined: none). */
  async ownerOf(partition: number): Promise<string | undefined> {
    const node = await this.observer.get(ownerPath(GROUP, GROUP_TOPIC, partition));
    return node?.data.toString('utf8').replace(/-\d+$/, '');
  }

  /** Until `unhealthy` is empty and both workloads have had new sends acknowledged; the milliseconds it took. */
  async waitHealthy(timeoutMs: number, since = Date.now()): Promise<number> {
    const standaloneAcks = this.standaloneWorkload.acknowledged();
    const replicatedAcks = this.replicatedWorkload?.acknowledged() ?? 0;
    const deadline = Date.now() + timeoutMs;
    let last: string[] = [];
    for (;;) {
      last = await this.unhealthy();
      if (this.standaloneWorkload.acknowledged() <= standaloneAcks) last.push('no new acknowledgement from the standalone broker');
      if (this.replicatedWorkload !== undefined && this.replicatedWorkload.acknowledged() <= replicatedAcks) last.push('no new acknowledgement from the replicated cluster');
      if (last.length === 0) return Date.now() - since;
      if (Date.now() > deadline) throw new Error(`not recovered after ${timeoutMs} ms: ${last.join('; ')}`);
      await sleep(100);
    }
  }

  /** Every 100 ms: each committed offset of the group; one that went backwards is a regression. */
  private async pollOffsets(): Promise<void> {
    while (this.polling) {
      try {
        for (const child of (await this.observer.children(offsetsPath(GROUP, GROUP_TOPIC))) ?? []) {
          const partition = Number(child);
          const node = await this.observer.get(offsetPath(GROUP, GROUP_TOPIC, partition));
          if (node === undefined) continue;
          const offset = BigInt(/^\d+/.exec(node.data.toString('utf8'))?.[0] ?? '0');
          const before = this.committed.get(partition);
          if (before !== undefined && node.version > before.version && offset < before.offset) {
            this.offsetRegressions.push(`committed offset of ${GROUP_TOPIC}-${partition} went back from ${before.offset} to ${offset} (node version ${before.version} → ${node.version})`);
          }
          if (before === undefined || node.version > before.version) this.committed.set(partition, { offset: offset > (before?.offset ?? -1n) ? offset : (before?.offset ?? offset), version: node.version });
        }
      } catch {
        // An election in progress: read again next time.
      }
      await sleep(100);
    }
  }

  private sampleRss(): void {
    const pids = [
      ...this.standalone.brokerIds.map((id) => this.standalone.broker(id).daemon.pid),
      ...(this.replicated?.brokerIds.map((id) => this.replicated!.broker(id).daemon.pid) ?? []),
    ];
    for (const pid of pids) this.peakRss = Math.max(this.peakRss, residentBytes(pid));
  }

  /** SIGSTOP a group member. */
  pauseMember(member: Member): void {
    member.process.signal('SIGSTOP');
    member.paused = true;
  }

  resumeMember(member: Member): void {
    member.process.signal('SIGCONT');
    member.paused = false;
  }

  /**
   * Stops producing, reads both topics back, waits until the group has consumed the whole
   * standalone topic, and checks everything: acks=−1 records lost, duplicates in the logs
   * (idempotent producers: none allowed) and in the group's consumption (counted).
   */
  async finish(): Promise<WorldReport> {
    for (const member of this.members) if (member.paused) this.resumeMember(member);
    await this.standaloneWorkload.stop({ drainTimeoutMs: 30_000 });
    await this.replicatedWorkload?.stop({ drainTimeoutMs: 30_000 });
    const standaloneRead = await this.standalone.readAll(GROUP_TOPIC, { timeoutMs: 120_000 });
    const standalone = checkReplicationHistory(this.standalone.history(GROUP_TOPIC, standaloneRead));
    let replicated: CheckResult | undefined;
    if (this.replicated !== undefined) {
      const read = await this.replicated.readAll(REPLICATED_TOPIC, { timeoutMs: 120_000 });
      replicated = checkReplicationHistory(this.replicated.history(REPLICATED_TOPIC, read));
    }
    // The group: every record of the final read consumed by some member (within 120 s).
    const wanted = new Set(standaloneRead.flatMap(({ partition, records }) => records.map((record) => `${partition}/${record.offset}`)));
    const deadline = Date.now() + 120_000;
    let consumed = this.consumed();
    while ([...wanted].some((name) => !consumed.seen.has(name)) && Date.now() < deadline) {
      await sleep(500);
      consumed = this.consumed();
    }
    const missing = [...wanted].filter((name) => !consumed.seen.has(name)).length;
    this.polling = false;
    await this.poller;
    if (this.rssTimer !== undefined) clearInterval(this.rssTimer);
    return {
      standalone,
      replicated,
      group: {
        records: wanted.size,
        missing,
        duplicates: consumed.lines - consumed.seen.size,
        members: this.members.length,
        memberExits: this.members.filter((member) => member.process.hasExited()).map((member) => `member ${member.index} exited`),
      },
      offsetRegressions: [...this.offsetRegressions],
      sessionsExpired: this.sessionsExpired(),
      peakRssBytes: this.peakRss,
    };
  }

  /** What the members printed: distinct `partition/offset` and the number of lines. */
  consumed(): { seen: Set<string>; lines: number } {
    const seen = new Set<string>();
    let lines = 0;
    for (const member of this.members) {
      for (const line of member.process.lines) {
        if (line === '') continue;
        try {
          const parsed = JSON.parse(line) as { partition: number; offset: string };
          seen.add(`${parsed.partition}/${parsed.offset}`);
          lines += 1;
        } catch {
          // not a record line
        }
      }
    }
    return { seen, lines };
  }

  /** Session expiries the brokers and members logged. */
  sessionsExpired(): number {
    const count = (text: string): number => text.split('ZooKeeper session expired').length - 1;
    let total = 0;
    for (const cluster of [this.standalone, this.replicated]) {
      if (cluster === undefined) continue;
      for (const id of cluster.brokerIds) {
        try {
          total += count(readFileSync(cluster.broker(id).logFile, 'utf8'));
        } catch {
          // no log yet
        }
      }
    }
    for (const member of this.members) total += count(member.process.stderr());
    return total;
  }

  /** Copies the members' output and the brokers' logs to a new folder under the temp dir; returns it. */
  saveEvidence(label: string): string {
    const dir = join(tmpdir(), `tributary-zk-chaos-${label}-${Date.now()}`);
    mkdirSync(dir, { recursive: true });
    for (const member of this.members) {
      writeFileSync(join(dir, `member-${member.index}.stderr`), member.process.stderr());
      writeFileSync(join(dir, `member-${member.index}.stdout`), member.process.lines.join('\n'));
    }
    for (const cluster of [this.standalone, this.replicated]) {
      for (const id of cluster?.brokerIds ?? []) {
        try {
          copyFileSync(cluster!.broker(id).logFile, join(dir, `broker-${id}.log`));
        } catch {
          // no log
        }
      }
    }
    return dir;
  }

  async close(): Promise<void> {
    this.polling = false;
    if (this.rssTimer !== undefined) clearInterval(this.rssTimer);
    await this.poller.catch(() => undefined);
    await Promise.allSettled(this.members.map((member) => (member.paused ? (this.resumeMember(member), member.process.stop(5_000)) : member.process.stop(5_000))));
    await this.observer.close().catch(() => undefined);
    await this.replicatedObserver?.close().catch(() => undefined);
    await this.standalone.close().catch(() => undefined);
    await this.replicated?.close().catch(() => undefined);
    await this.loader?.close().catch(() => undefined);
    await this.ensemble.stop().catch(() => undefined);
  }
}
