/**
 * The versions of a file-system ("Hadoop") Iceberg table: which `metadata/v<N>.metadata.json` is
 * current (the hint, then probing forward; without a readable hint, the highest listed), reading
 * it, making the next version by a rename that refuses an existing target, and pointing
 * `version-hint.text` at the newest (no newline: DuckDB and PyIceberg read it literally).
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
}

export interface LoadedTable {
  readonly version: number;
  readonly metadata: TableMetadata;
  /** Warehouse path of v<version>.metadata.json. */
  readonly path: string;
}

export function metadataDir(table: IcebergTable): string {
  return `${table.dir}/metadata`;
}

export function versionPath(table: IcebergTable, version: number): string {
  return `${metadataDir(table)}/v${version}.metadata.json`;
}

/** The table's current version and metadata, or undefined if it has none yet. */
export async function loadTable(table: IcebergTable): Promise<LoadedTable | undefined> {
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
