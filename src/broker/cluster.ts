/**
 * The broker's view of its cluster, kept in the coordination store (ZooKeeper, or the in-process
 * store in standalone mode) with the layout of ARCHITECTURE.md:
 *
 *   /brokers/ids/<id>                              ephemeral  {"host","port","endpoints","listener_security_protocol_map",
 *                                                              "rack"?,"startedAt","storage_id","incarnation"} (broker-endpoints.ts)
 *   /brokers/topics/<topic>                        persistent {"version":2,"partitions":{"0":[1,2,3],…}} (topic-assignment.ts)
 *   /brokers/topics/<topic>/partitions/<p>/state   persistent leader, leader epoch, ISR (partition-state.ts)
 *   /config/topics/<topic>                         persistent {"config":{"retention.ms":"…",…}}
 *   /controller                                    ephemeral  {"version":1,"brokerid":N,"timestamp":"…"}
 *
 * Every broker watches them and keeps a cache that Metadata, Produce, Fetch and the replica
 * manager read. Watches are one-shot and re-armed on every fire; after a session expires the
 * broker registers again and re-reads everything. A change of one partition's state re-reads just
 * that node (a failover changes many states at once; re-reading every topic for each would be
 * quadratic); everything else re-reads the whole picture, coalescing bursts of events.
 *
 * The registration carries the data dir's storage id (a wiped disk shows a new one) and an
 * incarnation, new at every start: the controller compares the leader's incarnation with the one
 * it was elected under, so a leader that restarted never resumes leadership from a state written
 * before its restart (replication.md §5.3).
 */
import { randomUUID } from 'node:crypto';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { CoordinationStore, WatchEvent } from '../coordination/store.js';
import { CoalescingReload, retryWhenRetriable } from '../coordination/coalescing-reload.js';
import {
  brokerIdsPath,
  brokerPath,
  controllerPath,
  partitionStatePath,
  topicConfigPath,
  topicConfigsPath,
  topicPath,
  topicsPath,
} from '../coordination/paths.js';
import { decodePartitionState, type PartitionState } from '../coordination/partition-state.js';
import { assignNewPartitions, assignReplicas, validateManualAssignment } from '../coordination/replica-placement.js';
import { decodeTopicAssignment, encodeTopicAssignment, type ReplicaAssignment } from '../coordination/topic-assignment.js';
import { endpointOn, endpointRegistration, endpointsOfRegistration, type BrokerEndpoint } from './broker-endpoints.js';

export interface BrokerInfo {
  readonly id: number;
  /** The inter-broker listener's address (what readers from before listeners use). */
  readonly host: string;
  readonly port: number;
  /** One per listener; Metadata answers each client with the endpoints of the listener it came in on. */
  readonly endpoints?: readonly BrokerEndpoint[];
  readonly rack?: string;
  readonly startedAt?: number;
  /** The storage id of the broker's data dir (meta.properties). */
  readonly storageId?: string;
  /** New at every start of the broker process. */
  readonly incarnation?: string;
}

export interface TopicAssignment {
  readonly name: string;
  /** Partition number → its replicas, in preference order (the first is the preferred leader). */
  readonly partitions: ReplicaAssignment;
  readonly configs: Readonly<Record<string, string>>;
}

/** A partition's state as last read, with the node version conditional writes must name. */
export interface PartitionStateEntry {
  readonly state: PartitionState;
  readonly version: number;
}

export interface PartitionKey {
  readonly topic: string;
  readonly partition: number;
}

export interface ClusterListener {
  /** The set of topics or their assignments or configs changed. */
  topicsChanged(): void;
  /** The set of live brokers changed (group coordinators and leadership move with it). */
  brokersChanged?(): void;
  /** These partitions' leader/ISR states changed (or were read for the first time). */
  partitionStatesChanged?(partitions: readonly PartitionKey[]): void;
  /** The elected controller changed. */
  controllerChanged?(controllerId: number): void;
}

export interface CreateTopicOptions {
  /** Copies of each partition; defaults to 1. */
  readonly replicationFactor?: number;
  /** Replicas chosen by the caller (CreateTopics' Assignments), instead of the placement's. */
  readonly assignment?: ReplicaAssignment;
}

/** Tries at a conditional config write before giving up to a storm of concurrent changes. */
const ALTER_CONFIG_ATTEMPTS = 5;
/**
 * How long a deletion keeps removing what the controller adds under the topic meanwhile. The
 * controller writes a new topic's first states one partition at a time, so a deletion racing it
 * may find new children several times over; each round removes all it finds, and the controller
 * stops once the topic's node is gone, so the rounds end well before this bound.
 */
const DELETE_RACE_LIMIT_MS = 30_000;

export class TopicExistsError extends TributaryError {
  constructor(topic: string) {
    super({ code: 'TOPIC_ALREADY_EXISTS', message: `topic ${topic} already exists` });
  }
}

export class UnknownTopicError extends TributaryError {
  constructor(topic: string) {
    super({ code: 'UNKNOWN_TOPIC_OR_PARTITION', message: `topic ${topic} does not exist` });
  }
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class Cluster {
  private readonly brokers = new Map<number, BrokerInfo>();
  private readonly topics = new Map<string, TopicAssignment>();
  private readonly states = new Map<string, PartitionStateEntry>();
  private controller = -1;
  private closed = false;
  /** Re-reads of the whole state, coalesced; a failure is logged and, when retriable, read again soon. */
  private readonly reload: CoalescingReload;
  /** Bumped by local topic changes, so a concurrent reload does not undo them. */
  private generation = 0;
  /** Paths with a watch armed on the current session. */
  private readonly armed = new Set<string>();
  /** Partition states being re-read after their watch fired (one read per partition at a time). */
  private readonly stateReads = new Map<string, { again: boolean }>();
  /** Waiters for topics whose every partition should get a state (CreateTopics waits for its leaders). */
  private readonly stateWaiters = new Set<() => void>();
  /** This process's incarnation: a restart of the same broker id is told apart by it. */
  readonly incarnation = randomUUID();

  constructor(
    private readonly store: CoordinationStore,
    readonly self: BrokerInfo,
    private readonly listener: ClusterListener,
    private readonly logger: Logger,
  ) {
    const isClosed = (): boolean => this.closed;
    this.reload = new CoalescingReload(() => this.load(), {
      isClosed,
      // A lost connection may have dropped watches' notifications: read everything again soon.
      onFailure: retryWhenRetriable({ logger, message: 'could not read cluster state from the coordination store', isClosed, retry: () => void this.refresh() }),
    });
  }

  /** Registers this broker and loads the cluster state; re-registers after a session is rebuilt. */
  async start(): Promise<void> {
    await this.store.ensurePath(brokerIdsPath());
    await this.store.ensurePath(topicsPath());
    await this.store.ensurePath(topicConfigsPath());
    await this.register();
    this.store.onSessionEvent((event) => {
      if (event === 'reconnected-new-session' && !this.closed) {
        this.armed.clear(); // watches died with the old session
        this.logger.warn('coordination session was rebuilt; registering again');
        this.register(true)
          .then(() => this.refresh())
          .catch((error: unknown) => this.logger.error({ err: error }, 'could not register again after session expiry'));
      }
    });
    await this.refresh();
  }

  async stop(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.store.delete(brokerPath(this.self.id));
    } catch {
      // Gone already (session closed or expired): nothing to deregister.
    }
    for (const wake of this.stateWaiters) wake();
  }

  liveBrokers(): BrokerInfo[] {
    return [...this.brokers.values()].sort((a, b) => a.id - b.id);
  }

  /**
   * The live brokers as clients of listener `listenerName` must reach them: each with that
   * listener's advertised host and port. A broker without that listener is left out (Kafka's rule:
   * a client stays on the listener it came in on).
   */
  liveBrokersOn(listenerName: string): BrokerInfo[] {
    const reachable: BrokerInfo[] = [];
    for (const broker of this.liveBrokers()) {
      const endpoint = endpointOn(broker, listenerName);
      if (endpoint !== undefined) reachable.push({ ...broker, host: endpoint.host, port: endpoint.port });
    }
    return reachable;
  }

  broker(id: number): BrokerInfo | undefined {
    return this.brokers.get(id);
  }

  isLive(brokerId: number): boolean {
    return this.brokers.has(brokerId);
  }

  /** The elected controller's broker id, −1 when none is known. */
  controllerId(): number {
    return this.controller;
  }

  topic(name: string): TopicAssignment | undefined {
    return this.topics.get(name);
  }

  topicNames(): string[] {
    return [...this.topics.keys()].sort();
  }

  /** The partition's leader/ISR state as last read, undefined before its state exists. */
  partitionState(topic: string, partition: number): PartitionStateEntry | undefined {
    return this.states.get(partitionKey(topic, partition));
  }

  /** Every partition of every topic, with its replicas and state (the controller's view). */
  allPartitions(): { topic: string; partition: number; replicas: readonly number[]; state: PartitionStateEntry | undefined }[] {
    const all: { topic: string; partition: number; replicas: readonly number[]; state: PartitionStateEntry | undefined }[] = [];
    for (const assignment of this.topics.values()) {
      for (const [partition, replicas] of assignment.partitions) all.push({ topic: assignment.name, partition, replicas, state: this.states.get(partitionKey(assignment.name, partition)) });
    }
    return all;
  }

  /** Partitions this broker holds a replica of. */
  localPartitions(): { topic: string; partition: number; replicas: readonly number[] }[] {
    const local: { topic: string; partition: number; replicas: readonly number[] }[] = [];
    for (const assignment of this.topics.values()) {
      for (const [partition, replicas] of assignment.partitions) if (replicas.includes(this.self.id)) local.push({ topic: assignment.name, partition, replicas });
    }
    return local;
  }

  /** Records a state this broker read or wrote itself (newer versions only), and tells the listener. */
  noteState(topic: string, partition: number, entry: PartitionStateEntry): void {
    if (this.setState(topic, partition, entry)) this.listener.partitionStatesChanged?.([{ topic, partition }]);
  }

  /**
   * Creates a topic: replicas placed over the live brokers (racks spread when every broker has
   * one) or as the caller assigned them, configs written first so brokers that see the topic also
   * see its settings. The controller then writes each partition's first state (leader, ISR).
   */
  async createTopic(name: string, partitions: number, configs: Readonly<Record<string, string>> = {}, options: CreateTopicOptions = {}): Promise<TopicAssignment> {
    if (await this.store.exists(topicPath(name))) throw new TopicExistsError(name);
    const brokers = this.liveBrokers();
    if (brokers.length === 0) throw new TributaryError({ code: 'NO_BROKERS', message: 'no live broker to assign partitions to', retriable: true });
    let assignment: ReplicaAssignment;
    if (options.assignment !== undefined) {
      validateManualAssignment(options.assignment, new Set(brokers.map((broker) => broker.id)));
      assignment = options.assignment;
    } else {
      assignment = assignReplicas(brokers.map(placementBroker), partitions, options.replicationFactor ?? 1);
    }
    if (Object.keys(configs).length > 0) await this.writeJson(topicConfigPath(name), { config: configs });
    try {
      await this.store.create(topicPath(name), encodeTopicAssignment(assignment), 'persistent');
    } catch (error) {
      if ((error as TributaryError).code === 'NODE_EXISTS') throw new TopicExistsError(name);
      throw error;
    }
    this.generation += 1;
    const created = { name, partitions: assignment, configs: { ...configs } };
    this.topics.set(name, created);
    return created;
  }

  /**
   * Grows a topic to `count` partitions, each new one with the topic's replication factor, placed
   * as Kafka places them. Written with the version read, so two concurrent changes cannot
   * overwrite each other.
   */
  async addPartitions(name: string, count: number): Promise<TopicAssignment> {
    const node = await this.store.get(topicPath(name));
    if (node === undefined) throw new UnknownTopicError(name);
    const existing = decodeTopicAssignment(node.data, topicPath(name));
    const current = existing.size;
    if (count <= current) {
      throw new TributaryError({ code: 'INVALID_PARTITIONS', message: `topic ${name} has ${current} partitions; the new count must be larger, not ${count}` });
    }
    const brokers = this.liveBrokers();
    if (brokers.length === 0) throw new TributaryError({ code: 'NO_BROKERS', message: 'no live broker to assign partitions to', retriable: true });
    const added = assignNewPartitions(brokers.map(placementBroker), existing, count);
    const partitions = new Map<number, readonly number[]>([...existing, ...added]);
    await this.store.set(topicPath(name), encodeTopicAssignment(partitions), node.version);
    this.generation += 1;
    const previous = this.topics.get(name);
    const updated = { name, partitions, configs: previous?.configs ?? {} };
    this.topics.set(name, updated);
    this.listener.topicsChanged();
    return updated;
  }

  /**
   * Resolves true once every partition of `topic` has a state with a leader in this broker's
   * cache (the controller wrote it and the watch brought it here), false after `timeoutMs` or as
   * soon as the topic is gone again (deleted meanwhile: there is nothing left to wait for).
   */
  async waitForLeaders(topic: string, timeoutMs: number): Promise<boolean> {
    const ready = (): boolean => {
      const assignment = this.topics.get(topic);
      if (assignment === undefined) return false;
      for (const partition of assignment.partitions.keys()) {
        const entry = this.states.get(partitionKey(topic, partition));
        if (entry === undefined || entry.state.leader < 0) return false;
      }
      return true;
    };
    if (ready()) return true;
    return new Promise((resolve) => {
      const check = (): void => {
        if (!ready() && !this.closed && this.topics.has(topic)) return;
        finish(ready());
      };
      const timer = setTimeout(() => finish(false), Math.max(0, timeoutMs));
      const finish = (result: boolean): void => {
        clearTimeout(timer);
        this.stateWaiters.delete(check);
        resolve(result);
      };
      this.stateWaiters.add(check);
    });
  }

  /**
   * Changes a topic's config overrides in `/config/topics/<topic>`: `change` gets the overrides as
   * stored and returns the whole new set, or throws to refuse it (nothing is written then). The
   * node is written at the version read (created when absent), so two concurrent changes cannot
   * overwrite each other: after a lost race `change` runs again on the newer set. Every broker's
   * watch on the node then applies the new set to its open logs; this one's cache is updated now.
   * With `validateOnly`, returns the new set without writing it.
   */
  async alterTopicConfigs(
    name: string,
    change: (current: Readonly<Record<string, string>>) => Record<string, string>,
    options: { readonly validateOnly: boolean },
  ): Promise<Record<string, string>> {
    const path = topicConfigPath(name);
    for (let attempt = 1; attempt <= ALTER_CONFIG_ATTEMPTS; attempt += 1) {
      if (!(await this.store.exists(topicPath(name)))) throw new UnknownTopicError(name);
      const node = await this.store.get(path);
      const current = node === undefined ? {} : ((JSON.parse(node.data.toString('utf8')) as { config?: Record<string, string> }).config ?? {});
      const next = change(current);
      if (options.validateOnly) return next;
      const data = Buffer.from(JSON.stringify({ config: next }));
      try {
        // Atomic with a check that the topic still exists: a topic deleted meanwhile must not
        // leave overrides behind for a later topic of the same name.
        await this.store.transaction([
          { op: 'check', path: topicPath(name) },
          node === undefined ? { op: 'create', path, data, mode: 'persistent' } : { op: 'set', path, data, expectedVersion: node.version },
        ]);
      } catch (error) {
        const code = (error as TributaryError).code;
        // The topic or its overrides changed since they were read: start over (a deleted topic is
        // then reported as unknown).
        if (code === 'BAD_VERSION' || code === 'NODE_EXISTS' || code === 'NO_NODE') continue;
        throw error;
      }
      this.generation += 1;
      const previous = this.topics.get(name);
      if (previous !== undefined) this.topics.set(name, { ...previous, configs: { ...next } });
      this.listener.topicsChanged();
      return next;
    }
    throw new TributaryError({
      code: 'CONCURRENT_CONFIG_CHANGE',
      message: `the configs of topic ${name} changed ${ALTER_CONFIG_ATTEMPTS} times while this change was being applied; try again`,
      retriable: true,
    });
  }

  /** Deletes a topic: its assignment and partition states, then its overrides. */
  async deleteTopic(name: string): Promise<void> {
    if (!(await this.store.exists(topicPath(name)))) throw new UnknownTopicError(name);
    // The states under the topic go first (a node with children cannot be deleted); brokers
    // watching a state then see it vanish and stop serving the partition. The controller may be
    // writing a first state meanwhile (NOT_EMPTY: delete again), or another deletion may finish
    // first (NO_NODE: the topic is gone, as for a deletion that found nothing).
    const deadline = Date.now() + DELETE_RACE_LIMIT_MS;
    for (;;) {
      try {
        await this.store.deleteRecursive(topicPath(name));
        break;
      } catch (error) {
        const code = (error as TributaryError).code;
        if (code === 'NO_NODE') throw new UnknownTopicError(name);
        if (code !== 'NOT_EMPTY' || Date.now() > deadline) throw error;
      }
    }
    try {
      await this.store.delete(topicConfigPath(name));
    } catch {
      // The topic had no overrides.
    }
    this.generation += 1;
    this.topics.delete(name);
    this.dropStatesOf(name);
    this.listener.topicsChanged();
  }

  /** Creates /brokers/ids/<id>; `untilRegistered`: retry retriable failures for as long as it takes (re-registration). */
  private async register(untilRegistered = false): Promise<void> {
    const registration: Record<string, unknown> = {
      host: this.self.host,
      port: this.self.port,
      ...(this.self.endpoints === undefined ? {} : endpointRegistration(this.self.endpoints)),
      ...(this.self.rack === undefined ? {} : { rack: this.self.rack }),
      startedAt: Date.now(),
      ...(this.self.storageId === undefined ? {} : { storage_id: this.self.storageId }),
      incarnation: this.incarnation,
    };
    const data = Buffer.from(JSON.stringify(registration));
    // After a crash the previous process's ephemeral node lives until its session times out: the
    // controller must see this broker gone before it sees it back (replication.md §5.3 step 2).
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (this.closed) return;
      try {
        await this.store.create(brokerPath(this.self.id), data, 'ephemeral');
        return;
      } catch (error) {
        const code = (error as TributaryError).code;
        if (code === 'NODE_EXISTS') {
          // A create whose answer was lost (a ZooKeeper leader election, a dropped connection) may
          // have registered us already: a node of this incarnation is ours (an expired session's
          // nodes are deleted before its owner hears of the expiry), never another broker's.
          if (await this.registeredByUs()) return;
          if (Date.now() > deadline) {
            throw new TributaryError({
              code: 'BROKER_ID_IN_USE',
              message: `broker id ${this.self.id} is registered by another live broker (or a previous run whose session has not expired yet); use another --id or wait`,
              cause: error,
            });
          }
        } else if (!(error instanceof TributaryError && error.retriable)) {
          throw error;
        } else {
          // ZooKeeper had no quorum or the connection dropped (the outcome is unknown: the next
          // try reads it). A re-registration after a session expiry that met a ZooKeeper leader
          // election used to give up for good (reported as BROKER_ID_IN_USE, and nothing tried
          // again), leaving a live, serving broker out of /brokers/ids. At start-up the wait is
          // bounded; once serving, the broker keeps trying.
          if (!untilRegistered && Date.now() > deadline) throw error;
          this.logger.warn({ err: error }, 'could not register in /brokers/ids yet; retrying');
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /** Whether /brokers/ids/<id> holds this process's registration (its incarnation). */
  private async registeredByUs(): Promise<boolean> {
    try {
      const node = await this.store.get(brokerPath(this.self.id));
      if (node === undefined) return false;
      return (JSON.parse(node.data.toString('utf8')) as { incarnation?: unknown }).incarnation === this.incarnation;
    } catch {
      return false;
    }
  }

  /** Re-reads brokers, topics, states and configs, re-arming the watches. Coalesces bursts of events. */
  private refresh(): Promise<void> {
    return this.reload.run();
  }

  /** A one-shot watcher for `path`, unless one is armed already (watches must not pile up). */
  private watch(path: string, onFire: () => void = () => void this.refresh()): ((event: WatchEvent) => void) | undefined {
    if (this.armed.has(path)) return undefined;
    this.armed.add(path);
    return () => {
      this.armed.delete(path);
      if (!this.closed) onFire();
    };
  }

  private stateWatch(topic: string, partition: number): ((event: WatchEvent) => void) | undefined {
    return this.watch(partitionStatePath(topic, partition), () => this.rereadState(topic, partition));
  }

  /** Re-reads one partition's state after its watch fired (and re-arms the watch). */
  private rereadState(topic: string, partition: number): void {
    const key = partitionKey(topic, partition);
    const running = this.stateReads.get(key);
    if (running !== undefined) {
      running.again = true;
      return;
    }
    const read = { again: false };
    this.stateReads.set(key, read);
    void (async () => {
      do {
        read.again = false;
        const changed = await this.readState(topic, partition);
        if (changed) this.listener.partitionStatesChanged?.([{ topic, partition }]);
      } while (read.again && !this.closed);
    })()
      .catch((error: unknown) => {
        if (this.closed) return;
        this.logger.warn({ err: error, topic, partition }, 'could not read a partition state; reading the whole cluster state again');
        setTimeout(() => void this.refresh(), 500).unref();
      })
      .finally(() => this.stateReads.delete(key));
  }

  /** Reads one state node with a watch (an exists-watch while it is missing). Returns whether the cache changed. */
  private async readState(topic: string, partition: number): Promise<boolean> {
    const entry = await this.fetchState(topic, partition);
    return entry !== undefined && this.setState(topic, partition, entry);
  }

  /**
   * One state node read with a watch armed on it: an exists-watch, which fires on its creation
   * (the controller writes it after the topic appears), change and deletion alike.
   */
  private async fetchState(topic: string, partition: number): Promise<PartitionStateEntry | undefined> {
    const path = partitionStatePath(topic, partition);
    const watcher = this.stateWatch(topic, partition);
    if (!(await this.store.exists(path, watcher))) return undefined;
    const node = await this.store.get(path);
    return node === undefined ? undefined : { state: decodePartitionState(node.data, path), version: node.version };
  }

  /** Caches a state unless an equal or newer version is cached already. Returns whether it changed. */
  private setState(topic: string, partition: number, entry: PartitionStateEntry): boolean {
    const key = partitionKey(topic, partition);
    const cached = this.states.get(key);
    if (cached !== undefined && cached.version >= entry.version) return false;
    this.states.set(key, entry);
    for (const wake of [...this.stateWaiters]) wake();
    return true;
  }

  private dropStatesOf(topic: string): void {
    for (const key of [...this.states.keys()]) if (key.startsWith(`${topic}\u0000`)) this.states.delete(key);
  }

  private async load(): Promise<void> {
    const generation = this.generation;
    const brokerIds = (await this.store.children(brokerIdsPath(), this.watch(brokerIdsPath()))) ?? [];
    const brokers = new Map<number, BrokerInfo>();
    for (const id of brokerIds) {
      const node = await this.store.get(brokerPath(Number(id)));
      if (node === undefined) continue;
      const info = JSON.parse(node.data.toString('utf8')) as { host: string; port: number; endpoints?: unknown; listener_security_protocol_map?: unknown; rack?: string; startedAt?: number; storage_id?: string; incarnation?: string };
      brokers.set(Number(id), {
        id: Number(id),
        host: info.host,
        port: info.port,
        endpoints: endpointsOfRegistration(info),
        ...(info.rack === undefined ? {} : { rack: info.rack }),
        ...(info.startedAt === undefined ? {} : { startedAt: info.startedAt }),
        ...(info.storage_id === undefined ? {} : { storageId: info.storage_id }),
        ...(info.incarnation === undefined ? {} : { incarnation: info.incarnation }),
      });
    }
    // An exists-watch fires on the election, the resignation and a change alike.
    const controllerNode = (await this.store.exists(controllerPath(), this.watch(controllerPath()))) ? await this.store.get(controllerPath()) : undefined;
    const controller = controllerNode === undefined ? -1 : controllerIdOf(controllerNode.data);
    const names = (await this.store.children(topicsPath(), this.watch(topicsPath()))) ?? [];
    const topics = new Map<string, TopicAssignment>();
    const stateUpdates: { topic: string; partition: number; entry: PartitionStateEntry }[] = [];
    for (const name of names) {
      const node = await this.store.get(topicPath(name), this.watch(topicPath(name)));
      if (node === undefined) continue;
      let partitions: ReplicaAssignment;
      try {
        partitions = decodeTopicAssignment(node.data, topicPath(name));
      } catch (error) {
        this.logger.error({ err: error, topic: name }, `topic ${name} is ignored: its assignment in the coordination store cannot be read; fix or delete ${topicPath(name)}`);
        continue;
      }
      // An exists-watch also fires when the overrides are created or changed later.
      const configPath = topicConfigPath(name);
      const config = (await this.store.exists(configPath, this.watch(configPath))) ? await this.store.get(configPath) : undefined;
      const configs = config === undefined ? {} : ((JSON.parse(config.data.toString('utf8')) as { config?: Record<string, string> }).config ?? {});
      topics.set(name, { name, partitions, configs });
      if (!this.topics.has(name)) this.dropStatesOf(name); // a topic re-created under an old name starts afresh
      for (const partition of partitions.keys()) {
        const statePath = partitionStatePath(name, partition);
        // A state whose watch is armed has not changed since it was read.
        if (this.armed.has(statePath) && this.states.has(partitionKey(name, partition))) continue;
        try {
          const entry = await this.fetchState(name, partition);
          if (entry !== undefined) stateUpdates.push({ topic: name, partition, entry });
        } catch (error) {
          if (!(error instanceof TributaryError) || error.code !== 'INVALID_PARTITION_STATE') throw error;
          this.logger.error({ err: error, topic: name, partition }, 'a partition state cannot be read; the partition has no leader until it is rewritten');
        }
      }
    }
    if (generation !== this.generation) {
      // This broker created or deleted a topic while the state was being read: read it again
      // rather than replace the newer cache with an older picture.
      this.reload.passAgain();
      return;
    }
    const brokersChanged =
      brokers.size !== this.brokers.size || [...brokers].some(([id, info]) => this.brokers.get(id)?.incarnation !== info.incarnation || !this.brokers.has(id));
    this.brokers.clear();
    for (const [id, info] of brokers) this.brokers.set(id, info);
    for (const name of this.topics.keys()) if (!topics.has(name)) this.dropStatesOf(name);
    this.topics.clear();
    for (const [name, topic] of topics) this.topics.set(name, topic);
    const changedStates: PartitionKey[] = [];
    for (const { topic, partition, entry } of stateUpdates) if (this.setState(topic, partition, entry)) changedStates.push({ topic, partition });
    const controllerChanged = controller !== this.controller;
    this.controller = controller;
    if (brokersChanged) this.listener.brokersChanged?.();
    this.listener.topicsChanged();
    if (changedStates.length > 0) this.listener.partitionStatesChanged?.(changedStates);
    if (controllerChanged) this.listener.controllerChanged?.(controller);
    for (const wake of [...this.stateWaiters]) wake();
  }

  private async writeJson(path: string, value: unknown): Promise<void> {
    const data = Buffer.from(JSON.stringify(value));
    try {
      await this.store.create(path, data, 'persistent');
    } catch (error) {
      if ((error as TributaryError).code !== 'NODE_EXISTS') throw error;
      await this.store.set(path, data);
    }
  }
}

function placementBroker(broker: BrokerInfo): { id: number; rack?: string } {
  return broker.rack === undefined ? { id: broker.id } : { id: broker.id, rack: broker.rack };
}

/** The broker id in `/controller` (Kafka's JSON), −1 when unreadable. */
export function controllerIdOf(data: Buffer): number {
  try {
    const parsed = JSON.parse(data.toString('utf8')) as { brokerid?: unknown };
    return typeof parsed.brokerid === 'number' && Number.isInteger(parsed.brokerid) ? parsed.brokerid : -1;
  } catch {
    return -1;
  }
}
