/**
 * The versions of a file-system ("Hadoop") Iceberg table: which `metadata/v<N>.metadata.json` is
 * current (the hint, then probing forward; without a readable hint, the highest listed), reading
 * it, making the next version by a rename that refuses an existing target, and pointing
 * `version-hint.text` at the newest (no newline: DuckDB and PyIceberg read it literally).
 *
 * A table with a `catalog` (rest-catalog.ts) keeps its versions there instead: loadTable asks the
 * catalog, publishVersion and commitMetadata commit through it, and no hint is written.
 */
import { randomUUID } from 'node:crypto';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { parseIcebergJson, stringifyIcebergJson } from './iceberg-json.js';
import { checkedTableMetadata, type TableMetadata } from './table-metadata.js';

const HINT = 'version-hint.text';

export interface IcebergTable {
  readonly warehouse: WarehouseFileSystem;
  /** The table's folder in the warehouse (`<root>/<topic>`). */
  readonly dir: string;
  /** The URI that names the folder in metadata (`file:///…`, `webhdfs://…`, `hdfs://…`) for a new table; an existing one keeps its own. */
  readonly location: string;
  /** Where the table's current metadata is kept when not in `metadata/v<N>.metadata.json` files. */
  readonly catalog?: TableCatalog | undefined;
}

export interface LoadedTable {
  readonly version: number;
  readonly metadata: TableMetadata;
  /**
   * Warehouse path of v<version>.metadata.json; of a catalog's table, the warehouse path of its
   * current metadata file when that is under the table's folder, else `metadataLocation` itself.
   */
  readonly path: string;
  /** A catalog's table: the URI of its current metadata file, as the catalog names it. */
  readonly metadataLocation?: string | undefined;
}

/** The answer to a commit: made (and the table as it now is), or refused because the table moved since it was loaded. */
export type CommitOutcome = { readonly outcome: 'committed'; readonly loaded: LoadedTable } | { readonly outcome: 'conflict'; readonly reason: string };

/**
 * A catalog that keeps one table's current metadata (rest-catalog.ts), in place of the
 * file-system table's `v<N>.metadata.json` files and their rename.
 */
export interface TableCatalog {
  /** Names the table in messages, e.g. `https://catalog/api (namespace db, table events)`. */
  readonly name: string;
  /** The table's current version and metadata, or undefined if the catalog has no such table. */
  load(): Promise<LoadedTable | undefined>;
  /**
   * Makes `next` the table's metadata, provided the table is still as `base` says (undefined: the
   * table does not exist yet, and is created). A conflict changed nothing: reload, rebuild, try
   * again. Throws (ETL_ICEBERG_COMMIT_STATE_UNKNOWN) when it cannot tell whether the commit landed.
   */
  commit(base: LoadedTable | undefined, next: TableMetadata): Promise<CommitOutcome>;
}

export function metadataDir(table: IcebergTable): string {
  return `${table.dir}/metadata`;
}

export function versionPath(table: IcebergTable, version: number): string {
  return `${metadataDir(table)}/v${version}.metadata.json`;
}

/** The table's current version and metadata, or undefined if it has none yet. */
export async function loadTable(table: IcebergTable): Promise<LoadedTable | undefined> {
  if (table.catalog !== undefined) return table.catalog.load();
  const version = await currentVersion(table);
  if (version === undefined) return undefined;
  const path = versionPath(table, version);
  const json = parseIcebergJson((await table.warehouse.open(path)).toString('utf8'));
  return { version, metadata: checkedTableMetadata(json, table.warehouse.describe(path)), path };
}

async function currentVersion(table: IcebergTable): Promise<number | undefined> {
  const { warehouse } = table;
  let hinted: number | undefined;
  try {
    const text = (await warehouse.open(`${metadataDir(table)}/${HINT}`)).toString('utf8').trim();
    if (/^\d+$/.test(text)) hinted = Number(text);
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) throw error;
  }
  if (hinted !== undefined && (await warehouse.stat(versionPath(table, hinted))) !== undefined) {
    let version = hinted;
    while ((await warehouse.stat(versionPath(table, version + 1))) !== undefined) version += 1;
    return version;
  }
  let entries;
  try {
    entries = await warehouse.list(metadataDir(table));
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return undefined;
    throw error;
  }
  const versions = entries.flatMap((entry) => {
    const match = /^v(\d+)\.metadata\.json$/.exec(entry.name);
    return match === null ? [] : [Number(match[1])];
  });
  return versions.length === 0 ? undefined : Math.max(...versions);
}

/** Points version-hint.text at `version` (best effort: a failure only leaves readers to probe). */
export async function writeHint(table: IcebergTable, version: number): Promise<void> {
  if (table.catalog !== undefined) return;
  const { warehouse } = table;
  const hint = `${metadataDir(table)}/${HINT}`;
  try {
    const current = await warehouse.open(hint).catch(() => undefined);
    if (current?.toString('utf8') === String(version)) return;
    // A later version made meanwhile has its own writer to point the hint at it.
    if ((await warehouse.stat(versionPath(table, version + 1))) !== undefined) return;
    const temp = `${metadataDir(table)}/.version-hint.${randomUUID()}.tmp`;
    await warehouse.create(temp, Buffer.from(String(version), 'utf8'));
    if (current !== undefined) await warehouse.delete(hint);
    await warehouse.rename(temp, hint);
  } catch {
    // Readers probe past a stale hint (Java) or see the previous version (DuckDB) until the next commit rewrites it.
  }
}

/**
 * Makes `metadata` version `loaded.version + 1`: written under a temporary name, then renamed to
 * `v<N+1>.metadata.json`, a rename that refuses an existing target. Answers false (and removes the
 * temporary file) when another writer made that version first; then the hint.
 */
export async function publishVersion(table: IcebergTable, loaded: LoadedTable, metadata: TableMetadata): Promise<boolean> {
  if (table.catalog !== undefined) return (await table.catalog.commit(loaded, metadata)).outcome === 'committed';
  const temp = `${metadataDir(table)}/.${randomUUID()}.metadata.json.tmp`;
  await table.warehouse.create(temp, Buffer.from(stringifyIcebergJson(metadata), 'utf8'));
  try {
    await table.warehouse.rename(temp, versionPath(table, loaded.version + 1));
  } catch (error) {
    await table.warehouse.delete(temp).catch(() => false);
    if (hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) return false;
    throw error;
  }
  await writeHint(table, loaded.version + 1);
  return true;
}

/**
 * Makes `metadata` the version after `loaded` (undefined: the table's first), through the
 * table's catalog if it has one, else as publishVersion does (v<N+1>.metadata.json, then the hint).
 */
export async function commitMetadata(table: IcebergTable, loaded: LoadedTable | undefined, metadata: TableMetadata): Promise<CommitOutcome> {
  if (table.catalog !== undefined) return table.catalog.commit(loaded, metadata);
  const version = (loaded?.version ?? 0) + 1;
  const published = await publishVersion(table, { version: version - 1, metadata, path: loaded?.path ?? versionPath(table, 0) }, metadata);
  if (!published) return { outcome: 'conflict', reason: `${table.warehouse.describe(versionPath(table, version))} exists already` };
  return { outcome: 'committed', loaded: { version, metadata, path: versionPath(table, version) } };
}

/** `file:///x` and `file://localhost/x` as `file:/x` (Java's Hadoop paths print the one as the other); other URIs as they are. */
export function sameFileUri(uri: string): string {
  return uri.replace(/^file:\/\/(?:localhost)?\//, 'file:/');
}

/**
 * The path of `uri` relative to the table's `location` (`data/…`, `metadata/…`), or undefined when
 * it is not under it; `file:/x`, `file:///x` and `file://localhost/x` name the same folder.
 */
export function pathUnderLocation(location: string, uri: string): string | undefined {
  const base = sameFileUri(location.replace(/\/+$/, ''));
  const target = sameFileUri(uri);
  return target.startsWith(`${base}/`) ? target.slice(base.length + 1) : undefined;
}
