/**
 * Committing to an Iceberg table kept as a file-system ("Hadoop") table: the commit protocol of
 * the format's "File System Tables", over the warehouse (local folder or WebHDFS), for a snapshot
 * that adds files (and may remove some: an overwrite, manifest-rewrite.ts), and for moving `main`
 * back to an earlier snapshot without a new one (a rollback).
 *
 *   <table>/metadata/v<N>.metadata.json   version N of the table metadata (table-metadata.ts)
 *   <table>/metadata/version-hint.text    N, no newline (DuckDB and PyIceberg read it literally)
 *   <table>/metadata/snap-<id>-1-<uuid>.avro   a snapshot's manifest list (manifest-avro.ts)
 *   <table>/metadata/<uuid>-m0.avro      a commit's manifest
 *   <table>/metadata/.<uuid>.metadata.json.tmp, .version-hint.<uuid>.tmp   written, then renamed
 *
 * One attempt: read the current version (the hint, then probe v<N+1>, … until one is missing;
 * without a readable hint, the highest v<N> listed); if `main`'s history already holds a snapshot
 * whose summary carries this commit's `tributary.commit-id`, the commit was made (by this process
 * before a crash, or by another run rolling the same commit forward) and nothing is written.
 * Otherwise write the manifest, the manifest list (the parent's rows plus the new manifest's) and
 * the new metadata under a temporary name, then rename it to v<N+1>.metadata.json. The warehouse's
 * rename refuses an existing target (HDFS's strict rename; link(2) on a local disk), so of two
 * writers only one makes version N+1: the other deletes what it wrote and tries again on the new
 * version (an append applies to any base). Last, the hint is rewritten (best effort: readers that
 * probe do not need it, and the next commit repairs it).
 *
 * A crash leaves the table at version N (nothing renamed: the files written are orphans, which
 * no snapshot references) or at N+1 (the commit is made; a stale hint is repaired next time).
 *
 * A table kept in a REST catalog (`table.catalog`, load-catalog.ts) is committed the same way up
 * to the metadata: the manifests and the manifest list are written to its folder, then the next
 * metadata goes to the catalog as requirements and updates (rest-updates.ts) instead of a
 * `v<N+1>.metadata.json` rename. A conflict (409: the table moved) deletes the attempt's files and
 * tries again on the table as it now is; a commit whose state is unknown (5xx, a lost answer) or
 * a catalog that fails keeps them and throws: the next run finds the commit by its commit id.
 */
import { createHash, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { hasWarehouseCode } from '../warehouse/errors.js';
import { etlError } from '../errors.js';
import type { DataFileMetrics } from './file-metrics.js';
import { stringifyIcebergJson } from './iceberg-json.js';
import {
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
  ENTRY_ADDED,
  type KeyValue,
  type ManifestEntryRecord,
  type ManifestFileRecord,
  type PartitionFieldSchema,
} from './manifest-avro.js';
import { removeFiles, type LiveFile } from './manifest-rewrite.js';
import { commitMetadata, loadTable, metadataDir, pathUnderLocation, versionPath, writeHint, type IcebergTable, type LoadedTable } from './table-versions.js';
import { currentSchema, currentSnapshot, defaultSpec, mainAncestry, newTableMetadata, withMain, withSnapshot, type PartitionSpec, type Snapshot, type TableMetadata } from './table-metadata.js';
import { highestFieldId, nameMappingOf, type IcebergSchema, type NameMapping } from './table-schema.js';
import { evolveSchema } from './schema-evolution.js';

/** Summary key naming the loader commit a snapshot made (`<load>/<seq>`). */
export const COMMIT_ID_KEY = 'tributary.commit-id';
export const NAME_MAPPING_KEY = 'schema.name-mapping.default';
/** Summary keys naming the load and its commit seq (load-tables.ts writes them). */
export const LOAD_KEY = 'tributary.load';
export const SEQ_KEY = 'tributary.seq';
const MAX_ATTEMPTS = 10;

export interface AppendedFile {
  /** Warehouse path, under the table's folder. */
  readonly path: string;
  /** Hours since the epoch: the file's `hour(_event_time)` partition. */
  readonly hour: number;
  readonly records: number;
  readonly bytes: number;
  readonly metrics?: DataFileMetrics | undefined;
}

export interface AppendCommit {
  /** Names the commit in the snapshot summary; a commit id already in `main`'s history is not made again. */
  readonly commitId: string;
  /** The schema of the rows (schema id ignored) and the table's partition spec; a new table is made with them. */
  readonly schema: IcebergSchema;
  readonly spec: PartitionSpec;
  readonly partitionFields: readonly PartitionFieldSchema[];
  /** Properties of a new table. */
  readonly properties: Readonly<Record<string, string>>;
  readonly files: readonly AppendedFile[];
  /** Summary entries besides Iceberg's own counts (the commit id is added). */
  readonly summary: Readonly<Record<string, string>>;
  /** Live files of the current snapshot to remove in this one (an overwrite: replay, rollback); default none. */
  readonly remove?: ((file: LiveFile) => boolean) | undefined;
  /**
   * Files (URIs) the snapshot must remove, every one still live in the base it is made on; else
   * ETL_ICEBERG_COMPACTION_STALE and nothing is committed (another writer removed one since they
   * were read). Implies `remove` of exactly these when `remove` is not given.
   */
  readonly removesExactly?: ReadonlySet<string> | undefined;
  /**
   * A rewrite of existing rows (compaction): the snapshot is a `replace`, and the added files carry
   * `dataSequenceNumber`, the sequence number of the snapshot the rewrite read (Java's
   * use-starting-sequence-number), as their rows are that old.
   */
  readonly rewrite?: { readonly dataSequenceNumber: number } | undefined;
  /**
   * Files an earlier snapshot removed, added back as they were (a rollback under later snapshots):
   * ADDED entries with their own data sequence numbers, besides `files`.
   */
  readonly restore?: readonly RestoredFile[] | undefined;
  readonly nowMs: () => number;
}

export interface RestoredFile {
  readonly dataFile: ManifestEntryRecord['data_file'];
  readonly dataSequenceNumber: bigint;
}

export interface AppendOutcome {
  readonly outcome: 'committed' | 'already-committed';
  readonly snapshotId: bigint;
  readonly version: number;
}

/** Appends the files as one snapshot, unless `main` already has this commit. */
export async function appendSnapshot(table: IcebergTable, commit: AppendCommit): Promise<AppendOutcome> {
  for (let attempt = 1; ; attempt += 1) {
    const loaded = await loadTable(table);
    const made = loaded === undefined ? undefined : mainAncestry(loaded.metadata).find((snapshot) => snapshot.summary[COMMIT_ID_KEY] === commit.commitId);
    if (made !== undefined && loaded !== undefined) {
      await writeHint(table, loaded.version);
      return { outcome: 'already-committed', snapshotId: made['snapshot-id'], version: loaded.version };
    }
    const version = (loaded?.version ?? 0) + 1;
    const written = await writeAttempt(table, loaded, commit, attempt);
    if (written.stale !== undefined) {
      await Promise.all(written.files.map((path) => table.warehouse.delete(path).catch(() => false)));
      throw etlError(
        'ETL_ICEBERG_COMPACTION_STALE',
        `Iceberg table ${table.warehouse.describe(table.dir)}: ${written.stale.length} of the files this commit replaces are no longer live (another writer removed them since they were read, e.g. a replay or a compaction), so rows would be lost or come back twice; nothing was committed. Run it again: it reads the table as it is now`,
        { retriable: true, details: { table: table.dir, commitId: commit.commitId, gone: written.stale } },
      );
    }
    if (table.catalog !== undefined) {
      // Through the catalog: no metadata file of ours, no rename, no hint. A throw (the commit's
      // state unknown, the catalog unreachable or refusing) leaves the attempt's files in place:
      // the commit may have landed, and the next run finds it by its commit id in main's history.
      const outcome = await commitMetadata(table, loaded, written.metadata);
      if (outcome.outcome === 'committed') return { outcome: 'committed', snapshotId: written.snapshotId, version: outcome.loaded.version };
      // A conflict changed nothing: ours was never visible; build on the table as it is now.
      await Promise.all(written.files.map((path) => table.warehouse.delete(path).catch(() => false)));
      if (attempt >= MAX_ATTEMPTS) {
        throw etlError('ETL_ICEBERG_COMMIT_CONFLICT', `Iceberg table ${table.catalog.name}: ${attempt} commits in a row were refused by the catalog because other writers changed the table first (${outcome.reason}); nothing of this commit is visible. Run again`, {
          retriable: true,
          details: { table: table.catalog.name, commitId: commit.commitId, reason: outcome.reason },
        });
      }
      continue;
    }
    try {
      await table.warehouse.rename(written.metadataTemp, versionPath(table, version));
    } catch (error) {
      if (!hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) throw error;
      // Another writer made this version first: ours was never visible; build on theirs.
      await Promise.all(written.files.map((path) => table.warehouse.delete(path).catch(() => false)));
      if (attempt >= MAX_ATTEMPTS) {
        throw etlError('ETL_ICEBERG_COMMIT_CONFLICT', `Iceberg table ${table.warehouse.describe(table.dir)}: ${attempt} commits in a row lost the race for the next metadata version to other writers; nothing of this commit is visible. Run again`, {
          retriable: true,
          details: { table: table.dir, commitId: commit.commitId },
        });
      }
      continue;
    }
    await writeHint(table, version);
    return { outcome: 'committed', snapshotId: written.snapshotId, version };
  }
}

interface WrittenAttempt {
  readonly snapshotId: bigint;
  /** The next metadata: the base with the new snapshot as main (the base itself when `stale`). */
  readonly metadata: TableMetadata;
  /** A file-system table's next metadata, written under a temporary name to rename; '' for a catalog table. */
  readonly metadataTemp: string;
  /** Everything written (to remove if the attempt loses). */
  readonly files: readonly string[];
  /** A rewrite's files no longer live in the base: the attempt must not be committed. */
  readonly stale?: readonly string[];
}

async function writeAttempt(table: IcebergTable, loaded: LoadedTable | undefined, commit: AppendCommit, attempt: number): Promise<WrittenAttempt> {
  const { warehouse } = table;
  let base = loaded?.metadata ?? newTableMetadata({ uuid: randomUUID(), location: table.location, schema: { ...commit.schema, 'schema-id': 0 }, lastColumnId: highestFieldId(commit.schema), spec: commit.spec, properties: commit.properties, nowMs: commit.nowMs() });
  if (loaded !== undefined) {
    checkHistoryKept(table, base, commit);
    base = withRowSchema(table, base, commit);
  }
  const location = base.location.replace(/\/+$/, '');
  const schema = currentSchema(base);
  const spec = defaultSpec(base);
  if (schema === undefined || spec === undefined) throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${warehouse.describe(table.dir)} names a current schema or partition spec it does not hold`, { details: { table: table.dir } });
  const parent = currentSnapshot(base);
  const sequenceNumber = base['last-sequence-number'] + 1;
  const snapshotId = freshSnapshotId(base, commit.commitId, attempt);
  const unique = randomUUID();
  const uri = (path: string): string => `${location}/${relativeToTable(table, path)}`;
  const written: string[] = [];

  const dataSequence = commit.rewrite === undefined ? undefined : BigInt(Math.min(commit.rewrite.dataSequenceNumber, sequenceNumber));
  const restored = commit.restore ?? [];
  const entries: ManifestEntryRecord[] = [
    ...commit.files.map((file) => ({
      status: ENTRY_ADDED,
      snapshot_id: snapshotId,
      sequence_number: dataSequence ?? null,
      file_sequence_number: null,
      data_file: dataFileRecord(uri(file.path), file, commit.partitionFields),
    })),
    ...restored.map((file) => ({ status: ENTRY_ADDED, snapshot_id: snapshotId, sequence_number: file.dataSequenceNumber, file_sequence_number: null, data_file: file.dataFile })),
  ];
  const manifestMetadata = { schemaJson: JSON.stringify(schema), schemaId: schema['schema-id'], partitionSpecJson: JSON.stringify(spec.fields), partitionSpecId: spec['spec-id'] };
  const manifestPath = `${metadataDir(table)}/${unique}-m0.avro`;
  const manifestBytes = encodeManifest(entries, commit.partitionFields, manifestMetadata);
  if (entries.length > 0) {
    await warehouse.create(manifestPath, manifestBytes);
    written.push(manifestPath);
  }

  const hours = [...commit.files.map((file) => file.hour), ...restored.flatMap((file) => Object.values(file.dataFile.partition).filter((value): value is number => typeof value === 'number'))];
  const addedRecords = commit.files.reduce((sum, file) => sum + file.records, 0) + restored.reduce((sum, file) => sum + Number(file.dataFile.record_count), 0);
  const addedBytes = commit.files.reduce((sum, file) => sum + file.bytes, 0) + restored.reduce((sum, file) => sum + Number(file.dataFile.file_size_in_bytes), 0);
  const addedFiles = entries.length;
  const leastAddedSequence = entries.reduce((least, entry) => (entry.sequence_number !== null && entry.sequence_number < least ? entry.sequence_number : least), BigInt(sequenceNumber));
  const newRow: ManifestFileRecord = {
    manifest_path: uri(manifestPath),
    manifest_length: BigInt(manifestBytes.length),
    partition_spec_id: spec['spec-id'],
    content: 0,
    sequence_number: BigInt(sequenceNumber),
    min_sequence_number: leastAddedSequence,
    added_snapshot_id: snapshotId,
    added_files_count: addedFiles,
    existing_files_count: 0,
    deleted_files_count: 0,
    added_rows_count: BigInt(addedRecords),
    existing_rows_count: 0n,
    deleted_rows_count: 0n,
    partitions: hours.length === 0 ? [] : [{ contains_null: false, contains_nan: false, lower_bound: int32(Math.min(...hours)), upper_bound: int32(Math.max(...hours)) }],
    key_metadata: null,
  };
  let parentRows = parent === undefined ? [] : decodeManifestList(await warehouse.open(warehousePathOf(table, location, parent['manifest-list'])));
  let removed: readonly LiveFile[] = [];
  const exactly = commit.removesExactly;
  const remove = commit.remove ?? (exactly === undefined ? undefined : (file: LiveFile): boolean => exactly.has(file.path));
  if (remove !== undefined) {
    const rewrite = await removeFiles(
      { warehouse, metadataDir: metadataDir(table), uri, pathOf: (name) => warehousePathOf(table, location, name), snapshotId, sequenceNumber, partitionFields: commit.partitionFields, manifestMetadata },
      parentRows,
      remove,
    );
    written.push(...rewrite.written);
    parentRows = rewrite.rows;
    removed = rewrite.removed;
  }
  if (exactly !== undefined) {
    const gone = new Set(removed.map((file) => file.path));
    const stale = [...exactly].filter((path) => !gone.has(path));
    if (stale.length > 0 || removed.length !== exactly.size) return { snapshotId, metadata: base, metadataTemp: '', files: written, stale };
  }
  const listPath = `${metadataDir(table)}/snap-${snapshotId}-1-${unique}.avro`;
  await warehouse.create(listPath, encodeManifestList([...(entries.length > 0 ? [newRow] : []), ...parentRows], snapshotId, parent?.['snapshot-id'], sequenceNumber));
  written.push(listPath);

  const previous = parent?.summary ?? {};
  const removedRecords = removed.reduce((sum, file) => sum + Number(file.records), 0);
  const removedBytes = removed.reduce((sum, file) => sum + Number(file.bytes), 0);
  const total = (key: string, added: number, less = 0): string => String(Number(previous[key] ?? '0') + added - less);
  const removedHours = removed.flatMap((file) => Object.values(file.partition).filter((value): value is number => typeof value === 'number'));
  const now = Math.max(commit.nowMs(), ...(base['snapshot-log'] ?? []).map((entry) => entry['timestamp-ms']));
  const snapshot: Snapshot = {
    'snapshot-id': snapshotId,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent['snapshot-id'] }),
    'sequence-number': sequenceNumber,
    'timestamp-ms': now,
    'manifest-list': uri(listPath),
    summary: {
      operation: commit.rewrite !== undefined ? 'replace' : removed.length === 0 ? 'append' : entries.length === 0 ? 'delete' : 'overwrite',
      'added-data-files': String(addedFiles),
      'added-records': String(addedRecords),
      'added-files-size': String(addedBytes),
      ...(removed.length === 0 ? {} : { 'deleted-data-files': String(removed.length), 'deleted-records': String(removedRecords), 'removed-files-size': String(removedBytes) }),
      'changed-partition-count': String(new Set([...hours, ...removedHours]).size),
      'total-records': total('total-records', addedRecords, removedRecords),
      'total-files-size': total('total-files-size', addedBytes, removedBytes),
      'total-data-files': total('total-data-files', addedFiles, removed.length),
      'total-delete-files': previous['total-delete-files'] ?? '0',
      'total-position-deletes': previous['total-position-deletes'] ?? '0',
      'total-equality-deletes': previous['total-equality-deletes'] ?? '0',
      'engine-name': 'tributary',
      ...commit.summary,
      [COMMIT_ID_KEY]: commit.commitId,
    },
    'schema-id': schema['schema-id'],
  };
  // A catalog keeps its own metadata log: no previous file of ours to name, and no file to write.
  const metadata = withSnapshot(base, snapshot, loaded === undefined || table.catalog !== undefined ? undefined : uri(loaded.path), now);
  if (table.catalog !== undefined) return { snapshotId, metadata, metadataTemp: '', files: written };
  const metadataTemp = `${metadataDir(table)}/.${unique}.metadata.json.tmp`;
  await warehouse.create(metadataTemp, Buffer.from(stringifyIcebergJson(metadata), 'utf8'));
  written.push(metadataTemp);
  return { snapshotId, metadata, metadataTemp, files: written };
}

/**
 * The table's metadata with the rows' schema current: the same metadata when the schema is the
 * table's, else with the evolved schema added (an identical earlier one reused), provided it is
 * exactly what evolving the table's current schema gives (schema-evolution.ts): the plan computed
 * it from the table as it was then, and a table changed since (by another writer) is refused.
 * Also refuses a table partitioned otherwise than the loader's.
 */
function withRowSchema(table: IcebergTable, metadata: TableMetadata, commit: AppendCommit): TableMetadata {
  const schema = currentSchema(metadata);
  const spec = defaultSpec(metadata);
  const describe = table.warehouse.describe(table.dir);
  if (spec === undefined || !isDeepStrictEqual(spec.fields, commit.spec.fields)) {
    throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${describe} is not partitioned by hour(_event_time) as the loader's tables are; nothing was committed`, { details: { table: table.dir, spec: spec?.fields } });
  }
  if (schema === undefined) throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${describe} names a current schema it does not hold; nothing was committed`, { details: { table: table.dir } });
  if (isDeepStrictEqual(schema.fields, commit.schema.fields)) return metadata;
  const evolved = evolveSchema({ schema, lastColumnId: metadata['last-column-id'], schemaIds: metadata.schemas.map((known) => known['schema-id']) }, commit.schema, describe);
  if (!isDeepStrictEqual(evolved.schema.fields, commit.schema.fields)) {
    throw etlError(
      'ETL_ICEBERG_SCHEMA_CHANGED',
      `Iceberg table ${describe} changed its schema after this run planned (another writer evolved it), so the files of this commit carry ids the table no longer means; nothing was committed to the table. Run the load again: it plans against the table as it is now`,
      { retriable: true, details: { table: table.dir, tableSchema: schema.fields, rowSchema: commit.schema.fields } },
    );
  }
  const known = metadata.schemas.find((candidate) => isDeepStrictEqual(candidate.fields, evolved.schema.fields));
  const added = known ?? { ...evolved.schema, 'schema-id': Math.max(...metadata.schemas.map((candidate) => candidate['schema-id'])) + 1 };
  return {
    ...metadata,
    schemas: known === undefined ? [...metadata.schemas, added] : metadata.schemas,
    'current-schema-id': added['schema-id'],
    'last-column-id': Math.max(metadata['last-column-id'], evolved.lastColumnId),
    properties: withNameMapping(metadata.properties ?? {}, added),
  };
}

/**
 * The name mapping (`schema.name-mapping.default`, for readers of files without ids) of a new
 * schema, keeping the entries of dropped top-level columns so older files still map; untouched
 * when the table has none (another writer chose not to).
 */
function withNameMapping(properties: Readonly<Record<string, string>>, schema: IcebergSchema): Readonly<Record<string, string>> {
  const current = properties[NAME_MAPPING_KEY];
  if (current === undefined) return properties;
  let old: NameMapping[] = [];
  try {
    old = JSON.parse(current) as NameMapping[];
  } catch {
    // An unreadable mapping is replaced by one of the current schema.
  }
  const mapping = nameMappingOf(schema);
  const kept = old.filter((entry) => !mapping.some((known) => known['field-id'] === entry['field-id']));
  return { ...properties, [NAME_MAPPING_KEY]: JSON.stringify([...mapping, ...kept]) };
}

/**
 * Refuses to build on a table whose `main` lost a snapshot this load made (a rollback or a branch
 * move by another tool): the loader's commit log still counts those records as loaded, so a
 * commit on top would make their loss permanent and silent.
 */
function checkHistoryKept(table: IcebergTable, metadata: TableMetadata, commit: AppendCommit): void {
  const load = commit.summary[LOAD_KEY];
  if (load === undefined) return;
  // The load's commits (replays and rollbacks of the load carry no seq: they are not commits of the log).
  const ours = (metadata.snapshots ?? []).filter((snapshot) => snapshot.summary[LOAD_KEY] === load && snapshot.summary[SEQ_KEY] !== undefined);
  const newest = ours.reduce<Snapshot | undefined>((best, snapshot) => (best === undefined || Number(snapshot.summary[SEQ_KEY]) > Number(best.summary[SEQ_KEY]) ? snapshot : best), undefined);
  if (newest === undefined) return;
  if (mainAncestry(metadata).some((snapshot) => snapshot['snapshot-id'] === newest['snapshot-id'])) return;
  throw etlError(
    'ETL_ICEBERG_METADATA_INVALID',
    `Iceberg table ${table.warehouse.describe(table.dir)}: its main branch no longer holds snapshot ${newest['snapshot-id']} (commit ${newest.summary[COMMIT_ID_KEY] ?? '?'} of load ${load}), ` +
      'so it was rolled back or moved by another tool. The load counts those records as loaded; nothing was committed. Point main back at that snapshot (or a descendant of it), then run again',
    { details: { table: table.dir, snapshot: String(newest['snapshot-id']), load } },
  );
}

function dataFileRecord(path: string, file: AppendedFile, partition: readonly PartitionFieldSchema[]): ManifestEntryRecord['data_file'] {
  const metrics = file.metrics;
  return {
    content: 0,
    file_path: path,
    file_format: 'PARQUET',
    partition: Object.fromEntries(partition.map((entry) => [entry.name, file.hour])),
    record_count: BigInt(file.records),
    file_size_in_bytes: BigInt(file.bytes),
    column_sizes: metrics === undefined ? null : longs(metrics.columnSizes),
    value_counts: metrics === undefined ? null : longs(metrics.valueCounts),
    null_value_counts: metrics === undefined ? null : longs(metrics.nullValueCounts),
    nan_value_counts: metrics === undefined ? null : longs(metrics.nanValueCounts),
    lower_bounds: metrics === undefined ? null : bounds(metrics.lowerBounds),
    upper_bounds: metrics === undefined ? null : bounds(metrics.upperBounds),
    key_metadata: null,
    split_offsets: metrics === undefined ? null : metrics.splitOffsets.map((offset) => BigInt(offset)),
    equality_ids: null,
    sort_order_id: 0,
  };
}

function longs(byId: Readonly<Record<string, number>>): KeyValue<bigint>[] {
  return Object.entries(byId)
    .map(([key, value]) => ({ key: Number(key), value: BigInt(value) }))
    .sort((a, b) => a.key - b.key);
}

function bounds(byId: Readonly<Record<string, string>>): KeyValue<Buffer>[] {
  return Object.entries(byId)
    .map(([key, value]) => ({ key: Number(key), value: Buffer.from(value, 'hex') }))
    .sort((a, b) => a.key - b.key);
}

function int32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32LE(value);
  return bytes;
}

/** A positive 63-bit id from the table, the commit and the attempt, not yet used in the table. */
function freshSnapshotId(metadata: TableMetadata, commitId: string, attempt: number): bigint {
  const used = new Set((metadata.snapshots ?? []).map((snapshot) => snapshot['snapshot-id']));
  for (let salt = 0; ; salt += 1) {
    const digest = createHash('sha256').update(`${metadata['table-uuid']}\n${commitId}\n${attempt}\n${salt}`).digest();
    const id = digest.readBigUInt64BE(0) & 0x7fff_ffff_ffff_ffffn;
    if (id !== 0n && !used.has(id)) return id;
  }
}

function relativeToTable(table: IcebergTable, path: string): string {
  if (!path.startsWith(`${table.dir}/`)) throw new Error(`${path} is not under the table folder ${table.dir}`);
  return path.slice(table.dir.length + 1);
}

/** The warehouse path of a file the table metadata names by URI under its location (`file:/x` and `file:///x` alike). */
function warehousePathOf(table: IcebergTable, location: string, uri: string): string {
  const relative = pathUnderLocation(location, uri);
  if (relative === undefined) {
    throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${table.warehouse.describe(table.dir)} names ${uri}, outside its location ${location}; this loader only continues tables whose files it can find under their location`, {
      details: { table: table.dir, uri, location },
    });
  }
  return `${table.dir}/${relative}`;
}

/**
 * Points `main` at `target`, one of the table's snapshots, in a new metadata version, provided
 * `main` is still at `expected` (else ETL_ICEBERG_COMMIT_CONFLICT: the table moved meanwhile).
 * Answers the version; a `main` already at `target` changes nothing.
 */
export async function setMain(table: IcebergTable, target: bigint, expected: bigint, nowMs: () => number = Date.now): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    const loaded = await loadTable(table);
    if (loaded === undefined) throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${table.warehouse.describe(table.dir)} has no metadata`, { details: { table: table.dir } });
    const current = currentSnapshot(loaded.metadata)?.['snapshot-id'];
    if (current === target) return loaded.version;
    if (current !== expected) {
      throw etlError('ETL_ICEBERG_COMMIT_CONFLICT', `Iceberg table ${table.warehouse.describe(table.dir)}: main moved to snapshot ${String(current)} since this rollback planned (expected ${expected}); nothing was changed. Look at etl status, then run again`, {
        details: { table: table.dir, current: String(current), expected: String(expected) },
      });
    }
    const location = loaded.metadata.location.replace(/\/+$/, '');
    const previous = loaded.metadataLocation ?? `${location}/${relativeToTable(table, loaded.path)}`;
    const metadata = withMain(loaded.metadata, target, previous, nowMs());
    const outcome = await commitMetadata(table, loaded, metadata);
    if (outcome.outcome === 'committed') return outcome.loaded.version;
    if (attempt >= MAX_ATTEMPTS) throw etlError('ETL_ICEBERG_COMMIT_CONFLICT', `Iceberg table ${table.catalog?.name ?? table.warehouse.describe(table.dir)}: the rollback lost the race for the next metadata version ${attempt} times; nothing was changed. Run again`, { retriable: true, details: { table: table.dir } });
  }
}

export { loadTable, type IcebergTable, type LoadedTable } from './table-versions.js';
