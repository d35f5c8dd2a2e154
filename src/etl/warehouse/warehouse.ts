/**
 * The warehouse file system: the few operations the HDFS loader writes through, with one set of
 * semantics for every backend (WebHDFS in webhdfs-warehouse.ts, a local folder in
 * local-warehouse.ts; `openWarehouse` in open-warehouse.ts picks one from a URL).
 *
 * Paths are relative to the warehouse root, `/`-separated (`topic/hourly/2026/11/29/15/f.avro`);
 * a leading or doubled `/` is ignored, `''` is the root itself, and `.`, `..` and `:` are refused
 * (see paths.ts). Entries report paths in that normal form.
 *
 * The rules the loader's commit protocol relies on:
 * - Nothing is ever overwritten: `create` and `rename` fail with WAREHOUSE_FILE_EXISTS when the
 *   target exists, whatever it is, and leave both sides untouched.
 * - `create` makes missing parent folders; so does `rename` for its target, once it knows the
 *   source exists (a failed rename creates nothing).
 * - `rename` is atomic: the target appears whole or not at all.
 * - Every failure is a TributaryError whose code is one of WAREHOUSE_ERROR_CODES, with
 *   `details.path` and `details.operation` (errors.ts).
 * - A create whose outcome is unknown (lost answer, source failure, crash) may leave a partial
 *   file under its name on HDFS, still leased to the dead writer. Callers therefore write every
 *   attempt under a fresh name and never write to the same name twice; the commit renames the
 *   attempt's file into place.
 */
import type { Readable } from 'node:stream';

export type WarehouseEntryType = 'file' | 'directory';

export interface WarehouseEntry {
  /** The last segment of `path` (`''` for the root). */
  readonly name: string;
  /** Relative to the warehouse root, in normal form (no leading `/`). */
  readonly path: string;
  readonly type: WarehouseEntryType;
  /** Bytes; 0 for a directory. */
  readonly length: number;
  /** Last modification, milliseconds since the epoch. */
  readonly modifiedAt: number;
}

/** A whole body, or chunks streamed without holding the file in memory. */
export type WarehouseData = Buffer | AsyncIterable<Buffer>;

export interface CreateOptions {
  /**
   * The caller vouches that nothing was ever written under this name: it holds a random attempt
   * id and is never used twice (staging names). WebHDFS then skips its existence check before
   * CREATE, one NameNode round trip per file; a name that does exist still fails, but the
   * DataNode's refusal may then arrive as a broken connection (WAREHOUSE_OUTCOME_UNKNOWN) rather
   * than WAREHOUSE_FILE_EXISTS. Never for names other runs may also write (claims, publications).
   */
  readonly fresh?: boolean;
}

export interface DeleteOptions {
  /** Delete a non-empty directory with everything under it. Default false. */
  readonly recursive?: boolean;
}

export interface WarehouseFileSystem {
  /**
   * Writes a new file, creating missing parents. Fails with WAREHOUSE_FILE_EXISTS if anything is
   * at `path` (never overwrites), WAREHOUSE_PARENT_NOT_DIRECTORY if a parent is a file, and
   * WAREHOUSE_DATA_FAILED if `data` itself throws.
   */
  create(path: string, data: WarehouseData, options?: CreateOptions): Promise<void>;
  /**
   * Moves a file or directory atomically. Fails with WAREHOUSE_NOT_FOUND if `from` is missing
   * and WAREHOUSE_FILE_EXISTS if anything is at `to` (a directory target is never moved into).
   */
  rename(from: string, to: string): Promise<void>;
  /** Creates a directory and its parents; succeeds if it already exists (FILE_EXISTS if a file). */
  mkdirs(path: string): Promise<void>;
  /**
   * The entries of a directory, sorted by name (byte order of UTF-8). A missing directory fails
   * with WAREHOUSE_NOT_FOUND (not an empty list: a typo must not look like "nothing to do"),
   * a file with WAREHOUSE_NOT_A_DIRECTORY.
   */
  list(path: string): Promise<WarehouseEntry[]>;
  /** A whole file. WAREHOUSE_NOT_FOUND if missing, WAREHOUSE_NOT_A_FILE for a directory. */
  open(path: string): Promise<Buffer>;
  /** A file as a stream of Buffers; same failures as `open`, raised before the stream is returned. */
  openStream(path: string): Promise<Readable>;
  /** The entry at `path`, or undefined if there is none. */
  stat(path: string): Promise<WarehouseEntry | undefined>;
  /**
   * Deletes a file, or a directory (non-empty ones only with `recursive`, else
   * WAREHOUSE_DIRECTORY_NOT_EMPTY). Resolves whether something was there. The root is refused.
   */
  delete(path: string, options?: DeleteOptions): Promise<boolean>;
  /** A URL for messages and logs: the root, or `path` under it. */
  describe(path?: string): string;
}
