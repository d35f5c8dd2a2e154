/**
 * Hour completeness (issue #9): `_COMPLETE` in an hour folder says the hour is closed and holds
 * exactly the records the audit's PRODUCER tier counted for it.
 *
 * - An hour H of topic T is closed when every partition of T the load has loaded (nextOffsets) is
 *   loaded in event time (manifest.eventTimes, see manifest.ts) to at least the end of H plus the
 *   load's latenessHorizon.
 * - A closed hour is complete when its records in the warehouse (manifest.hours summed over the
 *   published commits) equal the PRODUCER tier's distinct counts (reconcile.ts's de-duplication)
 *   over the 10-minute windows of H. Windows are of creation time (the Kafka record timestamp the
 *   producer counted), hours of the load's timeField: the comparison means something only when
 *   timeField holds the creation time (header.time for Tributary's events). Records from producers
 *   that do not count themselves make the hour mismatch: no marker then, never a false one.
 * - The marker (JSON, MARKER_FORMAT) names the counts and the commit seq it was computed at. When
 *   later records land in the hour (late data: new files), the run withdraws the marker before it
 *   commits them (withdrawMarkers), and writes it again once the counts match again; while they do
 *   not, there is no marker. A marker is rewritten as: write a temp file, delete the old marker,
 *   rename the temp into place. Between the delete and the rename there is briefly no marker: the
 *   safe direction (a reader waits), whereas an overwrite in place could show a partial file.
 * - Beside every marker lies an empty `_SUCCESS` (Hadoop's marker, which Oozie and Airflow sensors
 *   wait for). It is written after `_COMPLETE` and removed before it, each the crash-safe way (temp
 *   ▸ rename, create-if-absent), so a `_SUCCESS` never stands without its `_COMPLETE`; one missing
 *   beside a `_COMPLETE` is added when the hour is next judged: after a crash in between, the next
 *   run judges it again (no checkpoint was saved); settled hours marked before `_SUCCESS` existed
 *   get theirs once the completeness checkpoint is deleted (every hour is then judged).
 *
 * judgeHours and decideMarkers are pure; updateHourMarkers reads and writes the warehouse.
 */
import type { AuditCountEvent } from '../../audit/audit-count.js';
import type { AuditReadWindow } from '../../audit/read-audit-topic.js';
import { DEFAULT_WINDOW_MS } from '../../audit/windows.js';
import { dedupeEvents } from '../../audit/reconcile.js';
import type { Logger } from '../../common/logger.js';
import { etlError } from '../errors.js';
import { COMPLETE_MARKER, HOUR_MS, SUCCESS_MARKER, completeMarkerPath, hourKey, hourMarkerPath, hourMarkerTempPath, topicHourDir, type HourLayout } from '../layout.js';
import type { Manifest, NextOffsets } from '../load/manifest.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export const MARKER_FORMAT = 'tributary-hour-complete-v1';

export interface HourMarker {
  readonly format: typeof MARKER_FORMAT;
  readonly topic: string;
  /** `2026-11-29T15` (UTC) */
  readonly hour: string;
  /** Records of the hour in the warehouse. */
  readonly records: number;
  /** Records of the hour the PRODUCER tier counted (equal to records). */
  readonly produced: number;
  /** The last published commit when the marker was computed. */
  readonly seq: number;
  /** PRODUCER counts per window of the hour. */
  readonly windows: readonly { readonly windowStart: string; readonly produced: number }[];
}

export type HourState = 'COMPLETE' | 'CLOSED-MISMATCH' | 'OPEN';

export interface HourVerdict {
  readonly topic: string;
  readonly hour: string;
  readonly records: number;
  readonly produced: number;
  readonly closed: boolean;
  readonly state: HourState;
  /** Per window of the hour with PRODUCER counts. */
  readonly windows: readonly { readonly windowStart: number; readonly produced: number }[];
}

export interface JudgeInputs {
  readonly topic: string;
  /** Records per hour key in the warehouse. */
  readonly records: Readonly<Record<string, number>>;
  /** The topic's partitions the load has loaded (keys of nextOffsets[topic]). */
  readonly partitions: readonly string[];
  /** manifest.eventTimes[topic] of the last commit (undefined: written before eventTimes existed). */
  readonly eventTimes: Readonly<Record<string, number>> | undefined;
  readonly latenessHorizonMs: number;
  /** AuditCount events as read from the audit topic (any tier and topic; duplicates allowed). */
  readonly events: readonly AuditCountEvent[];
}

/** How far in event time every loaded partition of the topic is: the least of them (undefined if one is unknown). */
export function loadedThrough(partitions: readonly string[], eventTimes: Readonly<Record<string, number>> | undefined): number | undefined {
  if (partitions.length === 0) return undefined;
  let least = Number.POSITIVE_INFINITY;
  for (const partition of partitions) {
    const time = eventTimes?.[partition];
    if (time === undefined) return undefined;
    least = Math.min(least, time);
  }
  return least;
}

/** PRODUCER-tier records per hour key (distinct events of the topic only), with the windows. */
export function producedPerHour(topic: string, events: readonly AuditCountEvent[]): Map<string, { produced: number; windows: Map<number, number> }> {
  const { events: distinct } = dedupeEvents(events.filter((event) => event.topic === topic && event.tier === 'PRODUCER'));
  const hours = new Map<string, { produced: number; windows: Map<number, number> }>();
  for (const event of distinct) {
    const key = hourKey(Math.floor(event.windowStart / HOUR_MS));
    let hour = hours.get(key);
    if (hour === undefined) hours.set(key, (hour = { produced: 0, windows: new Map() }));
    hour.produced += event.count;
    hour.windows.set(event.windowStart, (hour.windows.get(event.windowStart) ?? 0) + event.count);
  }
  return hours;
}

/** The state of every hour of the topic that the warehouse holds records of. */
export function judgeHours(inputs: JudgeInputs): HourVerdict[] {
  const through = loadedThrough(inputs.partitions, inputs.eventTimes);
  const produced = producedPerHour(inputs.topic, inputs.events);
  return Object.keys(inputs.records)
    .sort()
    .map((hour): HourVerdict => {
      const records = inputs.records[hour] ?? 0;
      const end = Date.parse(`${hour}:00:00.000Z`) + HOUR_MS;
      const closed = through !== undefined && through >= end + inputs.latenessHorizonMs;
      const counted = produced.get(hour);
      const total = counted?.produced ?? 0;
      const windows = [...(counted?.windows ?? new Map<number, number>())].sort(([a], [b]) => a - b).map(([windowStart, count]) => ({ windowStart, produced: count }));
      const state: HourState = !closed ? 'OPEN' : records > 0 && records === total ? 'COMPLETE' : 'CLOSED-MISMATCH';
      return { topic: inputs.topic, hour, records, produced: total, closed, state, windows };
    });
}

export function markerOf(verdict: HourVerdict, seq: number): HourMarker {
  return {
    format: MARKER_FORMAT,
    topic: verdict.topic,
    hour: verdict.hour,
    records: verdict.records,
    produced: verdict.produced,
    seq,
    windows: verdict.windows.map((window) => ({ windowStart: new Date(window.windowStart).toISOString(), produced: window.produced })),
  };
}

export interface MarkerDecision {
  /** Markers to write (new, or replacing one with other counts). */
  readonly write: readonly HourMarker[];
  /** Hour keys whose marker must go: the hour no longer matches (or the marker is unreadable). */
  readonly remove: readonly string[];
}

/**
 * What to change, given the verdicts and the markers now in the hour folders (null: a file that is
 * not a marker). A marker with the same counts is left alone, whatever seq it names.
 */
export function decideMarkers(verdicts: readonly HourVerdict[], existing: ReadonlyMap<string, HourMarker | null>, seq: number): MarkerDecision {
  const write: HourMarker[] = [];
  const remove: string[] = [];
  for (const verdict of verdicts) {
    const current = existing.get(verdict.hour);
    if (verdict.state === 'COMPLETE') {
      if (current === undefined || current === null || current.records !== verdict.records || current.produced !== verdict.produced) write.push(markerOf(verdict, seq));
    } else if (current !== undefined) {
      remove.push(verdict.hour);
    }
  }
  return { write, remove };
}

export function parseMarker(bytes: Buffer): HourMarker | null {
  try {
    const value = JSON.parse(bytes.toString('utf8')) as Partial<HourMarker>;
    if (value.format !== MARKER_FORMAT || typeof value.records !== 'number' || typeof value.produced !== 'number' || typeof value.hour !== 'string' || typeof value.topic !== 'string') return null;
    return value as HourMarker;
  } catch {
    return null;
  }
}

const hourNumber = (key: string): number => Date.parse(`${key}:00:00.000Z`) / HOUR_MS;

/** The marker of an hour: undefined when there is none, null when the file is not a marker. */
export async function readMarker(warehouse: WarehouseFileSystem, root: string, layout: HourLayout, topic: string, hour: string): Promise<HourMarker | null | undefined> {
  try {
    return parseMarker(await warehouse.open(completeMarkerPath(root, topic, hourNumber(hour), layout)));
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Removes the markers of the hours a commit is about to add records to, before it is claimed: a
 * crash after the data lands then leaves no marker rather than one with the old counts.
 */
export async function withdrawMarkers(warehouse: WarehouseFileSystem, root: string, layout: HourLayout, manifest: Pick<Manifest, 'hours'>, logger?: Logger): Promise<number> {
  let removed = 0;
  for (const [topic, hours] of Object.entries(manifest.hours)) {
    for (const hour of Object.keys(hours)) {
      if (await removeMarkers(warehouse, root, layout, topic, hour)) {
        removed += 1;
        logger?.info({ topic, hour, event: 'marker-withdrawn' }, 'hour marker withdrawn: new records land in the hour');
      }
    }
  }
  return removed;
}

export interface MarkerUpdateInputs {
  readonly warehouse: WarehouseFileSystem;
  readonly root: string;
  readonly layout: HourLayout;
  /** Names the temp files of this writer. */
  readonly attempt: string;
  /** Records per topic and hour over the published commits (status.ts). */
  readonly hours: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly nextOffsets: NextOffsets;
  readonly eventTimes: NextOffsets | undefined;
  readonly latenessHorizonMs: number;
  /** The last published commit. */
  readonly seq: number;
  /** The AuditCount events of `topic` in audit records stamped at or after `window.since` (all of them when absent). */
  readonly readEvents: (topic: string, window: AuditReadWindow) => Promise<readonly AuditCountEvent[]>;
  readonly logger?: Logger;
}

/**
 * How far before the earliest hour judged the audit topic is read (issue #19). A counter stamps
 * each audit record with the time it publishes it, and it publishes a window's count only after
 * it counted a record created in that window, so every count of an hour is stamped after the
 * hour began, however late it was published (a producer tier publishing hours late is still
 * read). Only clocks that disagree break that: a record whose creation time is ahead of its
 * counter's clock. The margin allows them the load's latenessHorizon (the disorder of event
 * times the load already tolerates) plus one audit window, so a horizon of 0 still allows some.
 */
export function auditReadMarginMs(latenessHorizonMs: number): number {
  return latenessHorizonMs + DEFAULT_WINDOW_MS;
}

/** Where reading the audit topic starts for judging `hours` (hour keys): the earliest one's start less the margin. */
export function auditReadSince(hours: readonly string[], latenessHorizonMs: number): number {
  // A loop, not Math.min(...): a first run judges every hour ever loaded, too many for arguments.
  let earliest = Number.POSITIVE_INFINITY;
  for (const hour of hours) earliest = Math.min(earliest, Date.parse(`${hour}:00:00.000Z`));
  return Math.max(0, earliest - auditReadMarginMs(latenessHorizonMs));
}

export interface MarkerUpdateReport {
  readonly verdicts: readonly HourVerdict[];
  readonly written: readonly string[];
  readonly removed: readonly string[];
}

/**
 * Judges every hour of `hours` (the caller chooses which: hours-to-judge.ts) and writes or removes
 * markers to match; the audit topic is read from the earliest of them less auditReadMarginMs.
 */
export async function updateHourMarkers(inputs: MarkerUpdateInputs): Promise<MarkerUpdateReport> {
  const { warehouse, root, layout } = inputs;
  const verdicts: HourVerdict[] = [];
  const written: string[] = [];
  const removed: string[] = [];
  for (const [topic, records] of Object.entries(inputs.hours)) {
    const hours = Object.keys(records);
    // Nothing to judge: nothing to read.
    if (hours.length === 0) continue;
    let events: readonly AuditCountEvent[];
    try {
      events = await inputs.readEvents(topic, { since: auditReadSince(hours, inputs.latenessHorizonMs) });
    } catch (error) {
      throw etlError('ETL_AUDIT_UNAVAILABLE', `the audit topic could not be read for topic ${topic} (${error instanceof Error ? error.message : String(error)}); hour markers were left as they are. The next run tries again`, {
        retriable: true,
        cause: error,
        details: { topic },
      });
    }
    const judged = judgeHours({
      topic,
      records,
      partitions: Object.keys(inputs.nextOffsets[topic] ?? {}),
      eventTimes: inputs.eventTimes?.[topic],
      latenessHorizonMs: inputs.latenessHorizonMs,
      events,
    });
    verdicts.push(...judged);
    const existing = new Map<string, HourMarker | null>();
    for (const verdict of judged) {
      const marker = await readMarker(warehouse, root, layout, topic, verdict.hour);
      if (marker !== undefined) existing.set(verdict.hour, marker);
    }
    const decision = decideMarkers(judged, existing, inputs.seq);
    for (const hour of decision.remove) {
      await removeMarkers(warehouse, root, layout, topic, hour);
      removed.push(`${topic} ${hour}`);
      inputs.logger?.info({ topic, hour, event: 'marker-removed' }, 'hour marker removed: the hour no longer matches the audit');
    }
    for (const marker of decision.write) {
      await writeMarker(warehouse, root, layout, inputs.attempt, marker);
      written.push(`${topic} ${marker.hour}`);
      inputs.logger?.info({ topic, hour: marker.hour, records: marker.records, event: 'marker-written' }, 'hour complete: marker written');
    }
    // Markers left as they were still get their _SUCCESS if a failure (or an older version) left it out.
    const rewritten = new Set(decision.write.map((marker) => marker.hour));
    for (const verdict of judged) {
      if (verdict.state === 'COMPLETE' && !rewritten.has(verdict.hour) && existing.get(verdict.hour) !== null) await writeSuccess(warehouse, root, layout, topic, hourNumber(verdict.hour), inputs.attempt);
    }
  }
  return { verdicts, written, removed };
}

/** `_SUCCESS`, then `_COMPLETE` (so no `_SUCCESS` outlives its `_COMPLETE`); true when a `_COMPLETE` was there. */
async function removeMarkers(warehouse: WarehouseFileSystem, root: string, layout: HourLayout, topic: string, hour: string): Promise<boolean> {
  await warehouse.delete(hourMarkerPath(root, topic, hourNumber(hour), layout, SUCCESS_MARKER));
  return warehouse.delete(completeMarkerPath(root, topic, hourNumber(hour), layout));
}

/**
 * temp ▸ delete the old markers ▸ rename ▸ `_SUCCESS`: a reader sees the old marker, none, or the
 * new one, each whole, and `_SUCCESS` only while a `_COMPLETE` is there.
 */
async function writeMarker(warehouse: WarehouseFileSystem, root: string, layout: HourLayout, attempt: string, marker: HourMarker): Promise<void> {
  const hour = hourNumber(marker.hour);
  const folder = topicHourDir(root, marker.topic, hour, layout);
  // Temps of crashed writers: never renamed into place, so only clutter.
  for (const entry of await warehouse.list(folder)) {
    if ((entry.name.startsWith(`${COMPLETE_MARKER}.`) || entry.name.startsWith(`${SUCCESS_MARKER}.`)) && entry.name.endsWith('.tmp')) await warehouse.delete(entry.path);
  }
  const temp = hourMarkerTempPath(root, marker.topic, hour, layout, COMPLETE_MARKER, attempt);
  await warehouse.create(temp, Buffer.from(`${JSON.stringify(marker, null, 2)}\n`, 'utf8'));
  const target = completeMarkerPath(root, marker.topic, hour, layout);
  await warehouse.delete(hourMarkerPath(root, marker.topic, hour, layout, SUCCESS_MARKER));
  await warehouse.delete(target);
  await warehouse.rename(temp, target);
  await writeSuccess(warehouse, root, layout, marker.topic, hour, attempt);
}

/** An empty `_SUCCESS` beside the hour's `_COMPLETE`, unless one is there: temp ▸ rename, which never overwrites. */
async function writeSuccess(warehouse: WarehouseFileSystem, root: string, layout: HourLayout, topic: string, hour: number, attempt: string): Promise<void> {
  const target = hourMarkerPath(root, topic, hour, layout, SUCCESS_MARKER);
  if ((await warehouse.stat(target)) !== undefined) return;
  const temp = hourMarkerTempPath(root, topic, hour, layout, SUCCESS_MARKER, attempt);
  await warehouse.create(temp, Buffer.alloc(0));
  try {
    await warehouse.rename(temp, target);
  } catch (error) {
    if (!hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) throw error;
    await warehouse.delete(temp); // another writer's _SUCCESS is as good
  }
}
