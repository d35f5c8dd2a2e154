/**
 * The REST catalog's commit, as a difference: the loader builds the whole next table metadata as
 * it does for a file-system table (table-metadata.ts: withSnapshot, withMain, schema evolution,
 * expiry), and `tableChanges(base, next)` says what changed as the REST spec's
 * `CommitTableRequest` (rest-catalog-open-api.yaml, "TableRequirement" and "TableUpdate"):
 *
 *   { "requirements": [ requirement… ], "updates": [ update… ] }
 *
 *   requirement = { "type": "assert-table-uuid", "uuid": <base table-uuid> }               always
 *               | { "type": "assert-ref-snapshot-id", "ref": r, "snapshot-id": <base's, or null> }
 *                                                        each ref set or removed; main also when
 *                                                        snapshots are removed
 *               | { "type": "assert-last-assigned-field-id", "last-assigned-field-id": n }  schemas added
 *               | { "type": "assert-current-schema-id", "current-schema-id": n }       current schema moved
 *
 *   update      = { "action": "add-schema", "schema": {…}, "last-column-id": n }       each new schema id
 *               | { "action": "set-current-schema", "schema-id": n | -1 }             -1: the last added
 *               | { "action": "add-snapshot", "snapshot": {…} }                        each new snapshot id
 *               | { "action": "set-snapshot-ref", "ref-name": r, "type": "branch", "snapshot-id": id, … }
 *               | { "action": "remove-snapshot-ref", "ref-name": r }
 *               | { "action": "remove-snapshots", "snapshot-ids": [id…] }
 *               | { "action": "set-properties", "updates": { k: v } }
 *               | { "action": "remove-properties", "removals": [k…] }
 *
 * in that order (a schema before the snapshot that names it, a snapshot before the ref that points
 * at it). The requirements are those Java's `UpdateRequirements` derives for the same updates, so
 * a catalog refuses (409) a commit built on a table that moved meanwhile. What the catalog keeps
 * itself is not sent: `last-updated-ms`, `last-sequence-number`, `current-snapshot-id` (main's),
 * `snapshot-log`, `metadata-log`. Any other difference (location, format version, partition specs,
 * sort orders, a schema or snapshot changed in place, a key this code does not know) has no update
 * here and is refused before anything is sent.
 */
import { isDeepStrictEqual } from 'node:util';
import { etlError } from '../errors.js';
import type { Snapshot, TableMetadata } from './table-metadata.js';
import type { IcebergSchema } from './table-schema.js';

export type TableRequirement =
  | { readonly type: 'assert-create' }
  | { readonly type: 'assert-table-uuid'; readonly uuid: string }
  | { readonly type: 'assert-ref-snapshot-id'; readonly ref: string; readonly 'snapshot-id': bigint | null }
  | { readonly type: 'assert-last-assigned-field-id'; readonly 'last-assigned-field-id': number }
  | { readonly type: 'assert-current-schema-id'; readonly 'current-schema-id': number };

/** A ref as the metadata's `refs` hold it (retention settings kept as read). */
export interface SnapshotRef {
  readonly 'snapshot-id': bigint;
  readonly type: string;
  readonly [retention: string]: unknown;
}

export type TableUpdate =
  | { readonly action: 'add-schema'; readonly schema: IcebergSchema; readonly 'last-column-id': number }
  | { readonly action: 'set-current-schema'; readonly 'schema-id': number }
  | { readonly action: 'add-snapshot'; readonly snapshot: Snapshot }
  | ({ readonly action: 'set-snapshot-ref'; readonly 'ref-name': string } & SnapshotRef)
  | { readonly action: 'remove-snapshot-ref'; readonly 'ref-name': string }
  | { readonly action: 'remove-snapshots'; readonly 'snapshot-ids': readonly bigint[] }
  | { readonly action: 'set-properties'; readonly updates: Readonly<Record<string, string>> }
  | { readonly action: 'remove-properties'; readonly removals: readonly string[] };

export interface TableChanges {
  readonly requirements: readonly TableRequirement[];
  /** Empty when `next` says nothing `base` does not (then there is nothing to commit). */
  readonly updates: readonly TableUpdate[];
}

/** Keys the catalog maintains itself, or that follow from the updates sent. */
const CATALOG_KEPT = new Set(['last-updated-ms', 'last-sequence-number', 'current-snapshot-id', 'snapshot-log', 'metadata-log']);
/** Keys compared below, one kind of update each. */
const DIFFED = new Set(['schemas', 'current-schema-id', 'last-column-id', 'snapshots', 'refs', 'properties']);

/**
 * The requirements and updates that turn `base` (the table as loaded from the catalog) into
 * `next`. `where` names the table in the error raised for a change no update expresses.
 */
export function tableChanges(base: TableMetadata, next: TableMetadata, where: string): TableChanges {
  const unsupported = Object.keys({ ...base, ...next }).filter((key) => !CATALOG_KEPT.has(key) && !DIFFED.has(key) && !isDeepStrictEqual(base[key], next[key]));
  const requirements: TableRequirement[] = [];
  const updates: TableUpdate[] = [];

  // Schemas: new ones are added; an existing one changed in place cannot be said.
  const baseSchemas = new Map(base.schemas.map((schema) => [schema['schema-id'], schema]));
  const added = next.schemas.filter((schema) => !baseSchemas.has(schema['schema-id']));
  for (const schema of next.schemas) {
    const known = baseSchemas.get(schema['schema-id']);
    if (known !== undefined && !isDeepStrictEqual(known, schema)) unsupported.push(`schema ${schema['schema-id']} changed in place`);
  }
  if (next.schemas.length - added.length !== base.schemas.length) unsupported.push('schemas removed');
  if (added.length === 0 && next['last-column-id'] !== base['last-column-id']) unsupported.push('last-column-id changed without a new schema');
  // The current one last, so that -1 ("the schema just added") names it.
  const current = added.find((schema) => schema['schema-id'] === next['current-schema-id']);
  const ordered = current === undefined ? added : [...added.filter((schema) => schema !== current), current];
  if (ordered.length > 0) requirements.push({ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': base['last-column-id'] });
  for (const schema of ordered) updates.push({ action: 'add-schema', schema, 'last-column-id': next['last-column-id'] });
  if (next['current-schema-id'] !== base['current-schema-id']) {
    requirements.push({ type: 'assert-current-schema-id', 'current-schema-id': base['current-schema-id'] });
    updates.push({ action: 'set-current-schema', 'schema-id': current === undefined ? next['current-schema-id'] : -1 });
  }

  // Snapshots: immutable once made; new ones are added in the order next lists them (parents first).
  const baseSnapshots = new Map((base.snapshots ?? []).map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  const nextIds = new Set((next.snapshots ?? []).map((snapshot) => snapshot['snapshot-id']));
  for (const snapshot of next.snapshots ?? []) {
    const known = baseSnapshots.get(snapshot['snapshot-id']);
    if (known === undefined) updates.push({ action: 'add-snapshot', snapshot });
    else if (!isDeepStrictEqual(known, snapshot)) unsupported.push(`snapshot ${snapshot['snapshot-id']} changed in place`);
  }

  // Refs: set where new or moved, removed where gone; each asserted where the base had it (or had none).
  const baseRefs = base.refs ?? {};
  const nextRefs = next.refs ?? {};
  const asserted = new Set<string>();
  const assertRef = (name: string): void => {
    if (asserted.has(name)) return;
    asserted.add(name);
    requirements.push({ type: 'assert-ref-snapshot-id', ref: name, 'snapshot-id': refOf(base, name) ?? null });
  };
  for (const [name, ref] of Object.entries(nextRefs)) {
    if (isDeepStrictEqual(baseRefs[name], ref)) continue;
    if (!nextIds.has(ref['snapshot-id'])) unsupported.push(`ref ${name} points at snapshot ${ref['snapshot-id']}, which the table does not hold`);
    assertRef(name);
    updates.push({ action: 'set-snapshot-ref', 'ref-name': name, ...ref });
  }
  for (const name of Object.keys(baseRefs)) {
    if (nextRefs[name] !== undefined) continue;
    assertRef(name);
    updates.push({ action: 'remove-snapshot-ref', 'ref-name': name });
  }
  const removed = [...baseSnapshots.keys()].filter((id) => !nextIds.has(id));
  if (removed.length > 0) {
    // An expiry planned against one main: a main moved meanwhile (a rollback to a snapshot being removed) is a conflict.
    assertRef('main');
    updates.push({ action: 'remove-snapshots', 'snapshot-ids': removed });
  }
  const nextMain = refOf(next, 'main');
  const nextCurrent = next['current-snapshot-id'] === undefined || next['current-snapshot-id'] === -1n ? undefined : next['current-snapshot-id'];
  if (nextMain !== nextCurrent) unsupported.push(`current-snapshot-id ${String(nextCurrent)} is not main's snapshot ${String(nextMain)}`);

  // Properties.
  const baseProperties = base.properties ?? {};
  const nextProperties = next.properties ?? {};
  const set = Object.fromEntries(Object.entries(nextProperties).filter(([key, value]) => baseProperties[key] !== value));
  const removals = Object.keys(baseProperties).filter((key) => nextProperties[key] === undefined);
  if (Object.keys(set).length > 0) updates.push({ action: 'set-properties', updates: set });
  if (removals.length > 0) updates.push({ action: 'remove-properties', removals });

  if (unsupported.length > 0) {
    throw etlError(
      'ETL_ICEBERG_METADATA_INVALID',
      `Iceberg table ${where}: the next metadata differs from the catalog's in ways this loader cannot commit through a REST catalog (${unsupported.join('; ')}); nothing was committed`,
      { details: { table: where, differences: unsupported } },
    );
  }
  if (updates.length === 0) return { requirements: [], updates: [] };
  return { requirements: [{ type: 'assert-table-uuid', uuid: base['table-uuid'] }, ...requirements], updates };
}

/** The snapshot a ref points at (main: `refs.main`, else `current-snapshot-id`), or undefined. */
function refOf(metadata: TableMetadata, name: string): bigint | undefined {
  const id = metadata.refs?.[name]?.['snapshot-id'] ?? (name === 'main' ? metadata['current-snapshot-id'] : undefined);
  return id === undefined || id === -1n ? undefined : id;
}
