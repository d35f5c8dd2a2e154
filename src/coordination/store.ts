/**
 * The coordination store: ZooKeeper's data model and semantics in promise form. Brokers,
 * consumers and the schema registry talk to this interface only; `zookeeper-store.ts` implements
 * it over a real ensemble and `memory-store.ts` in process for standalone mode.
 *
 * The semantics every implementation keeps (the contract tests in
 * test/unit/coordination/store-contract.ts hold both to them):
 *
 * - Nodes form a tree of absolute paths (`/a/b`). Each node has data (a Buffer, at most
 *   MAX_DATA_BYTES) and a version that starts at 0 and grows by one on every `set`.
 * - Ephemeral nodes belong to the session that created them and vanish when it closes or
 *   expires; they cannot have children. Sequential nodes get the number of children ever
 *   created under the parent (sequential or not; deletions do not count) appended as ten
 *   zero-padded digits, as ZooKeeper does (`job-0000000007`).
 * - Watches are one-shot: a watcher passed to `get`, `exists` or `children` fires at most once,
 *   for the first matching change, and must be passed again to keep watching. A watcher fires
 *   before the session that set it can read the change it reports. `get` and `children` on a
 *   missing node set no watch (as ZooKeeper); `exists` watches for creation then.
 * - A session that expires is gone: its ephemerals and watches die with it. The store opens a
 *   new session by itself and reports 'expired' then 'reconnected-new-session'; owners must then
 *   re-create their ephemerals and re-arm their watches.
 * - Every failure is a TributaryError whose `code` is one of COORDINATION_ERROR_CODES (ZooKeeper's
 *   names), `retriable` only for CONNECTION_LOSS and TIMEOUT, the original error as `cause`.
 *   After CONNECTION_LOSS or TIMEOUT the outcome of a write is unknown: read before retrying.
 */
import { TributaryError } from '../common/errors.js';

export type CreateMode = 'persistent' | 'ephemeral' | 'persistent-sequential' | 'ephemeral-sequential';

export type WatchEventType = 'created' | 'deleted' | 'data-changed' | 'children-changed';

export interface WatchEvent {
  readonly type: WatchEventType;
  /** The watched path (not the child that changed, for 'children-changed'). */
  readonly path: string;
}

/** A one-shot watcher. It must not throw; if it does, the error is logged and dropped. */
export type Watcher = (event: WatchEvent) => void;

/**
 * - `connected`: the first connection, or a reconnection within the same session (ephemerals
 *   and watches intact).
 * - `disconnected`: the connection dropped; the session may still be alive. Operations wait (up
 *   to the operation timeout) for it to come back.
 * - `expired`: the session is gone with its ephemerals and watches; operations pending on it
 *   failed with SESSION_EXPIRED. A new session is being opened.
 * - `reconnected-new-session`: the new session is ready; re-create ephemerals, re-arm watches.
 */
export type SessionEvent = 'connected' | 'disconnected' | 'expired' | 'reconnected-new-session';

export type SessionListener = (event: SessionEvent) => void;

export interface NodeData {
  readonly data: Buffer;
  readonly version: number;
}

export type TransactionOp =
  | { readonly op: 'create'; readonly path: string; readonly data?: Buffer; readonly mode?: CreateMode }
  | { readonly op: 'set'; readonly path: string; readonly data: Buffer; readonly expectedVersion?: number }
  | { readonly op: 'delete'; readonly path: string; readonly expectedVersion?: number }
  /** Fails the transaction unless the node exists (and has `expectedVersion`, when given). */
  | { readonly op: 'check'; readonly path: string; readonly expectedVersion?: number };

export type TransactionResult =
  /** `path` is the created path: with its sequence suffix for sequential modes. */
  | { readonly op: 'create'; readonly path: string }
  | { readonly op: 'set'; readonly path: string; readonly version: number }
  | { readonly op: 'delete'; readonly path: string }
  | { readonly op: 'check'; readonly path: string };

export interface CoordinationStore {
  /** Creates a node and returns its path (with the sequence suffix for sequential modes). */
  create(path: string, data: Buffer, mode: CreateMode): Promise<string>;
  /** `mkdir -p`: creates the missing nodes of `path` as empty persistent nodes. Idempotent. */
  ensurePath(path: string): Promise<void>;
  /** The node's data and version, or undefined when it does not exist (then no watch is set). */
  get(path: string, watcher?: Watcher): Promise<NodeData | undefined>;
  /** Replaces the data; returns the new version. With `expectedVersion`, only from that version. */
  set(path: string, data: Buffer, expectedVersion?: number): Promise<number>;
  /** Deletes a node without children; with `expectedVersion`, only at that version. */
  delete(path: string, expectedVersion?: number): Promise<void>;
  /** Deletes a node and everything under it; a missing node is not an error. Not atomic. */
  deleteRecursive(path: string): Promise<void>;
  /** Whether the node exists; the watcher fires on its creation, deletion or data change. */
  exists(path: string, watcher?: Watcher): Promise<boolean>;
  /** The children's names, sorted; undefined when the node does not exist (then no watch). */
  children(path: string, watcher?: Watcher): Promise<string[] | undefined>;
  /** Applies all operations atomically, or none; fails with the code of the first failing op. */
  transaction(ops: readonly TransactionOp[]): Promise<TransactionResult[]>;
  /** Subscribes to session events; returns the function that unsubscribes. */
  onSessionEvent(listener: SessionListener): () => void;
  /**
   * The current session's id, 16 hex digits. It changes when a session expires (ZooKeeperStore:
   * all zeros until the replacement session is established).
   */
  sessionId(): string;
  /** Ends the session (its ephemerals are deleted). Later operations fail with CLOSED. */
  close(): Promise<void>;
}

/** The codes a coordination failure may carry: ZooKeeper's names, plus the store's own. */
export const COORDINATION_ERROR_CODES = [
  'NODE_EXISTS',
  'NO_NODE',
  'BAD_VERSION',
  'NOT_EMPTY',
  'NO_CHILDREN_FOR_EPHEMERALS',
  'SESSION_EXPIRED',
  'CONNECTION_LOSS',
  'TIMEOUT',
  'BAD_ARGUMENTS',
  'INVALID_PATH',
  'DATA_TOO_LARGE',
  'CLOSED',
  'ZOOKEEPER_UNREACHABLE',
  'ZOOKEEPER_ERROR',
  'PERSISTENCE_FAILED',
] as const;

export type CoordinationErrorCode = (typeof COORDINATION_ERROR_CODES)[number];

const RETRIABLE: ReadonlySet<CoordinationErrorCode> = new Set(['CONNECTION_LOSS', 'TIMEOUT', 'ZOOKEEPER_UNREACHABLE']);

const EXPLANATIONS: Readonly<Record<CoordinationErrorCode, string>> = {
  NODE_EXISTS: 'the node already exists',
  NO_NODE: 'the node (or its parent) does not exist',
  BAD_VERSION: 'the node is not at the expected version',
  NOT_EMPTY: 'the node has children',
  NO_CHILDREN_FOR_EPHEMERALS: 'ephemeral nodes cannot have children',
  SESSION_EXPIRED: 'the session expired; its ephemeral nodes and watches are gone',
  CONNECTION_LOSS: 'the connection was lost; the outcome of the operation is unknown',
  TIMEOUT: 'timed out; the outcome of the operation is unknown',
  BAD_ARGUMENTS: 'invalid arguments',
  INVALID_PATH: 'invalid path',
  DATA_TOO_LARGE: 'the data is too large',
  CLOSED: 'the coordination store is closed',
  ZOOKEEPER_UNREACHABLE: 'ZooKeeper is unreachable',
  ZOOKEEPER_ERROR: 'ZooKeeper failed the request',
  PERSISTENCE_FAILED: 'the standalone store could not write its persistence file; nothing was changed',
};

/**
 * ZooKeeper refuses requests over its packet limit (jute.maxbuffer, just under 1 MiB) by
 * dropping the connection; this leaves room for the path and headers.
 */
export const MAX_DATA_BYTES = 1_000_000;

/** Ten digits, as ZooKeeper formats sequence numbers (`%010d`). */
export function sequenceSuffix(sequence: number): string {
  return String(sequence).padStart(10, '0');
}

export interface CoordinationErrorOptions {
  /** What was being done, e.g. `create /brokers/ids/1`; the message starts with it. */
  readonly operation?: string;
  /** Replaces the standard explanation of the code. */
  readonly message?: string;
  readonly cause?: unknown;
  readonly details?: Readonly<Record<string, unknown>>;
}

export function coordinationError(code: CoordinationErrorCode, options: CoordinationErrorOptions = {}): TributaryError {
  const explanation = options.message ?? EXPLANATIONS[code];
  return new TributaryError({
    code,
    message: options.operation === undefined ? `${explanation} (${code})` : `${options.operation}: ${explanation} (${code})`,
    retriable: RETRIABLE.has(code),
    ...(options.cause === undefined ? {} : { cause: options.cause }),
    ...(options.details === undefined ? {} : { details: options.details }),
  });
}

/** Whether `error` is a coordination failure with `code`. */
export function hasCode(error: unknown, code: CoordinationErrorCode): boolean {
  return error instanceof TributaryError && error.code === code;
}

/** Characters ZooKeeper refuses in paths (PathUtils.validatePath). */
// eslint-disable-next-line no-control-regex
export const FORBIDDEN_PATH_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]/;

/**
 * Checks a node path by ZooKeeper's rules: absolute, no empty, `.` or `..` segments, no trailing
 * slash (except the root), no control or reserved characters. Throws INVALID_PATH.
 */
export function validatePath(path: string): void {
  const fail = (reason: string): never => {
    throw coordinationError('INVALID_PATH', { message: `invalid path ${JSON.stringify(path)}: ${reason}`, details: { path } });
  };
  if (typeof path !== 'string' || path.length === 0) fail('empty');
  if (!path.startsWith('/')) fail('must start with /');
  if (path === '/') return;
  if (path.endsWith('/')) fail('must not end with /');
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') fail('empty segment');
    if (segment === '.' || segment === '..') fail('relative segment');
  }
  if (FORBIDDEN_PATH_CHARACTERS.test(path)) fail('control or reserved character');
}

/** Throws DATA_TOO_LARGE (or BAD_ARGUMENTS for a non-Buffer). */
export function validateData(data: Buffer, operation: string): void {
  if (!Buffer.isBuffer(data)) throw coordinationError('BAD_ARGUMENTS', { operation, message: 'data must be a Buffer' });
  if (data.length > MAX_DATA_BYTES) {
    throw coordinationError('DATA_TOO_LARGE', {
      operation,
      message: `${data.length} bytes of data is over the limit of ${MAX_DATA_BYTES}`,
      details: { bytes: data.length, limit: MAX_DATA_BYTES },
    });
  }
}

/** Throws BAD_ARGUMENTS unless `version` is absent or a non-negative integer (or -1, "any"). */
export function validateVersion(version: number | undefined, operation: string): void {
  if (version === undefined || version === -1) return;
  if (!Number.isSafeInteger(version) || version < 0) {
    throw coordinationError('BAD_ARGUMENTS', { operation, message: `expected version ${String(version)} is not a non-negative integer` });
  }
}

/** The parent of a non-root path: `/a/b` → `/a`, `/a` → `/`. */
export function parentPath(path: string): string {
  const index = path.lastIndexOf('/');
  return index <= 0 ? '/' : path.slice(0, index);
}

/** `child` under `parent`, with the root handled: (`/`, `a`) → `/a`. */
export function childPath(parent: string, child: string): string {
  return parent === '/' ? `/${child}` : `${parent}/${child}`;
}

/** Checks the paths, data and versions of a transaction before anything is sent. */
export function validateTransaction(ops: readonly TransactionOp[]): void {
  ops.forEach((op, index) => {
    const operation = `transaction op ${index} (${op.op} ${op.path})`;
    validatePath(op.path);
    switch (op.op) {
      case 'create':
        if (op.data !== undefined) validateData(op.data, operation);
        break;
      case 'set':
        validateData(op.data, operation);
        validateVersion(op.expectedVersion, operation);
        break;
      case 'delete':
      case 'check':
        validateVersion(op.expectedVersion, operation);
        break;
    }
  });
}
