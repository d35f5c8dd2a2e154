/**
 * What every hour folder of a load holds, from the manifests alone: the published commits and the
 * published swaps, folded in seq order (a swap's seq is its fencing commit's, so the two logs
 * share one order). Per topic and hour: the live version and its data files, the versions kept
 * under versions/, the files committed after the hour's last replay, and the last swap of the hour
 * (which tells a rollback run again after a kill that it was done already).
 */
import { readClaim, readCommitLog } from '../load/commit-log.js';
import { etlError } from '../errors.js';
import type { Manifest } from '../load/manifest.js';
import { readSwapClaim, readSwapLog } from './log.js';
import type { ReplayManifest, VersionFile } from './manifest.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface HourState {
  readonly topic: string;
  /** `YYYY-MM-DDTHH` (UTC). */
  readonly hour: string;
  /** The live version: 1 is what runs loaded, each replay makes the next number. */
  live: number;
  /** The highest version number the hour has had. */
  maxVersion: number;
  /** Versions that were live before, oldest first; a rollback restores the last one. */
  earlier: number[];
  /** The live version's own data files. */
  versionFiles: VersionFile[];
  /**
   * Files committed into the hour after its last replay: in the live folder but no version's own,
   * so a rollback carries them over instead of dropping their records.
   */
  lateFiles: VersionFile[];
  /** Data files of each version kept under versions/. */
  readonly kept: Map<number, readonly VersionFile[]>;
  /** The last published swap that changed this hour; undefined while runs alone wrote it. */
  lastSwap: HourSwapEvent | undefined;
}

export interface HourSwapEvent {
  readonly seq: number;
  readonly kind: ReplayManifest['kind'];
  readonly fromVersion: number;
  readonly toVersion: number;
}

export interface LoadHistory {
  /** Published commits, in seq order. */
  readonly commits: readonly Manifest[];
  /** Published swaps, in seq order. */
  readonly swaps: readonly ReplayManifest[];
  /** Keyed by hourStateKey(topic, hour). */
  readonly hours: ReadonlyMap<string, HourState>;
}

export function hourStateKey(topic: string, hour: string): string {
  return `${topic}\u0000${hour}`;
}

/** The data files in the live hour folder, by name. */
export function liveFiles(state: HourState): VersionFile[] {
  return [...state.versionFiles, ...state.lateFiles].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function readLoadHistory(warehouse: WarehouseFileSystem, root: string, load: string): Promise<LoadHistory> {
  const commitLog = await readCommitLog(warehouse, root, load);
  const swapLog = await readSwapLog(warehouse, root, load);
  const commits: Manifest[] = [];
  for (const seq of commitLog.claimed) if (commitLog.published.has(seq)) commits.push((await readClaim(warehouse, root, load, seq)).manifest);
  const swaps: ReplayManifest[] = [];
  for (const seq of swapLog.claimed) if (swapLog.published.has(seq)) swaps.push((await readSwapClaim(warehouse, root, load, seq)).manifest);
  return { commits, swaps, hours: foldHistory(commits, swaps) };
}

/** Replays the two logs in seq order (a commit before the swap it fences). */
export function foldHistory(commits: readonly Manifest[], swaps: readonly ReplayManifest[]): Map<string, HourState> {
  const events: ({ seq: number; order: 0; commit: Manifest } | { seq: number; order: 1; swap: ReplayManifest })[] = [
    ...commits.map((commit) => ({ seq: commit.seq, order: 0 as const, commit })),
    ...swaps.map((swap) => ({ seq: swap.seq, order: 1 as const, swap })),
  ].sort((a, b) => a.seq - b.seq || a.order - b.order);
  const hours = new Map<string, HourState>();
  const stateOf = (topic: string, hour: string): HourState => {
    const key = hourStateKey(topic, hour);
    let state = hours.get(key);
    if (state === undefined) hours.set(key, (state = { topic, hour, live: 1, maxVersion: 1, earlier: [], versionFiles: [], lateFiles: [], kept: new Map(), lastSwap: undefined }));
    return state;
  };
  for (const event of events) {
    if ('commit' in event) {
      const { commit } = event;
      for (const file of commit.files) {
        const state = stateOf(file.topic, file.hour);
        const entry: VersionFile = {
          name: file.path.slice(file.path.lastIndexOf('/') + 1),
          partition: file.partition,
          start: file.start,
          end: file.end,
          records: file.records,
          bytes: file.bytes,
          sha256: file.sha256,
          readerId: commit.readerSchemas[file.topic]?.id ?? null,
        };
        // Before the first replay every commit adds to version 1, what runs loaded.
        (state.maxVersion === 1 ? state.versionFiles : state.lateFiles).push(entry);
      }
      continue;
    }
    const { swap } = event;
    for (const hour of swap.hours) {
      const state = stateOf(hour.topic, hour.hour);
      if (hour.fromVersion !== state.live) throw inconsistent(swap, hour.topic, hour.hour, `swaps out version ${hour.fromVersion}, but version ${state.live} is live`);
      state.kept.set(hour.fromVersion, hour.old);
      state.versionFiles = [...hour.new];
      if (swap.kind === 'replay') {
        state.earlier.push(hour.fromVersion);
        state.lateFiles = [];
        state.maxVersion = Math.max(state.maxVersion, hour.toVersion);
      } else {
        if (state.earlier.at(-1) !== hour.toVersion) throw inconsistent(swap, hour.topic, hour.hour, `restores version ${hour.toVersion}, but the version before is ${state.earlier.at(-1) ?? 'none'}`);
        state.earlier.pop();
        state.kept.delete(hour.toVersion);
      }
      state.live = hour.toVersion;
      state.lastSwap = { seq: swap.seq, kind: swap.kind, fromVersion: hour.fromVersion, toVersion: hour.toVersion };
    }
  }
  return hours;
}

function inconsistent(swap: ReplayManifest, topic: string, hour: string, what: string): Error {
  return etlError('ETL_WAREHOUSE_DAMAGED', `${swap.kind} ${swap.seq} of load ${swap.load}, hour ${hour} of ${topic}, ${what}: the replay log does not follow from the manifests before it; it was changed by hand`, {
    details: { load: swap.load, seq: swap.seq, topic, hour },
  });
}
