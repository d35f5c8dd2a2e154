/**
 * Offset checkpoint files in the data dir (`recovery-point-offset-checkpoint`,
 * `log-start-offset-checkpoint`), in Kafka's text format:
 *
 *   0                         version
 *   N                         number of entries
 *   <topic> <partition> <offset>   N lines
 *
 * Written atomically (temp file, fsync, rename, fsync the folder). A file that does not parse is
 * reported, not guessed at: the caller falls back to full recovery.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { TributaryError } from '../common/errors.js';
import { writeFileDurably } from './durable-files.js';

export type OffsetCheckpoint = Map<string, number>;

export function checkpointKey(topic: string, partition: number): string {
  return `${topic} ${partition}`;
}

export function readCheckpoint(path: string): OffsetCheckpoint {
  const entries: OffsetCheckpoint = new Map();
  if (!existsSync(path)) return entries;
  const lines = readFileSync(path, 'utf8').split('\n').filter((line) => line.length > 0);
  const [version, count, ...rest] = lines;
  const malformed = (why: string): TributaryError =>
    new TributaryError({
      code: 'CHECKPOINT_CORRUPT',
      message: `checkpoint ${basename(path)} is malformed (${why}); it will be ignored and every log recovered in full`,
      details: { path },
    });
  if (version !== '0') throw malformed(`version ${version ?? 'missing'}`);
  if (Number(count) !== rest.length) throw malformed(`declares ${count} entries, holds ${rest.length}`);
  for (const line of rest) {
    const match = /^(\S+) (\d+) (\d+)$/.exec(line);
    if (match === null) throw malformed(`bad line "${line}"`);
    entries.set(`${match[1]} ${match[2]}`, Number(match[3]));
  }
  return entries;
}

export function writeCheckpoint(path: string, entries: OffsetCheckpoint): void {
  const lines = ['0', String(entries.size), ...[...entries].map(([key, offset]) => `${key} ${offset}`)];
  writeFileDurably(path, `${lines.join('\n')}\n`, dirname(path));
}
