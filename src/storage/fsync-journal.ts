/**
 * Test-only power-loss hook. When the process runs with `TRIBUTARY_FSYNC_JOURNAL=<file>`, every
 * fsync of a file or a folder made through this module's callers (durable-files.ts and the
 * coordination memory store) appends one JSON line to that file once the fsync has completed;
 * after a SIGKILL, test/support/power-loss.ts reads the journal and cuts the data dir back to
 * what it says was durable, as a power loss would leave it. Unset — always, outside tests — every
 * function here returns at once and nothing else changes.
 *
 * Lines (a file or folder is named by its identity, "dev:ino:birthtimeNs", so a temporary file
 * fsynced and then renamed into place is still known, and a reused inode number is not mistaken
 * for the file that had it before):
 *
 *   {"kind":"file","id":"<identity>","length":N,"path":"<path>"}
 *       bytes [0, N) of that file are durable.
 *   {"kind":"dir","id":"<identity>","entries":{"<name>":"<identity>",…},"path":"<path>"}
 *       those entries of that folder (name → what it names) are durable.
 *
 * The length and the entries are taken just before the fsync starts and written only after it
 * succeeds: bytes written or entries made while an fsync runs are not claimed by it. `path` is
 * where the file was at that moment (from /proc/self/fd), for people reading the journal.
 *
 * The journal is appended synchronously (appendFileSync): it costs a stat per fsync (a readdir
 * and a stat per entry for a folder), which only tests pay.
 */
import { appendFileSync, fstatSync, lstatSync, readdirSync, readlinkSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';

/** The environment variable naming the journal file. */
export const FSYNC_JOURNAL_VARIABLE = 'TRIBUTARY_FSYNC_JOURNAL';

export interface FileSyncRecord {
  readonly kind: 'file';
  readonly id: string;
  readonly length: number;
  readonly path: string;
}

export interface DirectorySyncRecord {
  readonly kind: 'dir';
  readonly id: string;
  readonly entries: Readonly<Record<string, string>>;
  readonly path: string;
}

export type FsyncRecord = FileSyncRecord | DirectorySyncRecord;

/** What an fsync about to start will make durable; written to the journal by `fsyncCompleted`. */
export interface FsyncMark {
  readonly record: FsyncRecord;
}

let journal: string | undefined = process.env[FSYNC_JOURNAL_VARIABLE] || undefined;

/** The journal file in use, undefined when the hook is off. */
export function fsyncJournalFile(): string | undefined {
  return journal;
}

/** Turns the hook on (a file) or off (undefined) in this process: unit tests only. */
export function setFsyncJournalFile(file: string | undefined): void {
  journal = file;
}

/** The identity of a file or folder in journal lines: "dev:ino:birthtimeNs". */
export function fileIdentity(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.birthtimeNs}`;
}

/** Before fsyncing the open file `fd`: its identity and length now. Undefined when the hook is off. */
export function beforeFileSync(fd: number): FsyncMark | undefined {
  if (journal === undefined) return undefined;
  const stats = fstatSync(fd, { bigint: true });
  return { record: { kind: 'file', id: fileIdentity(stats), length: Number(stats.size), path: pathOf(fd) } };
}

/** Before fsyncing the folder `path`: its identity and its entries now. Undefined when the hook is off. */
export function beforeDirectorySync(path: string): FsyncMark | undefined {
  if (journal === undefined) return undefined;
  const id = fileIdentity(lstatSync(path, { bigint: true }));
  const entries: Record<string, string> = {};
  for (const name of readdirSync(path)) {
    try {
      entries[name] = fileIdentity(lstatSync(join(path, name), { bigint: true }));
    } catch (error) {
      // Removed between the listing and its stat: not an entry the fsync can keep.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return { record: { kind: 'dir', id, entries, path } };
}

/** After the fsync marked by `mark` succeeded: appends its line to the journal. */
export function fsyncCompleted(mark: FsyncMark | undefined): void {
  if (mark === undefined || journal === undefined) return;
  appendFileSync(journal, `${JSON.stringify(mark.record)}\n`);
}

function pathOf(fd: number): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return `fd ${fd}`;
  }
}
