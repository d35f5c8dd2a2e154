/**
 * Replays and rollbacks as text: what `tributary etl replay|rollback` prints per hour (versions,
 * records and files old → new, what changed; the hours left alone and why), and the section
 * `tributary etl status` adds about replayed hours.
 */
import { HOUR_MS } from '../layout.js';
import type { LoadHistory } from './history.js';
import { liveFiles } from './history.js';
import { recordsOf, type HourSwap, type VersionFile } from './manifest.js';
import type { SwapReport, UnchangedHour } from './session.js';

export function formatSwapReport(report: SwapReport, loadFile: string): string {
  const lines: string[] = [];
  if (report.recovered.commits.length > 0) lines.push(`finished commit${report.recovered.commits.length > 1 ? 's' : ''} ${report.recovered.commits.join(', ')} left claimed by an earlier run`);
  const own = report.outcome === 'rolled-forward' ? report.manifest.seq : undefined;
  const others = report.recovered.swaps.filter((seq) => seq !== own);
  if (others.length > 0) lines.push(`finished replay${others.length > 1 ? 's' : ''} ${others.join(', ')} left claimed by an earlier attempt`);
  const { request } = report;
  const single = request.kind === 'rollback' && new Date(request.from).getTime() + HOUR_MS === new Date(request.to).getTime();
  const window = `${single ? `hour ${request.from}` : `hours [${request.from}, ${request.to})`}${request.topic === null ? '' : ` of topic ${request.topic}`}`;
  if (report.outcome === 'unchanged') {
    lines.push(`${request.kind} of load ${report.load}, ${window}: ${request.kind === 'replay' ? 'every hour is identical to its live version' : 'no hour needs rolling back'}; nothing published`);
    lines.push(...report.unchanged.map((hour) => describeUnchanged(hour, report, loadFile)));
    return `${lines.join('\n')}\n`;
  }
  const { manifest } = report;
  const finished = report.outcome === 'rolled-forward' ? ' (claimed by an earlier attempt that stopped; finished now)' : '';
  lines.push(`${manifest.kind} ${manifest.seq} of load ${manifest.load}, ${window}${finished}${manifest.reason === null ? '' : `: ${manifest.reason}`}`);
  if (manifest.kind === 'replay') {
    const partitions = new Set(manifest.ranges.map((range) => `${range.topic}-${range.partition}`));
    const readers = Object.entries(manifest.readerSchemas).map(([topic, ref]) => `${topic}: ${ref.subject} version ${ref.version}, id ${ref.id}`);
    lines.push(`read ${manifest.ranges.length} offset range${manifest.ranges.length === 1 ? '' : 's'} of ${partitions.size} partition${partitions.size === 1 ? '' : 's'} again (reader schema ${readers.join('; ')})`);
  }
  const header = ['topic', 'hour', 'version', 'records', 'files', 'what changed'];
  const rows = manifest.hours.map((hour) => [
    hour.topic,
    hour.hour,
    `${hour.fromVersion} → ${hour.toVersion}`,
    `${recordsOf(hour.old)} → ${recordsOf(hour.new)}`,
    `${hour.old.length} → ${hour.new.length}`,
    describeChange(hour),
  ]);
  lines.push(...table(header, rows));
  const kept = manifest.hours.map((hour) => `${hour.topic} ${hour.hour} version ${hour.fromVersion}: ${hour.keep}`);
  lines.push(`kept: ${kept.join('; ')}`);
  lines.push(...report.unchanged.map((hour) => describeUnchanged(hour, report, loadFile)));
  if (manifest.kind === 'replay') {
    const first = manifest.hours[0];
    if (first !== undefined) lines.push(`undo an hour with: tributary etl rollback --load ${loadFile} --hour ${first.hour}${manifest.request.topic === null ? '' : ` --topic ${first.topic}`}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Why an hour was left as it is, and for a rollback done already how to go further on purpose. */
function describeUnchanged(hour: UnchangedHour, report: SwapReport, loadFile: string): string {
  const where = `${hour.topic} ${hour.hour}`;
  switch (hour.why) {
    case 'identical':
      return `hour ${where}: output identical to the live version ${hour.version}; nothing published`;
    case 'at-version':
      return `hour ${where}: version ${hour.version} is live already; nothing changed`;
    case 'rolled-back': {
      const done = `hour ${where}: already rolled back by rollback ${hour.by.seq} (version ${hour.by.fromVersion} → ${hour.by.toVersion}); version ${hour.version} is live; nothing changed`;
      if (hour.further === undefined) return `${done}; it has no earlier version`;
      const topic = report.request.topic === null ? '' : ` --topic ${hour.topic}`;
      return `${done}. To go back further on purpose: tributary etl rollback --load ${loadFile} --hour ${hour.hour}${topic} --to-version ${hour.further}`;
    }
  }
}

/** One hour's change in words: files, records, schemas. */
export function describeChange(hour: HourSwap): string {
  const before = new Map(hour.old.map((file) => [file.name, file]));
  const after = new Map(hour.new.map((file) => [file.name, file]));
  const rewritten = hour.new.filter((file) => before.has(file.name) && before.get(file.name)?.sha256 !== file.sha256).length;
  const same = hour.new.filter((file) => before.get(file.name)?.sha256 === file.sha256).length;
  const added = hour.new.filter((file) => !before.has(file.name)).length;
  const removed = hour.old.filter((file) => !after.has(file.name)).length;
  const parts: string[] = [];
  if (rewritten === 0 && added === 0 && removed === 0) parts.push('identical bytes');
  else parts.push([rewritten > 0 ? `${rewritten} rewritten` : '', same > 0 ? `${same} identical` : '', added > 0 ? `${added} added` : '', removed > 0 ? `${removed} removed` : ''].filter((part) => part !== '').join(', ') + ' files');
  if (hour.recordsChanged !== null && (rewritten > 0 || added > 0 || removed > 0)) parts.push(`${hour.recordsChanged} records changed`);
  if (hour.outputSchemaChanged === true) parts.push('output schema changed');
  const readers = (files: readonly VersionFile[]): string => [...new Set(files.map((file) => file.readerId ?? '?'))].sort().join(',') || '-';
  const oldIds = readers(hour.old);
  const newIds = readers(hour.new);
  parts.push(oldIds === newIds ? `reader schema id ${newIds}` : `reader schema id ${oldIds} → ${newIds}`);
  if (hour.carried.length > 0) parts.push(`${hour.carried.length} carried over (${hour.carried.join(', ')})`);
  return parts.join('; ');
}

/** The `etl status` section on replays: each swap, and the hours whose live version is not what runs loaded. */
export function formatReplayHistory(history: LoadHistory): string {
  if (history.swaps.length === 0) return '';
  const lines = ['', 'replays and rollbacks'];
  for (const swap of history.swaps) {
    const hours = swap.hours.map((hour) => `${hour.topic} ${hour.hour} ${hour.fromVersion}→${hour.toVersion}`).join(', ');
    lines.push(`  ${swap.seq} ${swap.kind} at ${swap.createdAt}${swap.reason === null ? '' : ` (${swap.reason})`}: ${hours}`);
  }
  const versioned = [...history.hours.values()].filter((state) => state.maxVersion > 1).sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.hour < b.hour ? -1 : 1));
  if (versioned.length > 0) {
    lines.push('', 'replayed hours (records live now)');
    for (const state of versioned) {
      const kept = [...state.kept.keys()].sort((a, b) => a - b);
      lines.push(`  ${state.topic} ${state.hour}  version ${state.live} live, ${recordsOf(liveFiles(state))} records; kept: ${kept.length === 0 ? 'none' : kept.map(String).join(', ')}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const format = (row: readonly string[]): string => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd();
  return [format(header), ...rows.map(format)];
}

