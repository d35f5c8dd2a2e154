/**
 * Where replays and rollbacks put things (ARCHITECTURE.md, "The loader's layout in HDFS"); all
 * paths relative to the warehouse, under the load's `_etl` folder:
 *
 *   <root>/_etl/<load>/replays/<seq>.pending          claim of the hour swap <seq> (replay or rollback), kept forever
 *   <root>/_etl/<load>/replays/<seq>.json             the swap done (same bytes as the claim)
 *   <root>/_etl/<load>/replays/staging/<seq>-<attempt>/hours/<topic>/YYYY/MM/DD/HH/   a replay's new version of an hour
 *   <root>/_etl/<load>/versions/<topic>/YYYY/MM/DD/HH/<n>/   version <n> of an hour while it is not the live one
 *
 * <seq> is the seq of the (empty) commit that fences the swap (replay-fence.ts), so commits and
 * swaps share one order. Version 1 of an hour is what runs loaded; each replay makes the next
 * number. The live version is the hour folder itself (`topicHourDir` in ../layout.ts, per the load's layout).
 */
import { HOUR_MS, formatSeq, hourFolder, loadDir } from '../layout.js';

export function replaysDir(root: string, load: string): string {
  return `${loadDir(root, load)}/replays`;
}

export function swapClaimPath(root: string, load: string, seq: number): string {
  return `${replaysDir(root, load)}/${formatSeq(seq)}.pending`;
}

export function swapPublishedPath(root: string, load: string, seq: number): string {
  return `${replaysDir(root, load)}/${formatSeq(seq)}.json`;
}

export function swapStagingRoot(root: string, load: string): string {
  return `${replaysDir(root, load)}/staging`;
}

export function swapStagingDir(root: string, load: string, seq: number, attempt: string): string {
  return `${swapStagingRoot(root, load)}/${formatSeq(seq)}-${attempt}`;
}

/** The folder a replay builds the new version of an hour in, inside its staging folder. */
export function newVersionDir(stagingDir: string, topic: string, hour: number): string {
  return `${stagingDir}/hours/${topic}/${hourFolder(hour)}`;
}

export function versionDir(root: string, load: string, topic: string, hour: number, version: number): string {
  return `${loadDir(root, load)}/versions/${topic}/${hourFolder(hour)}/${version}`;
}

/** The hour (hours since the epoch) of a manifest hour key such as `2026-11-29T15`. */
export function hourOfKey(key: string): number {
  const ms = Date.parse(`${key}:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(key) || Number.isNaN(ms)) throw new Error(`bad hour key ${JSON.stringify(key)}`);
  return ms / HOUR_MS;
}
