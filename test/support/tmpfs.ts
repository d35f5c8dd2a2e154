/**
 * A small filesystem for disk-full tests (reliability reference §8 P6): a tmpfs mounted on a
 * folder (root only), filled to the last page with a filler file, and given space back by deleting
 * the filler or by remounting it larger. tmpfs answers a write that no longer fits with ENOSPC at
 * once (no reserved blocks, no delayed allocation), and its fsync never fails, so what a test sees
 * is ENOSPC alone, never EIO.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MIB = 1024 * 1024;

/** Whether this process may mount a tmpfs (root, and mount(8) allowed here): tried once on a scratch folder. */
export function tmpfsSupported(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = mkdtempSync(join(tmpdir(), 'tributary-tmpfs-probe-'));
  try {
    mountTmpfs(probe, MIB);
    unmountTmpfs(probe);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** Mounts a tmpfs of `bytes` (rounded up to whole pages by the kernel) on `directory`, made if missing. */
export function mountTmpfs(directory: string, bytes: number): void {
  mkdirSync(directory, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', directory], { stdio: 'pipe' });
}

/** Gives a mounted tmpfs a new size (its files stay). */
export function resizeTmpfs(directory: string, bytes: number): void {
  execFileSync('mount', ['-o', `remount,size=${bytes}`, directory], { stdio: 'pipe' });
}

/** Unmounts (lazily when still busy: a process killed a moment ago may not have let go yet); never throws. */
export function unmountTmpfs(directory: string): void {
  try {
    execFileSync('umount', [directory], { stdio: 'pipe' });
  } catch {
    try {
      execFileSync('umount', ['-l', directory], { stdio: 'pipe' });
    } catch {
      // Not mounted (or already gone): nothing to undo.
    }
  }
}

/** Bytes a non-root writer could still allocate on the filesystem holding `directory`. */
export function freeBytes(directory: string): number {
  const stats = statfsSync(directory);
  return stats.bavail * stats.bsize;
}

export interface Filler {
  readonly path: string;
  readonly bytes: number;
}

const CHUNK = Buffer.alloc(64 * 1024, 0x5a);

/**
 * Writes `<directory>/<name>` until the filesystem refuses another byte (64 KiB writes, then
 * single pages, then single bytes, each until ENOSPC): afterwards only writes into pages other
 * files already hold can succeed. With `leaveBytes`, stops while about that much is still free
 * (a disk that fills up in the middle of what comes next).
 */
export function fillDisk(directory: string, name = `filler-${Date.now()}-${Math.floor(Math.random() * 1e6)}`, leaveBytes = 0): Filler {
  const path = join(directory, name);
  const fd = openSync(path, 'wx');
  let bytes = 0;
  try {
    for (const size of [CHUNK.length, 4096, 1]) {
      for (;;) {
        if (leaveBytes > 0 && freeBytes(directory) - size < leaveBytes) break;
        try {
          bytes += writeSync(fd, CHUNK, 0, size);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return { path, bytes };
}

/** Deletes a filler: its space is free again at once. */
export function removeFiller(filler: Filler): void {
  rmSync(filler.path, { force: true });
}
