/**
 * Checks made before a swap is claimed: the folders hold what the manifests say (names and
 * lengths, as commit.ts checks a rename done before), and the folder an outgoing version goes to is
 * free. A mismatch is ETL_WAREHOUSE_DAMAGED and nothing is changed.
 */
import { etlError } from '../errors.js';
import { hourOfKey } from './layout.js';
import { liveFiles, type HourState } from './history.js';
import type { VersionFile } from './manifest.js';
import { isHiddenName, topicHourDir } from '../layout.js';
import type { LoadDefinition } from '../load-file.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseEntry, WarehouseFileSystem } from '../warehouse/warehouse.js';

/**
 * Checks the live hour folder holds every data file the manifests put there; returns the names of
 * its other entries (markers such as _COMPLETE), which the swap carries into the incoming version.
 */
export async function checkLiveFolder(warehouse: WarehouseFileSystem, load: LoadDefinition, state: HourState): Promise<string[]> {
  const folder = topicHourDir(load.warehouse.root, state.topic, hourOfKey(state.hour), load.layout);
  const expected = liveFiles(state);
  const entries = await listOrEmpty(warehouse, folder);
  checkFiles(warehouse, load, state, folder, expected, entries, `version ${state.live}, live`);
  const names = new Set(expected.map((file) => file.name));
  return entries.filter((entry) => !names.has(entry.name)).map((entry) => entry.name);
}

/** Checks a kept version's folder holds exactly its data files (hidden names, never data, aside). */
export async function checkKeptVersion(warehouse: WarehouseFileSystem, load: LoadDefinition, state: HourState, version: number, folder: string): Promise<void> {
  const expected = state.kept.get(version) ?? [];
  const entries = await listOrEmpty(warehouse, folder);
  checkFiles(warehouse, load, state, folder, expected, entries, `version ${version}, kept`);
  const names = new Set(expected.map((file) => file.name));
  const others = entries.filter((entry) => !names.has(entry.name) && !isHiddenName(entry.name));
  if (others.length > 0) {
    throw damaged(load, state, `the kept version ${version} in ${warehouse.describe(folder)} holds ${others.map((entry) => entry.name).join(', ')}, which no manifest put there`);
  }
}

/** Checks nothing is at the folder an outgoing version moves to. */
export async function checkVersionFree(warehouse: WarehouseFileSystem, load: LoadDefinition, state: HourState, folder: string): Promise<void> {
  if ((await warehouse.stat(folder)) !== undefined) {
    throw damaged(load, state, `${warehouse.describe(folder)}, where version ${state.live} is to be kept, exists already, but the manifests say version ${state.live} is live`);
  }
}

async function listOrEmpty(warehouse: WarehouseFileSystem, folder: string): Promise<WarehouseEntry[]> {
  try {
    return await warehouse.list(folder);
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return [];
    throw error;
  }
}

function checkFiles(warehouse: WarehouseFileSystem, load: LoadDefinition, state: HourState, folder: string, expected: readonly VersionFile[], entries: readonly WarehouseEntry[], what: string): void {
  const byName = new Map(entries.map((entry) => [entry.name, entry]));
  const problems: string[] = [];
  for (const file of expected) {
    const entry = byName.get(file.name);
    if (entry === undefined) problems.push(`${file.name} is missing`);
    else if (entry.type !== 'file' || entry.length !== file.bytes) problems.push(`${file.name} has ${entry.type === 'file' ? `${entry.length} bytes` : 'become a directory'}, not the ${file.bytes} bytes recorded`);
  }
  if (problems.length > 0) throw damaged(load, state, `${warehouse.describe(folder)} (${what}) does not hold what the manifests say: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? `; and ${problems.length - 5} more` : ''}`);
}

function damaged(load: LoadDefinition, state: HourState, what: string): Error {
  return etlError('ETL_WAREHOUSE_DAMAGED', `hour ${state.hour} of ${state.topic} in load ${load.name}: ${what}. Something other than the loader changed it; nothing was changed. Restore the files, then try again`, {
    details: { load: load.name, topic: state.topic, hour: state.hour },
  });
}
