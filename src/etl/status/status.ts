/**
 * What a load has committed, read from the warehouse alone (`tributary etl status`): each commit,
 * where every partition stands, records per event hour, what was quarantined and which gaps were
 * accepted. Reads every manifest, so it costs one read per commit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { readClaim, readCommitLog } from '../load/commit-log.js';
import type { Manifest, NextOffsets, OffsetGap } from '../load/manifest.js';
import type { AuditCountEvent } from '../../audit/audit-count.js';
import { unauditedCommits } from '../completeness/audit-tier.js';
import { judgeHours, loadedThrough, readMarker, type HourMarker, type HourState, type HourVerdict } from '../completeness/hour-completeness.js';
import { HOUR_MS } from '../layout.js';
import type { LoadDefinition } from '../load-file.js';

export interface CommitSummary {
  readonly seq: number;
  /** `pending`: claimed, to be rolled forward by the next run. */
  readonly state: 'published' | 'pending';
  readonly plannedAt: string;
  readonly partitions: number;
  readonly records: number;
  readonly quarantined: number;
  readonly files: number;
}

export interface LoadStatus {
  readonly load: string;
  readonly commits: readonly CommitSummary[];
  /** After the last claimed commit. */
  readonly nextOffsets: NextOffsets;
  /** manifest.eventTimes of the last claimed commit (undefined if it predates them). */
  readonly eventTimes: NextOffsets | undefined;
  /** The highest published seq (0 when none). */
  readonly lastPublished: number;
  /** Records per topic and event hour, over all published commits. */
  readonly hours: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly quarantined: { readonly records: number; readonly reasons: Readonly<Record<string, number>> };
  readonly gaps: readonly (OffsetGap & { readonly topic: string; readonly partition: number; readonly seq: number })[];
}

export async function readLoadStatus(warehouse: WarehouseFileSystem, root: string, load: string): Promise<LoadStatus> {
  const log = await readCommitLog(warehouse, root, load);
  const manifests: Manifest[] = [];
  for (const seq of log.claimed) manifests.push((await readClaim(warehouse, root, load, seq)).manifest);
  const hours: Record<string, Record<string, number>> = {};
  const reasons: Record<string, number> = {};
  let quarantined = 0;
  const gaps: (OffsetGap & { topic: string; partition: number; seq: number })[] = [];
  for (const manifest of manifests) {
    if (!log.published.has(manifest.seq)) continue;
    for (const [topic, counts] of Object.entries(manifest.hours)) {
      const topicHours = (hours[topic] ??= {});
      for (const [hour, count] of Object.entries(counts)) topicHours[hour] = (topicHours[hour] ?? 0) + count;
    }
    quarantined += manifest.quarantine.records;
    for (const [code, count] of Object.entries(manifest.quarantine.reasons)) reasons[code] = (reasons[code] ?? 0) + count;
    for (const range of manifest.ranges) if (range.gap !== undefined) gaps.push({ ...range.gap, topic: range.topic, partition: range.partition, seq: manifest.seq });
  }
  for (const topicHours of Object.values(hours)) {
    const sorted = Object.entries(topicHours).sort(([a], [b]) => (a < b ? -1 : 1));
    for (const key of Object.keys(topicHours)) delete topicHours[key];
    for (const [hour, count] of sorted) topicHours[hour] = count;
  }
  return {
    load,
    commits: manifests.map((manifest) => ({
      seq: manifest.seq,
      state: log.published.has(manifest.seq) ? 'published' : 'pending',
      plannedAt: manifest.plannedAt,
      partitions: manifest.ranges.length,
      records: manifest.ranges.reduce((sum, range) => sum + range.records, 0),
      quarantined: manifest.quarantine.records,
      files: manifest.files.length,
    })),
    nextOffsets: manifests.at(-1)?.nextOffsets ?? {},
    eventTimes: manifests.at(-1)?.eventTimes,
    lastPublished: log.lastPublished,
    hours,
    quarantined: { records: quarantined, reasons },
    gaps,
  };
}

/** One hour's line of `etl status` for a load with an audit section. */
export interface HourCompletenessLine {
  readonly state: HourState | 'CLOSED' | 'COMPLETE-STALE';
  /** The marker in the hour folder, if any. */
  readonly marker: HourMarker | undefined;
  /** From the audit topic; undefined when it was not read. */
  readonly produced: number | undefined;
}

export interface StatusCompleteness {
  /** `<topic> <hour>` → line */
  readonly hours: ReadonlyMap<string, HourCompletenessLine>;
  /** Published commits whose LOADER counts were not acknowledged yet. */
  readonly unaudited: readonly number[];
  /** Why the audit topic was not read (hours then show their markers only). */
  readonly auditProblem?: string;
}

/**
 * Completeness of every hour with records: its marker, and (when the audit topic can be read) the
 * verdict hour-completeness.ts would reach now. A marker whose record count is not the hour's is
 * shown as COMPLETE-STALE: runs withdraw markers before landing records, so only a change made by
 * hand (or a replay that changed the hour's count) leaves one.
 */
export async function readCompleteness(
  warehouse: WarehouseFileSystem,
  root: string,
  load: LoadDefinition,
  status: LoadStatus,
  readEvents: ((topic: string) => Promise<readonly AuditCountEvent[]>) | undefined,
): Promise<StatusCompleteness> {
  const unaudited = await unauditedCommits(warehouse, root, load.name);
  const hours = new Map<string, HourCompletenessLine>();
  let auditProblem: string | undefined;
  for (const [topic, records] of Object.entries(status.hours)) {
    let verdicts: Map<string, HourVerdict> | undefined;
    if (readEvents !== undefined && auditProblem === undefined) {
      try {
        const events = await readEvents(topic);
        const judged = judgeHours({ topic, records, partitions: Object.keys(status.nextOffsets[topic] ?? {}), eventTimes: status.eventTimes?.[topic], latenessHorizonMs: load.latenessHorizonMs, events });
        verdicts = new Map(judged.map((verdict) => [verdict.hour, verdict]));
      } catch (error) {
        auditProblem = error instanceof Error ? error.message : String(error);
      }
    }
    const through = loadedThrough(Object.keys(status.nextOffsets[topic] ?? {}), status.eventTimes?.[topic]);
    for (const [hour, count] of Object.entries(records)) {
      const marker = (await readMarker(warehouse, root, load.layout, topic, hour)) ?? undefined;
      const verdict = verdicts?.get(hour);
      const closed = through !== undefined && through >= Date.parse(`${hour}:00:00.000Z`) + HOUR_MS + load.latenessHorizonMs;
      let state: HourCompletenessLine['state'];
      if (marker !== undefined) state = marker.records === count ? 'COMPLETE' : 'COMPLETE-STALE';
      else if (verdict !== undefined) state = verdict.state;
      else state = closed ? 'CLOSED' : 'OPEN';
      hours.set(`${topic} ${hour}`, { state, marker, produced: verdict?.produced });
    }
  }
  return { hours, unaudited, ...(auditProblem === undefined ? {} : { auditProblem }) };
}

function describeHour(line: HourCompletenessLine, records: number): string {
  switch (line.state) {
    case 'COMPLETE':
      return `COMPLETE (marker: ${line.marker?.records} records = ${line.marker?.produced} produced, commit ${line.marker?.seq})`;
    case 'COMPLETE-STALE':
      return `COMPLETE-STALE (the marker says ${line.marker?.records} records, the commits ${records}; the next run judges the hour again)`;
    case 'CLOSED-MISMATCH':
      return `CLOSED-MISMATCH (loaded ${records}, produced ${line.produced ?? '?'})`;
    case 'CLOSED':
      return 'CLOSED (produced count unknown: the audit topic was not read)';
    case 'OPEN':
      return line.produced === undefined ? 'OPEN' : `OPEN (produced so far ${line.produced})`;
  }
}

export function formatStatus(status: LoadStatus, completeness?: StatusCompleteness): string {
  const lines: string[] = [`load ${status.load}: ${status.commits.length} commits`];
  if (status.commits.length > 0) {
    lines.push('', 'commit      state      planned at                 partitions  records  quarantined  files');
    for (const commit of status.commits) {
      lines.push(
        `${String(commit.seq).padEnd(12)}${commit.state.padEnd(11)}${commit.plannedAt.padEnd(27)}${String(commit.partitions).padEnd(12)}${String(commit.records).padEnd(9)}${String(commit.quarantined).padEnd(13)}${commit.files}`,
      );
    }
  }
  lines.push('', 'next offsets');
  for (const [topic, partitions] of Object.entries(status.nextOffsets)) {
    lines.push(`  ${topic}: ${Object.entries(partitions).map(([partition, offset]) => `${partition}=${offset}`).join(' ')}`);
  }
  lines.push('', 'records per event hour (UTC)');
  for (const [topic, counts] of Object.entries(status.hours)) {
    for (const [hour, count] of Object.entries(counts)) {
      const line = completeness?.hours.get(`${topic} ${hour}`);
      lines.push(`  ${topic} ${hour}  ${count}${line === undefined ? '' : `  ${describeHour(line, count)}`}`);
    }
  }
  if (completeness !== undefined) {
    if (completeness.auditProblem !== undefined) lines.push(`  (audit topic not read: ${completeness.auditProblem})`);
    lines.push(
      '',
      completeness.unaudited.length === 0
        ? 'LOADER audit counts: every published commit audited'
        : `commits not yet audited (LOADER counts unpublished; the next run publishes them): ${completeness.unaudited.join(', ')}`,
    );
  }
  lines.push('', `quarantined: ${status.quarantined.records}${Object.keys(status.quarantined.reasons).length === 0 ? '' : ` (${Object.entries(status.quarantined.reasons).map(([code, count]) => `${count} ${code}`).join(', ')})`}`);
  if (status.gaps.length > 0) {
    lines.push('accepted gaps (records lost to retention):');
    for (const gap of status.gaps) lines.push(`  ${gap.topic}-${gap.partition} [${gap.from}, ${gap.to}) in commit ${gap.seq}`);
  }
  return `${lines.join('\n')}\n`;
}

export interface WatchOptions {
  readonly intervalMs: number;
  /** Aborted by Ctrl-C: the watch ends after the current frame. */
  readonly signal: AbortSignal;
  /** Redraw in place (a terminal) rather than append frames (a pipe or a log). */
  readonly clearScreen: boolean;
  readonly now?: () => Date;
}

/**
 * `tributary etl status --watch`: writes `render()` now and again every interval until the signal
 * aborts. A read that fails (HDFS briefly away) is shown and tried again next time. Returns the
 * number of frames written.
 */
export async function watchStatus(render: () => Promise<string>, write: (text: string) => void, options: WatchOptions): Promise<number> {
  let frames = 0;
  while (!options.signal.aborted) {
    let text: string;
    try {
      text = await render();
    } catch (error) {
      text = `status unavailable: ${(error as Error).message}\n`;
    }
    if (options.signal.aborted) break;
    const heading = `status at ${(options.now ?? (() => new Date()))().toISOString()}, every ${options.intervalMs / 1000}s; Ctrl-C stops`;
    write(`${options.clearScreen ? '\x1b[2J\x1b[H' : frames > 0 ? '\n' : ''}${heading}\n${text}`);
    frames += 1;
    await sleep(options.intervalMs, undefined, { signal: options.signal }).catch(() => undefined);
  }
  return frames;
}
