/**
 * Snapshot expiry of a loader-written table (the format's "Snapshot Retention Policy", as Spark's
 * `expire_snapshots(older_than, retain_last)`): a snapshot is kept when it is among the newest
 * `retainLast` of `main`'s history, or younger than `olderThan`, or what a ref points at; every
 * other one is expired (rolled-back snapshots too, once old enough). The new metadata version drops
 * them from `snapshots` and, as Java does, drops from `snapshot-log` their entries and everything
 * before the last of them (a gap would make time travel answer wrongly).
 *
 * Files are deleted only after that version is committed, and only what no kept snapshot reaches:
 * the expired snapshots' manifest lists, manifests no kept list names, and data files live in an
 * expired snapshot and in no kept one. A crash midway leaves unreferenced files, never a
 * referenced one missing. Old `v<N>.metadata.json` files are kept (Iceberg's default).
 */
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { etlError } from '../errors.js';
import { decodeManifest, decodeManifestList, ENTRY_DELETED } from './manifest-avro.js';
import { currentSnapshot, mainAncestry, type Snapshot, type TableMetadata } from './table-metadata.js';
import { commitMetadata, loadTable, pathUnderLocation, type IcebergTable } from './table-versions.js';

export interface ExpiryPolicy {
  /** Snapshots committed before this time (ms) may expire. */
  readonly olderThanMs: number;
  /** The newest snapshots of `main`'s history always kept (at least 1). */
  readonly retainLast: number;
}

export interface ExpiryReport {
  readonly expired: readonly string[];
  readonly kept: number;
  readonly deletedFiles: number;
  readonly version: number | undefined;
}

const MAX_ATTEMPTS = 10;

export async function expireSnapshots(table: IcebergTable, policy: ExpiryPolicy): Promise<ExpiryReport> {
  for (let attempt = 1; ; attempt += 1) {
    const loaded = await loadTable(table);
    if (loaded === undefined) return { expired: [], kept: 0, deletedFiles: 0, version: undefined };
    const { metadata } = loaded;
    const keep = keptSnapshots(metadata, policy);
    const all = metadata.snapshots ?? [];
    const expired = all.filter((snapshot) => !keep.has(snapshot['snapshot-id']));
    if (expired.length === 0) return { expired: [], kept: all.length, deletedFiles: 0, version: loaded.version };
    const kept = all.filter((snapshot) => keep.has(snapshot['snapshot-id']));
    const outcome = await commitMetadata(table, loaded, withoutSnapshots(metadata, kept, keep));
    if (outcome.outcome === 'conflict') {
      if (attempt >= MAX_ATTEMPTS) throw etlError('ETL_ICEBERG_COMMIT_CONFLICT', `Iceberg table ${table.warehouse.describe(table.dir)}: expiry lost the race for the next metadata version ${attempt} times; nothing was expired. Run again`, { retriable: true, details: { table: table.dir } });
      continue;
    }
    const location = metadata.location.replace(/\/+$/, '');
    const deletedFiles = await deleteUnreachable(table.warehouse, table.dir, location, expired, kept);
    return { expired: expired.map((snapshot) => String(snapshot['snapshot-id'])), kept: kept.length, deletedFiles, version: outcome.loaded.version };
  }
}

function keptSnapshots(metadata: TableMetadata, policy: ExpiryPolicy): Set<bigint> {
  const keep = new Set<bigint>();
  const history = mainAncestry(metadata);
  history.slice(0, Math.max(1, policy.retainLast)).forEach((snapshot) => keep.add(snapshot['snapshot-id']));
  for (const snapshot of metadata.snapshots ?? []) if (snapshot['timestamp-ms'] >= policy.olderThanMs) keep.add(snapshot['snapshot-id']);
  for (const ref of Object.values(metadata.refs ?? {})) keep.add(ref['snapshot-id']);
  const current = currentSnapshot(metadata);
  if (current !== undefined) keep.add(current['snapshot-id']);
  return keep;
}

function withoutSnapshots(metadata: TableMetadata, kept: readonly Snapshot[], keep: ReadonlySet<bigint>): TableMetadata {
  const log: { 'timestamp-ms': number; 'snapshot-id': bigint }[] = [];
  for (const entry of metadata['snapshot-log'] ?? []) {
    if (keep.has(entry['snapshot-id'])) log.push(entry);
    else log.length = 0;
  }
  return { ...metadata, snapshots: kept, 'snapshot-log': log };
}

/** Deletes what only expired snapshots reach; answers how many files. */
async function deleteUnreachable(warehouse: WarehouseFileSystem, dir: string, location: string, expired: readonly Snapshot[], kept: readonly Snapshot[]): Promise<number> {
  const pathOf = (uri: string): string | undefined => {
    const relative = pathUnderLocation(location, uri);
    return relative === undefined ? undefined : `${dir}/${relative}`;
  };
  const reach = async (snapshots: readonly Snapshot[]): Promise<{ lists: Set<string>; manifests: Set<string>; data: Set<string> }> => {
    const lists = new Set<string>();
    const manifests = new Set<string>();
    const data = new Set<string>();
    const read = new Map<string, string[]>();
    for (const snapshot of snapshots) {
      lists.add(snapshot['manifest-list']);
      const listPath = pathOf(snapshot['manifest-list']);
      if (listPath === undefined) continue;
      for (const row of decodeManifestList(await warehouse.open(listPath))) {
        manifests.add(row.manifest_path);
        let live = read.get(row.manifest_path);
        if (live === undefined) {
          const manifestPath = pathOf(row.manifest_path);
          live = manifestPath === undefined ? [] : decodeManifest(await warehouse.open(manifestPath)).filter((entry) => entry.status !== ENTRY_DELETED).map((entry) => entry.data_file.file_path);
          read.set(row.manifest_path, live);
        }
        live.forEach((path) => data.add(path));
      }
    }
    return { lists, manifests, data };
  };
  const keptReach = await reach(kept);
  const expiredReach = await reach(expired);
  const doomed = [
    ...[...expiredReach.lists].filter((uri) => !keptReach.lists.has(uri)),
    ...[...expiredReach.manifests].filter((uri) => !keptReach.manifests.has(uri)),
    ...[...expiredReach.data].filter((uri) => !keptReach.data.has(uri)),
  ];
  let deleted = 0;
  for (const uri of doomed) {
    const path = pathOf(uri);
    // Only files under the table's location: another writer's files elsewhere are not ours to delete.
    if (path !== undefined && (await warehouse.delete(path).catch(() => false))) deleted += 1;
  }
  return deleted;
}
