/**
 * Offset checkpoint files in the data dir (`recovery-point-offset-checkpoint`,
 * `log-start-offset-checkpoint`, `replication-offset-checkpoint`), in Kafka's text format with a
 * checksum line added:
 *
 *   1                         version (Kafka writes 0, without the checksum line)
 *   N                         number of entries
 *   <topic> <partition> <offset>   N lines
 *   crc32c <8 hex digits>     CRC-32C of every byte above it
 *
 * Written atomically (temp file, fsync, rename, fsync the folder). A file that does not parse or
 * whose checksum does not match is reported, not guessed at: the caller falls back to full
 * recovery. The checksum is there because these offsets are trusted at start: one damaged digit
 * of a log start used to delete the segments below it, one of a recovery point to skip checking
 * unflushed data. Version 0 files (earlier Tributary versions) are still read.
 */
import { crc32c } from '@node-rs/crc32';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { TributaryError } from '../common/errors.js';
import { writeFileDurably } from './durable-files.js';

export type OffsetCheckpoint = Map<string, number>;

export function checkpointKey(topic: string, partition: number): string {
  return `${topic} ${partition}`;
}

const VERSION_WITH_CHECKSUM = '1';
const CHECKSUM_LINE = /^crc32c ([0-9a-f]{8})$/;

function checksumLine(text: string): string {
  return `crc32c ${(crc32c(Buffer.from(text, 'utf8')) >>> 0).toString(16).padStart(8, '0')}`;
}

export function readCheckpoint(path: string): OffsetCheckpoint {
  const entries: OffsetCheckpoint = new Map();
  if (!existsSync(path)) return entries;
  const text = readFileSync(path, 'utf8');
  const malformed = (why: string): TributaryError =>
    new TributaryError({
      code: 'CHECKPOINT_CORRUPT',
      message: `checkpoint ${basename(path)} is malformed (${why}); it will be ignored and every log recovered in full`,
      details: { path },
    });
  if (!text.endsWith('\n')) throw malformed('no final newline');
  const lines = text.slice(0, -1).split('\n');
  const [version, count] = lines;
  let rest = lines.slice(2);
  if (version === VERSION_WITH_CHECKSUM) {
    const last = rest.at(-1) ?? '';
    const stated = CHECKSUM_LINE.exec(last)?.[1];
    if (stated === undefined) throw malformed('no checksum line');
    const covered = text.slice(0, text.length - last.length - 1);
    if (checksumLine(covered) !== last) throw malformed(`checksum ${stated} does not match its contents`);
    rest = rest.slice(0, -1);
  } else if (version !== '0') {
    throw malformed(`version ${version ?? 'missing'}`);
  }
  if (count === undefined || !/^\d+$/.test(count) || Number(count) !== rest.length) throw malformed(`declares ${count ?? 'no'} entries, holds ${rest.length}`);
  for (const line of rest) {
    const match = /^(\S+) (\d+) (\d+)$/.exec(line);
    if (match === null) throw malformed(`bad line "${line}"`);
    entries.set(`${match[1]} ${match[2]}`, Number(match[3]));
  }
  return entries;
}

export function writeCheckpoint(path: string, entries: OffsetCheckpoint): void {
  const lines = [VERSION_WITH_CHECKSUM, String(entries.size), ...[...entries].map(([key, offset]) => `${key} ${offset}`)];
  const body = `${lines.join('\n')}\n`;
  writeFileDurably(path, `${body}${checksumLine(body)}\n`, dirname(path));
}
