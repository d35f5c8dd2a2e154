/**
 * Where the loader puts things in the warehouse (ARCHITECTURE.md, "The loader's layout in HDFS"),
 * as functions, so no other code spells a path. All paths are relative to the warehouse and start
 * with the load's root folder:
 *
 *   <root>/<topic>/hourly/YYYY/MM/DD/HH/<topic>+<partition>+<start>+<end>.<ext>   data (final)
 *   <root>/_etl/<load>/commits/<seq>.pending       the claim of commit <seq>, kept forever
 *   <root>/_etl/<load>/commits/<seq>.json          commit <seq> published (same bytes as the claim)
 *   <root>/_etl/<load>/staging/<seq>-<attempt>/…   one attempt's files before commit
 *   <root>/_etl/<load>/quarantine/<seq>/<topic>+<partition>+<start>+<end>.jsonl
 *   <root>/_etl/<load>/audited/<seq>               commit <seq>'s LOADER audit counts were acknowledged
 *   <root>/_etl/<load>/completeness/<gen>.json     which hours are settled, records per hour (completeness-checkpoint.ts)
 *   <root>/<topic>/hourly/YYYY/MM/DD/HH/_COMPLETE  the hour is closed and matches the audit (hour-completeness.ts)
 *
 * <seq> is ten digits so names sort in commit order. <start>+<end> is the run's offset range
 * [start, end) of that partition: end is exclusive (the next offset). A data file holds the
 * records of that range whose event time falls in the folder's hour (UTC).
 */
import { LOAD_NAME_PATTERN } from './load-file.js';

export const SEQ_DIGITS = 10;
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

/** The hour's completeness marker; its name starts with `_` so readers of data files skip it. */
export function completeMarkerPath(root: string, topic: string, hour: number): string {
  return `${topicHourDir(root, topic, hour)}/${COMPLETE_MARKER}`;
}

/** Where a marker is written before it is renamed into place (never the same name twice: see warehouse.ts). */
export function completeMarkerTempPath(root: string, topic: string, hour: number, attempt: string): string {
  return `${topicHourDir(root, topic, hour)}/_COMPLETE.${attempt}.tmp`;
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

/** `2026/11/29/15` */
export function hourFolder(hour: number): string {
  const iso = new Date(hour * HOUR_MS).toISOString();
  return `${iso.slice(0, 4)}/${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(11, 13)}`;
}

export function topicHourDir(root: string, topic: string, hour: number): string {
  return under(root, topic, 'hourly', hourFolder(hour));
}

export function dataFilePath(root: string, topic: string, hour: number, partition: number, start: number, end: number, extension: string): string {
  return `${topicHourDir(root, topic, hour)}/${rangeName(topic, partition, start, end)}.${extension}`;
}

/** Part `part` (≥ 1) of a data file that rolled at maxFileBytes: `<name>.<part>.<ext>` beside the first. */
export function partFilePath(path: string, part: number): string {
  const dot = path.lastIndexOf('.');
  return `${path.slice(0, dot)}.${part}${path.slice(dot)}`;
}
