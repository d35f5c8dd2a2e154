/**
 * The Apache Iceberg Java API (1.10, with the Hadoop client) as the checker of Iceberg tables:
 * runs iceberg/IcebergTableDump.java on the iceberg-readers jars and returns what Java sees in a
 * table, as typed JSON. The table is loaded the way Hadoop-catalog readers load it
 * (`HadoopTables.load`: version hint, then probing forward); the document holds its metadata,
 * snapshots, refs, the manifests and entries of one snapshot, the data files that snapshot's scan
 * plans (metrics and bounds decoded), every record `IcebergGenerics` reads, and the field ids found
 * in each planned Parquet file's footer.
 *
 * Each call starts one JVM (a few seconds). The jars are fetched from Maven Central on first use
 * (`npm run fetch-service-jars` does it ahead).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureJars, ICEBERG_READERS_JARS } from '../services/service-jars.js';
import { describeRun, runKafkaTool } from './java.js';

export const ICEBERG_TABLE_DUMP = join(dirname(fileURLToPath(import.meta.url)), 'iceberg', 'IcebergTableDump.java');

/** A type in Iceberg's JSON schema form (`SchemaParser.toJson`): a primitive's name or a nested type. */
export type IcebergJsonType = string | IcebergJsonStruct | IcebergJsonList | IcebergJsonMap;

export interface IcebergJsonField {
  readonly id: number;
  readonly name: string;
  readonly required: boolean;
  readonly type: IcebergJsonType;
  readonly doc?: string;
}

export interface IcebergJsonStruct {
  readonly type: 'struct';
  readonly fields: readonly IcebergJsonField[];
}

export interface IcebergJsonList {
  readonly type: 'list';
  readonly 'element-id': number;
  readonly element: IcebergJsonType;
  readonly 'element-required': boolean;
}

export interface IcebergJsonMap {
  readonly type: 'map';
  readonly 'key-id': number;
  readonly key: IcebergJsonType;
  readonly 'value-id': number;
  readonly value: IcebergJsonType;
  readonly 'value-required': boolean;
}

export interface IcebergJsonSchema extends IcebergJsonStruct {
  readonly 'schema-id': number;
  readonly 'identifier-field-ids'?: readonly number[];
}

export interface IcebergJsonPartitionSpec {
  readonly 'spec-id': number;
  readonly fields: readonly { readonly name: string; readonly transform: string; readonly 'source-id': number; readonly 'field-id': number }[];
}

export interface IcebergJsonSortOrder {
  readonly 'order-id': number;
  readonly fields: readonly { readonly transform: string; readonly 'source-id': number; readonly direction: string; readonly 'null-order': string }[];
}

/** Snapshot ids are 63-bit, so they are strings everywhere in the dump. */
export interface IcebergSnapshot {
  readonly snapshotId: string;
  readonly parentId: string | null;
  readonly sequenceNumber: number;
  readonly timestampMillis: number;
  readonly operation: string;
  readonly schemaId: number | null;
  readonly summary: Readonly<Record<string, string>>;
  readonly manifestListLocation: string;
}

export interface IcebergRef {
  readonly snapshotId: string;
  readonly type: 'branch' | 'tag';
  readonly minSnapshotsToKeep: number | null;
  readonly maxSnapshotAgeMs: number | null;
  readonly maxRefAgeMs: number | null;
}

/** One manifest list entry (`ManifestFile`) of the snapshot read. */
export interface IcebergManifest {
  readonly path: string;
  readonly length: number;
  readonly partitionSpecId: number;
  readonly content: 'data' | 'deletes';
  readonly sequenceNumber: number;
  readonly minSequenceNumber: number;
  readonly addedSnapshotId: string | null;
  readonly addedFilesCount: number | null;
  readonly existingFilesCount: number | null;
  readonly deletedFilesCount: number | null;
  readonly addedRowsCount: number | null;
  readonly existingRowsCount: number | null;
  readonly deletedRowsCount: number | null;
  /** Per partition field; bounds decoded with the partition field's type, as text (an hour is hours since the epoch). */
  readonly partitions: readonly {
    readonly containsNull: boolean;
    readonly containsNaN: boolean | null;
    readonly lowerBound: string | null;
    readonly upperBound: string | null;
  }[];
}

/** One entry of the snapshot's manifests (the `entries` metadata table): deleted and existing ones too, unfiltered. */
export interface IcebergManifestEntry {
  readonly status: 'existing' | 'added' | 'deleted';
  readonly snapshotId: string | null;
  readonly sequenceNumber: number | null;
  readonly fileSequenceNumber: number | null;
  readonly filePath: string;
  readonly content: 'data' | 'position_deletes' | 'equality_deletes';
  readonly recordCount: number;
}

/** A data file as the snapshot's scan plans it (`planFiles()` with column stats). Maps are keyed by field id. */
export interface IcebergDataFile {
  readonly path: string;
  readonly format: 'parquet' | 'avro' | 'orc';
  readonly specId: number;
  /** Partition field name → value as JSON (an hour transform is an int: hours since the epoch). */
  readonly partition: Readonly<Record<string, IcebergValue>>;
  /** As Iceberg names the partition folder, e.g. `_event_time_hour=2024-05-01-10`. */
  readonly partitionPath: string;
  readonly recordCount: number;
  readonly fileSizeInBytes: number;
  readonly columnSizes: Readonly<Record<string, number>> | null;
  readonly valueCounts: Readonly<Record<string, number>> | null;
  readonly nullValueCounts: Readonly<Record<string, number>> | null;
  readonly nanValueCounts: Readonly<Record<string, number>> | null;
  /**
   * `Conversions.fromByteBuffer` with the field's type, as text: numbers and strings as Java
   * prints them, dates as days, times and timestamps as micros, binary base64, decimals plain.
   */
  readonly lowerBounds: Readonly<Record<string, string>> | null;
  readonly upperBounds: Readonly<Record<string, string>> | null;
  readonly splitOffsets: readonly number[] | null;
  readonly sortOrderId: number | null;
  readonly dataSequenceNumber: number | null;
  readonly fileSequenceNumber: number | null;
  readonly deleteFiles: number;
}

/**
 * A record value as the dump prints it: structs as objects, lists as arrays, string-keyed maps as
 * objects and other maps as `{key, value}` lists; longs as numbers within ±2^53 and strings beyond;
 * timestamps ISO with six fraction digits (`…T10:15:30.123456Z` with a zone, no suffix without),
 * dates and times ISO, UUIDs as text, binary and fixed base64, decimals plain text, NaN and
 * infinities as the strings `NaN`, `Infinity`, `-Infinity`.
 */
export type IcebergValue = null | boolean | number | string | readonly IcebergValue[] | { readonly [name: string]: IcebergValue };

export type IcebergRecord = Readonly<Record<string, IcebergValue>>;

/** A node of a Parquet file's schema, groups included, with the field id its footer holds. */
export interface ParquetFieldId {
  /** Dotted, e.g. `tags.list.element`. */
  readonly path: string;
  readonly fieldId: number | null;
  /** The primitive type (`INT64`, `BINARY`, …) or `group`. */
  readonly type: string;
  readonly repetition: 'required' | 'optional' | 'repeated';
  /** As parquet-mr prints it, e.g. `TIMESTAMP(MICROS,true)`. */
  readonly logicalType: string | null;
}

export interface IcebergTableDump {
  readonly formatVersion: number;
  /** As the metadata says it (Java strips a trailing `/`). */
  readonly location: string;
  readonly uuid: string;
  /** The metadata file Java loaded, e.g. `file:/…/metadata/v3.metadata.json`. */
  readonly metadataFileLocation: string;
  readonly lastSequenceNumber: number;
  readonly lastUpdatedMillis: number;
  readonly lastColumnId: number;
  readonly currentSnapshotId: string | null;
  readonly currentSchemaId: number;
  readonly schema: IcebergJsonSchema;
  readonly schemas: readonly IcebergJsonSchema[];
  readonly defaultSpecId: number;
  readonly spec: IcebergJsonPartitionSpec;
  readonly specs: readonly IcebergJsonPartitionSpec[];
  readonly sortOrder: IcebergJsonSortOrder;
  readonly properties: Readonly<Record<string, string>>;
  readonly snapshots: readonly IcebergSnapshot[];
  readonly history: readonly { readonly timestampMillis: number; readonly snapshotId: string }[];
  readonly metadataLog: readonly { readonly timestampMillis: number; readonly file: string }[];
  readonly refs: Readonly<Record<string, IcebergRef>>;
  /** The snapshot the manifests, entries, files and records below come from; null for a table without snapshots. */
  readonly snapshotRead: string | null;
  readonly manifests: readonly IcebergManifest[];
  readonly entries: readonly IcebergManifestEntry[];
  readonly files: readonly IcebergDataFile[];
  readonly records: readonly IcebergRecord[];
  readonly fieldIdsInFiles: readonly { readonly path: string; readonly columns: readonly ParquetFieldId[] }[];
}

export interface IcebergReadOptions {
  /** A guarded run folder (its `pids/` is watched by the run's guardian). */
  readonly runDir: string;
  /** A snapshot id to read instead of the current one. */
  readonly snapshot?: string;
  /** Restricts the planned files and the records to `fromMicros <= column < toMicros` (a timestamp column). */
  readonly filter?: { readonly column: string; readonly fromMicros: bigint | number; readonly toMicros: bigint | number };
  readonly timeoutMs?: number;
}

/**
 * What the Iceberg Java API reads in the table at `location` (a `file:`, `hdfs://` or `webhdfs://`
 * URI of the table folder). Throws with Java's stderr if the run fails.
 */
export async function readIcebergTable(location: string, options: IcebergReadOptions): Promise<IcebergTableDump> {
  const jars = await ensureJars(ICEBERG_READERS_JARS);
  const args = [location];
  if (options.snapshot !== undefined) args.push('--snapshot', options.snapshot);
  if (options.filter !== undefined) {
    args.push(
      '--filter-column',
      options.filter.column,
      '--filter-hour-from',
      BigInt(options.filter.fromMicros).toString(),
      '--filter-hour-to',
      BigInt(options.filter.toMicros).toString(),
    );
  }
  const result = await runKafkaTool(ICEBERG_TABLE_DUMP, args, { kafkaToolsDir: jars, runDir: options.runDir, timeoutMs: options.timeoutMs ?? 120_000 });
  if (result.status !== 0) throw new Error(`IcebergTableDump ${args.join(' ')} failed: ${describeRun(result)}`);
  return parseDump(result.stdout);
}

/**
 * Plain JSON.parse loses nothing here: the dump prints snapshot ids, and any long beyond ±2^53, as
 * strings, so every number it holds is exact in JavaScript (doubles are doubles on both sides).
 */
export function parseDump(stdout: string): IcebergTableDump {
  return JSON.parse(stdout) as IcebergTableDump;
}
