/**
 * Where the loader puts things in the warehouse (ARCHITECTURE.md, "The loader's layout in HDFS"),
 * as functions, so no other code spells a path. All paths are relative to the warehouse and start
 * with the load's root folder:
 *
 *   <root>/<topic>/<hour folder>/<data file name>     data (final); per the load's `layout`:
 *       hourly (default)  <hour folder> = hourly/YYYY/MM/DD/HH
 *       hive              <hour folder> = dt=YYYY-MM-DD/hr=HH  (Hive/Spark partition folders)
 *       iceberg           <hour folder> = data/_event_time_hour=YYYY-MM-DD-HH  (format: iceberg: the
 *                         table's data folder, named as Iceberg's Java writers name an hour
 *                         partition; readers find files through the table metadata, not the folders)
 *   <root>/<topic>/metadata/…                       format: iceberg: the table's metadata (iceberg/table-layout.ts)
 *     <data file name> = <topic>+<partition>+<start>+<end>.<ext>, with `part-` in front when the
 *     topic starts with `_` or `.` (see dataFileName)
 *   <root>/_etl/<load>/commits/<seq>.pending       the claim of commit <seq>, kept forever
 *   <root>/_etl/<load>/commits/<seq>.json          commit <seq> published (same bytes as the claim)
 *   <root>/_etl/<load>/staging/<seq>-<attempt>/…   one attempt's files before commit
 *   <root>/_etl/<load>/quarantine/<seq>/<topic>+<partition>+<start>+<end>.jsonl
 *   <root>/_etl/<load>/audited/<seq>               commit <seq>'s LOADER audit counts were acknowledged
 *   <root>/_etl/<load>/completeness/<gen>.json     which hours are settled, records per hour (completeness-checkpoint.ts)
 *   <root>/<topic>/<hour folder>/_COMPLETE        the hour is closed and matches the audit (hour-completeness.ts)
 *   <root>/<topic>/<hour folder>/_SUCCESS         empty, beside every _COMPLETE: Hadoop's marker that
 *                                                 Oozie and Airflow sensors wait for
 *
 * <seq> is ten digits so names sort in commit order. <start>+<end> is the run's offset range
 * [start, end) of that partition: end is exclusive (the next offset). A data file holds the
 * records of that range whose event time falls in the folder's hour (UTC).
 *
 * Names starting with `_` or `.` are never data: Hadoop's input formats, Hive and Spark skip them
 * (the hidden-file filter), and so does every reader of hour folders here (isHiddenName).
 */
import { LOAD_NAME_PATTERN } from './load-file.js';
import type { HourLayout } from './load-types.js';

export const SEQ_DIGITS = 10;
/** The hour partition of an Iceberg table (iceberg/table-layout.ts): `hour(_event_time)`, Java's default name. */
export const ICEBERG_HOUR_PARTITION = '_event_time_hour';
export const HOUR_MS = 3_600_000;

export function formatSeq(seq: number): string {
  return String(seq).padStart(SEQ_DIGITS, '0');
}

function under(root: string, ...parts: string[]): string {
  return [root, ...parts].filter((part) => part !== '').join('/');
}

export function loadDir(root: string, load: string): string {
  if (!LOAD_NAME_PATTERN.test(load)) throw new Error(`bad load name ${JSON.stringify(load)}`);
  return under(root, '_etl', load);
}

export function commitsDir(root: string, load: string): string {
  return `${loadDir(root, load)}/commits`;
}

export function claimPath(root: string, load: string, seq: number): string {
  return `${commitsDir(root, load)}/${formatSeq(seq)}.pending`;
}

export function publishedPath(root: string, load: string, seq: number): string {
  return `${commitsDir(root, load)}/${formatSeq(seq)}.json`;
}

/** A commit-log entry name: its seq and whether it is the claim or the publication. */
export function parseCommitName(name: string): { readonly seq: number; readonly kind: 'claim' | 'published' } | undefined {
  const match = /^(\d{10})\.(pending|json)$/.exec(name);
  if (match === null) return undefined;
  return { seq: Number(match[1]), kind: match[2] === 'pending' ? 'claim' : 'published' };
}

export function stagingRoot(root: string, load: string): string {
  return `${loadDir(root, load)}/staging`;
}

export function stagingDir(root: string, load: string, seq: number, attempt: string): string {
  return `${stagingRoot(root, load)}/${formatSeq(seq)}-${attempt}`;
}

export function parseStagingName(name: string): { readonly seq: number; readonly attempt: string } | undefined {
  const match = /^(\d{10})-([0-9a-z]+)$/.exec(name);
  return match === null ? undefined : { seq: Number(match[1]), attempt: match[2] ?? '' };
}

export function quarantineDir(root: string, load: string, seq: number): string {
  return `${loadDir(root, load)}/quarantine/${formatSeq(seq)}`;
}

export function auditedDir(root: string, load: string): string {
  return `${loadDir(root, load)}/audited`;
}

/** Written (create-if-absent) once the LOADER-tier counts of commit `seq` were acknowledged (audit-tier.ts). */
export function auditedPath(root: string, load: string, seq: number): string {
  return `${auditedDir(root, load)}/${formatSeq(seq)}`;
}

export function completenessDir(root: string, load: string): string {
  return `${loadDir(root, load)}/completeness`;
}

/** Generation <gen> of the completeness checkpoint (completeness-checkpoint.ts): renamed into place, never overwritten. */
export function completenessCheckpointPath(root: string, load: string, generation: number): string {
  return `${completenessDir(root, load)}/${formatSeq(generation)}.json`;
}

/** Where generation <gen> is written before it is renamed into place (a fresh name per attempt). */
export function completenessTempPath(root: string, load: string, generation: number, attempt: string): string {
  return `${completenessDir(root, load)}/${formatSeq(generation)}.${attempt}.tmp`;
}

/** The generation of a checkpoint's name, or undefined for any other entry (temps). */
export function parseCompletenessName(name: string): number | undefined {
  const match = /^(\d{10})\.json$/.exec(name);
  return match === null ? undefined : Number(match[1]);
}

export const COMPLETE_MARKER = '_COMPLETE';
/** Hadoop's empty job-success marker, written beside every _COMPLETE for workflow sensors. */
export const SUCCESS_MARKER = '_SUCCESS';
export type HourMarkerName = typeof COMPLETE_MARKER | typeof SUCCESS_MARKER;

/** The hour's completeness marker; its name starts with `_` so readers of data files skip it. */
export function completeMarkerPath(root: string, topic: string, hour: number, layout: HourLayout): string {
  return hourMarkerPath(root, topic, hour, layout, COMPLETE_MARKER);
}

/** `_COMPLETE` or `_SUCCESS` of an hour folder. */
export function hourMarkerPath(root: string, topic: string, hour: number, layout: HourLayout, marker: HourMarkerName): string {
  return `${topicHourDir(root, topic, hour, layout)}/${marker}`;
}

/** Where a marker is written before it is renamed into place (never the same name twice: see warehouse.ts). */
export function hourMarkerTempPath(root: string, topic: string, hour: number, layout: HourLayout, marker: HourMarkerName, attempt: string): string {
  return `${topicHourDir(root, topic, hour, layout)}/${marker}.${attempt}.tmp`;
}

/** Hadoop's hidden-file rule: a name starting with `_` or `.` is never data (markers, temps, engines' own files). */
export function isHiddenName(name: string): boolean {
  return name.startsWith('_') || name.startsWith('.');
}

/** `<topic>+<partition>+<start>+<end>`: the range a file (or a quarantine file) comes from. */
export function rangeName(topic: string, partition: number, start: number, end: number): string {
  return `${topic}+${partition}+${start}+${end}`;
}

/** Hours since the epoch of an event time in ms (UTC; negative times are refused earlier). */
export function hourOf(eventTimeMs: number): number {
  return Math.floor(eventTimeMs / HOUR_MS);
}

/** `2026-11-29T15`: the hour's key in manifests and reports. */
export function hourKey(hour: number): string {
  return new Date(hour * HOUR_MS).toISOString().slice(0, 13);
}

/** `2026/11/29/15` (also the shape of the loader's own folders under _etl, whatever the layout). */
export function hourFolder(hour: number): string {
  const iso = new Date(hour * HOUR_MS).toISOString();
  return `${iso.slice(0, 4)}/${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(11, 13)}`;
}

/**
 * How a load names its hour folders under each topic folder (the load file's `layout`). Fixed
 * for the life of a load: its first commit records it (manifest.ts) and runs refuse another.
 */
export type { HourLayout } from './load-types.js';

/** The partition values of an hour as Hive sees its folder: hive `dt`, `hr`; hourly `year`, `month`, `day`, `hour`. */
export function hourPartitionValues(hour: number, layout: HourLayout): readonly (readonly [string, string])[] {
  const iso = new Date(hour * HOUR_MS).toISOString();
  if (layout === 'iceberg') return [[ICEBERG_HOUR_PARTITION, `${iso.slice(0, 10)}-${iso.slice(11, 13)}`]];
  if (layout === 'hive') {
    return [
      ['dt', iso.slice(0, 10)],
      ['hr', iso.slice(11, 13)],
    ];
  }
  return [
    ['year', iso.slice(0, 4)],
    ['month', iso.slice(5, 7)],
    ['day', iso.slice(8, 10)],
    ['hour', iso.slice(11, 13)],
  ];
}

/** The hour folder relative to the topic folder: `hourly/2026/11/29/15` or `dt=2026-11-29/hr=15`. */
export function topicHourFolder(hour: number, layout: HourLayout): string {
  if (layout === 'iceberg') return `data/${hourPartitionValues(hour, layout).map(([column, value]) => `${column}=${value}`).join('/')}`;
  return layout === 'hive' ? hourPartitionValues(hour, layout).map(([column, value]) => `${column}=${value}`).join('/') : `hourly/${hourFolder(hour)}`;
}

/** The hour of a folder path relative to the topic folder (what topicHourFolder gives), or undefined. */
export function parseTopicHourFolder(folder: string, layout: HourLayout): number | undefined {
  const pattern = layout === 'hive' ? /^dt=(\d{4})-(\d{2})-(\d{2})\/hr=(\d{2})$/ : layout === 'iceberg' ? /^data\/_event_time_hour=(\d{4})-(\d{2})-(\d{2})-(\d{2})$/ : /^hourly\/(\d{4})\/(\d{2})\/(\d{2})\/(\d{2})$/;
  const match = pattern.exec(folder);
  if (match === null) return undefined;
  const ms = Date.parse(`${match[1]}-${match[2]}-${match[3]}T${match[4]}:00:00.000Z`);
  return Number.isNaN(ms) ? undefined : ms / HOUR_MS;
}

export function topicDir(root: string, topic: string): string {
  return under(root, topic);
}

export function topicHourDir(root: string, topic: string, hour: number, layout: HourLayout): string {
  return under(root, topic, topicHourFolder(hour, layout));
}

/**
 * The name of a data file: `<topic>+<partition>+<start>+<end>.<ext>`. Kafka allows topic names
 * starting with `_` or `.` (`_audit`), which would make the name hidden to Hive and Spark: those
 * topics' files get `part-` in front. Only theirs: the names of every other topic stay as they
 * were, so replays of hours loaded before (which match old and new files by name) still line up.
 */
export function dataFileName(topic: string, partition: number, start: number, end: number, extension: string): string {
  return `${isHiddenName(topic) ? 'part-' : ''}${rangeName(topic, partition, start, end)}.${extension}`;
}

export function dataFilePath(root: string, topic: string, hour: number, partition: number, start: number, end: number, extension: string, layout: HourLayout): string {
  return `${topicHourDir(root, topic, hour, layout)}/${dataFileName(topic, partition, start, end, extension)}`;
}

/** Part `part` (≥ 1) of a data file that rolled at maxFileBytes: `<name>.<part>.<ext>` beside the first. */
export function partFilePath(path: string, part: number): string {
  const dot = path.lastIndexOf('.');
  return `${path.slice(0, dot)}.${part}${path.slice(dot)}`;
}
