/**
 * Power loss, simulated after the fact (reliability.md §8 P5; replication.md §6 test 9): a broker
 * run with TRIBUTARY_FSYNC_JOURNAL=<journal> (src/storage/fsync-journal.ts) records every fsync
 * it completes; once the broker is SIGKILLed, `loseUnsyncedWrites(dataDir, journal)` cuts its
 * data dir back to what the journal says was durable — what the disk would hold had the machine
 * lost power at the moment of the kill and with it the page cache:
 *
 * - a file keeps the length its last fsync covered; a file never fsynced is emptied (its name was
 *   made durable by a folder fsync, its bytes never were, as on ext4 after a crash);
 * - an entry of a folder that the folder's last fsync did not hold is removed (a file or folder
 *   created since), and a folder never fsynced loses every entry; the data dir itself is taken
 *   as durable (the test made it before the broker started);
 * - a file or folder renamed since its folder's last fsync gets its old name back when that name
 *   is free (the rename had not reached the disk); one renamed over a durable name stays, cut to
 *   its own durable length (the old file it replaced is gone: either outcome is a legal crash).
 *
 * Files and folders are matched by identity (device, inode, birth time), not by path, so a
 * temporary file fsynced and then renamed into place keeps its fsynced length.
 *
 * Not simulated, because the bytes are gone by the time the tool runs: deletions and truncations
 * made after the last fsync of the folder or file coming undone (a real power loss may resurrect
 * them), and torn or garbage tails beyond the fsynced length (the cut is always clean).
 */
import { lstatSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileIdentity, type FsyncRecord } from '../../src/storage/fsync-journal.js';

/** What the journal says is durable, by identity ("dev:ino:birthtimeNs"). */
export interface DurableState {
  /** File → the length its last fsync covered. */
  readonly fileLengths: ReadonlyMap<string, number>;
  /** Folder → its entries at its last fsync (name → identity). */
  readonly folderEntries: ReadonlyMap<string, ReadonlyMap<string, string>>;
  /** Journal lines read. */
  readonly records: number;
}

export interface PowerLossReport {
  readonly dataDir: string;
  /** Files cut back (paths relative to the data dir), with their length before and after. */
  readonly cut: readonly { readonly path: string; readonly from: number; readonly to: number }[];
  /** Files and folders removed (relative paths; a removed folder's contents are not listed). */
  readonly removed: readonly string[];
  /** Renames undone: the entry at `from` went back to its durable name `to`. */
  readonly restored: readonly { readonly from: string; readonly to: string }[];
  /** Files left as they were (everything in them was fsynced). */
  readonly untouched: number;
  /** Files shorter than their fsynced length (truncated since, not fsynced): left as they are. */
  readonly shorter: readonly string[];
}

/** Reads a journal; a torn last line (the broker killed mid-append) is ignored, any other bad line throws. */
export function readFsyncJournal(file: string): DurableState {
  const fileLengths = new Map<string, number>();
  const folderEntries = new Map<string, ReadonlyMap<string, string>>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { fileLengths, folderEntries, records: 0 };
    throw error;
  }
  const lines = text.split('\n');
  const last = lines.length - 1;
  let records = 0;
  lines.forEach((line, index) => {
    if (line === '') return;
    let record: FsyncRecord;
    try {
      record = JSON.parse(line) as FsyncRecord;
    } catch (error) {
      if (index === last) return;
      throw new Error(`${file}: line ${index + 1} is not JSON: ${line.slice(0, 200)}`, { cause: error });
    }
    records += 1;
    if (record.kind === 'file') fileLengths.set(record.id, record.length);
    else if (record.kind === 'dir') folderEntries.set(record.id, new Map(Object.entries(record.entries)));
    else throw new Error(`${file}: line ${index + 1} has an unknown kind: ${line.slice(0, 200)}`);
  });
  return { fileLengths, folderEntries, records };
}

/**
 * Cuts `dataDir` back to what `journal` says was durable (see the file comment). The broker using
 * it must be dead. Returns what was done.
 */
export function loseUnsyncedWrites(dataDir: string, journal: string): PowerLossReport {
  const durable = readFsyncJournal(journal);
  const report: Tally = { dataDir, cut: [], removed: [], restored: [], untouched: 0, shorter: [] };
  cutFolder(dataDir, dataDir, durable, report);
  return report;
}

/** The report while it is being filled. */
interface Tally {
  readonly dataDir: string;
  readonly cut: { path: string; from: number; to: number }[];
  readonly removed: string[];
  readonly restored: { from: string; to: string }[];
  untouched: number;
  readonly shorter: string[];
}

interface Entry {
  readonly id: string;
  readonly folder: boolean;
  readonly size: number;
}

function entriesOf(folder: string): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  for (const name of readdirSync(folder)) {
    const stats = lstatSync(join(folder, name), { bigint: true });
    entries.set(name, { id: fileIdentity(stats), folder: stats.isDirectory(), size: Number(stats.size) });
  }
  return entries;
}

function cutFolder(folder: string, dataDir: string, durable: DurableState, report: Tally): void {
  const listed = durable.folderEntries.get(fileIdentity(lstatSync(folder, { bigint: true }))) ?? new Map<string, string>();
  const durableNameOf = new Map<string, string>();
  for (const [name, id] of listed) durableNameOf.set(id, name);
  const rel = (path: string): string => relative(dataDir, path);

  // Entries the last fsync of this folder did not hold go; renamed ones wait for their old name.
  const renamed: [string, string][] = [];
  for (const [name, entry] of entriesOf(folder)) {
    if (listed.get(name) === entry.id) continue;
    const durableName = durableNameOf.get(entry.id);
    if (durableName !== undefined) renamed.push([name, durableName]);
    else if (!listed.has(name)) {
      rmSync(join(folder, name), { recursive: true, force: true });
      report.removed.push(rel(join(folder, name)));
    }
    // else: renamed over a durable name; it stays (cut below).
  }
  for (const [name, durableName] of renamed) {
    const present = entriesOf(folder);
    if (present.has(durableName)) continue;
    renameSync(join(folder, name), join(folder, durableName));
    report.restored.push({ from: rel(join(folder, name)), to: rel(join(folder, durableName)) });
  }

  for (const [name, entry] of entriesOf(folder)) {
    const path = join(folder, name);
    if (entry.folder) {
      cutFolder(path, dataDir, durable, report);
      continue;
    }
    const length = durable.fileLengths.get(entry.id) ?? 0;
    if (entry.size > length) {
      truncateSync(path, length);
      report.cut.push({ path: rel(path), from: entry.size, to: length });
    } else {
      if (entry.size < length) report.shorter.push(rel(path));
      report.untouched += 1;
    }
  }
}

/** "broker 2: 3 files cut (-1,234 bytes), 2 removed, 0 renames undone", plus the first few of each. */
export function formatPowerLoss(report: PowerLossReport, limit = 5): string {
  const bytes = report.cut.reduce((sum, entry) => sum + entry.from - entry.to, 0);
  const lines = [`${report.cut.length} files cut (${bytes} bytes dropped), ${report.removed.length} entries removed, ${report.restored.length} renames undone, ${report.untouched} files untouched`];
  for (const entry of report.cut.slice(0, limit)) lines.push(`  cut ${entry.path} ${entry.from} → ${entry.to}`);
  for (const path of report.removed.slice(0, limit)) lines.push(`  removed ${path}`);
  for (const entry of report.restored.slice(0, limit)) lines.push(`  renamed back ${entry.from} → ${entry.to}`);
  return lines.join('\n');
}
