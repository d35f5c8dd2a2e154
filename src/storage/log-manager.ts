/**
 * All partition logs of one broker under one data dir: opens (and after an unclean stop,
 * recovers) them at start, runs the flush and retention schedules, keeps the checkpoints, and
 * stops cleanly.
 *
 * Data-dir files besides the `<topic>-<partition>/` folders:
 *   meta.properties                    which broker owns the dir, and its storage id (below)
 *   recovery-point-offset-checkpoint   flushed end per partition (checkpoint.ts)
 *   log-start-offset-checkpoint        first retained offset per partition
 *   replication-offset-checkpoint      high watermark per replicated partition (every 5 s and at close)
 *   .clean-shutdown                    present only between a clean stop and the next start
 *
 * `meta.properties` is Java properties text, written durably once (temp file, fsync, rename):
 *
 *   version=1
 *   broker.id=<id>            absent until a broker id is known
 *   storage.id=<uuid v4>      made when the file is; a new one means "this disk's data is gone"
 *
 * It is read before anything else in the dir is touched: a dir naming another broker is refused
 * (DATA_DIR_OF_ANOTHER_BROKER), and an unreadable file stops the start (META_PROPERTIES_INVALID)
 * rather than make a new storage id, which would tell the cluster this replica lost its data.
 *
 * The high-watermark checkpoint holds the partitions whose log is in 'replicated' mode (their
 * high watermark is the replica manager's, and a restarted replica starts from it); entries read
 * at start are written back unchanged until their log switches to that mode, so a start that
 * has not yet configured replication does not replace them with flushed ends.
 *
 * The marker is deleted first thing at start, so a crash during recovery is still unclean, and
 * written last at a clean stop, only if every log flushed and closed without error.
 *
 * One partition never stops the broker: a log that cannot be opened (any error from loading it)
 * is recorded offline with its reason, logged at error, and its requests answered with
 * KAFKA_STORAGE_ERROR, while every other partition is served. Its checkpoint entries are kept as
 * they were, and deleting its topic still removes its folder.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock, type Clock } from '../common/clock.js';
import { causeMessages, TributaryError } from '../common/errors.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import type { Logger } from '../common/logger.js';
import { checkpointKey, readCheckpoint, writeCheckpoint, type OffsetCheckpoint } from './checkpoint.js';
import { fsyncDirectory, fsyncDirectoryAsync, writeFileDurably } from './durable-files.js';
import { DEFAULT_LOG_CONFIG, type LogConfig } from './log-config.js';
import { PartitionLog } from './partition-log.js';
import { DEFAULT_CLEANER_CONFIG, LogCleaner, type CleanerConfig } from './cleaner/log-cleaner.js';

export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint';
export const LOG_START_CHECKPOINT = 'log-start-offset-checkpoint';
export const CLEAN_SHUTDOWN_MARKER = '.clean-shutdown';
export const HIGH_WATERMARK_CHECKPOINT = 'replication-offset-checkpoint';
export const META_PROPERTIES = 'meta.properties';

export interface LogManagerOptions {
  readonly dataDir: string;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Settings for a topic's logs: the defaults merged with its overrides. */
  readonly configFor?: (topic: string) => LogConfig;
  /** How often flush deadlines are checked (ms). */
  readonly flushCheckIntervalMs?: number;
  /** How often retention runs (Kafka's log.retention.check.interval.ms). */
  readonly retentionCheckIntervalMs?: number;
  /** How often the recovery-point checkpoint is written. */
  readonly checkpointIntervalMs?: number;
  /** producer.id.expiration.ms: idempotent producers idle this long are forgotten (default one day). */
  readonly producerIdExpirationMs?: number;
  /** producer.id.expiration.check.interval.ms (default ten minutes). */
  readonly producerIdExpirationCheckIntervalMs?: number;
  /** Called when a log's high watermark moves (new records readable). */
  readonly onHighWatermarkAdvanced?: (log: PartitionLog) => void;
  /** Called when a log's flushed end moves (a follower may fetch again; a leader's HW may move). */
  readonly onFlushed?: (log: PartitionLog) => void;
  /** Called when new batches reach a log's file (followers' fetch long-polls wake on this). */
  readonly onAppended?: (log: PartitionLog) => void;
  /** This broker's id: `meta.properties` naming another refuses the dir. */
  readonly brokerId?: number;
  /** How often the high-watermark checkpoint is written (default 5 s). */
  readonly highWatermarkCheckpointIntervalMs?: number;
  /** The log cleaner's settings (log.cleaner.*); Kafka's defaults when absent. */
  readonly cleaner?: CleanerConfig;
}

/** A partition whose log could not be opened at start. */
export interface OfflineLog {
  readonly topic: string;
  readonly partition: number;
  readonly directory: string;
  /** Why, in words (the error's message and its causes). */
  readonly reason: string;
  readonly error: unknown;
  /** Its checkpoint entries as read at start, written back unchanged. */
  readonly recoveryPoint: number | undefined;
  readonly logStartOffset: number | undefined;
}

/** Which partition's log to delete (a PartitionLog or an OfflineLog will do). */
export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

const PARTITION_FOLDER = /^(.+)-(\d+)$/;
const LOAD_CONCURRENCY = 4;

export class LogManager {
  private readonly logs = new Map<string, PartitionLog>();
  private readonly creating = new Map<string, Promise<PartitionLog>>();
  private readonly offline = new Map<string, OfflineLog>();
  /** Logs created by this process (not found on disk at start): their topic existed during its life. */
  private readonly createdHere = new Set<string>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly clock: Clock;
  private readonly configFor: (topic: string) => LogConfig;
  private closed = false;
  /** The high watermarks in `replication-offset-checkpoint` as read at start (minus deleted partitions). */
  private readonly highWatermarksAtStart: OffsetCheckpoint = new Map();
  /** The checkpoint's contents as last read or written, so an unchanged one is not written again. */
  private lastHighWatermarkCheckpoint: string | undefined;
  private identity: { readonly storageId: string } | undefined;
  /** Whether the previous stop was clean (for reporting). */
  recoveredFromUncleanShutdown = false;

  private logCleaner!: LogCleaner;

  private constructor(private readonly options: LogManagerOptions) {
    this.clock = options.clock ?? systemClock;
    this.configFor = options.configFor ?? (() => DEFAULT_LOG_CONFIG);
  }

  static async open(options: LogManagerOptions): Promise<LogManager> {
    const manager = new LogManager(options);
    await manager.loadAll();
    manager.logCleaner = new LogCleaner({ logs: manager, config: options.cleaner ?? DEFAULT_CLEANER_CONFIG, logger: options.logger, clock: manager.clock });
    return manager;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  /** The data dir's storage id (from `meta.properties`): a replica whose id changed lost its data. */
  get storageId(): string {
    if (this.identity === undefined) throw new Error('the log manager is not open');
    return this.identity.storageId;
  }

  /** A partition's high watermark in `replication-offset-checkpoint` as read at start, if it had one. */
  highWatermarkCheckpoint(topic: string, partition: number): number | undefined {
    return this.highWatermarksAtStart.get(checkpointKey(topic, partition));
  }

  /** Starts the flush, retention and checkpoint schedules. */
  startSchedules(): void {
    const every = (ms: number, task: () => unknown): void => {
      const timer = setInterval(() => {
        Promise.resolve()
          .then(task)
          .catch((error: unknown) => this.options.logger.error({ err: error }, 'scheduled log task failed'));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.options.flushCheckIntervalMs ?? 20, () => this.flushDue());
    every(this.options.retentionCheckIntervalMs ?? 300_000, () => this.applyRetention());
    every(this.options.checkpointIntervalMs ?? 60_000, () => this.writeRecoveryCheckpoint());
    every(this.options.highWatermarkCheckpointIntervalMs ?? 5_000, () => this.writeHighWatermarkCheckpoint());
    every(this.options.producerIdExpirationCheckIntervalMs ?? 600_000, () => this.expireProducers());
    this.logCleaner.start();
  }

  /** The log cleaner of the compacted logs (started with the schedules when log.cleaner.enable). */
  get cleaner(): LogCleaner {
    return this.logCleaner;
  }

  getLog(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(checkpointKey(topic, partition));
  }

  allLogs(): PartitionLog[] {
    return [...this.logs.values()];
  }

  /** Partitions whose logs could not be opened at start. */
  offlineLogs(): OfflineLog[] {
    return [...this.offline.values()];
  }

  /** Why a partition's log is offline, or undefined when it is not. */
  offlineReason(topic: string, partition: number): string | undefined {
    return this.offline.get(checkpointKey(topic, partition))?.reason;
  }

  /** Whether the log was created since start, rather than found in the data dir. */
  createdSinceStart(topic: string, partition: number): boolean {
    return this.createdHere.has(checkpointKey(topic, partition));
  }

  /** Resolves once every log being created has been (so `allLogs` includes them). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.creating.values()]);
  }

  /** The log of a partition, created empty if this broker has none yet. */
  async getOrCreateLog(topic: string, partition: number): Promise<PartitionLog> {
    const existing = this.getLog(topic, partition);
    if (existing !== undefined) return existing;
    if (this.closed) throw new TributaryError({ code: 'LOG_MANAGER_CLOSED', message: 'the log manager is closed' });
    validateTopicName(topic);
    const key = checkpointKey(topic, partition);
    const offline = this.offline.get(key);
    if (offline !== undefined) throw offlineError(offline);
    // Two requests creating the same partition at once must get the same log.
    let creating = this.creating.get(key);
    if (creating === undefined) {
      const directory = join(this.dataDir, `${topic}-${partition}`);
      // No fsync here: a new log's folder entry is made durable by its first flush, off the event
      // loop and shared with every other log created meanwhile (PartitionLog.syncEntries).
      creating = this.loadLog(topic, partition, directory, new Map(), new Map(), true)
        .then((log) => {
          this.createdHere.add(key);
          return log;
        })
        .finally(() => this.creating.delete(key));
      this.creating.set(key, creating);
    }
    return creating;
  }

  /** Applies new settings to a topic's open logs (a config change in ZooKeeper). */
  updateConfig(topic: string): void {
    for (const log of this.logs.values()) if (log.topic === topic) log.config = this.configFor(topic);
  }

  /** Closes a partition's log and deletes its files (topic deletion). */
  async deleteLog(topic: string, partition: number): Promise<void> {
    await this.deleteLogs([{ topic, partition }]);
  }

  /**
   * Deletes the logs of many partitions (a deleted topic's), online or offline. Each folder is
   * renamed first — a crash halfway through deleting leaves a folder the next start removes, and
   * a log created meanwhile under the same name gets a fresh folder — then one folder fsync
   * covers every rename, then each log refuses its queued appends and lets its descriptors go
   * (PartitionLog.deleteFiles), and the checkpoints are rewritten once.
   */
  async deleteLogs(partitions: readonly PartitionRef[]): Promise<void> {
    // A log being created now is deleted once it exists, not left behind.
    const creating = partitions.flatMap(({ topic, partition }) => this.creating.get(checkpointKey(topic, partition)) ?? []);
    // Only then does this wait: with nothing being created, the renames below happen in the caller's turn.
    if (creating.length > 0) await Promise.allSettled(creating);
    // From here to the renames nothing awaits: no append can slip in between.
    const doomed: { log: PartitionLog | undefined; folder: string | undefined }[] = [];
    for (const { topic, partition } of partitions) {
      const key = checkpointKey(topic, partition);
      this.highWatermarksAtStart.delete(key);
      const offline = this.offline.get(key);
      if (offline !== undefined) {
        this.offline.delete(key);
        doomed.push({ log: undefined, folder: this.renameForDeletion(offline.directory) });
        continue;
      }
      const log = this.logs.get(key);
      if (log === undefined) continue;
      this.logs.delete(key);
      this.createdHere.delete(key);
      // Refuses queued and new appends before the folder moves (an append after the rename
      // would make a new folder under the old name).
      log.beginDeletion();
      doomed.push({ log, folder: this.renameForDeletion(log.directory) });
    }
    if (doomed.length === 0) return;
    await fsyncDirectoryAsync(this.dataDir);
    for (const { log, folder } of doomed) {
      if (log !== undefined) await log.deleteFiles(folder);
      else if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
    }
    this.writeLogStartCheckpoint();
    this.writeRecoveryCheckpoint();
    this.writeHighWatermarkCheckpoint();
  }

  /** Renames a log's folder to `<name>.<now>.deleted`; undefined when there is none. */
  private renameForDeletion(directory: string): string | undefined {
    const doomed = `${directory}.${Date.now()}.deleted`;
    try {
      renameSync(directory, doomed);
      return doomed;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Flushes the logs whose flush policy is due. */
  async flushDue(): Promise<void> {
    const now = this.clock.now();
    // Checked in place every few milliseconds: only the logs that are due cost a promise.
    const flushes: Promise<void>[] = [];
    for (const log of this.logs.values()) if (log.flushDue(now)) flushes.push(log.maybeFlush(now));
    if (flushes.length > 0) await Promise.all(flushes);
  }

  /** Runs retention over every log; returns the number of segments deleted. */
  applyRetention(): number {
    const now = this.clock.now();
    let deleted = 0;
    for (const log of this.logs.values()) deleted += log.applyRetention(now);
    return deleted;
  }

  /** Forgets idle producers in every log; returns how many. */
  expireProducers(): number {
    const now = this.clock.now();
    let expired = 0;
    for (const log of this.logs.values()) expired += log.expireProducers(now);
    return expired;
  }

  writeRecoveryCheckpoint(): void {
    const entries: OffsetCheckpoint = new Map();
    for (const log of this.logs.values()) entries.set(checkpointKey(log.topic, log.partition), log.recoveryPoint);
    for (const [key, log] of this.offline) if (log.recoveryPoint !== undefined) entries.set(key, log.recoveryPoint);
    writeCheckpoint(join(this.dataDir, RECOVERY_POINT_CHECKPOINT), entries);
  }

  writeLogStartCheckpoint(): void {
    const entries: OffsetCheckpoint = new Map();
    for (const log of this.logs.values()) entries.set(checkpointKey(log.topic, log.partition), log.logStartOffset);
    for (const [key, log] of this.offline) if (log.logStartOffset !== undefined) entries.set(key, log.logStartOffset);
    writeCheckpoint(join(this.dataDir, LOG_START_CHECKPOINT), entries);
  }

  /**
   * Writes `replication-offset-checkpoint`: the high watermark of every log in 'replicated' mode,
   * and the entries read at start for the others (see the file comment). Skipped when unchanged.
   */
  writeHighWatermarkCheckpoint(): void {
    const entries: OffsetCheckpoint = new Map(this.highWatermarksAtStart);
    for (const log of this.logs.values()) {
      if (log.highWatermarkMode === 'replicated') entries.set(checkpointKey(log.topic, log.partition), log.highWatermark);
    }
    const contents = [...entries].map(([key, offset]) => `${key} ${offset}`).sort().join('\n');
    if (contents === this.lastHighWatermarkCheckpoint) return;
    writeCheckpoint(join(this.dataDir, HIGH_WATERMARK_CHECKPOINT), entries);
    this.lastHighWatermarkCheckpoint = contents;
  }

  /**
   * Clean stop: stops the schedules, flushes and closes every log, writes the checkpoints, and
   * only then the clean-shutdown marker. Any failure leaves no marker (the next start recovers).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    // A pass in progress stops at its next batch; its unswapped files are removed.
    await this.logCleaner.stop();
    const results = await Promise.allSettled([...this.logs.values()].map((log) => log.close()));
    const failures = results.filter((result) => result.status === 'rejected');
    this.writeRecoveryCheckpoint();
    this.writeLogStartCheckpoint();
    this.writeHighWatermarkCheckpoint();
    if (failures.length > 0) {
      this.options.logger.error({ failures: failures.length }, 'logs failed to close; no clean-shutdown marker, the next start recovers');
      throw new TributaryError({
        code: 'UNCLEAN_SHUTDOWN',
        message: `${failures.length} logs failed to flush or close; the next start will recover them`,
        cause: failures[0]?.reason,
      });
    }
    writeFileSync(join(this.dataDir, CLEAN_SHUTDOWN_MARKER), '');
    fsyncDirectory(this.dataDir);
  }

  private async loadAll(): Promise<void> {
    const { dataDir, logger } = this.options;
    mkdirSync(dataDir, { recursive: true });
    // Before anything in the dir is touched: the dir of another broker is left exactly as it is.
    this.identity = this.loadIdentity();
    const marker = join(dataDir, CLEAN_SHUTDOWN_MARKER);
    const clean = existsSync(marker);
    if (clean) {
      rmSync(marker);
      fsyncDirectory(dataDir);
    }
    const recoveryPoints = this.readCheckpointOrEmpty(RECOVERY_POINT_CHECKPOINT);
    const logStarts = this.readCheckpointOrEmpty(LOG_START_CHECKPOINT);
    const trustIndexes = clean && recoveryPoints.ok;
    this.readHighWatermarkCheckpoint();

    const folders: { topic: string; partition: number; directory: string }[] = [];
    for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const directory = join(dataDir, entry.name);
      if (entry.name.endsWith('.deleted')) {
        rmSync(directory, { recursive: true, force: true });
        continue;
      }
      const match = PARTITION_FOLDER.exec(entry.name);
      if (match?.[1] === undefined || match[2] === undefined) {
        logger.warn({ folder: entry.name }, 'ignoring a folder that is not <topic>-<partition>');
        continue;
      }
      folders.push({ topic: match[1], partition: Number(match[2]), directory });
    }
    // A data dir with no logs yet has nothing to recover.
    this.recoveredFromUncleanShutdown = !clean && folders.length > 0;
    const started = this.clock.now();
    for (let i = 0; i < folders.length; i += LOAD_CONCURRENCY) {
      await Promise.all(
        folders.slice(i, i + LOAD_CONCURRENCY).map(({ topic, partition, directory }) =>
          this.loadLog(topic, partition, directory, recoveryPoints.entries, logStarts.entries, trustIndexes).catch((error: unknown) => {
            const key = checkpointKey(topic, partition);
            this.markOffline({ topic, partition, directory, error, recoveryPoint: recoveryPoints.entries.get(key), logStartOffset: logStarts.entries.get(key) });
          }),
        ),
      );
    }
    logger.info(
      { logs: folders.length, offline: this.offline.size, clean, milliseconds: this.clock.now() - started },
      this.recoveredFromUncleanShutdown ? 'logs recovered after an unclean stop' : 'logs loaded',
    );
    // Recovery made everything that survived durable: record that before taking writes.
    try {
      this.writeRecoveryCheckpoint();
      this.writeLogStartCheckpoint();
    } catch (error) {
      // A full disk must not keep the broker from serving reads. The checkpoints on disk stay
      // valid: an older recovery point only makes the next start check more, and the log starts
      // computed at load are computed the same way from them again. The schedule retries.
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      logger.warn({ err: error }, 'disk full: the checkpoints were not rewritten after loading; the ones on disk stay valid');
    }
  }

  /**
   * Reads `meta.properties`, or makes it (with a new storage id) when absent; records this
   * broker's id in it when it has none yet. See the file comment for what is refused.
   */
  private loadIdentity(): { readonly storageId: string } {
    const { dataDir, logger, brokerId } = this.options;
    if (brokerId !== undefined && (!Number.isInteger(brokerId) || brokerId < 0)) {
      throw new TributaryError({ code: 'CONFIG_INVALID', message: `broker id ${brokerId} is not an integer ≥ 0`, details: { brokerId } });
    }
    const path = join(dataDir, META_PROPERTIES);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new TributaryError({
          code: 'META_PROPERTIES_INVALID',
          message: `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'unknown'}): fix its permissions or restore it; deleting it would give this data dir a new storage id, which tells the cluster its data was wiped`,
          cause: error,
          details: { path },
        });
      }
      const holdsLogs = readdirSync(dataDir).some(
        (name) => name === RECOVERY_POINT_CHECKPOINT || name === LOG_START_CHECKPOINT || (PARTITION_FOLDER.test(name) && !name.endsWith('.deleted')),
      );
      const storageId = randomUUID();
      writeMetaProperties(path, dataDir, { brokerId, storageId });
      if (holdsLogs) {
        logger.warn({ path, storageId, brokerId }, 'data dir holds logs but no meta.properties (written by an older version, or deleted): created one with a new storage id');
      } else {
        logger.info({ path, storageId, brokerId }, 'new data dir: created meta.properties');
      }
      return { storageId };
    }
    const found = parseMetaProperties(text, path);
    if (brokerId !== undefined && found.brokerId !== undefined && found.brokerId !== brokerId) {
      throw new TributaryError({
        code: 'DATA_DIR_OF_ANOTHER_BROKER',
        message: `data dir ${dataDir} belongs to broker ${found.brokerId} (its meta.properties says so), not to this broker ${brokerId}: give this broker its own data dir, or start broker ${found.brokerId} on it`,
        details: { dataDir, brokerId, owner: found.brokerId },
      });
    }
    if (brokerId !== undefined && found.brokerId === undefined) {
      writeMetaProperties(path, dataDir, { brokerId, storageId: found.storageId });
      logger.info({ path, brokerId, storageId: found.storageId }, 'recorded this broker id in meta.properties');
    }
    return { storageId: found.storageId };
  }

  private readHighWatermarkCheckpoint(): void {
    try {
      for (const [key, offset] of readCheckpoint(join(this.dataDir, HIGH_WATERMARK_CHECKPOINT))) this.highWatermarksAtStart.set(key, offset);
      this.lastHighWatermarkCheckpoint = [...this.highWatermarksAtStart].map(([key, offset]) => `${key} ${offset}`).sort().join('\n');
    } catch (error) {
      this.options.logger.warn({ err: error }, 'high-watermark checkpoint unreadable; replicas start without a checkpointed high watermark');
    }
  }

  private markOffline(found: Omit<OfflineLog, 'reason'>): void {
    const reason = [found.error instanceof Error ? found.error.message : String(found.error), ...causeMessages(found.error instanceof Error ? found.error.cause : undefined)].join(': ');
    const offline: OfflineLog = { ...found, reason };
    this.offline.set(checkpointKey(found.topic, found.partition), offline);
    this.options.logger.error(
      { err: found.error, topic: found.topic, partition: found.partition, directory: found.directory, reason },
      'partition log cannot be opened; it is offline (KAFKA_STORAGE_ERROR) until its files are repaired, every other partition is served',
    );
  }

  private readCheckpointOrEmpty(name: string): { entries: OffsetCheckpoint; ok: boolean } {
    try {
      return { entries: readCheckpoint(join(this.dataDir, name)), ok: true };
    } catch (error) {
      this.options.logger.warn({ err: error }, 'checkpoint unreadable; recovering every log in full');
      return { entries: new Map(), ok: false };
    }
  }

  private async loadLog(
    topic: string,
    partition: number,
    directory: string,
    recoveryPoints: OffsetCheckpoint,
    logStarts: OffsetCheckpoint,
    cleanShutdown: boolean,
  ): Promise<PartitionLog> {
    const key = checkpointKey(topic, partition);
    const log = await PartitionLog.load({
      directory,
      topic,
      partition,
      config: this.configFor(topic),
      clock: this.clock,
      logger: this.options.logger,
      events: {
        logStartOffsetChanged: () => this.writeLogStartCheckpoint(),
        highWatermarkAdvanced: (advanced) => this.options.onHighWatermarkAdvanced?.(advanced),
        flushed: (flushed) => this.options.onFlushed?.(flushed),
        appended: (appended) => this.options.onAppended?.(appended),
        truncating: (truncated, end) => this.logCleaner.truncating(truncated, end),
      },
      recoveryPoint: recoveryPoints.get(key) ?? 0,
      logStartOffset: logStarts.get(key) ?? 0,
      cleanShutdown,
      ...(this.options.producerIdExpirationMs === undefined ? {} : { producerIdExpirationMs: this.options.producerIdExpirationMs }),
    });
    this.logs.set(key, log);
    return log;
  }
}

const STORAGE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Reads `meta.properties` (see the file comment); throws META_PROPERTIES_INVALID naming what is wrong. */
export function parseMetaProperties(text: string, path: string): { readonly brokerId: number | undefined; readonly storageId: string } {
  const properties = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const equals = line.indexOf('=');
    if (equals < 0) continue;
    properties.set(line.slice(0, equals).trim(), line.slice(equals + 1).trim());
  }
  const invalid = (why: string): TributaryError =>
    new TributaryError({
      code: 'META_PROPERTIES_INVALID',
      message: `${path} is invalid (${why}): repair or restore it; deleting it would give this data dir a new storage id, which tells the cluster its data was wiped`,
      details: { path },
    });
  const version = properties.get('version');
  if (version !== '1') throw invalid(`version ${version ?? 'missing'}, expected 1`);
  const storageId = properties.get('storage.id');
  if (storageId === undefined || !STORAGE_ID.test(storageId)) throw invalid(`storage.id ${storageId ?? 'missing'} is not a UUID v4`);
  const brokerText = properties.get('broker.id');
  if (brokerText !== undefined && !/^\d{1,10}$/.test(brokerText)) throw invalid(`broker.id ${brokerText} is not an integer ≥ 0`);
  return { brokerId: brokerText === undefined ? undefined : Number(brokerText), storageId: storageId.toLowerCase() };
}

function writeMetaProperties(path: string, dataDir: string, { brokerId, storageId }: { brokerId: number | undefined; storageId: string }): void {
  const lines = ['#Tributary data dir identity: do not edit or delete (a new storage.id means this disk was wiped)', 'version=1'];
  if (brokerId !== undefined) lines.push(`broker.id=${brokerId}`);
  lines.push(`storage.id=${storageId}`);
  writeFileDurably(path, `${lines.join('\n')}\n`, dataDir);
}

/** What requests to an offline partition get: Kafka's storage error, naming the reason. */
export function offlineError(offline: OfflineLog): KafkaProtocolError {
  return new KafkaProtocolError(
    'KAFKA_STORAGE_ERROR',
    `partition ${offline.topic}-${offline.partition} is offline: its log could not be opened at start (${offline.reason})`,
    { cause: offline.error, details: { topic: offline.topic, partition: offline.partition, directory: offline.directory } },
  );
}

/** Kafka's topic-name rule: 1–249 characters of [a-zA-Z0-9._-], not "." or "..". */
export function validateTopicName(topic: string): void {
  if (topic.length === 0 || topic.length > 249 || !/^[a-zA-Z0-9._-]+$/.test(topic) || topic === '.' || topic === '..') {
    throw new TributaryError({
      code: 'INVALID_TOPIC',
      message: `topic name "${topic}" is invalid: use 1 to 249 characters from a-z, A-Z, 0-9, '.', '_' and '-'`,
      details: { topic },
    });
  }
}
