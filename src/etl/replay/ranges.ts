/**
 * What a replay reads and what it may change. The offset ranges that fed the hours of the window
 * are those of the data files now in those hour folders (every file is one range of one partition,
 * [start, end), named in the manifests). A range read again is bucketed by event hour as a run
 * would, and the replay keeps only the buckets of the window's hours; for that to lose and
 * duplicate nothing, every other hour must get exactly the records it holds now from that range,
 * and no record that was loaded may now be set aside. Both are checked before anything changes.
 */
import { hourStateKey, liveFiles, type HourState } from './history.js';
import { replayError } from './errors.js';
import type { LoadSource, PartitionBounds } from '../load/source.js';

export interface ReplayRange {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  /** The hours of the window this range fed, ascending. */
  readonly hours: readonly string[];
  /** Records of this range in each hour folder of the topic now, window or not. */
  readonly liveByHour: ReadonlyMap<string, number>;
}

export function rangeKey(range: { readonly topic: string; readonly partition: number; readonly start: number; readonly end: number }): string {
  return `${range.topic}+${range.partition}+${range.start}+${range.end}`;
}

/** The ranges whose files are in the `targets` hour folders, sorted by topic, partition and start. */
export function deriveReplayRanges(hours: ReadonlyMap<string, HourState>, targets: readonly HourState[]): ReplayRange[] {
  const topics = new Set(targets.map((target) => target.topic));
  const liveByRange = new Map<string, Map<string, number>>();
  for (const state of hours.values()) {
    if (!topics.has(state.topic)) continue;
    for (const file of liveFiles(state)) {
      const key = rangeKey({ topic: state.topic, ...file });
      let byHour = liveByRange.get(key);
      if (byHour === undefined) liveByRange.set(key, (byHour = new Map<string, number>()));
      byHour.set(state.hour, (byHour.get(state.hour) ?? 0) + file.records);
    }
  }
  const ranges = new Map<string, { topic: string; partition: number; start: number; end: number; hours: string[] }>();
  for (const target of targets) {
    for (const file of liveFiles(target)) {
      const key = rangeKey({ topic: target.topic, ...file });
      let range = ranges.get(key);
      if (range === undefined) ranges.set(key, (range = { topic: target.topic, partition: file.partition, start: file.start, end: file.end, hours: [] }));
      if (!range.hours.includes(target.hour)) range.hours.push(target.hour);
    }
  }
  return [...ranges.entries()]
    .map(([key, range]) => ({ ...range, hours: range.hours.sort(), liveByHour: liveByRange.get(key) ?? new Map<string, number>() }))
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition || a.start - b.start));
}

export interface MissingRange {
  readonly topic: string;
  readonly partition: number;
  readonly from: number;
  readonly to: number;
  readonly hours: readonly string[];
  readonly why: 'deleted by retention' | 'past the end of the log';
}

/** The parts of `ranges` the log no longer holds, given each partition's bounds now. */
export function missingRanges(ranges: readonly ReplayRange[], bounds: ReadonlyMap<string, PartitionBounds>): MissingRange[] {
  const missing: MissingRange[] = [];
  for (const range of ranges) {
    const partitionBounds = bounds.get(`${range.topic}-${range.partition}`);
    if (partitionBounds === undefined) throw new Error(`no bounds for ${range.topic}-${range.partition}`);
    const here = { topic: range.topic, partition: range.partition, hours: range.hours };
    if (range.start < partitionBounds.logStart) missing.push({ ...here, from: range.start, to: Math.min(range.end, partitionBounds.logStart), why: 'deleted by retention' });
    if (range.end > partitionBounds.highWatermark) missing.push({ ...here, from: Math.max(range.start, partitionBounds.highWatermark), to: range.end, why: 'past the end of the log' });
  }
  return missing;
}

/** Each partition's bounds now, asked once per partition. */
export async function boundsOf(ranges: readonly ReplayRange[], source: LoadSource): Promise<Map<string, PartitionBounds>> {
  const bounds = new Map<string, PartitionBounds>();
  for (const range of ranges) {
    const key = `${range.topic}-${range.partition}`;
    if (!bounds.has(key)) bounds.set(key, await source.bounds(range.topic, range.partition));
  }
  return bounds;
}

export function missingRangesError(load: string, missing: readonly MissingRange[]): Error {
  const lines = missing.map((gap) => `${gap.topic}-${gap.partition} [${gap.from}, ${gap.to}) (${gap.to - gap.from} offsets, ${gap.why}; fed ${gap.hours.join(', ')})`);
  return replayError(
    'ETL_REPLAY_OFFSETS_MISSING',
    `replay of load ${load} stopped before changing anything: ${missing.length} offset range${missing.length === 1 ? '' : 's'} that fed the window ${missing.length === 1 ? 'is' : 'are'} no longer in the log:\n  ${lines.join('\n  ')}\n` +
      'These hours cannot be rebuilt from the source. Replay a window without them, or keep the loaded version',
    { load, missing: missing.map((gap) => ({ ...gap, hours: [...gap.hours] })) },
  );
}

/** What reading a range again gave: records per event hour, and records set aside with their reasons. */
export interface RebuiltRange {
  readonly byHour: ReadonlyMap<string, number>;
  readonly quarantined: number;
  readonly reasons: Readonly<Record<string, number>>;
}

/**
 * Refuses a replay that would lose or duplicate records: a range must give every hour outside the
 * rebuilt ones exactly what it holds there now, and as many records in all as are loaded now.
 *
 * A range whose log now holds fewer records than were loaded from it (loaded or set aside: fewer
 * read in all) lost records inside the log: the ranges were checked to be within the log's bounds
 * (missingRanges), so retention did not take them; compaction did (a compacted topic keeps only
 * the latest record of each key, at its offset). Such hours cannot be rebuilt without dropping
 * what compaction removed after it was loaded, which is said as such rather than as records that
 * moved or no longer decode.
 */
export function checkRecordsStay(load: string, ranges: readonly ReplayRange[], rebuiltHours: ReadonlySet<string>, rebuilt: ReadonlyMap<string, RebuiltRange>): void {
  const moves: string[] = [];
  const drops: string[] = [];
  const compacted: string[] = [];
  for (const range of ranges) {
    const now = rebuilt.get(rangeKey(range));
    if (now === undefined) throw new Error(`range ${rangeKey(range)} was not read`);
    const loaded = [...range.liveByHour.values()].reduce((sum, count) => sum + count, 0);
    const read = [...now.byHour.values()].reduce((sum, count) => sum + count, 0) + now.quarantined;
    if (read < loaded) compacted.push(`${range.topic}-${range.partition} [${range.start}, ${range.end}): ${loaded} records loaded, ${read} in the log now`);
    const hours = new Set([...range.liveByHour.keys(), ...now.byHour.keys()]);
    for (const hour of [...hours].sort()) {
      if (rebuiltHours.has(hourStateKey(range.topic, hour))) continue;
      const before = range.liveByHour.get(hour) ?? 0;
      const after = now.byHour.get(hour) ?? 0;
      if (before !== after) moves.push(`${range.topic}-${range.partition} [${range.start}, ${range.end}) has ${before} records in hour ${hour} now and would have ${after}`);
    }
    const before = [...range.liveByHour.values()].reduce((sum, count) => sum + count, 0);
    const after = [...now.byHour.values()].reduce((sum, count) => sum + count, 0);
    if (after < before) {
      const reasons = Object.entries(now.reasons).map(([code, count]) => `${count} ${code}`).join(', ');
      drops.push(`${range.topic}-${range.partition} [${range.start}, ${range.end}): ${before} records loaded, ${after} now (${now.quarantined} set aside: ${reasons})`);
    }
  }
  if (compacted.length > 0) {
    throw replayError(
      'ETL_REPLAY_RECORDS_COMPACTED',
      `replay of load ${load} stopped before changing anything: the log no longer holds some records that were loaded from the ranges that fed the window; they are within the log's offsets, so compaction removed them since they were loaded (the topic is compacted: only the latest record of each key stays):\n  ${compacted.join('\n  ')}\n` +
        'A replay would drop them from the warehouse: these hours cannot be rebuilt from the source. Keep the loaded version, or replay a window without them',
      { load, compacted },
    );
  }
  if (moves.length > 0) {
    throw replayError(
      'ETL_REPLAY_RECORDS_MOVE',
      `replay of load ${load} stopped before changing anything: with today's configuration some records fall into other hours than before, outside the hours being rebuilt (the event time changed: timeField?):\n  ${moves.join('\n  ')}\n` +
        'Widen --from/--to to cover those hours, or restore the timeField the data was loaded with',
      { load, moves },
    );
  }
  if (drops.length > 0) {
    throw replayError(
      'ETL_REPLAY_RECORDS_DROPPED',
      `replay of load ${load} stopped before changing anything: records that were loaded can no longer be read with today's reader schema and configuration:\n  ${drops.join('\n  ')}\n` +
        'Fix the reader schema or the load file so these records decode again, then replay',
      { load, drops },
    );
  }
}

/** Refuses a window whose hours are not whole UTC hours (or empty). */
export function checkWindow(from: Date, to: Date): void {
  for (const [flag, time] of [['--from', from], ['--to', to]] as const) {
    if (Number.isNaN(time.getTime())) throw replayError('ETL_REPLAY_WINDOW_INVALID', `${flag} is not a time; give an ISO time in UTC such as 2026-11-29T10:00Z`, { flag });
    if (time.getTime() % 3_600_000 !== 0) {
      const floor = new Date(Math.floor(time.getTime() / 3_600_000) * 3_600_000).toISOString();
      throw replayError('ETL_REPLAY_WINDOW_INVALID', `${flag} ${time.toISOString()} is not the start of an hour; a replay rebuilds whole UTC hours: give e.g. ${floor}`, { flag, time: time.toISOString() });
    }
  }
  if (to.getTime() <= from.getTime()) {
    throw replayError('ETL_REPLAY_WINDOW_INVALID', `the window [${from.toISOString()}, ${to.toISOString()}) is empty: --to must be later than --from (it is exclusive: --from 10:00 --to 12:00 replays hours 10 and 11)`, {
      from: from.toISOString(),
      to: to.toISOString(),
    });
  }
}
