/**
 * What the demo's load left in the warehouse, hour folder by hour folder: read from the warehouse
 * listing (what is really there), with each file's record count from the commit manifest. A file
 * the manifest does not name, or a named file that is missing, fails: the demo shows the loader's
 * result only when the two agree.
 */
import { TributaryError } from '../common/errors.js';
import { HOUR_MS, isHiddenName, topicHourDir } from '../etl/layout.js';
import type { Manifest } from '../etl/load/manifest.js';
import type { WarehouseFileSystem } from '../etl/warehouse/warehouse.js';

export interface HourFile {
  readonly name: string;
  /** Relative to the warehouse. */
  readonly path: string;
  readonly records: number;
  readonly bytes: number;
}

export interface HourFolder {
  /** `2026-05-01T13`, as manifests and `etl status` name hours. */
  readonly hour: string;
  /** Relative to the warehouse, e.g. `page-views/hourly/2026/05/01/13`. */
  readonly path: string;
  readonly records: number;
  readonly files: readonly HourFile[];
}

/** The topic's hour folders under the warehouse root '' (the demo's load file), in hour order. */
export async function listHourFolders(warehouse: WarehouseFileSystem, topic: string, manifest: Manifest): Promise<HourFolder[]> {
  const committed = new Map(manifest.files.filter((file) => file.topic === topic).map((file) => [file.path, file]));
  const folders: HourFolder[] = [];
  const seen = new Set<string>();
  for (const hour of [...new Set(manifest.files.filter((file) => file.topic === topic).map((file) => file.hour))].sort()) {
    const path = topicHourDir('', topic, Date.parse(`${hour}:00:00Z`) / HOUR_MS, manifest.output.layout ?? 'hourly');
    const files: HourFile[] = [];
    for (const entry of await warehouse.list(path)) {
      // `_COMPLETE`, `_SUCCESS` and other hidden names are not data files.
      if (entry.type !== 'file' || isHiddenName(entry.name)) continue;
      const file = committed.get(entry.path);
      if (file === undefined) throw mismatch(`${warehouse.describe(entry.path)} is in an hour folder but commit ${manifest.seq} does not name it`);
      seen.add(entry.path);
      files.push({ name: entry.name, path: entry.path, records: file.records, bytes: entry.length });
    }
    folders.push({ hour, path, records: files.reduce((sum, file) => sum + file.records, 0), files });
  }
  const missing = [...committed.keys()].filter((path) => !seen.has(path));
  if (missing.length > 0) throw mismatch(`commit ${manifest.seq} names ${missing.length} files that are not in the warehouse, e.g. ${warehouse.describe(missing[0])}`);
  return folders;
}

function mismatch(message: string): TributaryError {
  return new TributaryError({ code: 'DEMO_FAILED', message: `the warehouse and the load's manifest disagree: ${message}` });
}
