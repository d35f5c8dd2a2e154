/**
 * Iceberg v2 table metadata (`metadata/v<N>.metadata.json`, the format's "Table Metadata Fields"):
 * made for a new table, read back (whoever wrote it: fields this code does not know are kept as
 * they are), and advanced by one snapshot. The rules kept here are the ones Java's parser checks:
 * `current-snapshot-id` equals `refs.main`, a new snapshot's sequence number is
 * `last-sequence-number + 1`, snapshot ids are unique, both logs are in time order and
 * `last-updated-ms` is not before their last entry; `metadata-log` keeps the 100 newest previous
 * files (`write.metadata.previous-versions-max`).
 */
import { etlError } from '../errors.js';
import { asBigInt } from './iceberg-json.js';
import type { IcebergSchema } from './table-schema.js';

export interface PartitionField {
  readonly name: string;
  readonly transform: string;
  readonly 'source-id': number;
  readonly 'field-id': number;
}

export interface PartitionSpec {
  readonly 'spec-id': number;
  readonly fields: readonly PartitionField[];
}

export interface Snapshot {
  readonly 'snapshot-id': bigint;
  readonly 'parent-snapshot-id'?: bigint;
  readonly 'sequence-number': number;
  readonly 'timestamp-ms': number;
  readonly 'manifest-list': string;
  readonly summary: Readonly<Record<string, string>>;
  readonly 'schema-id'?: number;
}

/** The parsed metadata: typed where this code reads it; everything else kept as read. */
export interface TableMetadata {
  readonly 'format-version': number;
  readonly 'table-uuid': string;
  readonly location: string;
  readonly 'last-sequence-number': number;
  readonly 'last-updated-ms': number;
  readonly 'last-column-id': number;
  readonly 'current-schema-id': number;
  readonly schemas: readonly IcebergSchema[];
  readonly 'default-spec-id': number;
  readonly 'partition-specs': readonly PartitionSpec[];
  readonly 'last-partition-id': number;
  readonly properties?: Readonly<Record<string, string>>;
  readonly 'current-snapshot-id'?: bigint;
  readonly snapshots?: readonly Snapshot[];
  readonly refs?: Readonly<Record<string, { readonly 'snapshot-id': bigint; readonly type: string }>>;
  readonly 'snapshot-log'?: readonly { readonly 'timestamp-ms': number; readonly 'snapshot-id': bigint }[];
  readonly 'metadata-log'?: readonly { readonly 'timestamp-ms': number; readonly 'metadata-file': string }[];
  readonly [other: string]: unknown;
}

const PREVIOUS_VERSIONS_MAX = 100;

export interface NewTable {
  readonly uuid: string;
  readonly location: string;
  readonly schema: IcebergSchema;
  readonly lastColumnId: number;
  readonly spec: PartitionSpec;
  readonly properties: Readonly<Record<string, string>>;
  readonly nowMs: number;
}

/** Metadata of a table with no snapshot yet. */
export function newTableMetadata(table: NewTable): TableMetadata {
  return {
    'format-version': 2,
    'table-uuid': table.uuid,
    location: table.location,
    'last-sequence-number': 0,
    'last-updated-ms': table.nowMs,
    'last-column-id': table.lastColumnId,
    'current-schema-id': table.schema['schema-id'],
    schemas: [table.schema],
    'default-spec-id': table.spec['spec-id'],
    'partition-specs': [table.spec],
    'last-partition-id': Math.max(999, ...table.spec.fields.map((entry) => entry['field-id'])),
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: table.properties,
    'current-snapshot-id': -1n,
    refs: {},
    snapshots: [],
    statistics: [],
    'partition-statistics': [],
    'snapshot-log': [],
    'metadata-log': [],
  };
}

/**
 * Checks metadata read from `where` and brings its ids to BigInt (lossless JSON gives numbers for
 * small ones). Refuses what this writer cannot advance safely.
 */
export function checkedTableMetadata(json: unknown, where: string): TableMetadata {
  const invalid = (what: string): Error =>
    etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table metadata ${where} ${what}; the table was damaged or written by something this loader cannot continue. Nothing was changed`, { details: { where } });
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalid('is not a JSON object');
  const metadata = json as Record<string, unknown>;
  if (metadata['format-version'] !== 2) throw invalid(`has format-version ${JSON.stringify(metadata['format-version'])}; this loader writes version 2 tables only`);
  for (const key of ['table-uuid', 'location']) if (typeof metadata[key] !== 'string') throw invalid(`lacks ${key}`);
  for (const key of ['last-sequence-number', 'last-updated-ms', 'last-column-id', 'current-schema-id', 'default-spec-id', 'last-partition-id']) {
    if (typeof metadata[key] !== 'number') throw invalid(`lacks ${key}`);
  }
  if (!Array.isArray(metadata['schemas']) || !Array.isArray(metadata['partition-specs'])) throw invalid('lacks schemas or partition-specs');
  try {
    const snapshots = ((metadata['snapshots'] ?? []) as Record<string, unknown>[]).map((snapshot) => ({
      ...snapshot,
      'snapshot-id': asBigInt(snapshot['snapshot-id'], 'snapshot-id'),
      ...(snapshot['parent-snapshot-id'] === undefined || snapshot['parent-snapshot-id'] === null ? {} : { 'parent-snapshot-id': asBigInt(snapshot['parent-snapshot-id'], 'parent-snapshot-id') }),
    }));
    const refs = Object.fromEntries(Object.entries((metadata['refs'] ?? {}) as Record<string, Record<string, unknown>>).map(([name, ref]) => [name, { ...ref, 'snapshot-id': asBigInt(ref['snapshot-id'], `refs.${name}`) }]));
    const snapshotLog = ((metadata['snapshot-log'] ?? []) as Record<string, unknown>[]).map((entry) => ({ ...entry, 'snapshot-id': asBigInt(entry['snapshot-id'], 'snapshot-log') }));
    const current = metadata['current-snapshot-id'] === undefined || metadata['current-snapshot-id'] === null ? -1n : asBigInt(metadata['current-snapshot-id'], 'current-snapshot-id');
    return { ...metadata, snapshots, refs, 'snapshot-log': snapshotLog, 'current-snapshot-id': current } as unknown as TableMetadata;
  } catch (error) {
    throw invalid(`has a malformed id: ${(error as Error).message}`);
  }
}

/** The current snapshot (what `main` points at), or undefined for a table without one. */
export function currentSnapshot(metadata: TableMetadata): Snapshot | undefined {
  const id = metadata.refs?.['main']?.['snapshot-id'] ?? metadata['current-snapshot-id'];
  if (id === undefined || id === -1n) return undefined;
  return metadata.snapshots?.find((snapshot) => snapshot['snapshot-id'] === id);
}

/** `main`'s history: the current snapshot, its parent, and so on, as far as snapshots are kept. */
export function mainAncestry(metadata: TableMetadata): Snapshot[] {
  const byId = new Map((metadata.snapshots ?? []).map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  const ancestry: Snapshot[] = [];
  for (let snapshot = currentSnapshot(metadata); snapshot !== undefined && ancestry.length <= byId.size; ) {
    ancestry.push(snapshot);
    const parent = snapshot['parent-snapshot-id'];
    snapshot = parent === undefined ? undefined : byId.get(parent);
  }
  return ancestry;
}

export function currentSchema(metadata: TableMetadata): IcebergSchema | undefined {
  return metadata.schemas.find((schema) => schema['schema-id'] === metadata['current-schema-id']);
}

export function defaultSpec(metadata: TableMetadata): PartitionSpec | undefined {
  return metadata['partition-specs'].find((spec) => spec['spec-id'] === metadata['default-spec-id']);
}

/** The metadata after `main` moved to `target`, one of its snapshots (a rollback: no new snapshot). */
export function withMain(metadata: TableMetadata, target: bigint, previousFile: string, nowMs: number): TableMetadata {
  if (!(metadata.snapshots ?? []).some((snapshot) => snapshot['snapshot-id'] === target)) throw new Error(`snapshot ${target} is not in the table`);
  const lastLogged = Math.max(metadata['last-updated-ms'], ...(metadata['snapshot-log'] ?? []).map((entry) => entry['timestamp-ms']), ...(metadata['metadata-log'] ?? []).map((entry) => entry['timestamp-ms']));
  const updated = Math.max(nowMs, lastLogged);
  return {
    ...metadata,
    'last-updated-ms': updated,
    'current-snapshot-id': target,
    refs: { ...(metadata.refs ?? {}), main: { 'snapshot-id': target, type: 'branch' } },
    'snapshot-log': [...(metadata['snapshot-log'] ?? []), { 'timestamp-ms': updated, 'snapshot-id': target }],
    'metadata-log': [...(metadata['metadata-log'] ?? []), { 'timestamp-ms': metadata['last-updated-ms'], 'metadata-file': previousFile }].slice(-PREVIOUS_VERSIONS_MAX),
  };
}

/** The metadata after `snapshot` became `main` (its sequence number must be last + 1); `previousFile` is the file this one follows, if any. */
export function withSnapshot(metadata: TableMetadata, snapshot: Snapshot, previousFile: string | undefined, nowMs: number): TableMetadata {
  if (snapshot['sequence-number'] !== metadata['last-sequence-number'] + 1) throw new Error(`snapshot sequence number ${snapshot['sequence-number']} does not follow ${metadata['last-sequence-number']}`);
  if ((metadata.snapshots ?? []).some((existing) => existing['snapshot-id'] === snapshot['snapshot-id'])) throw new Error(`snapshot id ${snapshot['snapshot-id']} exists already`);
  const lastLogged = Math.max(metadata['last-updated-ms'], ...(metadata['snapshot-log'] ?? []).map((entry) => entry['timestamp-ms']), ...(metadata['metadata-log'] ?? []).map((entry) => entry['timestamp-ms']));
  // Logs must stay in time order even when this machine's clock is behind the last writer's.
  const updated = Math.max(nowMs, lastLogged, snapshot['timestamp-ms']);
  const metadataLog = previousFile === undefined ? (metadata['metadata-log'] ?? []) : [...(metadata['metadata-log'] ?? []), { 'timestamp-ms': metadata['last-updated-ms'], 'metadata-file': previousFile }];
  return {
    ...metadata,
    'last-sequence-number': snapshot['sequence-number'],
    'last-updated-ms': updated,
    'current-snapshot-id': snapshot['snapshot-id'],
    refs: { ...(metadata.refs ?? {}), main: { 'snapshot-id': snapshot['snapshot-id'], type: 'branch' } },
    snapshots: [...(metadata.snapshots ?? []), snapshot],
    'snapshot-log': [...(metadata['snapshot-log'] ?? []), { 'timestamp-ms': snapshot['timestamp-ms'], 'snapshot-id': snapshot['snapshot-id'] }],
    'metadata-log': metadataLog.slice(-PREVIOUS_VERSIONS_MAX),
  };
}
