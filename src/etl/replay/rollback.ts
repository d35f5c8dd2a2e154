/**
 * Roll hours back (`tributary etl rollback`): the version that was live before an hour's last
 * replay comes back byte for byte, through the same fenced, claimed two-rename swap as a replay
 * (replay-swap.ts); the version rolled back is kept under versions/ in its turn. Files committed
 * into the hour after that replay (late records) are no version's own: they are carried into the
 * restored folder, so their records stay loaded once.
 *
 * A rollback undoes an hour's last replay once: an hour whose last swap is already a rollback is
 * left alone and reported, so the same command typed again after a kill (after its publish, or
 * before its claim; a claimed one is finished by the recovery) lands the hours exactly where one
 * uninterrupted rollback would. Going further back is asked for by name: `toVersion` restores that
 * version if it is the one the hour had before its live version, and does nothing once it is live,
 * so that command too can be run again blindly.
 */
import { refuseIcebergLoad } from './iceberg-refusal.js';
import { HOUR_MS, topicHourDir } from '../layout.js';
import { replayError } from './errors.js';
import { checkKeptVersion, checkLiveFolder, checkVersionFree } from './checks.js';
import type { HourState } from './history.js';
import { hourOfKey, versionDir } from './layout.js';
import { REPLAY_MANIFEST_FORMAT, type HourSwap } from './manifest.js';
import { runSwap, type SwapReport, type SwapServices, type UnchangedHour } from './session.js';

export interface RollbackOptions extends SwapServices {
  /** First hour to roll back: a whole UTC hour. */
  readonly from: Date;
  /** End of the hours to roll back (exclusive): a whole UTC hour; `from` + 1 hour for one hour. */
  readonly to: Date;
  /** Only this topic's hours; default every topic whose hours were replayed. */
  readonly topic?: string | undefined;
  /**
   * Restore this version: the one each hour had before its live version. Without it, each hour's
   * last replay is undone unless a rollback undid it already.
   */
  readonly toVersion?: number | undefined;
  readonly reason?: string | undefined;
}

export async function rollbackHours(options: RollbackOptions): Promise<SwapReport> {
  refuseIcebergLoad(options.load, 'rollback');
  const { load, warehouse } = options;
  const root = load.warehouse.root;
  checkHours(options);
  const request = { kind: 'rollback' as const, from: options.from.toISOString(), to: options.to.toISOString(), topic: options.topic ?? null };
  return runSwap(options, request, async (session) => {
    const from = options.from.getTime();
    const to = options.to.getTime();
    const inWindow = [...session.history.hours.values()]
      .filter((state) => hourOfKey(state.hour) * HOUR_MS >= from && hourOfKey(state.hour) * HOUR_MS < to && (options.topic === undefined || state.topic === options.topic))
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : 0));
    // Hours runs alone wrote have nothing to roll back to; in a window they are passed over.
    const replayed = inWindow.filter((state) => state.maxVersion > 1);
    if (replayed.length === 0) throw noVersion(options, inWindow, request.from, request.to);

    const targets: HourState[] = [];
    const unchanged: UnchangedHour[] = [];
    const wrong: string[] = [];
    for (const state of replayed) {
      const decision = decide(state, options.toVersion);
      if (decision.action === 'roll-back') targets.push(state);
      else if (decision.action === 'refuse') wrong.push(decision.why);
      else unchanged.push(decision.hour);
    }
    if (wrong.length > 0) {
      const what = options.toVersion === undefined ? 'roll back' : `restore version ${options.toVersion} of`;
      throw replayError('ETL_ROLLBACK_NO_VERSION', `cannot ${what} load ${load.name}: ${wrong.join('; ')}. Nothing was changed; \`tributary etl status --load ${load.file}\` lists each hour's versions`, {
        toVersion: options.toVersion ?? null,
        from: request.from,
        to: request.to,
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
      unchanged,
      manifest: {
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
      },
    };
  });
}

type Decision = { readonly action: 'roll-back' } | { readonly action: 'leave'; readonly hour: UnchangedHour } | { readonly action: 'refuse'; readonly why: string };

/** What to do with a replayed hour: roll it back, leave it (and why), or refuse `toVersion` there (why). */
function decide(state: HourState, toVersion: number | undefined): Decision {
  const before = state.earlier.at(-1);
  const rollBack = { action: 'roll-back' } as const;
  if (toVersion === undefined) {
    const last = state.lastSwap;
    if (last?.kind !== 'rollback') return before === undefined ? { action: 'refuse', why: `hour ${state.hour} of ${state.topic} has no earlier version` } : rollBack;
    return { action: 'leave', hour: { topic: state.topic, hour: state.hour, version: state.live, why: 'rolled-back', by: { seq: last.seq, fromVersion: last.fromVersion, toVersion: last.toVersion }, further: before } };
  }
  if (state.live === toVersion) return { action: 'leave', hour: { topic: state.topic, hour: state.hour, version: state.live, why: 'at-version' } };
  if (before === toVersion) return rollBack;
  const shown = `hour ${state.hour} of ${state.topic} is at version ${state.live}`;
  if (before === undefined) return { action: 'refuse', why: `${shown} and has no earlier version` };
  if (state.earlier.includes(toVersion)) return { action: 'refuse', why: `${shown}, and version ${toVersion} is further back than the one before it (${before}): roll back one version at a time, --to-version ${before} first` };
  return { action: 'refuse', why: `${shown}; version ${toVersion} was never live before it (the one before is ${before})` };
}

function checkHours(options: RollbackOptions): void {
  for (const [flag, time] of [
    ['--from', options.from],
    ['--to', options.to],
  ] as const) {
    if (Number.isNaN(time.getTime()) || time.getTime() % HOUR_MS !== 0) {
      const shown = Number.isNaN(time.getTime()) ? 'is not a time' : `${time.toISOString()} is not the start of an hour`;
      throw replayError('ETL_REPLAY_WINDOW_INVALID', `${flag} ${shown}; give the hours to roll back as whole UTC hours, e.g. 2026-11-29T10:00Z`, {});
    }
  }
  if (options.to.getTime() <= options.from.getTime()) {
    throw replayError('ETL_REPLAY_WINDOW_INVALID', `--to ${options.to.toISOString()} is not after --from ${options.from.toISOString()}; the hours to roll back are [--from, --to)`, {});
  }
  if (options.toVersion !== undefined && (!Number.isInteger(options.toVersion) || options.toVersion < 1)) {
    throw replayError('ETL_REPLAY_WINDOW_INVALID', `--to-version ${options.toVersion} is not a version number (1 is what runs loaded, each replay made the next)`, {});
  }
}

function noVersion(options: RollbackOptions, inWindow: readonly HourState[], from: string, to: string): Error {
  const { load } = options;
  const what = options.topic === undefined ? `no topic of load ${load.name} has` : `topic ${options.topic} of load ${load.name} has`;
  const single = new Date(from).getTime() + HOUR_MS === new Date(to).getTime();
  const hours = single ? `hour ${from}` : `the hours [${from}, ${to})`;
  const where = inWindow.length === 0 ? `${single ? 'the hour holds' : 'they hold'} no data` : `${single ? 'the hour is' : 'they are'} at version 1, the one runs loaded`;
  return replayError('ETL_ROLLBACK_NO_VERSION', `${what} an earlier version of ${hours}: ${where}. Nothing was changed; \`tributary etl status --load ${load.file}\` lists replayed hours`, {
    from,
    to,
    topic: options.topic ?? null,
  });
}
