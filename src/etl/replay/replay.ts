/**
 * Replay a window (`tributary etl replay`): rebuild the hour folders of [from, to) with today's
 * code, load file (transformation, format, codec) and reader schema, as a new version of each hour,
 * and swap each in while the old version is kept (replay-layout.ts, replay-swap.ts).
 *
 *   lease ▸ recover ▸ derive the offset ranges that fed those hours from the manifests ▸ check
 *   the log still holds them (else stop, listing what is missing) ▸ read each range again,
 *   decode, transform, bucket by event hour; stage the window's buckets as the new versions ▸
 *   check no record would move to another hour or be dropped ▸ fence ▸ claim ▸ swap ▸ publish
 *
 * An hour whose rebuilt files are the live version's (names and sha256 as the manifests record
 * them) is left alone: no new version, no swap. So a replay run again after it finished (the user
 * cannot tell whether a killed one did) publishes nothing, and one `etl rollback` still returns the
 * hour to where it was before the fix. A replay whose every hour is identical is not fenced or
 * claimed at all. The check is made only when planning: a swap already claimed is finished as
 * claimed by the recovery before anything is planned.
 *
 * Everything up to the fence writes only into this attempt's staging folder, so a replay that
 * stops early changed nothing. Offsets stay committed: later runs neither load these records
 * again nor skip any, and late records of a replayed hour still arrive there as new files.
 */
import { refuseIcebergLoad } from './iceberg-refusal.js';
import { memoryBudget } from '../load/memory-budget.js';
import type { Logger } from '../../common/logger.js';
import { AvroDeserializer } from '../../registry/serde/deserializer.js';
import { checkTimeField } from '../records/event-time.js';
import { extractRange, type ExtractedRange, type HourBucket } from '../load/extract.js';
import { schemaJsonOf } from '../files/schema-types.js';
import { HOUR_MS, hourKey, topicHourDir } from '../layout.js';
import type { ReaderSchema } from '../load/plan.js';
import type { LoadProgress } from '../status/progress.js';
import { compareFile, countRemoved, emptyDiff, sameFiles, type HourDiff } from './diff.js';
import { replayError } from './errors.js';
import { hourStateKey, liveFiles, type HourState } from './history.js';
import { hourOfKey, newVersionDir, versionDir } from './layout.js';
import type { HourSwap, ReplayManifest, VersionFile } from './manifest.js';
import { REPLAY_MANIFEST_FORMAT } from './manifest.js';
import { boundsOf, checkRecordsStay, checkWindow, deriveReplayRanges, missingRanges, missingRangesError, rangeKey, type RebuiltRange, type ReplayRange } from './ranges.js';
import { checkLiveFolder, checkVersionFree } from './checks.js';
import { runSwap, type SwapReport, type SwapServices, type SwapSession, type UnchangedHour } from './session.js';
import { registryReaderSchemas, type LoadServices } from '../load/run.js';
import { stageRange } from '../load/stage.js';
import { describeTransform } from '../records/transform.js';

export interface ReplayOptions extends LoadServices, SwapServices {
  /** Start of the window, a whole UTC hour. */
  readonly from: Date;
  /** End of the window (exclusive), a whole UTC hour. */
  readonly to: Date;
  /** Only this topic's hours; default every topic with data in the window. */
  readonly topic?: string | undefined;
  readonly reason?: string | undefined;
  /** Ranges read at once. Default 4. */
  readonly concurrency?: number;
  readonly progress?: LoadProgress | undefined;
}

export async function replayWindow(options: ReplayOptions): Promise<SwapReport> {
  refuseIcebergLoad(options.load, 'replay');
  checkWindow(options.from, options.to);
  const request = { kind: 'replay' as const, from: options.from.toISOString(), to: options.to.toISOString(), topic: options.topic ?? null };
  return runSwap(options, request, async (session) => {
    const { load } = options;
    const targets = selectHours(options, session);
    const ranges = deriveReplayRanges(session.history.hours, targets);
    const missing = missingRanges(ranges, await boundsOf(ranges, options.source));
    if (missing.length > 0) throw missingRangesError(load.name, missing);

    const readers = new Map<string, ReaderSchema>();
    for (const topic of new Set(targets.map((target) => target.topic))) {
      const reader = await registryReaderSchemas(options.registry)(topic);
      if (load.timeField !== undefined) checkTimeField(reader, topic, load.timeField);
      readers.set(topic, reader);
    }
    options.progress?.planned({ partitions: ranges.length, records: ranges.reduce((sum, range) => sum + range.end - range.start, 0) });

    const rebuild = new HourRebuild(options, session, targets, readers);
    await rebuild.prepare();
    const rebuilt = new Map<string, RebuiltRange>();
    await inPool(ranges, options.concurrency ?? 4, async (range) => {
      rebuilt.set(rangeKey(range), await rebuild.range(range));
      options.progress?.taskDone?.(range);
      options.progress?.partitionDone();
    });
    checkRecordsStay(load.name, ranges, new Set(targets.map((target) => hourStateKey(target.topic, target.hour))), rebuilt);
    options.progress?.finishing('swapping hours');

    const swaps: HourSwap[] = [];
    const unchanged: UnchangedHour[] = [];
    for (const target of targets) {
      const swap = rebuild.hourSwap(target);
      if (sameFiles(swap.old, swap.new)) unchanged.push({ topic: target.topic, hour: target.hour, version: target.live, why: 'identical' });
      else swaps.push(swap);
    }
    const readerSchemas: Record<string, ReaderSchema['ref']> = {};
    for (const topic of [...readers.keys()].sort()) readerSchemas[topic] = readers.get(topic)!.ref;
    const manifest: ReplayManifest = {
      format: REPLAY_MANIFEST_FORMAT,
      kind: 'replay',
      load: load.name,
      seq: session.seq,
      attempt: session.attempt,
      runNumber: session.runNumber,
      createdAt: (options.now ?? (() => new Date()))().toISOString(),
      reason: options.reason ?? null,
      request: { from: request.from, to: request.to, topic: request.topic },
      transform: describeTransform(load.transform),
      readerSchemas,
      ranges: ranges.map((range) => ({ topic: range.topic, partition: range.partition, start: range.start, end: range.end, hours: range.hours })),
      hours: swaps,
    };
    return { manifest, unchanged };
  });
}

/** The hours of the window that hold data, per topic; fails when there are none. */
function selectHours(options: ReplayOptions, session: SwapSession): HourState[] {
  const from = options.from.getTime();
  const to = options.to.getTime();
  const all = [...session.history.hours.values()].filter((state) => liveFiles(state).length > 0);
  const ofTopic = options.topic === undefined ? all : all.filter((state) => state.topic === options.topic);
  if (options.topic !== undefined && ofTopic.length === 0) {
    const topics = [...new Set(all.map((state) => state.topic))].sort();
    throw replayError('ETL_REPLAY_NOTHING', `load ${options.load.name} has loaded nothing of topic ${options.topic}; its topics with data are ${topics.join(', ') || 'none'}`, { topic: options.topic });
  }
  const targets = ofTopic
    .filter((state) => hourOfKey(state.hour) * HOUR_MS >= from && hourOfKey(state.hour) * HOUR_MS < to)
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : 0));
  if (targets.length === 0) {
    const hours = [...new Set(ofTopic.map((state) => state.hour))].sort();
    const span = hours.length === 0 ? 'it has committed no data yet' : `its hours with data run from ${hours[0]} to ${hours.at(-1)}`;
    throw replayError('ETL_REPLAY_NOTHING', `no hour of [${options.from.toISOString()}, ${options.to.toISOString()}) holds data of load ${options.load.name}${options.topic === undefined ? '' : ` topic ${options.topic}`}; ${span}. Nothing was changed`, {
      from: options.from.toISOString(),
      to: options.to.toISOString(),
    });
  }
  return targets;
}

/** The new versions of the target hours, built range by range in the session's staging folder. */
class HourRebuild {
  private readonly targets: Map<string, HourState>;
  private readonly files = new Map<string, VersionFile[]>();
  private readonly diffs = new Map<string, HourDiff>();
  private readonly carried = new Map<string, string[]>();
  private readonly deserializer: AvroDeserializer;
  private readonly log: Logger;

  constructor(
    private readonly options: ReplayOptions,
    private readonly session: SwapSession,
    targets: readonly HourState[],
    private readonly readers: ReadonlyMap<string, ReaderSchema>,
  ) {
    this.targets = new Map(targets.map((target) => [hourStateKey(target.topic, target.hour), target]));
    this.deserializer = new AvroDeserializer(options.registry);
    this.log = options.logger.child({ load: options.load.name, attempt: session.attempt });
  }

  /** Checks every target hour folder holds what the manifests say, and makes the empty new versions. */
  async prepare(): Promise<void> {
    const { warehouse, load } = this.options;
    for (const [key, target] of this.targets) {
      const hour = hourOfKey(target.hour);
      this.carried.set(key, await checkLiveFolder(warehouse, load, target));
      await checkVersionFree(warehouse, load, target, versionDir(load.warehouse.root, load.name, target.topic, hour, target.live));
      await warehouse.mkdirs(newVersionDir(this.session.stagingDir, target.topic, hour));
      this.files.set(key, []);
      this.diffs.set(key, emptyDiff());
    }
  }

  /** Reads one range again and stages its buckets of the target hours. */
  async range(range: ReplayRange): Promise<RebuiltRange> {
    const { options } = this;
    const reader = this.readers.get(range.topic)!;
    this.log.info({ topic: range.topic, partition: range.partition, start: range.start, end: range.end, event: 'replay-fetching' }, 'reading a range again');
    const extracted = await extractRange({
      topic: range.topic,
      partition: range.partition,
      start: range.start,
      end: range.end,
      reader,
      timeField: options.load.timeField,
      source: options.source,
      deserializer: this.deserializer,
      transform: options.load.transform,
      onFetched: options.progress === undefined ? undefined : (records, bytes) => options.progress?.fetched(records, bytes, range),
    });
    for (const bucket of extracted.hours) {
      const key = hourStateKey(range.topic, hourKey(bucket.hour));
      const target = this.targets.get(key);
      if (target !== undefined) await this.stageBucket(target, key, extracted, bucket, reader);
    }
    const reasons: Record<string, number> = {};
    for (const record of extracted.quarantined) reasons[record.code] = (reasons[record.code] ?? 0) + 1;
    return { byHour: new Map(extracted.hours.map((bucket) => [hourKey(bucket.hour), bucket.values.length])), quarantined: extracted.quarantined.length, reasons };
  }

  private async stageBucket(target: HourState, key: string, extracted: ExtractedRange, bucket: HourBucket, reader: ReaderSchema): Promise<void> {
    const { warehouse, load } = this.options;
    const root = load.warehouse.root;
    const staged = await stageRange(
      {
        warehouse,
        root,
        layout: load.layout,
        load: load.name,
        seq: this.session.seq,
        stagingDir: `${this.session.stagingDir}/parts`,
        format: load.format,
        codec: load.codec,
        maxFileBytes: load.maxFileBytes,
        budget: memoryBudget(load.memoryBudget),
        rowGroupBytes: load.rowGroupBytes,
        encoderThread: load.parquetEncoderThread,
        afterStagedFile: () => this.options.failpoint?.('swap-after-stage'),
      },
      { ...extracted, hours: [bucket], quarantined: [] },
      reader,
    );
    const bring = newVersionDir(this.session.stagingDir, target.topic, bucket.hour);
    for (const file of staged.files) {
      const name = file.path.slice(file.path.lastIndexOf('/') + 1);
      // Staged under a fresh name (maybe `.retry<n>`), placed under its final name in the new version.
      await warehouse.rename(file.staged, `${bring}/${name}`);
      const next: VersionFile = { name, partition: file.partition, start: file.start, end: file.end, records: file.records, bytes: file.bytes, sha256: file.sha256, readerId: reader.ref.id };
      this.files.get(key)!.push(next);
      await compareFile(this.diffs.get(key)!, {
        warehouse,
        liveDir: topicHourDir(root, target.topic, bucket.hour, load.layout),
        format: load.format,
        outputSchemaJson: JSON.stringify(schemaJsonOf(extracted.outputType ?? reader.fileType)),
        old: liveFiles(target).find((file) => file.name === name),
        next,
        offsets: bucket.offsets,
        values: bucket.values,
      });
    }
  }

  hourSwap(target: HourState): HourSwap {
    const { load } = this.options;
    const root = load.warehouse.root;
    const key = hourStateKey(target.topic, target.hour);
    const hour = hourOfKey(target.hour);
    const old = liveFiles(target);
    const next = [...this.files.get(key)!].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const diff = this.diffs.get(key)!;
    countRemoved(diff, old, next);
    return {
      topic: target.topic,
      hour: target.hour,
      live: topicHourDir(root, target.topic, hour, load.layout),
      fromVersion: target.live,
      toVersion: target.maxVersion + 1,
      keep: versionDir(root, load.name, target.topic, hour, target.live),
      bring: newVersionDir(this.session.stagingDir, target.topic, hour),
      carried: this.carried.get(key)!,
      old,
      new: next,
      recordsChanged: diff.recordsChanged,
      outputSchemaChanged: diff.outputSchemaChanged ?? (old.length === 0 && next.length === 0 ? false : null),
    };
  }
}

/** Runs `work` over `items`, at most `limit` at once; after a failure starts nothing new, waits, then throws it. */
async function inPool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure !== undefined) throw failure.error;
}
