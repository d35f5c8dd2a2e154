/**
 * Replay and rollback of a `format: iceberg` load, as table operations (issue #33):
 *
 *   replay [from, to)   lease ▸ recover ▸ the offset ranges that fed those hours, from the
 *                       published manifests ▸ check the log still holds them ▸ read them again with
 *                       today's load file and reader schema, keeping the records of the window's
 *                       hours ▸ write each hour's files under new names ▸ check every hour keeps its
 *                       record count ▸ one `overwrite` snapshot per table: the window's live files
 *                       DELETED, the new ones ADDED (summary `tributary.replay` = the window)
 *   rollback [from, to) the newest replay snapshot of the load overlapping the window (not rolled
 *                       back already): when it is the table's current one, `main` moves back to its
 *                       parent, a new metadata version and no new snapshot; under later snapshots
 *                       (loads since), an `overwrite` snapshot undoes it alone (iceberg-restore.ts),
 *                       since moving `main` back would drop records the load counts as loaded.
 *
 * The commit log is not touched: offsets stay committed, and later runs neither load these
 * records again nor skip any. A replay killed before its snapshot leaves only unreferenced files
 * (the table and the log unchanged); run again, it writes new ones. The old version stays
 * readable by time travel (the overwrite's parent) until snapshots are expired.
 */
import { randomBytes } from 'node:crypto';
import { TributaryError } from '../../common/errors.js';
import { acquireLease } from '../load/lease.js';
import { readClaim, readCommitLog } from '../load/commit-log.js';
import { recoverCommits } from '../load/commit.js';
import { readRange } from '../load/extract.js';
import { registryReaderSchemas, type LoadServices } from '../load/run.js';
import { AvroDeserializer } from '../../registry/serde/deserializer.js';
import { checkTimeField } from '../records/event-time.js';
import { compileTransform } from '../records/transform.js';
import { writeRowFile } from '../iceberg/row-files.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf, planTableSchemas, rowSchemaOf, topicTablePlace } from '../iceberg/load-tables.js';
import { icebergTableOf } from '../iceberg/load-catalog.js';
import { pathUnderLocation } from '../iceberg/table-versions.js';
import { idMapping } from '../iceberg/schema-evolution.js';
import { appendSnapshot, loadTable, setMain, type AppendedFile, type LoadedTable } from '../iceberg/table-commit.js';
import { decodeManifest, decodeManifestList, ENTRY_DELETED } from '../iceberg/manifest-avro.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { currentSnapshot, mainAncestry } from '../iceberg/table-metadata.js';
import { tableRow, tableRowType } from '../iceberg/table-row.js';
import { HOUR_MS, hourKey, rangeName, topicHourDir } from '../layout.js';
import type { ReaderSchema } from '../load/plan.js';
import { restoreBeforeReplay, ROLLED_BACK_KEY } from './iceberg-restore.js';
import { boundsOf, checkWindow, missingRanges, missingRangesError, type ReplayRange } from './ranges.js';
import type { SwapServices } from './session.js';

/** Summary key of a replay snapshot: the window `<from ISO>/<to ISO>` it rebuilt. */
export const REPLAY_KEY = 'tributary.replay';

export interface IcebergReplayOptions extends LoadServices, Pick<SwapServices, 'store' | 'numberRuns'> {
  readonly from: Date;
  readonly to: Date;
  readonly topic?: string | undefined;
  readonly reason?: string | undefined;
}

export interface IcebergTableChange {
  readonly topic: string;
  readonly location: string;
  /** `replay`: an overwrite snapshot; `rollback`: main moved back to `snapshotId`; `restore`: an overwrite snapshot undoing the replay under later ones. */
  readonly operation: 'replay' | 'rollback' | 'restore';
  readonly snapshotId: string;
  readonly version: number;
  readonly hours: readonly string[];
  readonly records: number;
  readonly filesAdded: number;
}

/** Rebuilds the window's hours of each table as one overwrite snapshot per table. */
export async function replayIcebergWindow(options: IcebergReplayOptions): Promise<IcebergTableChange[]> {
  const { load, warehouse, logger } = options;
  checkWindow(options.from, options.to);
  const attempt = randomBytes(6).toString('hex');
  const log = logger.child({ load: load.name, attempt });
  const lease = await acquireLease(options.store, load.name, { attempt, numberRuns: options.numberRuns });
  try {
    const root = load.warehouse.root;
    await recoverCommits({ warehouse, root, load: load.name, attempt, logger: log, env: options.env });
    const ranges = await windowRanges(options);
    if (ranges.length === 0) return [];
    const missing = missingRanges(ranges, await boundsOf(ranges, options.source));
    if (missing.length > 0) throw missingRangesError(load.name, missing);

    const readers = new Map<string, ReaderSchema>();
    for (const topic of new Set(ranges.map((range) => range.topic))) {
      const reader = await registryReaderSchemas(options.registry)(topic);
      if (load.timeField !== undefined) checkTimeField(reader, topic, load.timeField);
      readers.set(topic, reader);
    }
    const tableSchemas = await planTableSchemas(load, warehouse, readers, log, options.env);
    const deserializer = new AvroDeserializer(options.registry);
    const changes: IcebergTableChange[] = [];
    for (const topic of [...readers.keys()].sort()) {
      const reader = readers.get(topic)!;
      const recordType = load.transform === undefined ? reader.fileType : compileTransform(load.transform, reader, topic).outputType;
      const schema = tableSchemas.get(topic)!;
      const fieldIds = idMapping(rowSchemaOf(recordType), schema);
      const rowType = tableRowType(recordType);
      const hours = new Set(ranges.filter((range) => range.topic === topic).flatMap((range) => range.hours.map((hour) => Date.parse(`${hour}:00:00.000Z`) / HOUR_MS)));
      const files: AppendedFile[] = [];
      for (const range of ranges.filter((candidate) => candidate.topic === topic)) {
        const rows = new Map<number, Record<string, unknown>[]>();
        await readRange(
          { topic, partition: range.partition, start: range.start, end: range.end, reader, timeField: load.timeField, source: options.source, deserializer, transform: load.transform },
          {
            record: (hour, value, offset, eventTimeMs, timestamp) => {
              if (!hours.has(hour)) return;
              let list = rows.get(hour);
              if (list === undefined) rows.set(hour, (list = []));
              list.push(tableRow(value, { topic, partition: range.partition, offset, timestamp, eventTimeMs }));
            },
            quarantined: () => undefined,
          },
        );
        for (const [hour, list] of [...rows].sort(([a], [b]) => a - b)) {
          const path = `${topicHourDir(root, topic, hour, 'iceberg')}/${rangeName(topic, range.partition, range.start, range.end)}.replay-${attempt}.parquet`;
          files.push(await writeRowFile({ warehouse, path, rowType, codec: load.codec, fieldIds, hour, metadata: { 'tributary.replay': 'true' } }, list));
        }
      }
      const table = await icebergTableOf(warehouse, topicTablePlace(load, warehouse, topic), options.env);
      const before = await loadTable(table);
      if (before === undefined) continue;
      await checkCounts(options, table.dir, before, hours, files);
      const outcome = await appendSnapshot(table, {
        commitId: `${load.name}/replay/${attempt}`,
        schema,
        spec: hourSpecOf(schema),
        partitionFields: HOUR_PARTITION_FIELDS,
        properties: {},
        files,
        summary: { 'tributary.load': load.name, 'tributary.topic': topic, [REPLAY_KEY]: `${options.from.toISOString()}/${options.to.toISOString()}`, ...(options.reason === undefined ? {} : { 'tributary.reason': options.reason }) },
        remove: (file) => hours.has(Number(file.partition['_event_time_hour'])),
        nowMs: Date.now,
      });
      log.info({ topic, snapshot: String(outcome.snapshotId), hours: hours.size, files: files.length, event: 'table-replayed' }, 'Iceberg overwrite snapshot made');
      changes.push({
        topic,
        location: table.location,
        operation: 'replay',
        snapshotId: String(outcome.snapshotId),
        version: outcome.version,
        hours: [...hours].sort((a, b) => a - b).map(hourKey),
        records: files.reduce((sum, file) => sum + file.records, 0),
        filesAdded: files.length,
      });
    }
    return changes;
  } finally {
    await lease.release();
  }
}

/** Moves each table's main back from the replay of the window to the snapshot before it. */
export async function rollbackIcebergWindow(options: Pick<IcebergReplayOptions, 'load' | 'warehouse' | 'logger' | 'store' | 'numberRuns' | 'from' | 'to' | 'topic' | 'env'>): Promise<IcebergTableChange[]> {
  const { load, warehouse } = options;
  const attempt = randomBytes(6).toString('hex');
  const lease = await acquireLease(options.store, load.name, { attempt, numberRuns: options.numberRuns });
  try {
    const changes: IcebergTableChange[] = [];
    const topics = await topicsWithTables(options);
    for (const topic of topics) {
      const table = await icebergTableOf(warehouse, topicTablePlace(load, warehouse, topic), options.env);
      const loaded = await loadTable(table);
      if (loaded === undefined) continue;
      const history = mainAncestry(loaded.metadata);
      const undone = new Set(history.map((snapshot) => snapshot.summary[ROLLED_BACK_KEY]).filter((id): id is string => id !== undefined));
      const replay = history.find(
        (snapshot) => snapshot.summary['tributary.load'] === load.name && overlaps(snapshot.summary[REPLAY_KEY], options.from, options.to) && !undone.has(String(snapshot['snapshot-id'])),
      );
      if (replay === undefined) continue;
      const current = currentSnapshot(loaded.metadata);
      const parent = replay['parent-snapshot-id'];
      const hours = windowHours(replay.summary[REPLAY_KEY]);
      if (current?.['snapshot-id'] === replay['snapshot-id'] && parent !== undefined) {
        const version = await setMain(table, parent, replay['snapshot-id']);
        changes.push({ topic, location: loaded.metadata.location, operation: 'rollback', snapshotId: String(parent), version, hours, records: Number(replay.summary['added-records'] ?? 0), filesAdded: 0 });
        continue;
      }
      const restored = await restoreBeforeReplay(table, loaded, replay, { 'tributary.load': load.name, 'tributary.topic': topic, 'tributary.rollback': replay.summary[REPLAY_KEY] ?? '' });
      changes.push({ topic, location: loaded.metadata.location, operation: 'restore', snapshotId: String(restored.snapshotId), version: restored.version, hours, records: restored.records, filesAdded: 0 });
    }
    return changes;
  } finally {
    await lease.release();
  }
}

/** What `etl replay` and `etl rollback` print for an Iceberg load. */
export function formatIcebergChanges(changes: readonly IcebergTableChange[], operation: 'replay' | 'rollback', loadFile: string): string {
  if (changes.length === 0) return `${operation}: nothing to do in the window (no loaded hours${operation === 'rollback' ? ' replayed' : ''})\n`;
  const lines = changes.map((change) =>
    change.operation === 'replay'
      ? `${change.topic}: overwrite snapshot ${change.snapshotId} (metadata v${change.version}) replaced hours ${change.hours.join(', ')}: ${change.records} records in ${change.filesAdded} files; ${change.location}`
      : change.operation === 'rollback'
        ? `${change.topic}: main moved back to snapshot ${change.snapshotId} (metadata v${change.version}), before the replay of ${change.hours.join(', ')}; ${change.location}`
        : `${change.topic}: overwrite snapshot ${change.snapshotId} (metadata v${change.version}) put back the files the replay of ${change.hours.join(', ')} replaced (${change.records} records), keeping the snapshots made since; ${change.location}`,
  );
  return `${lines.join('\n')}\n(the previous version stays readable by time travel; npx tributary etl status --load ${loadFile} lists the snapshots)\n`;
}

/** The offset ranges whose files hold records of the window's hours, by published manifest. */
async function windowRanges(options: IcebergReplayOptions): Promise<ReplayRange[]> {
  const { load, warehouse } = options;
  const log = await readCommitLog(warehouse, load.warehouse.root, load.name);
  const from = options.from.getTime();
  const to = options.to.getTime();
  const byRange = new Map<string, { topic: string; partition: number; start: number; end: number; hours: Set<string> }>();
  for (const seq of [...log.published].sort((a, b) => a - b)) {
    const { manifest } = await readClaim(warehouse, load.warehouse.root, load.name, seq);
    for (const file of manifest.files) {
      const hourStart = Date.parse(`${file.hour}:00:00.000Z`);
      if (hourStart < from || hourStart >= to || (options.topic !== undefined && file.topic !== options.topic)) continue;
      const key = `${file.topic}\u0000${file.partition}\u0000${file.start}`;
      let range = byRange.get(key);
      if (range === undefined) byRange.set(key, (range = { topic: file.topic, partition: file.partition, start: file.start, end: file.end, hours: new Set() }));
      range.hours.add(file.hour);
    }
  }
  // liveByHour serves the hour-folder replay's checks; this one counts from the table (checkCounts).
  return [...byRange.values()].map((range) => ({ ...range, hours: [...range.hours].sort(), liveByHour: new Map() }));
}

/** Refuses a replay that would change an hour's record count (records moving hours, or dropped). */
async function checkCounts(options: IcebergReplayOptions, dir: string, loaded: LoadedTable, hours: ReadonlySet<number>, files: readonly AppendedFile[]): Promise<void> {
  const totals = new Map<number, number>();
  for (const file of files) totals.set(file.hour, (totals.get(file.hour) ?? 0) + file.records);
  const live = await liveRecordsPerHour(options.warehouse, dir, loaded, hours);
  const changed = [...hours].filter((hour) => (totals.get(hour) ?? 0) !== (live.get(hour) ?? 0));
  if (changed.length > 0) {
    throw new TributaryError({
      code: 'ETL_REPLAY_RECORDS_MOVE',
      message:
        `replay of load ${options.load.name} stopped before changing the table: ${changed.map((hour) => `${hourKey(hour)} would hold ${totals.get(hour) ?? 0} records instead of ${live.get(hour) ?? 0}`).join(', ')}. ` +
        'A replay rebuilds hours with the same records (the event time must not move a record to another hour, and none may be dropped); the files it wrote are not referenced by the table',
      details: { load: options.load.name, hours: changed.map(hourKey) },
    });
  }
}

/** Records per hour of the window in the table's current snapshot, from its manifests. */
async function liveRecordsPerHour(warehouse: WarehouseFileSystem, dir: string, loaded: LoadedTable, hours: ReadonlySet<number>): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  const snapshot = currentSnapshot(loaded.metadata);
  if (snapshot === undefined) return counts;
  const pathOf = (uri: string): string => `${dir}/${pathUnderLocation(loaded.metadata.location, uri) ?? uri}`;
  for (const row of decodeManifestList(await warehouse.open(pathOf(snapshot['manifest-list'])))) {
    for (const entry of decodeManifest(await warehouse.open(pathOf(row.manifest_path)))) {
      const hour = Number(entry.data_file.partition['_event_time_hour']);
      if (entry.status === ENTRY_DELETED || !hours.has(hour)) continue;
      counts.set(hour, (counts.get(hour) ?? 0) + Number(entry.data_file.record_count));
    }
  }
  return counts;
}

async function topicsWithTables(options: Pick<IcebergReplayOptions, 'load' | 'warehouse' | 'topic'>): Promise<string[]> {
  const { load, warehouse } = options;
  const log = await readCommitLog(warehouse, load.warehouse.root, load.name);
  const topics = new Set<string>();
  for (const seq of log.published) {
    const { manifest } = await readClaim(warehouse, load.warehouse.root, load.name, seq);
    for (const topic of Object.keys(manifest.iceberg ?? {})) if (options.topic === undefined || topic === options.topic) topics.add(topic);
  }
  return [...topics].sort();
}

function overlaps(window: string | undefined, from: Date, to: Date): boolean {
  if (window === undefined) return false;
  const [start, end] = window.split('/').map((part) => Date.parse(part));
  return start !== undefined && end !== undefined && start < to.getTime() && end > from.getTime();
}

function windowHours(window: string | undefined): string[] {
  if (window === undefined) return [];
  const [start, end] = window.split('/').map((part) => Date.parse(part));
  if (start === undefined || end === undefined || Number.isNaN(start) || Number.isNaN(end)) return [];
  const hours: string[] = [];
  for (let hour = start; hour < end; hour += HOUR_MS) hours.push(hourKey(hour / HOUR_MS));
  return hours;
}
