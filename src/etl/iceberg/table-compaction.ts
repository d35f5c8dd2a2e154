/**
 * Compaction of a loader-written table (the format's `replace` operation; Spark's
 * `rewrite_data_files` with its bin-pack strategy): an hour holding many small files gets them
 * rewritten as few files near the target size, in one `replace` snapshot per table.
 *
 *   plan     the current snapshot's live files, per hour partition: the small ones (under 75% of
 *            the target, as Spark's min-file-size-bytes) in groups of at most the target's bytes,
 *            in the order they were loaded; an hour is rewritten when it has at least
 *            `minInputFiles` small files (Spark's min-input-files, default 5)
 *   rewrite  each group's rows, read file by file (each converted to today's row schema when it was
 *            written with an older one: Avro resolution, so added columns read as null and
 *            int→long, float→double are widened), into one new file per group under the hour's
 *            folder, named for the attempt
 *   commit   one snapshot: the inputs DELETED, the new files ADDED with the data sequence number
 *            of the snapshot read (use-starting-sequence-number), summary operation `replace`.
 *            It is made only if every input is still live: appends that landed meanwhile are kept
 *            (a load only adds files), but a replay that removed an input makes the rewrite stale
 *            (ETL_ICEBERG_COMPACTION_STALE): its files are deleted and nothing changes.
 *
 * Rows, record counts and offsets are unchanged, so the loader's commit log (where exactly-once
 * lives) is untouched and needs no lease: compaction runs beside a running load. A crash leaves
 * the table at the snapshot before (the new files are orphans for orphan removal) or after.
 */
import type { Type } from 'avsc';
import type { DataFileCodec } from '../files/data-files.js';
import { readParquetFile } from '../files/parquet-file.js';
import { parseDataFileSchema } from '../files/schema-types.js';
import { isTributaryError } from '../../common/errors.js';
import { etlError } from '../errors.js';
import { topicHourFolder } from '../layout.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf } from './load-tables.js';
import { liveDataFiles, type LiveDataFile } from './live-files.js';
import { writeRowFile } from './row-files.js';
import { appendSnapshot, loadTable, type AppendedFile } from './table-commit.js';
import { currentSnapshot } from './table-metadata.js';
import type { IcebergSchema } from './table-schema.js';
import type { IcebergTable } from './table-versions.js';

export interface CompactionPolicy {
  /** Bytes a rewritten file aims at (Iceberg's `write.target-file-size-bytes`). */
  readonly targetFileBytes: number;
  /** An hour is rewritten when it holds at least this many small files (at least 2). */
  readonly minInputFiles: number;
  /** Only hours in [from, to), in hours since the epoch. */
  readonly hours?: { readonly from: number; readonly to: number } | undefined;
}

/** Spark's defaults, but a target of 128 MiB: the loader's row group size, and the bytes a rewrite holds at once. */
export const DEFAULT_COMPACTION_POLICY: CompactionPolicy = { targetFileBytes: 128 * 1024 * 1024, minInputFiles: 5 };

/** A file is small when under this share of the target (Spark's min-file-size-bytes default). */
const SMALL_FILE_SHARE = 0.75;

/** How the rewritten rows are written: today's row type, in the table's field ids. */
export interface CompactionRows {
  readonly rowType: Type;
  /** The rows' schema in the table's ids (a new one evolves the table, as a load's would). */
  readonly schema: IcebergSchema;
  readonly fieldIds: ReadonlyMap<number, number>;
  readonly codec: DataFileCodec;
}

export interface CompactionRequest {
  readonly policy: CompactionPolicy;
  readonly rows: CompactionRows;
  /** Names the new files and the commit (`<commitPrefix>` is the snapshot's commit id). */
  readonly attempt: string;
  readonly commitId: string;
  /** Summary entries besides Iceberg's own. */
  readonly summary: Readonly<Record<string, string>>;
  readonly nowMs?: () => number;
}

export interface CompactedHour {
  readonly hour: number;
  readonly inputFiles: number;
  readonly inputBytes: number;
  readonly outputFiles: number;
  readonly outputBytes: number;
  readonly records: number;
}

export interface CompactionReport {
  readonly hours: readonly CompactedHour[];
  /** The `replace` snapshot, when one was made. */
  readonly snapshotId?: string;
  readonly version?: number;
}

/** The groups of small files to rewrite, per hour (a pure decision on the live files). */
export function planCompaction(files: readonly LiveDataFile[], policy: CompactionPolicy): { readonly hour: number; readonly groups: readonly (readonly LiveDataFile[])[] }[] {
  const minInputFiles = Math.max(2, policy.minInputFiles);
  const byHour = new Map<number, LiveDataFile[]>();
  for (const file of files) {
    if (file.hour === undefined || file.bytes >= policy.targetFileBytes * SMALL_FILE_SHARE) continue;
    if (policy.hours !== undefined && (file.hour < policy.hours.from || file.hour >= policy.hours.to)) continue;
    let list = byHour.get(file.hour);
    if (list === undefined) byHour.set(file.hour, (list = []));
    list.push(file);
  }
  const plan: { hour: number; groups: LiveDataFile[][] }[] = [];
  for (const [hour, small] of [...byHour].sort(([a], [b]) => a - b)) {
    if (small.length < minInputFiles) continue;
    // Load order (sequence number, then name: a range's start offset), so rows keep their order.
    small.sort((a, b) => (a.dataSequenceNumber < b.dataSequenceNumber ? -1 : a.dataSequenceNumber > b.dataSequenceNumber ? 1 : a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
    const groups: LiveDataFile[][] = [];
    let group: LiveDataFile[] = [];
    let bytes = 0;
    for (const file of small) {
      if (group.length > 0 && bytes + file.bytes > policy.targetFileBytes) {
        groups.push(group);
        group = [];
        bytes = 0;
      }
      group.push(file);
      bytes += file.bytes;
    }
    groups.push(group);
    const rewritten = groups.filter((candidate) => candidate.length > 1);
    if (rewritten.length > 0) plan.push({ hour, groups: rewritten });
  }
  return plan;
}

/** Compacts the table's small files, hour by hour, in one `replace` snapshot. */
export async function compactTable(table: IcebergTable, request: CompactionRequest): Promise<CompactionReport> {
  const loaded = await loadTable(table);
  const snapshot = loaded === undefined ? undefined : currentSnapshot(loaded.metadata);
  if (loaded === undefined || snapshot === undefined) return { hours: [] };
  const plan = planCompaction(await liveDataFiles(table, loaded.metadata, snapshot), request.policy);
  if (plan.length === 0) return { hours: [] };

  const written: AppendedFile[] = [];
  const hours: CompactedHour[] = [];
  let committing = false;
  try {
    for (const { hour, groups } of plan) {
      const outputs: AppendedFile[] = [];
      for (const [index, group] of groups.entries()) {
        const path = `${table.dir}/${topicHourFolder(hour, 'iceberg')}/compact-${request.attempt}-${index}.parquet`;
        const file = await writeRowFile(
          { warehouse: table.warehouse, path, rowType: request.rows.rowType, codec: request.rows.codec, fieldIds: request.rows.fieldIds, hour, metadata: { 'tributary.compaction': 'true' } },
          rowsOf(table, group, request.rows.rowType),
        );
        written.push(file);
        outputs.push(file);
      }
      const inputs = groups.flat();
      hours.push({
        hour,
        inputFiles: inputs.length,
        inputBytes: inputs.reduce((sum, file) => sum + file.bytes, 0),
        outputFiles: outputs.length,
        outputBytes: outputs.reduce((sum, file) => sum + file.bytes, 0),
        records: outputs.reduce((sum, file) => sum + file.records, 0),
      });
    }
    const schema = request.rows.schema;
    committing = true;
    const outcome = await appendSnapshot(table, {
      commitId: request.commitId,
      schema,
      spec: hourSpecOf(schema),
      partitionFields: HOUR_PARTITION_FIELDS,
      properties: {},
      files: written,
      summary: request.summary,
      removesExactly: new Set(plan.flatMap(({ groups }) => groups.flat().map((file) => file.uri))),
      rewrite: { dataSequenceNumber: snapshot['sequence-number'] },
      nowMs: request.nowMs ?? Date.now,
    });
    return { hours, snapshotId: String(outcome.snapshotId), version: outcome.version };
  } catch (error) {
    // Known not committed: the new files are nobody's. (After any other failure of the commit they
    // may be referenced, so they are left for orphan removal, which checks.)
    if (!committing || (isTributaryError(error) && (NOT_COMMITTED as readonly string[]).includes(error.code))) {
      await Promise.all(written.map((file) => table.warehouse.delete(file.path).catch(() => false)));
    }
    throw error;
  }
}

/** Failures of appendSnapshot that come before any metadata version is published. */
const NOT_COMMITTED = ['ETL_ICEBERG_COMPACTION_STALE', 'ETL_ICEBERG_SCHEMA_CHANGED', 'ETL_ICEBERG_METADATA_INVALID', 'ETL_ICEBERG_COMMIT_CONFLICT'] as const;

/** The rows of the group's files in order, each read as `rowType` (checked against the manifest's count). */
async function* rowsOf(table: IcebergTable, group: readonly LiveDataFile[], rowType: Type): AsyncGenerator<Record<string, unknown>> {
  for (const file of group) {
    const contents = await readParquetFile(await table.warehouse.open(file.path));
    if (contents.records.length !== file.records) {
      throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${table.warehouse.describe(table.dir)}: data file ${file.uri} holds ${contents.records.length} rows but its manifest says ${file.records}; nothing was compacted. The table needs repair before it is rewritten`, {
        details: { table: table.dir, file: file.uri },
      });
    }
    const convert = converterTo(rowType, parseDataFileSchema(contents.schemaJson), table, file);
    for (const record of contents.records) yield convert(record as Record<string, unknown>);
  }
}

function converterTo(rowType: Type, fileType: Type, table: IcebergTable, file: LiveDataFile): (record: Record<string, unknown>) => Record<string, unknown> {
  if (fileType.equals(rowType)) return (record) => record;
  let resolver;
  try {
    resolver = rowType.createResolver(fileType);
  } catch (error) {
    throw etlError(
      'ETL_ICEBERG_SCHEMA_CHANGED',
      `Iceberg table ${table.warehouse.describe(table.dir)}: data file ${file.uri} was written with a schema today's rows cannot be read from (${error instanceof Error ? error.message : String(error)}); nothing was compacted`,
      { details: { table: table.dir, file: file.uri }, cause: error },
    );
  }
  return (record) => rowType.fromBuffer(fileType.toBuffer(record), resolver) as Record<string, unknown>;
}
