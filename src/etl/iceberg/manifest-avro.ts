/**
 * Iceberg v2 manifests and manifest lists: Avro object container files (deflate, as Java's
 * default `write.manifest.compression-codec` gzip writes them) whose schemas carry Iceberg's field
 * ids, which readers bind by (the format's "Manifests" and "Manifest Lists"; Appendix A). The
 * header states the schema with its ids (avsc keeps no custom attributes itself), and every long
 * is a BigInt: snapshot ids are 63-bit.
 *
 * Manifest (one per commit here), record `manifest_entry`:
 *   0 status int (0 existing, 1 added, 2 deleted) · 1 snapshot_id long? · 3 sequence_number long? ·
 *   4 file_sequence_number long? (both null for ADDED entries: inherited from the manifest list) ·
 *   2 data_file r2 { 134 content int · 100 file_path string · 101 file_format string ·
 *     102 partition r102 { one optional field per partition field, its id = the partition field id } ·
 *     103 record_count long · 104 file_size_in_bytes long · 108 column_sizes · 109 value_counts ·
 *     110 null_value_counts · 137 nan_value_counts · 125 lower_bounds · 128 upper_bounds
 *     (int-keyed maps: arrays of k<id>_v<id> {key, value} records with logicalType map) ·
 *     131 key_metadata bytes? · 132 split_offsets array<long>? · 135 equality_ids array<int>? ·
 *     140 sort_order_id int? }
 *   key-value metadata: schema, schema-id, partition-spec, partition-spec-id, format-version "2", content "data"
 *
 * Manifest list, record `manifest_file`:
 *   500 manifest_path · 501 manifest_length · 502 partition_spec_id · 517 content · 515 sequence_number ·
 *   516 min_sequence_number · 503 added_snapshot_id · 504/505/506 added/existing/deleted_files_count ·
 *   512/513/514 added/existing/deleted_rows_count · 507 partitions array<r508 field_summary { 509
 *   contains_null boolean · 518 contains_nan boolean? · 510 lower_bound bytes? · 511 upper_bound bytes? }>? ·
 *   519 key_metadata bytes?
 *   key-value metadata: snapshot-id, parent-snapshot-id ("null" without one), sequence-number, format-version "2"
 */
import { randomBytes } from 'node:crypto';
import avro, { type Type } from 'avsc';
import { readAvroContainer, writeAvroContainer, type AvroContainerContents } from '../files/avro-container.js';

/** Longs as BigInt, every value exact. */
const BIGINT_LONG = avro.types.LongType.__with({
  fromBuffer: (buffer: Buffer) => buffer.readBigInt64LE(0),
  toBuffer: (value: bigint) => {
    const buffer = Buffer.alloc(8);
    buffer.writeBigInt64LE(value);
    return buffer;
  },
  fromJSON: (value: unknown) => BigInt(value as number),
  toJSON: (value: bigint) => Number(value),
  isValid: (value: unknown) => typeof value === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

const typeOf = (schemaJson: unknown): Type => avro.Type.forSchema(schemaJson as avro.Schema, { registry: { long: BIGINT_LONG } });

const optional = (type: unknown): unknown => ['null', type];

interface AvroField {
  readonly name: string;
  readonly [attribute: string]: unknown;
}

function field(id: number, name: string, type: unknown, required = true): AvroField {
  return required ? { name, type, 'field-id': id } : { name, type: optional(type), default: null, 'field-id': id };
}

function intKeyedMap(id: number, keyId: number, valueId: number, name: string, valueType: string): AvroField {
  const entry = { type: 'record', name: `k${keyId}_v${valueId}`, fields: [field(keyId, 'key', 'int'), field(valueId, 'value', valueType)] };
  return field(id, name, { type: 'array', items: entry, logicalType: 'map' }, false);
}

export interface PartitionFieldSchema {
  readonly name: string;
  readonly fieldId: number;
  /** The Avro type of the transform's result (an hour is an int). */
  readonly avroType: string;
}

export function manifestEntrySchema(partition: readonly PartitionFieldSchema[]): unknown {
  const partitionRecord = { type: 'record', name: 'r102', fields: partition.map((entry) => field(entry.fieldId, entry.name, entry.avroType, false)) };
  const dataFile = {
    type: 'record',
    name: 'r2',
    fields: [
      field(134, 'content', 'int'),
      field(100, 'file_path', 'string'),
      field(101, 'file_format', 'string'),
      field(102, 'partition', partitionRecord),
      field(103, 'record_count', 'long'),
      field(104, 'file_size_in_bytes', 'long'),
      intKeyedMap(108, 117, 118, 'column_sizes', 'long'),
      intKeyedMap(109, 119, 120, 'value_counts', 'long'),
      intKeyedMap(110, 121, 122, 'null_value_counts', 'long'),
      intKeyedMap(137, 138, 139, 'nan_value_counts', 'long'),
      intKeyedMap(125, 126, 127, 'lower_bounds', 'bytes'),
      intKeyedMap(128, 129, 130, 'upper_bounds', 'bytes'),
      field(131, 'key_metadata', 'bytes', false),
      field(132, 'split_offsets', { type: 'array', items: 'long', 'element-id': 133 }, false),
      field(135, 'equality_ids', { type: 'array', items: 'int', 'element-id': 136 }, false),
      field(140, 'sort_order_id', 'int', false),
    ],
  };
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [field(0, 'status', 'int'), field(1, 'snapshot_id', 'long', false), field(3, 'sequence_number', 'long', false), field(4, 'file_sequence_number', 'long', false), field(2, 'data_file', dataFile)],
  };
}

export const MANIFEST_FILE_SCHEMA = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    field(500, 'manifest_path', 'string'),
    field(501, 'manifest_length', 'long'),
    field(502, 'partition_spec_id', 'int'),
    field(517, 'content', 'int'),
    field(515, 'sequence_number', 'long'),
    field(516, 'min_sequence_number', 'long'),
    field(503, 'added_snapshot_id', 'long'),
    field(504, 'added_files_count', 'int'),
    field(505, 'existing_files_count', 'int'),
    field(506, 'deleted_files_count', 'int'),
    field(512, 'added_rows_count', 'long'),
    field(513, 'existing_rows_count', 'long'),
    field(514, 'deleted_rows_count', 'long'),
    field(
      507,
      'partitions',
      {
        type: 'array',
        items: {
          type: 'record',
          name: 'r508',
          fields: [field(509, 'contains_null', 'boolean'), field(518, 'contains_nan', 'boolean', false), field(510, 'lower_bound', 'bytes', false), field(511, 'upper_bound', 'bytes', false)],
        },
        'element-id': 508,
      },
      false,
    ),
    field(519, 'key_metadata', 'bytes', false),
  ],
};

export interface KeyValue<V> {
  readonly key: number;
  readonly value: V;
}

/** A `data_file` as written (longs as BigInt). */
export interface DataFileRecord {
  readonly content: number;
  readonly file_path: string;
  readonly file_format: string;
  readonly partition: Readonly<Record<string, number | null>>;
  readonly record_count: bigint;
  readonly file_size_in_bytes: bigint;
  readonly column_sizes: readonly KeyValue<bigint>[] | null;
  readonly value_counts: readonly KeyValue<bigint>[] | null;
  readonly null_value_counts: readonly KeyValue<bigint>[] | null;
  readonly nan_value_counts: readonly KeyValue<bigint>[] | null;
  readonly lower_bounds: readonly KeyValue<Buffer>[] | null;
  readonly upper_bounds: readonly KeyValue<Buffer>[] | null;
  readonly key_metadata: Buffer | null;
  readonly split_offsets: readonly bigint[] | null;
  readonly equality_ids: readonly number[] | null;
  readonly sort_order_id: number | null;
}

export const ENTRY_EXISTING = 0;
export const ENTRY_ADDED = 1;
export const ENTRY_DELETED = 2;

export interface ManifestEntryRecord {
  readonly status: number;
  readonly snapshot_id: bigint | null;
  readonly sequence_number: bigint | null;
  readonly file_sequence_number: bigint | null;
  readonly data_file: DataFileRecord;
}

export interface FieldSummaryRecord {
  readonly contains_null: boolean;
  readonly contains_nan: boolean | null;
  readonly lower_bound: Buffer | null;
  readonly upper_bound: Buffer | null;
}

export interface ManifestFileRecord {
  readonly manifest_path: string;
  readonly manifest_length: bigint;
  readonly partition_spec_id: number;
  readonly content: number;
  readonly sequence_number: bigint;
  readonly min_sequence_number: bigint;
  readonly added_snapshot_id: bigint;
  readonly added_files_count: number;
  readonly existing_files_count: number;
  readonly deleted_files_count: number;
  readonly added_rows_count: bigint;
  readonly existing_rows_count: bigint;
  readonly deleted_rows_count: bigint;
  readonly partitions: readonly FieldSummaryRecord[] | null;
  readonly key_metadata: Buffer | null;
}

export interface ManifestMetadata {
  /** The table schema JSON (text) the manifest's files were written with, and its id. */
  readonly schemaJson: string;
  readonly schemaId: number;
  /** The partition spec's fields array (JSON text) and the spec's id. */
  readonly partitionSpecJson: string;
  readonly partitionSpecId: number;
}

export function encodeManifest(entries: readonly ManifestEntryRecord[], partition: readonly PartitionFieldSchema[], metadata: ManifestMetadata): Buffer {
  const schemaJson = manifestEntrySchema(partition);
  return writeAvroContainer(typeOf(schemaJson), entries, {
    codec: 'deflate',
    syncMarker: randomBytes(16),
    schemaJson,
    metadata: {
      schema: metadata.schemaJson,
      'schema-id': String(metadata.schemaId),
      'partition-spec': metadata.partitionSpecJson,
      'partition-spec-id': String(metadata.partitionSpecId),
      'format-version': '2',
      content: 'data',
    },
  });
}

export function encodeManifestList(rows: readonly ManifestFileRecord[], snapshotId: bigint, parentSnapshotId: bigint | undefined, sequenceNumber: number): Buffer {
  return writeAvroContainer(typeOf(MANIFEST_FILE_SCHEMA), rows, {
    codec: 'deflate',
    syncMarker: randomBytes(16),
    schemaJson: MANIFEST_FILE_SCHEMA,
    metadata: {
      'snapshot-id': String(snapshotId),
      'parent-snapshot-id': parentSnapshotId === undefined ? 'null' : String(parentSnapshotId),
      'sequence-number': String(sequenceNumber),
      'format-version': '2',
    },
  });
}

/**
 * The rows of a manifest list, as any v2 writer wrote them. Fields this writer does not know are
 * dropped; fields a v1 list lacks come out undefined (such tables are refused before this).
 */
export function decodeManifestList(bytes: Buffer): ManifestFileRecord[] {
  return readAvroContainer(bytes, typeOf).records.map((record) => normalized(record, MANIFEST_FILE_SCHEMA) as unknown as ManifestFileRecord);
}

export function decodeManifest(bytes: Buffer): ManifestEntryRecord[] {
  return readManifestContainer(bytes).records as ManifestEntryRecord[];
}

/** A manifest or manifest list as a container: its header's schema (with the ids) and metadata, and its records. */
export function readManifestContainer(bytes: Buffer): AvroContainerContents {
  return readAvroContainer(bytes, typeOf);
}

/** A record with exactly the fields of `schema`, absent optional ones as null (so it encodes with our schema). */
function normalized(record: unknown, schema: { readonly fields: readonly AvroField[] }): Record<string, unknown> {
  const source = record as Record<string, unknown>;
  return Object.fromEntries(schema.fields.map((entry) => [entry.name, source[entry.name] ?? null]));
}
