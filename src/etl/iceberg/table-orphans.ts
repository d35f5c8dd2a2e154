/**
 * Removal of orphan files (Spark's `remove_orphan_files`): files under a table's `data/` and
 * `metadata/` that no snapshot of the table reaches, left by attempts that lost their commit race,
 * replays killed before their snapshot, or crashed writers. Deleted only when older than a margin
 * (default 3 days, as Spark: a file younger may belong to a write still under way), never
 * `v<N>.metadata.json`, `version-hint.text`, a catalog table's metadata files, or hidden names in data folders (`_COMPLETE`,
 * `_SUCCESS`: the audit's markers). Paths are compared as the metadata spells them, under the
 * table's own location. The caller holds the load's lease and has rolled claimed commits forward,
 * so no claimed commit's files wait unreferenced.
 */
import type { WarehouseEntry, WarehouseFileSystem } from '../warehouse/warehouse.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import { isHiddenName } from '../layout.js';
import { decodeManifest, decodeManifestList } from './manifest-avro.js';
import { loadTable, pathUnderLocation, type IcebergTable } from './table-versions.js';

export interface OrphanReport {
  /** Warehouse paths of the orphans (deleted unless a dry run). */
  readonly orphans: readonly string[];
  readonly deleted: number;
}

export async function removeOrphans(table: IcebergTable, options: { readonly olderThanMs: number; readonly dryRun?: boolean }): Promise<OrphanReport> {
  const loaded = await loadTable(table);
  if (loaded === undefined) return { orphans: [], deleted: 0 };
  const location = loaded.metadata.location.replace(/\/+$/, '');
  const reachable = new Set<string>();
  const pathOf = (uri: string): string | undefined => {
    const relative = pathUnderLocation(location, uri);
    return relative === undefined ? undefined : `${table.dir}/${relative}`;
  };
  const reach = (uri: string): void => {
    const path = pathOf(uri);
    if (path !== undefined) reachable.add(path);
  };
  for (const snapshot of loaded.metadata.snapshots ?? []) {
    reach(snapshot['manifest-list']);
    const listPath = pathOf(snapshot['manifest-list']);
    if (listPath === undefined) continue;
    for (const row of decodeManifestList(await table.warehouse.open(listPath))) {
      reach(row.manifest_path);
      const manifestPath = pathOf(row.manifest_path);
      if (manifestPath === undefined) continue;
      // Every entry, deleted ones too: an entry deleted here is live in an older snapshot still kept.
      for (const entry of decodeManifest(await table.warehouse.open(manifestPath))) reach(entry.data_file.file_path);
    }
  }
  const files = [...(await filesUnder(table.warehouse, `${table.dir}/data`)), ...(await filesUnder(table.warehouse, `${table.dir}/metadata`))];
  const orphans = files
    .filter((entry) => !reachable.has(entry.path) && entry.modifiedAt < options.olderThanMs)
    .filter((entry) => !/^v\d+\.metadata\.json$/.test(entry.name) && entry.name !== 'version-hint.text')
    // A catalog's table: its metadata files (<NNNNN>-<uuid>.metadata.json) are the catalog's, its current one among them.
    .filter((entry) => table.catalog === undefined || !/\.metadata\.json$/.test(entry.name))
    .filter((entry) => !(entry.path.startsWith(`${table.dir}/data/`) && isHiddenName(entry.name)))
    .map((entry) => entry.path)
    .sort();
  let deleted = 0;
  if (options.dryRun !== true) for (const path of orphans) if (await table.warehouse.delete(path)) deleted += 1;
  return { orphans, deleted };
}

async function filesUnder(warehouse: WarehouseFileSystem, dir: string): Promise<WarehouseEntry[]> {
  let entries: WarehouseEntry[];
  try {
    entries = await warehouse.list(dir);
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return [];
    throw error;
  }
  const files: WarehouseEntry[] = [];
  for (const entry of entries) {
    if (entry.type === 'file') files.push(entry);
    else files.push(...(await filesUnder(warehouse, entry.path)));
  }
  return files;
}
