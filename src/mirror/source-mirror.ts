/**
 * The mirror's side of one source (online) cluster: its ZooKeeper session, a client of its
 * brokers (found in its broker registry), and per mirrored topic one ZooKeeper consumer of the
 * mirror's group (the paper's embedded consumer, Algorithm 1) whose streams are pumped into the
 * offline cluster.
 *
 * - Topics: the topic registry (`/brokers/topics`) is watched; every topic the filter accepts gets
 *   its consumer when it appears, so a topic created after the start is mirrored from its first
 *   record (a group without a committed offset starts at the log start by default). One consumer
 *   per topic lets a topic join without disturbing the others' ownership; members of the group in
 *   other mirror processes subscribe the same way, so each topic's partitions are shared among
 *   the processes by Algorithm 1.
 * - Commits: the consumers never auto-commit; a timer asks them to commit, and every offset write
 *   goes through the commit gate (acknowledged by the target, audit counts below it published) —
 *   see gated-offset-store.ts for why the gate sits in the store.
 * - Resume: each time a consumer gains a partition, it starts after the last record of that
 *   origin in the target (resume-point.ts), not at the committed offset, so a restart re-sends
 *   nothing; the audit counts what that skips exactly once (range-audit.ts).
 * - Lag: every `lagIntervalMs` each owned partition's log end is compared with the last offset the
 *   target acknowledged (or the committed one) and exported.
 */
import { ClusterClient } from '../client/cluster-client.js';
import { ZooKeeperConsumer } from '../client/group/zookeeper-consumer.js';
import { SimpleConsumer } from '../client/simple-consumer.js';
import { bootstrapFromZooKeeper } from '../client/zookeeper-bootstrap.js';
import { securityOption, securityProtocolOf, type ClientSecurity } from '../client/security-config.js';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { offsetPath, ownerPath, topicConfigPath, topicPath, topicsPath } from '../coordination/paths.js';
import type { Watcher } from '../coordination/store.js';
import { ZooKeeperStore } from '../coordination/zookeeper-store.js';
import type { Record as KafkaRecord } from '../protocol/records.js';
import { CommitGate } from './commit-gate.js';
import type { MirrorSettings, MirrorSource } from './config.js';
import { GatedOffsetStore } from './gated-offset-store.js';
import type { MirrorMetrics } from './metrics.js';
import type { MirrorAuditPublisher } from './mirror-audit.js';
import { targetPartition } from './placement.js';
import { encodePosition, positionPath, readPosition } from './progress-nodes.js';
import { RangeAudit } from './range-audit.js';
import { findResumePoint } from './resume-point.js';
import { pumpStream } from './stream-pump.js';
import { MIRRORED_TOPIC_CONFIGS, type MirrorTarget } from './target.js';
import { AUDIT_TOPIC, type TopicFilter } from './topic-filter.js';

export interface SourceMirrorOptions {
  readonly source: MirrorSource;
  readonly settings: MirrorSettings;
  readonly filter: TopicFilter;
  readonly target: MirrorTarget;
  /** Where the MIRROR-tier counts go; undefined when the mirror does not count. */
  readonly audit: MirrorAuditPublisher | undefined;
  readonly metrics: MirrorMetrics;
  readonly logger: Logger;
  /** Hears a failure after which this source cannot be mirrored safely. */
  readonly onFatal: (error: Error) => void;
  /** TLS and SASL of the connections to this source's brokers; absent: PLAINTEXT. */
  readonly security?: ClientSecurity;
}

interface MirroredTopic {
  readonly consumer: ZooKeeperConsumer;
  /** The consumer's own connections to the source brokers (see startTopic). */
  readonly fetchClient: ClusterClient;
  readonly pumps: readonly Promise<void>[];
}

/** Wait before trying again to start the topics that failed (the offline cluster unreachable, say). */
const TOPIC_SYNC_RETRY_MS = 2000;
/** Target offsets per step of the resume search. */
const RESUME_STEP_RECORDS = 1000;

export class SourceMirror {
  readonly name: string;
  private readonly gate: CommitGate;
  private readonly gatedStore: GatedOffsetStore;
  private readonly simple: SimpleConsumer;
  private readonly audit: RangeAudit | undefined;
  private readonly logger: Logger;
  private readonly topics = new Map<string, MirroredTopic>();
  private readonly watcher: Watcher = () => this.scheduleSync();
  private syncing: Promise<void> = Promise.resolve();
  private syncQueued = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  private lagTimer: NodeJS.Timeout | undefined;
  private committing = false;
  private measuring = false;
  private lagFailing = false;
  private readonly reportedLag = new Set<string>();
  /** Per owned partition (`topic/partition`): where it resumed (the lag's position until something is acknowledged), and which resume that was. */
  private readonly resumedAt = new Map<string, { readonly offset: bigint; readonly resume: number }>();
  private resumes = 0;
  private stopped = false;
  private readonly unsubscribe: () => void;

  private constructor(
    private readonly store: ZooKeeperStore,
    /** Metadata and lag queries; the consumers fetch over their own connections. */
    private readonly cluster: ClusterClient,
    private readonly bootstrap: readonly string[],
    private readonly options: SourceMirrorOptions,
  ) {
    this.name = options.source.name;
    this.logger = options.logger.child({ source: this.name });
    this.simple = new SimpleConsumer(cluster);
    this.audit =
      options.audit === undefined
        ? undefined
        : new RangeAudit({
            group: options.settings.group,
            source: this.name,
            store,
            publisher: options.audit,
            readSource: (topic, partition, from, to) => this.readSourceRange(topic, partition, from, to),
            logger: this.logger,
          });
    this.gate = new CommitGate({
      beforeCommit: (topic, partition, offset) => this.audit?.publishThrough(topic, partition, offset) ?? Promise.resolve(),
      waitMs: options.settings.commitWaitMs,
    });
    this.gatedStore = new GatedOffsetStore(store, options.settings.group, this.gate, (topic, partition, committed) => this.resumeOffset(topic, partition, committed));
    // Watches die with an expired session: list the topics again on the new one.
    this.unsubscribe = store.onSessionEvent((event) => {
      if (event === 'reconnected-new-session') this.scheduleSync();
    });
  }

  /** Connects to the source, subscribes every matching topic, and starts committing and measuring lag. */
  static async start(options: SourceMirrorOptions): Promise<SourceMirror> {
    const { source, settings, logger } = options;
    const store = await ZooKeeperStore.connect(source.zookeeper, { sessionTimeoutMs: settings.sessionTimeoutMs, logger });
    let cluster: ClusterClient | undefined;
    try {
      const bootstrap = await bootstrapFromZooKeeper(store, securityProtocolOf(options.security));
      cluster = await ClusterClient.connect({ bootstrap, clientId: `tributary-mirror-${source.name}`, allowAutoTopicCreation: false, logger, ...securityOption(options.security) });
      const mirror = new SourceMirror(store, cluster, bootstrap, options);
      mirror.scheduleSync();
      await mirror.syncing;
      mirror.commitTimer = setInterval(() => void mirror.commitAll(), settings.commitIntervalMs);
      mirror.lagTimer = setInterval(() => void mirror.measureLag(), settings.lagIntervalMs);
      mirror.logger.info({ zookeeper: source.zookeeper, bootstrap, topics: [...mirror.topics.keys()] }, 'mirroring source cluster');
      return mirror;
    } catch (error) {
      cluster?.close();
      await store.close();
      throw error;
    }
  }

  /** The topics mirrored from this source so far. */
  mirroredTopics(): string[] {
    return [...this.topics.keys()].sort();
  }

  /** Makes every later commit fail: used when some record will never be acknowledged. */
  failCommits(error: Error): void {
    this.gate.fail(error);
  }

  /**
   * Stops taking records, lets the consumers commit what the target acknowledged (they close
   * through the gate), releases ownership, and closes the connections. The target must stay open
   * until this resolves.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.commitTimer);
    clearInterval(this.lagTimer);
    clearTimeout(this.retryTimer);
    this.unsubscribe();
    await this.syncing;
    await Promise.all(
      [...this.topics.values()].map(async ({ consumer, fetchClient, pumps }) => {
        await consumer.close();
        await Promise.all(pumps);
        fetchClient.close();
      }),
    );
    for (const labels of this.reportedLag) this.options.metrics.lag.remove(JSON.parse(labels) as Record<string, string>);
    this.cluster.close();
    await this.store.close();
  }

  // ---- topics ----

  private scheduleSync(): void {
    if (this.stopped || this.syncQueued) return;
    this.syncQueued = true;
    this.syncing = this.syncing.then(async () => {
      this.syncQueued = false;
      if (this.stopped) return;
      try {
        await this.syncTopics();
      } catch (error) {
        this.logger.warn({ err: error, retryInMs: TOPIC_SYNC_RETRY_MS }, 'could not start mirroring every matching topic; trying again');
        clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(() => this.scheduleSync(), TOPIC_SYNC_RETRY_MS);
      }
    });
  }

  /** Reads the topic registry (re-arming its watch) and subscribes the matching topics not yet mirrored. */
  private async syncTopics(): Promise<void> {
    const names = await this.store.children(topicsPath(), this.watcher);
    if (names === undefined) {
      // No topic was ever created here: watch for the registry's creation.
      if (await this.store.exists(topicsPath(), this.watcher)) this.scheduleSync();
      return;
    }
    for (const topic of names) {
      if (this.stopped) return;
      if (this.topics.has(topic) || !this.options.filter.matches(topic)) continue;
      await this.startTopic(topic);
    }
  }

  private async startTopic(topic: string): Promise<void> {
    const { settings, target, logger } = this.options;
    const sourcePartitions = await this.registeredPartitions(topic);
    if (sourcePartitions === 0) return; // not assigned yet: the watch on its node brings us back
    const targetPartitions = await target.ensureTopic(topic, sourcePartitions, await this.compactionConfigs(topic));
    // A broker answers one request of a connection at a time, and the consumer long-polls each
    // partition separately: a topic's fetches get their own connections, so they queue behind
    // the idle polls of that topic only (not of every mirrored topic, nor behind lag queries).
    const fetchClient = await ClusterClient.connect({ bootstrap: this.bootstrap, clientId: `tributary-mirror-${this.name}-${topic}`, allowAutoTopicCreation: false, logger, ...securityOption(this.options.security) });
    let consumer: ZooKeeperConsumer;
    try {
      consumer = await ZooKeeperConsumer.connect({
        zookeeper: this.gatedStore,
        bootstrap: fetchClient,
        fetchWaitMaxMs: settings.fetchWaitMaxMs,
        group: settings.group,
        autoOffsetReset: settings.autoOffsetReset,
        autoCommitIntervalMs: 0,
        sessionTimeoutMs: settings.sessionTimeoutMs,
        rebalanceBackoffMs: settings.rebalanceBackoffMs,
        rebalanceMaxRetries: settings.rebalanceMaxRetries,
        logger: logger.child({ source: this.name, topic }),
        onError: (error) => this.options.onFatal(error),
      });
    } catch (error) {
      fetchClient.close();
      throw error;
    }
    let streams;
    try {
      streams = (await consumer.createMessageStreams({ [topic]: settings.streamsPerTopic }))[topic] ?? [];
    } catch (error) {
      await consumer.close().catch(() => undefined);
      fetchClient.close();
      throw error;
    }
    const pumps = streams.map((stream) =>
      pumpStream(stream, {
        source: this.name,
        topic,
        gate: this.gate,
        target,
        audit: this.audit,
        metrics: this.options.metrics,
        sourcePartitions: () => fetchClient.cachedTopic(topic)?.partitions.length ?? sourcePartitions,
        maxBatchRecords: settings.maxBatchRecords,
        maxInFlightRecords: settings.maxInFlightRecords,
        stopping: () => this.stopped,
        onFatal: this.options.onFatal,
      }).catch((error: unknown) => this.options.onFatal(error instanceof Error ? error : new Error(String(error)))),
    );
    this.topics.set(topic, { consumer, fetchClient, pumps });
    this.logger.info({ topic, sourcePartitions, targetPartitions, owned: [...consumer.ownership().keys()] }, 'mirroring topic');
  }

  /** The partition count in the source's topic registry (0 while unassigned; then its node is watched). */
  private async registeredPartitions(topic: string): Promise<number> {
    const node = await this.store.get(topicPath(topic), this.watcher);
    if (node === undefined) return 0;
    try {
      const parsed = JSON.parse(node.data.toString('utf8')) as { partitions?: Record<string, unknown> };
      return Object.keys(parsed.partitions ?? {}).length;
    } catch (error) {
      throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${topicPath(topic)} on source ${this.name} does not hold a partition assignment`, cause: error });
    }
  }

  /**
   * The source topic's compaction overrides (`/config/topics/<topic>`), which the offline copy is
   * created with: a compacted topic holds the latest value per key, and a copy that deleted by age
   * would lose keys. Retention is left to the offline cluster, which keeps data longer.
   */
  private async compactionConfigs(topic: string): Promise<Record<string, string>> {
    const node = await this.store.get(topicConfigPath(topic));
    if (node === undefined) return {};
    let overrides: Record<string, unknown>;
    try {
      overrides = (JSON.parse(node.data.toString('utf8')) as { config?: Record<string, unknown> }).config ?? {};
    } catch (error) {
      throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${topicConfigPath(topic)} on source ${this.name} does not hold topic configs`, cause: error });
    }
    const copied: Record<string, string> = {};
    for (const name of MIRRORED_TOPIC_CONFIGS) {
      const value = overrides[name];
      if (typeof value === 'string') copied[name] = value;
    }
    return copied;
  }

  // ---- resume ----

  /**
   * Where the consumer starts a partition it just gained: after the last record of this origin in
   * the target, the committed offset as a lower bound (resume-point.ts). A source partition
   * spread over several target partitions (other partition counts) has no single target order to
   * read; it resumes at the committed offset, and a restart may deliver again. With nothing known
   * (never committed, nothing in the target) it starts where the offset reset says.
   */
  private async resumeOffset(topic: string, partition: number, committed: bigint | undefined): Promise<bigint> {
    const { target, settings } = this.options;
    await this.gate.settle(topic, partition);
    let resumeAt = committed;
    const sourcePartitions = (await this.cluster.topicMetadata(topic)).partitions.length;
    if (targetPartition(partition, sourcePartitions, await target.partitionCount(topic), null) === partition) {
      const position = await readPosition(this.store, positionPath(settings.group, topic, partition));
      const sourceLogStart = await this.simple.listOffset(topic, partition, 'earliest');
      const found = await findResumePoint(target.partitionReader(topic, partition), {
        source: this.name,
        sourcePartition: partition,
        committed,
        covered: position?.targetPartition === partition ? position : undefined,
        sourceLogStart,
        stepRecords: RESUME_STEP_RECORDS,
      });
      resumeAt = found.offset;
      this.logger.info(
        { topic, partition, committed: committed?.toString(), lastInTarget: found.lastInTarget?.toString(), resumeAt: resumeAt?.toString(), sourceLogStart: sourceLogStart.toString(), scanned: found.scanned },
        'resuming the source partition after its last record in the target',
      );
    }
    resumeAt ??= settings.autoOffsetReset === 'largest' ? await this.simple.listOffset(topic, partition, 'latest') : await this.simple.listOffset(topic, partition, 'earliest');
    if (this.audit !== undefined && topic !== AUDIT_TOPIC) await this.audit.resume(topic, partition, resumeAt);
    this.resumes += 1;
    this.resumedAt.set(`${topic}/${partition}`, { offset: resumeAt, resume: this.resumes });
    return resumeAt;
  }

  /** Source records of [from, to), for the audit's recounts. */
  private readSourceRange(topic: string, partition: number, from: bigint, to: bigint): Promise<KafkaRecord[]> {
    return readSourceRecords(this.simple, topic, partition, from, to);
  }

  // ---- commits and lag ----

  private async commitAll(): Promise<void> {
    if (this.committing || this.stopped) return;
    this.committing = true;
    try {
      for (const [topic, { consumer }] of this.topics) {
        await consumer.commitOffsets().catch((error: unknown) => this.logger.warn({ err: error, topic }, 'commit skipped; it is tried again at the next interval'));
      }
    } finally {
      this.committing = false;
    }
  }

  private async measureLag(): Promise<void> {
    if (this.measuring || this.stopped) return;
    this.measuring = true;
    const reported = new Set<string>();
    try {
      for (const { consumer } of this.topics.values()) {
        for (const owned of consumer.ownership().keys()) {
          const at = owned.lastIndexOf('/');
          const topic = owned.slice(0, at);
          const partition = Number(owned.slice(at + 1));
          const end = await this.simple.listOffset(topic, partition, 'latest');
          // The acknowledged end may be of an earlier ownership of the partition, below where it resumed since.
          const known = [this.gate.acknowledgedEnd(topic, partition), this.resumedAt.get(owned)?.offset].filter((offset) => offset !== undefined);
          const position = known.length > 0 ? known.reduce((a, b) => (a > b ? a : b)) : ((await this.committedOffset(topic, partition)) ?? (await this.startOffset(topic, partition, end)));
          const labels = { source: this.name, topic, partition: String(partition) };
          this.options.metrics.lag.set(labels, Number(end > position ? end - position : 0n));
          reported.add(JSON.stringify(labels));
        }
      }
      for (const labels of this.reportedLag) if (!reported.has(labels)) this.options.metrics.lag.remove(JSON.parse(labels) as Record<string, string>);
      this.reportedLag.clear();
      for (const labels of reported) this.reportedLag.add(labels);
      this.lagFailing = false;
    } catch (error) {
      // Once per streak of failures: a source broker that is down would repeat it every interval.
      if (!this.lagFailing) this.logger.warn({ err: error }, 'could not measure the lag; the gauges keep their last values');
      this.lagFailing = true;
    }
    try {
      await this.refreshQuietPositions();
    } catch (error) {
      this.logger.debug({ err: error }, 'could not move the target positions of quiet partitions; tried again at the next interval');
    } finally {
      this.measuring = false;
    }
  }

  /**
   * Moves the recorded target position (progress-nodes.ts) of owned partitions that are quiet up
   * to the target's end. A partition with no new records commits nothing, so its position would
   * stay where its last record was, while other sources keep writing into the same target
   * partition: its resume search would then read all of that. The claim stays true: nothing of
   * this origin at or past `sourceEnd` is in the target (this process sent none meanwhile — the
   * gate's mark did not move — and a resume found none from before), so none is at or below the
   * end read.
   */
  private async refreshQuietPositions(): Promise<void> {
    const { target, settings } = this.options;
    for (const { consumer } of this.topics.values()) {
      for (const [owned, threadId] of consumer.ownership()) {
        const at = owned.lastIndexOf('/');
        const topic = owned.slice(0, at);
        const partition = Number(owned.slice(at + 1));
        if (topic === AUDIT_TOPIC) continue;
        const resumed = this.resumedAt.get(owned);
        const mark = this.gate.quietMark(topic, partition);
        if (resumed === undefined || mark === undefined) continue;
        const owner = await this.store.get(ownerPath(settings.group, topic, partition));
        if (owner?.data.toString('utf8') !== threadId) continue;
        const path = positionPath(settings.group, topic, partition);
        const recorded = await readPosition(this.store, path);
        const { end } = await target.partitionReader(topic, partition).bounds();
        // Still ours, untouched, and not resumed again while the end was read (else the next round tries).
        const ownerAfter = await this.store.get(ownerPath(settings.group, topic, partition));
        if (ownerAfter?.data.toString('utf8') !== threadId || ownerAfter.version !== owner.version) continue;
        if (this.gate.quietMark(topic, partition) !== mark || this.resumedAt.get(owned)?.resume !== resumed.resume) continue;
        const acknowledged = this.gate.acknowledgedEnd(topic, partition) ?? 0n;
        const sourceEnd = acknowledged > resumed.offset ? acknowledged : resumed.offset;
        if (end === 0n || (recorded?.targetPartition === partition && recorded.sourceEnd === sourceEnd && recorded.targetOffset >= end - 1n)) continue;
        const data = encodePosition({ sourceEnd, targetPartition: partition, targetOffset: end - 1n });
        const check = { op: 'check', path: ownerPath(settings.group, topic, partition), expectedVersion: owner.version } as const;
        if (recorded !== undefined || (await this.store.exists(path))) {
          await this.store.transaction([check, { op: 'set', path, data }]);
        } else {
          await this.store.ensurePath(path.slice(0, path.lastIndexOf('/')));
          await this.store.transaction([check, { op: 'create', path, data, mode: 'persistent' }]);
        }
      }
    }
  }

  private async committedOffset(topic: string, partition: number): Promise<bigint | undefined> {
    const text = (await this.store.get(offsetPath(this.options.settings.group, topic, partition)))?.data.toString('utf8').trim();
    return text !== undefined && /^\d+$/.test(text) ? BigInt(text) : undefined;
  }

  /** Where a partition without a committed offset starts (auto offset reset). */
  private async startOffset(topic: string, partition: number, end: bigint): Promise<bigint> {
    return this.options.settings.autoOffsetReset === 'largest' ? end : this.simple.listOffset(topic, partition, 'earliest');
  }
}

/**
 * The records of [from, to) of a source partition, in offset order. Reads step by batches (the
 * fetch's next offset), not by records: on a compacted topic a batch may end in removed records or
 * hold none, and the range goes on after it.
 */
export async function readSourceRecords(consumer: Pick<SimpleConsumer, 'fetch'>, topic: string, partition: number, from: bigint, to: bigint): Promise<KafkaRecord[]> {
  const records: KafkaRecord[] = [];
  for (let offset = from; offset < to; ) {
    const fetched = await consumer.fetch(topic, partition, offset, { maxBytes: 1024 * 1024 });
    records.push(...fetched.records.filter((record) => record.offset < to));
    if (fetched.nextOffset <= offset) break; // nothing more below the high watermark
    offset = fetched.nextOffset;
  }
  return records;
}
