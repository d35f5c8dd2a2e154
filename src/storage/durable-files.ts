/**
 * fsync helpers: a file's data, and a folder's entries (so a created, renamed or deleted file stays
 * so). Each fsync is reported to the test-only power-loss journal (fsync-journal.ts), which does
 * nothing unless TRIBUTARY_FSYNC_JOURNAL is set.
 */
import { closeSync, fsync, fsyncSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { promisify } from 'node:util';
import { beforeDirectorySync, beforeFileSync, fsyncCompleted } from './fsync-journal.js';

const fsyncFile = promisify(fsync);

/** fsyncs an open file off the event loop. */
export async function fsyncAsync(fd: number): Promise<void> {
  const mark = beforeFileSync(fd);
  await fsyncFile(fd);
  fsyncCompleted(mark);
}

export function fsyncDirectory(path: string): void {
  const fd = openSync(path, 'r');
  try {
    const mark = beforeDirectorySync(path);
    fsyncSync(fd);
    fsyncCompleted(mark);
  } finally {
    closeSync(fd);
  }
}

const runningSyncs = new Map<string, Promise<void>>();
const queuedSyncs = new Map<string, Promise<void>>();

/**
 * fsyncs a folder off the event loop. Callers arriving while a sync of the same folder runs may
 * have created their entry after it started, so they share one more sync that starts when it
 * ends: however many logs are created at once, a folder is synced at most twice in a row.
 */
export function fsyncDirectoryAsync(path: string): Promise<void> {
  const queued = queuedSyncs.get(path);
  if (queued !== undefined) return queued;
  const running = runningSyncs.get(path);
  if (running === undefined) return startDirectorySync(path);
  const next = running
    .catch(() => undefined)
    .then(() => {
      queuedSyncs.delete(path);
      return startDirectorySync(path);
    });
  queuedSyncs.set(path, next);
  return next;
}

function startDirectorySync(path: string): Promise<void> {
  const run = (async () => {
    const handle = await open(path, 'r');
    try {
      const mark = beforeDirectorySync(path);
      await handle.sync();
      fsyncCompleted(mark);
    } finally {
      await handle.close();
    }
  })();
  const tracked = run.finally(() => {
    if (runningSyncs.get(path) === tracked) runningSyncs.delete(path);
  });
  runningSyncs.set(path, tracked);
  return tracked;
}

/** Writes a small file atomically and durably: temp file, fsync, rename over, fsync the folder. */
export function writeFileDurably(path: string, contents: string, directory: string): void {
  const temporary = `${path}.tmp`;
  try {
    writeFileSync(temporary, contents);
    const fd = openSync(temporary, 'r+');
    try {
      const mark = beforeFileSync(fd);
      fsyncSync(fd);
      fsyncCompleted(mark);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    // A full disk leaves part of the temporary file: it would hold the last pages it took.
    rmSync(temporary, { force: true });
    throw error;
  }
  renameSync(temporary, path);
  fsyncDirectory(directory);
}
