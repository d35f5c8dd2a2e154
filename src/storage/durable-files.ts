/** fsync helpers: a file's data, and a folder's entries (so a created, renamed or deleted file stays so). */
import { closeSync, fsync, fsyncSync, openSync, renameSync, writeFileSync } from 'node:fs';
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
