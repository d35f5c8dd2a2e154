/**
 * What every chaos suite prints and writes alike: figures formatted the same way, the facts of a
 * run (commit, cores, load), and a results block between markers in docs/reliability.md that a
 * run replaces without touching the prose around it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RELIABILITY_DOC = join(root, 'docs', 'reliability.md');

export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export const seconds = (ms: number | undefined): string => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);

export const megabytes = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(0)} MiB`;

export function escapeCell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

export function positiveInteger(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not "${text}"`);
  return value;
}

/** The `--scenario` names given (each checked against `known`), or every known scenario when none was. */
export function chosenScenarios<Scenario extends string>(given: readonly string[] | undefined, known: readonly Scenario[]): Scenario[] {
  return (given ?? [...known]).map((name) => {
    if (!(known as readonly string[]).includes(name)) throw new Error(`unknown scenario "${name}"; scenarios: ${known.join(', ')}`);
    return name as Scenario;
  });
}

export function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** "on 2 cores with load average … at the start and … at the end (1, 5, 15 min)". */
export function machineFacts(loadAtStart: readonly number[], loadAtEnd: readonly number[]): string {
  const load = (values: readonly number[]): string => values.map((value) => value.toFixed(2)).join(' ');
  return `on ${availableParallelism()} cores with load average ${load(loadAtStart)} at the start and ${load(loadAtEnd)} at the end (1, 5, 15 min)`;
}

/** The text between `start` and `end` in `file` (without them), undefined when the file or either marker is missing. */
export function readMarkedBlock(file: string, markers: { readonly start: string; readonly end: string }): string | undefined {
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(markers.start);
  const end = text.indexOf(markers.end);
  return start >= 0 && end > start ? text.slice(start + markers.start.length, end).trim() : undefined;
}

/** Replaces the text between `start` and `end` in `file` (or appends a `heading` section holding them). */
export function updateMarkedBlock(file: string, markers: { readonly start: string; readonly end: string; readonly heading: string }, table: string): void {
  const block = `${markers.start}\n${table}\n${markers.end}`;
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Reliability\n';
  const start = text.indexOf(markers.start);
  const end = text.indexOf(markers.end);
  const next = start >= 0 && end > start ? `${text.slice(0, start)}${block}${text.slice(end + markers.end.length)}` : `${text.trimEnd()}\n\n## ${markers.heading}\n\n${block}\n`;
  writeFileSync(file, next);
}
