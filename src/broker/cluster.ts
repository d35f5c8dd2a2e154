/**
 * The broker's view of its cluster, kept in the coordination store (ZooKeeper, or the in-process
 * store in standalone mode) with the layout of ARCHITECTURE.md:
 *
 *   /brokers/ids/<id>          ephemeral  {"host","port","rack"?,"startedAt"}
 *   /brokers/topics/<topic>    persistent {"partitions":{"0":<brokerId>,…}}
 *   /config/topics/<topic>     persistent {"config":{"retention.ms":"…",…}}
 *
 * Every broker watches the three and keeps a cache that Metadata, Produce and Fetch read. Watches
 * are one-shot and re-armed on every fire; after a session expires the broker registers again
 * and re-reads everything. Changes to the partitions assigned to this broker are reported so the
 * broker opens or deletes their logs.
 */
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { CoordinationStore, WatchEvent } from '../coordination/store.js';
import { brokerIdsPath, brokerPath, topicConfigPath, topicPath, topicsPath, topicConfigsPath } from '../coordination/paths.js';

export interface BrokerInfo {
  readonly id: number;
  readonly host: string;
  readonly port: number;
  readonly rack?: string;
  readonly startedAt?: number;
}

export interface TopicAssignment {
  readonly name: string;
  /** Partition number → broker id. */
  readonly partitions: ReadonlyMap<number, number>;
  readonly configs: Readonly<Record<string, string>>;
}

export interface ClusterListener {
  /** The set of topics or their assignments or configs changed. */
  topicsChanged(): void;
  /** The set of live brokers changed (group coordinators move with it). */
  brokersChanged?(): void;
}

/** Tries at a conditional config write before giving up to a storm of concurrent changes. */
const ALTER_CONFIG_ATTEMPTS = 5;

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

export class Cluster {
  private readonly brokers = new Map<number, BrokerInfo>();
  private readonly topics = new Map<string, TopicAssignment>();
  private closed = false;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  /** Bumped by local topic changes, so a concurrent reload does not undo them. */
  private generation = 0;
  /** Paths with a watch armed on the current session. */
  private readonly armed = new Set<string>();

  constructor(
    private readonly store: CoordinationStore,
    readonly self: BrokerInfo,
    private readonly listener: ClusterListener,
    private readonly logger: Logger,
  ) {}

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
        this.register()
          .then(() => this.refresh())
          .catch((error: unknown) => this.logger.error({ err: error }, 'could not register again after session expiry'));
      }
    });
    await this.refresh();
  }

  async stop(): Promise<void> {
    this.closed = true;
    try {
      await this.store.delete(brokerPath(this.self.id));
    } catch {
      // Gone already (session closed or expired): nothing to deregister.
    }
  }

  liveBrokers(): BrokerInfo[] {
    return [...this.brokers.values()].sort((a, b) => a.id - b.id);
  }

  isLive(brokerId: number): boolean {
    return this.brokers.has(brokerId);
  }

  topic(name: string): TopicAssignment | undefined {
    return this.topics.get(name);
  }

  topicNames(): string[] {
    return [...this.topics.keys()].sort();
  }

  /** Partitions assigned to this broker. */
  localPartitions(): { topic: string; partition: number }[] {
    const local: { topic: string; partition: number }[] = [];
    for (const assignment of this.topics.values()) {
      for (const [partition, owner] of assignment.partitions) if (owner === this.self.id) local.push({ topic: assignment.name, partition });
    }
    return local;
  }

  /**
   * Creates a topic: partitions spread round-robin over the live brokers, configs written first so
   * brokers that see the topic also see its settings.
   */
  async createTopic(name: string, partitions: number, configs: Readonly<Record<string, string>> = {}): Promise<TopicAssignment> {
    if (await this.store.exists(topicPath(name))) throw new TopicExistsError(name);
    const brokers = this.liveBrokers();
    if (brokers.length === 0) throw new TributaryError({ code: 'NO_BROKERS', message: 'no live broker to assign partitions to', retriable: true });
    const start = Math.floor(Math.random() * brokers.length);
    const assignment: Record<string, number> = {};
    for (let partition = 0; partition < partitions; partition += 1) {
      assignment[String(partition)] = brokers[(start + partition) % brokers.length]?.id ?? this.self.id;
    }
    if (Object.keys(configs).length > 0) await this.writeJson(topicConfigPath(name), { config: configs });
    try {
      await this.store.create(topicPath(name), Buffer.from(JSON.stringify({ partitions: assignment })), 'persistent');
    } catch (error) {
      if ((error as TributaryError).code === 'NODE_EXISTS') throw new TopicExistsError(name);
      throw error;
    }
    this.generation += 1;
    const created = { name, partitions: new Map(Object.entries(assignment).map(([p, b]) => [Number(p), b])), configs: { ...configs } };
    this.topics.set(name, created);
    return created;
  }

  /**
   * Grows a topic to `count` partitions; each new partition goes to the live broker that holds the
   * fewest partitions of the topic (a broker that just joined, first). Written with the version
   * read, so two concurrent changes cannot overwrite each other.
   */
  async addPartitions(name: string, count: number): Promise<TopicAssignment> {
    const node = await this.store.get(topicPath(name));
    if (node === undefined) throw new UnknownTopicError(name);
    const { partitions } = JSON.parse(node.data.toString('utf8')) as { partitions: Record<string, number> };
    const current = Object.keys(partitions).length;
    if (count <= current) {
      throw new TributaryError({ code: 'INVALID_PARTITIONS', message: `topic ${name} has ${current} partitions; the new count must be larger, not ${count}` });
    }
    const brokers = this.liveBrokers();
    if (brokers.length === 0) throw new TributaryError({ code: 'NO_BROKERS', message: 'no live broker to assign partitions to', retriable: true });
    const load = new Map(brokers.map((broker) => [broker.id, 0]));
    for (const owner of Object.values(partitions)) if (load.has(owner)) load.set(owner, (load.get(owner) ?? 0) + 1);
    for (let partition = current; partition < count; partition += 1) {
      const [leastLoaded] = [...load.entries()].sort(([a, x], [b, y]) => x - y || a - b)[0] ?? [this.self.id];
      partitions[String(partition)] = leastLoaded;
      load.set(leastLoaded, (load.get(leastLoaded) ?? 0) + 1);
    }
    await this.store.set(topicPath(name), Buffer.from(JSON.stringify({ partitions })), node.version);
    this.generation += 1;
    const previous = this.topics.get(name);
    const updated = { name, partitions: new Map(Object.entries(partitions).map(([p, b]) => [Number(p), b])), configs: previous?.configs ?? {} };
    this.topics.set(name, updated);
    this.listener.topicsChanged();
    return updated;
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

  async deleteTopic(name: string): Promise<void> {
    try {
      await this.store.delete(topicPath(name));
    } catch (error) {
      if ((error as TributaryError).code === 'NO_NODE') throw new UnknownTopicError(name);
      throw error;
    }
    try {
      await this.store.delete(topicConfigPath(name));
    } catch {
      // The topic had no overrides.
    }
    this.generation += 1;
    this.topics.delete(name);
    this.listener.topicsChanged();
  }

  private async register(): Promise<void> {
    const data = Buffer.from(JSON.stringify({ host: this.self.host, port: this.self.port, ...(this.self.rack === undefined ? {} : { rack: this.self.rack }), startedAt: Date.now() }));
    // After a crash the previous process's ephemeral node lives until its session times out.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await this.store.create(brokerPath(this.self.id), data, 'ephemeral');
        return;
      } catch (error) {
        if ((error as TributaryError).code !== 'NODE_EXISTS' || Date.now() > deadline) {
          throw new TributaryError({
            code: 'BROKER_ID_IN_USE',
            message: `broker id ${this.self.id} is registered by another live broker (or a previous run whose session has not expired yet); use another --id or wait`,
            cause: error,
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /** Re-reads brokers, topics and configs, re-arming the watches. Coalesces bursts of events. */
  private refresh(): Promise<void> {
    if (this.refreshing !== undefined) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        await this.load();
      } while (this.refreshAgain && !this.closed);
    })()
      .catch((error: unknown) => {
        if (this.closed) return;
        const retriable = error instanceof TributaryError && error.retriable;
        this.logger.warn({ err: error, retrying: retriable }, 'could not read cluster state from the coordination store');
        // A lost connection may have dropped watches' notifications: read everything again soon.
        if (retriable) setTimeout(() => void this.refresh(), 500).unref();
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  /** A one-shot watcher for `path`, unless one is armed already (watches must not pile up). */
  private watch(path: string): ((event: WatchEvent) => void) | undefined {
    if (this.armed.has(path)) return undefined;
    this.armed.add(path);
    return () => {
      this.armed.delete(path);
      if (!this.closed) void this.refresh();
    };
  }

  private async load(): Promise<void> {
    const generation = this.generation;
    const brokerIds = (await this.store.children(brokerIdsPath(), this.watch(brokerIdsPath()))) ?? [];
    const brokers = new Map<number, BrokerInfo>();
    for (const id of brokerIds) {
      const node = await this.store.get(brokerPath(Number(id)));
      if (node === undefined) continue;
      const info = JSON.parse(node.data.toString('utf8')) as Omit<BrokerInfo, 'id'>;
      brokers.set(Number(id), { ...info, id: Number(id) });
    }
    const names = (await this.store.children(topicsPath(), this.watch(topicsPath()))) ?? [];
    const topics = new Map<string, TopicAssignment>();
    for (const name of names) {
      const node = await this.store.get(topicPath(name), this.watch(topicPath(name)));
      if (node === undefined) continue;
      const { partitions } = JSON.parse(node.data.toString('utf8')) as { partitions: Record<string, number> };
      // An exists-watch also fires when the overrides are created or changed later.
      const configPath = topicConfigPath(name);
      const config = (await this.store.exists(configPath, this.watch(configPath))) ? await this.store.get(configPath) : undefined;
      const configs = config === undefined ? {} : ((JSON.parse(config.data.toString('utf8')) as { config?: Record<string, string> }).config ?? {});
      topics.set(name, { name, partitions: new Map(Object.entries(partitions).map(([p, b]) => [Number(p), b])), configs });
    }
    if (generation !== this.generation) {
      // This broker created or deleted a topic while the state was being read: read it again
      // rather than replace the newer cache with an older picture.
      this.refreshAgain = true;
      return;
    }
    const brokersChanged = brokers.size !== this.brokers.size || [...brokers.keys()].some((id) => !this.brokers.has(id));
    this.brokers.clear();
    for (const [id, info] of brokers) this.brokers.set(id, info);
    this.topics.clear();
    for (const [name, topic] of topics) this.topics.set(name, topic);
    if (brokersChanged) this.listener.brokersChanged?.();
    this.listener.topicsChanged();
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
