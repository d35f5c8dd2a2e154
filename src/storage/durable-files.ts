/** fsync helpers: a file's data, and a folder's entries (so a created, renamed or deleted file stays so). */
import { closeSync, fsync, fsyncSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { promisify } from 'node:util';

export const fsyncAsync = promisify(fsync);

export function fsyncDirectory(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
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
      await handle.sync();
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
  writeFileSync(temporary, contents);
  const fd = openSync(temporary, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  fsyncDirectory(directory);
}
