/**
 * One file-store registry per data directory: the state file is rewritten whole on every change,
 * so a second instance on the same directory would silently undo the first one's writes (and
 * hand out its ids again). The lock is a file holding the owner's pid, created exclusively; a
 * lock whose process is gone is stale and taken over.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TributaryError } from '../../common/errors.js';

export const LOCK_FILE = 'registry.lock';

/** Locks held by this process, so that a lock file naming our own pid can be told from a stale one. */
const held = new Set<string>();

/** Takes the directory's lock; returns the function that releases it. */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      held.add(path);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held.delete(path);
        try {
          unlinkSync(path);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // someone removed it: released anyway
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number.parseInt(readFileIfPresent(path), 10);
    const ours = owner === process.pid && !held.has(path);
    if (Number.isSafeInteger(owner) && owner > 0 && !ours && processAlive(owner)) {
      throw new TributaryError({
        code: 'DATA_DIR_LOCKED',
        message: `another registry (pid ${owner}) is using the data directory ${dataDir}; stop it first, or run several instances on one ZooKeeper with --zookeeper`,
        details: { dataDir, owner },
      });
    }
    // Stale: the owner is gone (or the file is unreadable). Remove it and try once more.
    try {
      unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  throw new TributaryError({
    code: 'DATA_DIR_LOCKED',
    message: `another registry keeps taking the lock ${path}; make sure only one registry uses ${dataDir}`,
    details: { dataDir },
  });
}

function readFileIfPresent(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
