/**
 * What `tributary etl ddl` prints for a `format: iceberg` load: not table definitions (an Iceberg
 * table defines itself in its metadata) but how each engine finds the tables the loader made:
 *
 *   Spark       a Hadoop catalog whose warehouse is the folder above the load's root, so the
 *               table is <catalog>.<root folders as namespace>.<topic>; or a read by path
 *   Trino       `CALL iceberg.system.register_table(…)` with the table's location and its current
 *               metadata file (needs iceberg.register-table-procedure.enabled=true)
 *   Java, DuckDB  HadoopTables.load(location); iceberg_scan(location) (the hint is always current)
 *
 * Tables are found from the published commits' manifests (the topics' tables, and the load's
 * dead-letter table once a commit set records aside), and each is read for its current version.
 */
import { readClaim, readCommitLog } from '../load/commit-log.js';
import type { LoadDefinition } from '../load-file.js';
import { loadTable } from '../iceberg/table-commit.js';
import { currentSnapshot, mainAncestry, type Snapshot } from '../iceberg/table-metadata.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface IcebergTableFound {
  /** The topic, or the dead-letter table's name `<load>_dead_letters`. */
  readonly topic: string;
  readonly kind: 'data' | 'dead-letters';
  /** The table's folder in the warehouse. */
  readonly dir: string;
  readonly location: string;
  readonly version: number;
  readonly snapshots: number;
  readonly records: string;
  /** `main`'s history, newest first. */
  readonly history: readonly Snapshot[];
}

/** The Iceberg table of each topic the load has published commits for, at its current version. */
export async function findIcebergTables(load: LoadDefinition, warehouse: WarehouseFileSystem): Promise<IcebergTableFound[]> {
  const root = load.warehouse.root;
  const log = await readCommitLog(warehouse, root, load.name);
  const tables = new Map<string, { dir: string; location: string; kind: IcebergTableFound['kind'] }>();
  let deadLetters: { dir: string; location: string; kind: IcebergTableFound['kind'] } | undefined;
  for (const seq of [...log.published].sort((a, b) => a - b)) {
    const { manifest } = await readClaim(warehouse, root, load.name, seq);
    for (const [topic, entry] of Object.entries(manifest.iceberg ?? {})) tables.set(topic, { dir: entry.dir, location: entry.location, kind: 'data' });
    if (manifest.deadLetters !== undefined) deadLetters = { dir: manifest.deadLetters.dir, location: manifest.deadLetters.location, kind: 'dead-letters' };
  }
  const ordered = [...tables].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (deadLetters !== undefined) ordered.push([`${load.name}_dead_letters`, deadLetters]);
  const found: IcebergTableFound[] = [];
  for (const [topic, entry] of ordered) {
    const loaded = await loadTable({ warehouse, dir: entry.dir, location: entry.location });
    if (loaded === undefined) continue;
    found.push({
      topic,
      kind: entry.kind,
      dir: entry.dir,
      location: loaded.metadata.location,
      version: loaded.version,
      snapshots: loaded.metadata.snapshots?.length ?? 0,
      records: currentSnapshot(loaded.metadata)?.summary['total-records'] ?? '0',
      history: mainAncestry(loaded.metadata),
    });
  }
  return found;
}

/** What `etl status` adds for an Iceberg load: each table's current version and its newest snapshots. */
export function formatIcebergSnapshots(tables: readonly IcebergTableFound[], newest = 10): string {
  const lines: string[] = [];
  for (const table of tables) {
    lines.push('', `Iceberg table ${table.topic}: ${table.location} (metadata v${table.version}, ${table.records} records)`);
    lines.push('  snapshot              seq  committed at               operation  commit                  added records');
    for (const snapshot of table.history.slice(0, newest)) {
      const at = new Date(snapshot['timestamp-ms']).toISOString();
      lines.push(`  ${String(snapshot['snapshot-id']).padEnd(20)}  ${String(snapshot['sequence-number']).padEnd(3)}  ${at.padEnd(25)}  ${(snapshot.summary['operation'] ?? '?').padEnd(9)}  ${(snapshot.summary['tributary.commit-id'] ?? '(another writer)').padEnd(22)}  ${snapshot.summary['added-records'] ?? '?'}`);
    }
    if (table.history.length > newest) lines.push(`  … ${table.history.length - newest} older`);
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

const quoted = (text: string): string => `'${text.replace(/'/g, "''")}'`;
const identifier = (name: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `\`${name.replace(/`/g, '``')}\``);

/** The text `etl ddl` prints for an Iceberg load. */
export function formatIcebergRegistration(load: LoadDefinition, tables: readonly IcebergTableFound[]): string {
  const lines = [`-- Iceberg tables of load ${load.name} (${load.file}): format version 2, partitioned by hour(_event_time); one per topic`];
  if (tables.length === 0) return `${lines[0]}\n-- none yet: the load has published no commit with data\n`;
  const first = tables.find((table) => table.kind === 'data') ?? tables[0]!;
  const rootFolders = load.warehouse.root.split('/').filter((part) => part !== '');
  // A table is at <warehouse>/<root folders>/<topic>: the catalog's warehouse is what comes before.
  const tableParent = first.location.slice(0, -(first.topic.length + 1));
  const warehouseUri = rootFolders.length === 0 ? tableParent : tableParent.slice(0, -(rootFolders.join('/').length + 1));
  const namespace = rootFolders.map(identifier).join('.');
  lines.push('', '-- Spark: a Hadoop catalog over the warehouse (add the iceberg-spark-runtime jar):');
  lines.push('--   --conf spark.sql.catalog.tributary=org.apache.iceberg.spark.SparkCatalog');
  lines.push('--   --conf spark.sql.catalog.tributary.type=hadoop');
  lines.push(`--   --conf spark.sql.catalog.tributary.warehouse=${warehouseUri}`);
  // A path read goes through Iceberg's default_iceberg catalog, a Hive one unless set: without Hive's classes it fails.
  lines.push('--   and for the path reads below (Iceberg\'s default_iceberg catalog, else a Hive one):');
  lines.push('--   --conf spark.sql.catalog.default_iceberg=org.apache.iceberg.spark.SparkCatalog');
  lines.push('--   --conf spark.sql.catalog.default_iceberg.type=hadoop');
  lines.push(`--   --conf spark.sql.catalog.default_iceberg.warehouse=${warehouseUri}`);
  for (const table of tables) {
    const name = namespace === '' || table.kind === 'dead-letters' ? undefined : `tributary.${namespace}.${identifier(table.topic)}`;
    lines.push(name === undefined ? `--   spark.read.format("iceberg").load(${JSON.stringify(table.location)})` : `SELECT count(*) FROM ${name};   -- or spark.read.format("iceberg").load(${JSON.stringify(table.location)})`);
  }
  lines.push('', '-- Trino (iceberg.register-table-procedure.enabled=true in the catalog):');
  for (const table of tables) {
    lines.push(
      `CALL iceberg.system.register_table(schema_name => ${quoted(load.hive?.database ?? 'default')}, table_name => ${quoted(table.topic.replace(/[^A-Za-z0-9_]/g, '_'))}, table_location => ${quoted(table.location)}, metadata_file_name => ${quoted(`v${table.version}.metadata.json`)});`,
    );
  }
  lines.push('', '-- Each table (Java: HadoopTables.load(location); DuckDB: iceberg_scan(location)):');
  for (const table of tables) lines.push(`--   ${table.kind === 'dead-letters' ? `${table.topic} (records set aside, with their reasons)` : table.topic}: ${table.location}  (v${table.version}, ${table.snapshots} snapshot${table.snapshots === 1 ? '' : 's'}, ${table.records} records)`);
  return `${lines.join('\n')}\n`;
}
