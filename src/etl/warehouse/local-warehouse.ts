/**
 * The warehouse in a local folder (the embedded default, and `tributary demo`), with the semantics
 * of warehouse.ts and the durability of our storage layer:
 *
 * - create: the bytes go to a temporary name in the target's folder, are fsynced, then get their
 *   real name with link(2), which fails if the name exists (rename(2) would silently replace it),
 *   then the temporary name is unlinked and the folder fsynced. A crash leaves at most a
 *   `.tributary-tmp-*` file, never a partial file under the real name.
 * - rename of a file: link(2) to the target, fsync, unlink the source, fsync. A crash between the
 *   two leaves both names on one inode; the next rename of the same pair sees that and finishes.
 * - rename of a directory: checked absent, then rename(2) (directories cannot be hard-linked).
 *   Only a concurrent writer creating the target in between could be replaced, and only if it
 *   made an empty directory; the loader's fencing rules concurrent writers out.
 * - recursive delete: the tree is first renamed to `.tributary-deleting-*` in one step, so no
 *   reader sees it half gone, then removed.
 * - folders created for a path are fsynced into their parents.
 *
 * Paths stay inside the root: paths.ts refuses `..`; symbolic links inside the root are followed
 * (the root's contents are the warehouse's own).
 */
import { randomBytes } from 'node:crypto';
import { link, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { TributaryError } from '../../common/errors.js';
import { chunksOf, DataSourceError } from './data.js';
import { warehouseError, type WarehouseErrorCode } from './errors.js';
import { childOf, compareNames, isRoot, isWithin, nameOf, parentOf, parseWarehousePath, type WarehousePath } from './paths.js';
import type { CreateOptions, DeleteOptions, WarehouseData, WarehouseEntry, WarehouseFileSystem } from './warehouse.js';

/** Names a crashed create or recursive delete may leave behind; safe to delete. */
export const LOCAL_TEMPORARY_PREFIX = '.tributary-tmp-';
export const LOCAL_DELETING_PREFIX = '.tributary-deleting-';

const ERRNO_CODES: Readonly<Record<string, WarehouseErrorCode>> = {
  EEXIST: 'WAREHOUSE_FILE_EXISTS',
  ENOENT: 'WAREHOUSE_NOT_FOUND',
  ENOTDIR: 'WAREHOUSE_PARENT_NOT_DIRECTORY',
  EISDIR: 'WAREHOUSE_NOT_A_FILE',
  ENOTEMPTY: 'WAREHOUSE_DIRECTORY_NOT_EMPTY',
  EACCES: 'WAREHOUSE_ACCESS_DENIED',
  EPERM: 'WAREHOUSE_ACCESS_DENIED',
  EROFS: 'WAREHOUSE_ACCESS_DENIED',
  ENOSPC: 'WAREHOUSE_QUOTA_EXCEEDED',
  EDQUOT: 'WAREHOUSE_QUOTA_EXCEEDED',
  ENAMETOOLONG: 'WAREHOUSE_INVALID_PATH',
  ELOOP: 'WAREHOUSE_INVALID_PATH',
  EINVAL: 'WAREHOUSE_INVALID_PATH',
  EMFILE: 'WAREHOUSE_UNAVAILABLE',
  ENFILE: 'WAREHOUSE_UNAVAILABLE',
  EAGAIN: 'WAREHOUSE_UNAVAILABLE',
  EBUSY: 'WAREHOUSE_UNAVAILABLE',
  EINTR: 'WAREHOUSE_UNAVAILABLE',
};

/** What stands in the way when a folder of a path turns out to be a file. */
type FileInTheWay = 'WAREHOUSE_FILE_EXISTS' | 'WAREHOUSE_PARENT_NOT_DIRECTORY';

export class LocalWarehouse implements WarehouseFileSystem {
  /** Absolute, normalized. */
  readonly root: string;

  constructor(root: string) {
    if (!isAbsolute(root)) {
      throw warehouseError('WAREHOUSE_INVALID_URL', {
        operation: 'open warehouse',
        path: '',
        location: JSON.stringify(root),
        explanation: 'a local warehouse root must be an absolute path',
      });
    }
    this.root = resolve(root);
  }

  describe(path?: string): string {
    return `file://${path === undefined || path === '' ? this.root : join(this.root, path)}`;
  }

  /** `options.fresh` changes nothing here: link(2) refuses an existing name atomically. */
  async create(path: string, data: WarehouseData, _options?: CreateOptions): Promise<void> {
    const target = this.parse(path, 'create');
    if (isRoot(target)) throw this.error('WAREHOUSE_INVALID_PATH', 'create', target, { explanation: 'the root is a directory; name a file under it' });
    const folder = parentOf(target);
    await this.ensureDirectory(folder, 'create', target, 'WAREHOUSE_PARENT_NOT_DIRECTORY');
    const folderPath = this.absolute(folder);
    const temporary = join(folderPath, `${LOCAL_TEMPORARY_PREFIX}${randomBytes(8).toString('hex')}`);
    await this.guard('create', target, async () => {
      await writeDurably(temporary, data);
      try {
        await link(temporary, this.absolute(target));
      } finally {
        await unlink(temporary);
      }
      await fsyncDirectory(folderPath);
    });
  }

  async rename(from: string, to: string): Promise<void> {
    const source = this.parse(from, 'rename');
    const target = this.parse(to, 'rename');
    const both = { from: source.normal, to: target.normal };
    if (isRoot(source) || isRoot(target)) {
      throw this.error('WAREHOUSE_INVALID_PATH', 'rename', isRoot(source) ? source : target, { explanation: 'the root cannot be renamed or replaced', details: both });
    }
    let sourceStats: Stats;
    try {
      sourceStats = await lstat(this.absolute(source));
    } catch (error) {
      if (errnoOf(error) === 'ENOENT' || errnoOf(error) === 'ENOTDIR') throw this.error('WAREHOUSE_NOT_FOUND', 'rename', source, { cause: error, reason: 'the source does not exist', details: both });
      throw this.fail(error, 'rename', source, both);
    }
    if (source.normal === target.normal) throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { reason: 'the source and the target are the same path', details: both });
    if (isWithin(target, source)) throw this.error('WAREHOUSE_INVALID_PATH', 'rename', target, { explanation: 'a directory cannot be moved under itself', details: both });
    await this.ensureDirectory(parentOf(target), 'rename', target, 'WAREHOUSE_PARENT_NOT_DIRECTORY');
    const sourceFolder = this.absolute(parentOf(source));
    const targetFolder = this.absolute(parentOf(target));
    await this.guard('rename', target, async () => {
      if (sourceStats.isDirectory()) {
        if ((await statOrUndefined(this.absolute(target))) !== undefined) throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { details: both });
        try {
          await rename(this.absolute(source), this.absolute(target));
        } catch (error) {
          const errno = errnoOf(error);
          if (errno === 'EEXIST' || errno === 'ENOTEMPTY' || errno === 'ENOTDIR') throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { cause: error, details: both });
          if (errno === 'ENOENT') throw this.error('WAREHOUSE_NOT_FOUND', 'rename', source, { cause: error, reason: 'the source disappeared', details: both });
          throw error;
        }
        await fsyncDirectory(targetFolder);
        if (sourceFolder !== targetFolder) await fsyncDirectory(sourceFolder);
        return;
      }
      try {
        await link(this.absolute(source), this.absolute(target));
      } catch (error) {
        const errno = errnoOf(error);
        if (errno === 'ENOENT') throw this.error('WAREHOUSE_NOT_FOUND', 'rename', source, { cause: error, reason: 'the source disappeared', details: both });
        if (errno !== 'EEXIST') throw error;
        // The same inode under both names: an earlier rename of this pair stopped after its link.
        const existing = await lstat(this.absolute(target));
        if (existing.ino !== sourceStats.ino || existing.dev !== sourceStats.dev) {
          throw this.error('WAREHOUSE_FILE_EXISTS', 'rename', target, { cause: error, details: both });
        }
      }
      await fsyncDirectory(targetFolder);
      await unlink(this.absolute(source));
      await fsyncDirectory(sourceFolder);
    }, both);
  }

  async mkdirs(path: string): Promise<void> {
    const directory = this.parse(path, 'mkdirs');
    await this.ensureDirectory(directory, 'mkdirs', directory, 'WAREHOUSE_FILE_EXISTS');
  }

  async list(path: string): Promise<WarehouseEntry[]> {
    const directory = this.parse(path, 'list');
    const folderPath = this.absolute(directory);
    return this.guard('list', directory, async () => {
      const stats = await stat(folderPath);
      if (!stats.isDirectory()) throw this.error('WAREHOUSE_NOT_A_DIRECTORY', 'list', directory);
      const names = await readdir(folderPath);
      const entries = await Promise.all(
        names.map(async (name) => {
          const child = childOf(directory, name);
          const childStats = await statOrUndefined(join(folderPath, name));
          return childStats === undefined ? undefined : entryOf(child, childStats);
        }),
      );
      return entries.filter((entry) => entry !== undefined).sort((a, b) => compareNames(a.name, b.name));
    });
  }

  async open(path: string): Promise<Buffer> {
    const file = this.parse(path, 'open');
    return this.guard('open', file, () => readFile(this.absolute(file)));
  }

  async openStream(path: string): Promise<Readable> {
    const file = this.parse(path, 'open');
    return this.guard('open', file, async () => {
      const handle = await open(this.absolute(file), 'r');
      try {
        if ((await handle.stat()).isDirectory()) throw this.error('WAREHOUSE_NOT_A_FILE', 'open', file);
      } catch (error) {
        await handle.close();
        throw error;
      }
      return handle.createReadStream();
    });
  }

  async stat(path: string): Promise<WarehouseEntry | undefined> {
    const entry = this.parse(path, 'stat');
    return this.guard('stat', entry, async () => {
      try {
        return entryOf(entry, await stat(this.absolute(entry)));
      } catch (error) {
        if (errnoOf(error) === 'ENOENT') return undefined;
        throw error;
      }
    });
  }

  async delete(path: string, options: DeleteOptions = {}): Promise<boolean> {
    const doomed = this.parse(path, 'delete');
    if (isRoot(doomed)) throw this.error('WAREHOUSE_INVALID_PATH', 'delete', doomed, { explanation: 'refusing to delete the warehouse root; delete what is under it' });
    const folderPath = this.absolute(parentOf(doomed));
    const doomedPath = this.absolute(doomed);
    return this.guard('delete', doomed, async () => {
      let stats: Stats;
      try {
        stats = await lstat(doomedPath);
      } catch (error) {
        if (errnoOf(error) === 'ENOENT') return false;
        throw error;
      }
      if (!stats.isDirectory()) {
        await unlink(doomedPath);
      } else if (options.recursive !== true) {
        await rmdir(doomedPath).catch((error: unknown) => {
          if (errnoOf(error) === 'EEXIST') throw this.error('WAREHOUSE_DIRECTORY_NOT_EMPTY', 'delete', doomed, { cause: error });
          throw error;
        });
      } else {
        const hidden = join(folderPath, `${LOCAL_DELETING_PREFIX}${randomBytes(8).toString('hex')}`);
        await rename(doomedPath, hidden);
        await fsyncDirectory(folderPath);
        await rm(hidden, { recursive: true, force: true });
        return true;
      }
      await fsyncDirectory(folderPath);
      return true;
    });
  }

  private parse(path: string, operation: string): WarehousePath {
    return parseWarehousePath(path, operation, this.describe());
  }

  private absolute(path: WarehousePath): string {
    return join(this.root, ...path.segments);
  }

  /**
   * Makes `directory` and its missing parents (the root included), fsyncing each new one into its
   * parent. A file in the way fails with `fileInTheWay` if it is `directory` itself, else with
   * PARENT_NOT_DIRECTORY.
   */
  private async ensureDirectory(directory: WarehousePath, operation: string, subject: WarehousePath, fileInTheWay: FileInTheWay): Promise<void> {
    const existing = await statOrUndefined(this.absolute(directory)).catch(() => undefined);
    if (existing?.isDirectory() === true) return;
    await this.guard(operation, subject, async () => {
      // mkdir answers the topmost folder it made; each made folder is fsynced into its parent.
      const topmostMade = await mkdir(this.root, { recursive: true });
      if (topmostMade !== undefined) {
        for (let made = this.root; ; made = dirname(made)) {
          await fsyncDirectory(dirname(made));
          if (made === topmostMade || made === dirname(made)) break;
        }
      }
      let current = this.root;
      for (const [index, segment] of directory.segments.entries()) {
        const parent = current;
        current = join(current, segment);
        try {
          await mkdir(current);
          await fsyncDirectory(parent);
        } catch (error) {
          const errno = errnoOf(error);
          if (errno === 'EEXIST' && (await stat(current)).isDirectory()) continue;
          if (errno === 'EEXIST' || errno === 'ENOTDIR') {
            const isLast = index === directory.segments.length - 1;
            const code = isLast ? fileInTheWay : 'WAREHOUSE_PARENT_NOT_DIRECTORY';
            const blocking = directory.segments.slice(0, index + 1).join('/');
            throw this.error(code, operation, subject, { cause: error, reason: `'${blocking}' is a file` });
          }
          throw error;
        }
      }
    });
  }

  /** Runs `action`, turning system errors into warehouse errors about `subject`. */
  private async guard<T>(operation: string, subject: WarehousePath, action: () => Promise<T>, details?: Readonly<Record<string, unknown>>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw this.fail(error, operation, subject, details);
    }
  }

  private fail(error: unknown, operation: string, subject: WarehousePath, details?: Readonly<Record<string, unknown>>): TributaryError {
    if (error instanceof TributaryError) return error;
    if (error instanceof DataSourceError) return this.error('WAREHOUSE_DATA_FAILED', operation, subject, { cause: error.cause, reason: error.message, ...(details === undefined ? {} : { details }) });
    const errno = errnoOf(error);
    const code = (errno === undefined ? undefined : ERRNO_CODES[errno]) ?? 'WAREHOUSE_ERROR';
    return this.error(code, operation, subject, {
      cause: error,
      reason: error instanceof Error ? error.message : String(error),
      details: { ...details, systemCode: errno },
    });
  }

  private error(
    code: WarehouseErrorCode,
    operation: string,
    subject: WarehousePath,
    extra: { cause?: unknown; reason?: string; explanation?: string; details?: Readonly<Record<string, unknown>> } = {},
  ): TributaryError {
    return warehouseError(code, {
      operation,
      path: subject.normal,
      location: this.describe(subject.normal),
      ...(extra.cause === undefined ? {} : { cause: extra.cause }),
      ...(extra.reason === undefined ? {} : { reason: extra.reason }),
      ...(extra.explanation === undefined ? {} : { explanation: extra.explanation }),
      ...(extra.details === undefined ? {} : { details: extra.details }),
    });
  }
}

function entryOf(path: WarehousePath, stats: Stats): WarehouseEntry {
  const directory = stats.isDirectory();
  return {
    name: nameOf(path),
    path: path.normal,
    type: directory ? 'directory' : 'file',
    length: directory ? 0 : stats.size,
    modifiedAt: Math.floor(stats.mtimeMs),
  };
}

/** Writes `data` to a new file and fsyncs it; the file is removed again if anything fails. */
async function writeDurably(path: string, data: WarehouseData): Promise<void> {
  const handle = await open(path, 'wx', 0o644);
  try {
    for await (const chunk of chunksOf(data)) await writeFully(handle, chunk);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw error;
  }
  await handle.close();
}

async function writeFully(handle: FileHandle, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.length; ) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function statOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await stat(path);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
