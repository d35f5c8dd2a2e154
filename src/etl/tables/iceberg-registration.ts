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
 * A load whose tables are kept in a REST catalog (iceberg.catalog) prints instead how Spark and
 * Trino reach that catalog (the `rest` catalog type, its URI and warehouse) and each table's name
 * in it: there is nothing to register, and no metadata file to point at.
 *
 * Tables are found from the published commits' manifests (the topics' tables, and the load's
 * dead-letter table once a commit set records aside), and each is read for its current version.
 */
import { readClaim, readCommitLog } from '../load/commit-log.js';
import type { IcebergCatalogSettings, LoadDefinition } from '../load-file.js';
import { loadTable } from '../iceberg/table-commit.js';
import { currentSnapshot, mainAncestry, type Snapshot } from '../iceberg/table-metadata.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { icebergTableOf, type CatalogEnvironment, type CatalogRef, type TablePlace } from '../iceberg/load-catalog.js';

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
  /** The REST catalog table that keeps its metadata (as the newest claim naming the table records it). */
  readonly catalog?: CatalogRef | undefined;
}

/** The Iceberg table of each topic the load has published commits for, at its current version. */
export async function findIcebergTables(load: LoadDefinition, warehouse: WarehouseFileSystem, env: CatalogEnvironment = {}): Promise<IcebergTableFound[]> {
  const root = load.warehouse.root;
  const log = await readCommitLog(warehouse, root, load.name);
  type Found = TablePlace & { readonly kind: IcebergTableFound['kind'] };
  const tables = new Map<string, Found>();
  let deadLetters: Found | undefined;
  const place = (entry: TablePlace, kind: IcebergTableFound['kind']): Found => ({ dir: entry.dir, location: entry.location, kind, ...(entry.catalog === undefined ? {} : { catalog: entry.catalog }) });
  for (const seq of [...log.published].sort((a, b) => a - b)) {
    const { manifest } = await readClaim(warehouse, root, load.name, seq);
    for (const [topic, entry] of Object.entries(manifest.iceberg ?? {})) tables.set(topic, place(entry, 'data'));
    if (manifest.deadLetters !== undefined) deadLetters = place(manifest.deadLetters, 'dead-letters');
  }
  const ordered = [...tables].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (deadLetters !== undefined) ordered.push([`${load.name}_dead_letters`, deadLetters]);
  const found: IcebergTableFound[] = [];
  for (const [topic, entry] of ordered) {
    const loaded = await loadTable(await icebergTableOf(warehouse, entry, env));
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
      ...(entry.catalog === undefined ? {} : { catalog: entry.catalog }),
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
  const catalog = load.iceberg?.catalog;
  if (catalog !== undefined) return `${[...lines, ...restCatalogLines(catalog, tables)].join('\n')}\n`;
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

/** How Spark and Trino reach a load's REST catalog, and each table's name there (nothing to register). */
function restCatalogLines(catalog: IcebergCatalogSettings, tables: readonly IcebergTableFound[]): string[] {
  const lines: string[] = ['', `-- The tables are kept in the Iceberg REST catalog ${catalog.uri}${catalog.warehouse === undefined ? '' : ` (warehouse ${catalog.warehouse})`}, namespace ${catalog.namespace.join('.')}.`];
  const auth = catalog.tokenFile !== undefined ? 'token=<the token>' : 'credential=<client_id:client_secret>';
  lines.push('', '-- Spark: the REST catalog (add the iceberg-spark-runtime jar):');
  lines.push('--   --conf spark.sql.catalog.tributary=org.apache.iceberg.spark.SparkCatalog');
  lines.push('--   --conf spark.sql.catalog.tributary.type=rest');
  lines.push(`--   --conf spark.sql.catalog.tributary.uri=${catalog.uri}`);
  if (catalog.warehouse !== undefined) lines.push(`--   --conf spark.sql.catalog.tributary.warehouse=${catalog.warehouse}`);
  if (catalog.scope !== undefined) lines.push(`--   --conf spark.sql.catalog.tributary.scope=${catalog.scope}`);
  lines.push(`--   and, if the catalog wants credentials: --conf spark.sql.catalog.tributary.${auth}`);
  for (const table of tables) {
    const ref = table.catalog;
    if (ref === undefined) {
      lines.push(`--   ${table.topic}: not in the catalog (committed before iceberg.catalog was set): spark.read.format("iceberg").load(${JSON.stringify(table.location)})`);
      continue;
    }
    lines.push(`SELECT count(*) FROM tributary.${[...ref.namespace, ref.name].map(identifier).join('.')};`);
  }
  lines.push('', '-- Trino: a catalog file such as etc/catalog/iceberg.properties:');
  lines.push('--   connector.name=iceberg');
  lines.push('--   iceberg.catalog.type=rest');
  lines.push(`--   iceberg.rest-catalog.uri=${catalog.uri}`);
  if (catalog.warehouse !== undefined) lines.push(`--   iceberg.rest-catalog.warehouse=${catalog.warehouse}`);
  lines.push(`--   iceberg.rest-catalog.security=OAUTH2 and iceberg.rest-catalog.oauth2.${catalog.tokenFile !== undefined ? 'token=<the token>' : 'credential=<client_id:client_secret>'}, if the catalog wants credentials`);
  if (catalog.namespace.length > 1) lines.push('--   iceberg.rest-catalog.nested-namespace-enabled=true   (the namespace has several levels)');
  for (const table of tables) {
    const ref = table.catalog;
    if (ref === undefined) continue;
    lines.push(`SELECT count(*) FROM iceberg."${ref.namespace.join('.').replace(/"/g, '""')}"."${ref.name.replace(/"/g, '""')}";`);
  }
  lines.push('', '-- Each table (Java: RESTCatalog.loadTable(TableIdentifier.of(namespace…, name))):');
  for (const table of tables) {
    const name = table.catalog === undefined ? '(no catalog table)' : [...table.catalog.namespace, table.catalog.name].join('.');
    lines.push(`--   ${table.kind === 'dead-letters' ? `${table.topic} (records set aside, with their reasons)` : table.topic}: ${name} at ${table.location}  (${table.snapshots} snapshot${table.snapshots === 1 ? '' : 's'}, ${table.records} records)`);
  }
  return lines;
}
