/**
 * Roll an hour back (`tributary etl rollback`): the version that was live before the hour's last
 * replay comes back byte for byte, through the same fenced, claimed two-rename swap as a replay
 * (replay-swap.ts); the version rolled back is kept under versions/ in its turn. Files committed
 * into the hour after that replay (late records) are no version's own: they are carried into the
 * restored folder, so their records stay loaded once.
 */
import { HOUR_MS, topicHourDir } from '../layout.js';
import { replayError } from './errors.js';
import { checkKeptVersion, checkLiveFolder, checkVersionFree } from './checks.js';
import { hourOfKey, versionDir } from './layout.js';
import { REPLAY_MANIFEST_FORMAT, type HourSwap } from './manifest.js';
import { runSwap, type SwapReport, type SwapServices } from './session.js';

export interface RollbackOptions extends SwapServices {
  /** The hour to roll back: a whole UTC hour. */
  readonly hour: Date;
  /** Only this topic's hour; default every topic whose hour was replayed. */
  readonly topic?: string | undefined;
  readonly reason?: string | undefined;
}

export async function rollbackHour(options: RollbackOptions): Promise<SwapReport> {
  const { load, warehouse } = options;
  const root = load.warehouse.root;
  if (Number.isNaN(options.hour.getTime()) || options.hour.getTime() % HOUR_MS !== 0) {
    const shown = Number.isNaN(options.hour.getTime()) ? 'is not a time' : `${options.hour.toISOString()} is not the start of an hour`;
    throw replayError('ETL_REPLAY_WINDOW_INVALID', `--hour ${shown}; give the hour to roll back as a whole UTC hour, e.g. 2026-11-29T10:00Z`, {});
  }
  const from = options.hour.toISOString();
  const request = { kind: 'rollback' as const, from, to: new Date(options.hour.getTime() + HOUR_MS).toISOString(), topic: options.topic ?? null };
  return runSwap(options, request, async (session) => {
    const states = [...session.history.hours.values()].filter((state) => hourOfKey(state.hour) * HOUR_MS === options.hour.getTime() && (options.topic === undefined || state.topic === options.topic));
    const targets = states.filter((state) => state.earlier.length > 0).sort((a, b) => (a.topic < b.topic ? -1 : 1));
    if (targets.length === 0) {
      const what = options.topic === undefined ? `no topic of load ${load.name} has` : `topic ${options.topic} of load ${load.name} has`;
      const where = states.length === 0 ? 'holds no data' : `is at version ${states.map((state) => state.live).join('/')}, the one runs loaded, or was rolled back as far as it goes`;
      throw replayError('ETL_ROLLBACK_NO_VERSION', `${what} an earlier version of hour ${from}: the hour ${where}. Nothing was changed; \`tributary etl status --load ${load.file}\` lists replayed hours`, {
        hour: from,
        topic: options.topic ?? null,
      });
    }
    const hours: HourSwap[] = [];
    for (const state of targets) {
      const hour = hourOfKey(state.hour);
      const restore = state.earlier.at(-1)!;
      const keep = versionDir(root, load.name, state.topic, hour, state.live);
      const bring = versionDir(root, load.name, state.topic, hour, restore);
      const markers = await checkLiveFolder(warehouse, load, state);
      await checkKeptVersion(warehouse, load, state, restore, bring);
      await checkVersionFree(warehouse, load, state, keep);
      hours.push({
        topic: state.topic,
        hour: state.hour,
        live: topicHourDir(root, state.topic, hour, load.layout),
        fromVersion: state.live,
        toVersion: restore,
        keep,
        bring,
        carried: [...state.lateFiles.map((file) => file.name), ...markers].sort(),
        old: state.versionFiles,
        new: state.kept.get(restore) ?? [],
        recordsChanged: null,
        outputSchemaChanged: null,
      });
    }
    return {
      format: REPLAY_MANIFEST_FORMAT,
      kind: 'rollback',
      load: load.name,
      seq: session.seq,
      attempt: session.attempt,
      runNumber: session.runNumber,
      createdAt: (options.now ?? (() => new Date()))().toISOString(),
      reason: options.reason ?? null,
      request: { from: request.from, to: request.to, topic: request.topic },
      transform: null,
      readerSchemas: {},
      ranges: [],
      hours,
    };
  });
}
