/**
 * The in-process coordination store of standalone mode (ARCHITECTURE.md decision 6): one shared
 * tree, `MemoryCoordination`, and any number of sessions on it, each a `CoordinationStore` with
 * ZooKeeper's semantics — versions, ephemeral owners, sequence numbers from the count of
 * children ever created under the parent, one-shot watches, atomic transactions.
 *
 * Watches fire asynchronously (on a microtask queued by the change), so a watcher runs before
 * any code awaiting a later operation, as ZooKeeper delivers a notification before the reads
 * that see the change. Closing a session deletes its ephemerals, which fires other sessions'
 * watches; `expireSession()` simulates an expiry for tests.
 */
import { existsSync, readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { TributaryError } from '../common/errors.js';
import { createLogger, type Logger } from '../common/logger.js';
import { beforeDirectorySync, beforeFileSync, fsyncCompleted } from '../storage/fsync-journal.js';
import {
  childPath,
  coordinationError,
  parentPath,
  sequenceSuffix,
  validateData,
  validatePath,
  validateTransaction,
  validateVersion,
  type CoordinationStore,
  type CreateMode,
  type NodeData,
  type SessionEvent,
  type SessionListener,
  type TransactionOp,
  type TransactionResult,
  type WatchEvent,
  type Watcher,
} from './store.js';

interface MemorySession {
  readonly id: string;
  /** Watches on existing nodes (set by `get`, or `exists` on an existing node). */
  readonly dataWatches: Map<string, Set<Watcher>>;
  /** Watches for the creation of missing nodes (set by `exists`). */
  readonly existWatches: Map<string, Set<Watcher>>;
  readonly childWatches: Map<string, Set<Watcher>>;
}

interface MemoryNode {
  data: Buffer;
  version: number;
  /**
   * Children ever created under this node: names sequential children. As ZooKeeper's cversion
   * for this purpose, it grows on every child creation, sequential or not, but not on deletion.
   */
  cversion: number;
  readonly owner: MemorySession | undefined;
  readonly children: Set<string>;
}

/** Changes applied so far by one operation: undone if a later part fails, else published. */
class Mutation {
  readonly undo: (() => void)[] = [];
  readonly events: WatchEvent[] = [];
  /** Whether it changed a persistent node: only those are saved, and only they wait for the file. */
  persistent = false;
}

export interface MemoryCoordinationOptions {
  /** Where failing watchers and session listeners are reported. */
  readonly logger?: Logger;
  /**
   * A file that keeps the persistent nodes across restarts (a standalone broker's topics and
   * configs live here). Replaced atomically after changes, several changes per write when they
   * come faster than the disk; each is acknowledged once written. Ephemeral nodes are never saved.
   * Until then a change is visible to reads (not to watches), as a ZooKeeper leader's own
   * uncommitted view would not be: a reader may see a change that a failed write then undoes.
   */
  readonly file?: string;
}

/** Format of the persistence file: every persistent node, parents before children. */
interface SavedTree {
  readonly format: 'tributary-coordination-v1';
  readonly nodes: readonly { readonly path: string; readonly data: string; readonly version: number; readonly cversion: number }[];
}

/** The shared tree. Hand each component its own `session()`. */
export class MemoryCoordination {
  private readonly nodes = new Map<string, MemoryNode>();
  private readonly sessions = new Set<MemorySession>();
  private nextSession = 1;
  readonly logger: Logger;

  private readonly file: string | undefined;
  /** Changes applied in memory and waiting for the next write of the file. */
  private unsaved: { readonly mutation: Mutation; readonly resolve: () => void; readonly reject: (error: Error) => void }[] = [];
  private flushing: Promise<void> | undefined;

  constructor(options: MemoryCoordinationOptions = {}) {
    this.logger = options.logger ?? createLogger({ name: 'coordination', level: 'warn' });
    this.file = options.file;
    this.nodes.set('/', { data: Buffer.alloc(0), version: 0, cversion: 0, owner: undefined, children: new Set() });
    if (this.file !== undefined && existsSync(this.file)) this.load(this.file);
  }

  private load(file: string): void {
    let saved: SavedTree;
    try {
      saved = JSON.parse(readFileSync(file, 'utf8')) as SavedTree;
    } catch (error) {
      throw new TributaryError({
        code: 'COORDINATION_STATE_CORRUPT',
        message: `the standalone coordination state ${file} cannot be read; restore it from a backup or move it away to start empty`,
        cause: error,
      });
    }
    if (saved.format !== 'tributary-coordination-v1') {
      throw new TributaryError({ code: 'COORDINATION_STATE_CORRUPT', message: `${file} is not a Tributary coordination state file` });
    }
    for (const node of saved.nodes) {
      if (node.path === '/') continue;
      const parent = this.nodes.get(parentPath(node.path));
      if (parent === undefined) continue;
      parent.children.add(node.path.slice(node.path.lastIndexOf('/') + 1));
      this.nodes.set(node.path, { data: Buffer.from(node.data, 'base64'), version: node.version, cversion: node.cversion, owner: undefined, children: new Set() });
    }
  }

  /** The persistent nodes, parents before children, as the persistence file holds them. */
  private serialize(): string {
    const nodes = [...this.nodes.entries()]
      .filter(([, node]) => node.owner === undefined)
      .sort(([a], [b]) => a.split('/').length - b.split('/').length || a.localeCompare(b))
      .map(([path, node]) => ({ path, data: node.data.toString('base64'), version: node.version, cversion: node.cversion }));
    const saved: SavedTree = { format: 'tributary-coordination-v1', nodes };
    return JSON.stringify(saved);
  }

  /** Replaces the file atomically and durably (temporary file, fsync, rename, fsync of the folder), off the event loop. */
  private async writeFile(file: string, contents: string): Promise<void> {
    const temporary = `${file}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(contents);
      const mark = beforeFileSync(handle.fd);
      await handle.sync();
      fsyncCompleted(mark);
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
    const directory = await open(dirname(file), 'r');
    try {
      const mark = beforeDirectorySync(dirname(file));
      await directory.sync();
      fsyncCompleted(mark);
    } finally {
      await directory.close();
    }
  }

  /**
   * Writes the changes applied so far, many per write when they come faster than the disk
   * (group commit). A change's watches fire and its caller hears back only once it is on disk.
   * A write that fails takes the tree back to what the file holds: every change not yet
   * written is undone, newest first, and each caller gets PERSISTENCE_FAILED.
   */
  private async flushLoop(file: string): Promise<void> {
    try {
      while (this.unsaved.length > 0) {
        const batch = this.unsaved;
        this.unsaved = [];
        try {
          await this.writeFile(file, this.serialize());
        } catch (error) {
          const failed = [...batch, ...this.unsaved];
          this.unsaved = [];
          for (const entry of [...failed].reverse()) for (const undo of [...entry.mutation.undo].reverse()) undo();
          const refused = coordinationError('PERSISTENCE_FAILED', {
            message: `could not write ${file}: ${error instanceof Error ? error.message : String(error)}; free space or fix permissions, then retry`,
            cause: error,
            details: { file },
          });
          for (const entry of failed) entry.reject(refused);
          continue;
        }
        for (const entry of batch) {
          this.publish(entry.mutation);
          entry.resolve();
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /** Opens a new session on the tree. */
  session(): MemoryCoordinationStore {
    return new MemoryCoordinationStore(this);
  }

  /** @internal */
  openSession(): MemorySession {
    const session: MemorySession = {
      id: this.nextSession.toString(16).padStart(16, '0'),
      dataWatches: new Map(),
      existWatches: new Map(),
      childWatches: new Map(),
    };
    this.nextSession += 1;
    this.sessions.add(session);
    return session;
  }

  /** @internal Ends a session: its watches are dropped unfired, then its ephemerals deleted. */
  endSession(session: MemorySession): void {
    if (!this.sessions.delete(session)) return;
    session.dataWatches.clear();
    session.existWatches.clear();
    session.childWatches.clear();
    const ephemerals = [...this.nodes.entries()].filter(([, node]) => node.owner === session).map(([path]) => path);
    for (const path of ephemerals) {
      const mutation = new Mutation();
      this.applyDelete(mutation, path, undefined, `delete ${path}`);
      this.publish(mutation);
    }
  }

  /**
   * @internal Runs `apply` atomically: all its changes are kept and published, or none. With a
   * file, the promise settles once the change is on disk (or was undone because it could not be).
   */
  mutate<T>(apply: (mutation: Mutation) => T): Promise<T> {
    const mutation = new Mutation();
    let result: T;
    try {
      result = apply(mutation);
    } catch (error) {
      for (const undo of mutation.undo.reverse()) undo();
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const file = this.file;
    // A change of ephemeral nodes alone is never saved, so it waits for no write (a broker
    // registering on a full disk must not fail for a file that would not hold its node), unless
    // saved changes are still on their way: it is published after them, in order.
    const unsaved = mutation.persistent || this.flushing !== undefined;
    if (file === undefined || mutation.events.length === 0 || !unsaved) {
      this.publish(mutation);
      return Promise.resolve(result);
    }
    return new Promise<T>((resolve, reject) => {
      this.unsaved.push({ mutation, resolve: () => resolve(result), reject });
      this.flushing ??= this.flushLoop(file);
    });
  }

  /** @internal */
  applyCreate(mutation: Mutation, session: MemorySession, path: string, data: Buffer, mode: CreateMode, operation: string): string {
    if (path === '/') throw coordinationError('NODE_EXISTS', { operation, details: { path } });
    const parent = parentPath(path);
    const parentNode = this.nodes.get(parent);
    if (parentNode === undefined) throw coordinationError('NO_NODE', { operation, message: `the parent ${parent} does not exist`, details: { path } });
    if (parentNode.owner !== undefined) throw coordinationError('NO_CHILDREN_FOR_EPHEMERALS', { operation, details: { path, parent } });
    const sequential = mode === 'persistent-sequential' || mode === 'ephemeral-sequential';
    const created = sequential ? `${path}${sequenceSuffix(parentNode.cversion)}` : path;
    if (this.nodes.has(created)) throw coordinationError('NODE_EXISTS', { operation, details: { path: created } });
    const name = created.slice(created.lastIndexOf('/') + 1);
    const ephemeral = mode === 'ephemeral' || mode === 'ephemeral-sequential';
    if (!ephemeral) mutation.persistent = true;
    this.nodes.set(created, { data: Buffer.from(data), version: 0, cversion: 0, owner: ephemeral ? session : undefined, children: new Set() });
    parentNode.children.add(name);
    parentNode.cversion += 1;
    mutation.undo.push(() => {
      this.nodes.delete(created);
      parentNode.children.delete(name);
      parentNode.cversion -= 1;
    });
    mutation.events.push({ type: 'created', path: created }, { type: 'children-changed', path: parent });
    return created;
  }

  /** @internal */
  applySet(mutation: Mutation, path: string, data: Buffer, expectedVersion: number | undefined, operation: string): number {
    const node = this.checkVersion(path, expectedVersion, operation);
    if (node.owner === undefined) mutation.persistent = true;
    const { data: previousData, version: previousVersion } = node;
    node.data = Buffer.from(data);
    node.version += 1;
    mutation.undo.push(() => {
      node.data = previousData;
      node.version = previousVersion;
    });
    mutation.events.push({ type: 'data-changed', path });
    return node.version;
  }

  /** @internal */
  applyDelete(mutation: Mutation, path: string, expectedVersion: number | undefined, operation: string): void {
    if (path === '/') throw coordinationError('BAD_ARGUMENTS', { operation, message: 'the root cannot be deleted' });
    const node = this.checkVersion(path, expectedVersion, operation);
    if (node.children.size > 0) throw coordinationError('NOT_EMPTY', { operation, details: { path, children: node.children.size } });
    if (node.owner === undefined) mutation.persistent = true;
    const parent = parentPath(path);
    const parentNode = this.nodes.get(parent);
    if (parentNode === undefined) throw new Error(`memory coordination tree is inconsistent: ${path} has no parent`);
    const name = path.slice(path.lastIndexOf('/') + 1);
    this.nodes.delete(path);
    parentNode.children.delete(name);
    mutation.undo.push(() => {
      this.nodes.set(path, node);
      parentNode.children.add(name);
    });
    mutation.events.push({ type: 'deleted', path }, { type: 'children-changed', path: parent });
  }

  /** @internal Fails unless the node exists (at `expectedVersion`, when given); returns it. */
  checkVersion(path: string, expectedVersion: number | undefined, operation: string): MemoryNode {
    const node = this.nodes.get(path);
    if (node === undefined) throw coordinationError('NO_NODE', { operation, details: { path } });
    if (expectedVersion !== undefined && expectedVersion !== -1 && expectedVersion !== node.version) {
      throw coordinationError('BAD_VERSION', {
        operation,
        message: `the node is at version ${node.version}, not ${expectedVersion}`,
        details: { path, expectedVersion, version: node.version },
      });
    }
    return node;
  }

  /** @internal */
  read(session: MemorySession, path: string, watcher: Watcher | undefined): NodeData | undefined {
    const node = this.nodes.get(path);
    if (node === undefined) return undefined;
    if (watcher !== undefined) addWatch(session.dataWatches, path, watcher);
    return { data: Buffer.from(node.data), version: node.version };
  }

  /** @internal */
  exists(session: MemorySession, path: string, watcher: Watcher | undefined): boolean {
    const exists = this.nodes.has(path);
    if (watcher !== undefined) addWatch(exists ? session.dataWatches : session.existWatches, path, watcher);
    return exists;
  }

  /** @internal */
  children(session: MemorySession, path: string, watcher: Watcher | undefined): string[] | undefined {
    const node = this.nodes.get(path);
    if (node === undefined) return undefined;
    if (watcher !== undefined) addWatch(session.childWatches, path, watcher);
    return [...node.children].sort();
  }

  /** Fires, once each, the watchers the mutation's events trigger, on a microtask. */
  private publish(mutation: Mutation): void {
    for (const event of mutation.events) {
      const triggered: Watcher[] = [];
      for (const session of this.sessions) {
        const fired = new Set<Watcher>();
        const take = (watches: Map<string, Set<Watcher>>): void => {
          const watchers = watches.get(event.path);
          if (watchers === undefined) return;
          watches.delete(event.path);
          for (const watcher of watchers) fired.add(watcher);
        };
        switch (event.type) {
          case 'created':
          case 'data-changed':
            take(session.dataWatches);
            take(session.existWatches);
            break;
          case 'deleted':
            take(session.dataWatches);
            take(session.existWatches);
            take(session.childWatches);
            break;
          case 'children-changed':
            take(session.childWatches);
            break;
        }
        triggered.push(...fired);
      }
      if (triggered.length === 0) continue;
      queueMicrotask(() => {
        for (const watcher of triggered) {
          try {
            watcher(event);
          } catch (error) {
            this.logger.error({ err: error, event }, 'a coordination watcher threw; the error was dropped');
          }
        }
      });
    }
  }
}

function addWatch(watches: Map<string, Set<Watcher>>, path: string, watcher: Watcher): void {
  let watchers = watches.get(path);
  if (watchers === undefined) {
    watchers = new Set();
    watches.set(path, watchers);
  }
  watchers.add(watcher);
}

/** One session on a MemoryCoordination tree. */
export class MemoryCoordinationStore implements CoordinationStore {
  private session: MemorySession;
  private readonly listeners = new Set<SessionListener>();
  private closed = false;

  /** @internal Use MemoryCoordination.session(). */
  constructor(private readonly tree: MemoryCoordination) {
    this.session = tree.openSession();
  }

  async create(path: string, data: Buffer, mode: CreateMode): Promise<string> {
    const operation = `create ${path}`;
    this.check(path, operation);
    validateData(data, operation);
    const session = this.session;
    return this.tree.mutate((mutation) => this.tree.applyCreate(mutation, session, path, data, mode, operation));
  }

  async ensurePath(path: string): Promise<void> {
    this.check(path, `ensure ${path}`);
    if (path === '/') return;
    let current = '';
    for (const segment of path.slice(1).split('/')) {
      current = `${current}/${segment}`;
      if (this.tree.exists(this.session, current, undefined)) continue;
      const at = current;
      const session = this.session;
      await this.tree.mutate((mutation) => this.tree.applyCreate(mutation, session, at, Buffer.alloc(0), 'persistent', `ensure ${path}`));
    }
  }

  async get(path: string, watcher?: Watcher): Promise<NodeData | undefined> {
    this.check(path, `get ${path}`);
    return this.tree.read(this.session, path, watcher);
  }

  async set(path: string, data: Buffer, expectedVersion?: number): Promise<number> {
    const operation = `set ${path}`;
    this.check(path, operation);
    validateData(data, operation);
    validateVersion(expectedVersion, operation);
    return this.tree.mutate((mutation) => this.tree.applySet(mutation, path, data, expectedVersion, operation));
  }

  async delete(path: string, expectedVersion?: number): Promise<void> {
    const operation = `delete ${path}`;
    this.check(path, operation);
    validateVersion(expectedVersion, operation);
    await this.tree.mutate((mutation) => this.tree.applyDelete(mutation, path, expectedVersion, operation));
  }

  async deleteRecursive(path: string): Promise<void> {
    const operation = `delete recursively ${path}`;
    this.check(path, operation);
    if (path === '/') throw coordinationError('BAD_ARGUMENTS', { operation, message: 'the root cannot be deleted' });
    const doomed: string[] = [];
    const collect = (at: string): void => {
      doomed.push(at);
      for (const child of this.tree.children(this.session, at, undefined) ?? []) collect(childPath(at, child));
    };
    if (!this.tree.exists(this.session, path, undefined)) return;
    collect(path);
    for (const at of doomed.reverse()) await this.tree.mutate((mutation) => this.tree.applyDelete(mutation, at, undefined, operation));
  }

  async exists(path: string, watcher?: Watcher): Promise<boolean> {
    this.check(path, `exists ${path}`);
    return this.tree.exists(this.session, path, watcher);
  }

  async children(path: string, watcher?: Watcher): Promise<string[] | undefined> {
    this.check(path, `children ${path}`);
    return this.tree.children(this.session, path, watcher);
  }

  async transaction(ops: readonly TransactionOp[]): Promise<TransactionResult[]> {
    this.assertOpen('transaction');
    validateTransaction(ops);
    const session = this.session;
    return this.tree.mutate((mutation) =>
      ops.map((op, index): TransactionResult => {
        const operation = `transaction op ${index} (${op.op} ${op.path})`;
        try {
          switch (op.op) {
            case 'create':
              return { op: 'create', path: this.tree.applyCreate(mutation, session, op.path, op.data ?? Buffer.alloc(0), op.mode ?? 'persistent', operation) };
            case 'set':
              return { op: 'set', path: op.path, version: this.tree.applySet(mutation, op.path, op.data, op.expectedVersion, operation) };
            case 'delete':
              this.tree.applyDelete(mutation, op.path, op.expectedVersion, operation);
              return { op: 'delete', path: op.path };
            case 'check':
              this.tree.checkVersion(op.path, op.expectedVersion, operation);
              return { op: 'check', path: op.path };
          }
        } catch (error) {
          throw withTransactionIndex(error, index, op);
        }
      }),
    );
  }

  onSessionEvent(listener: SessionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  sessionId(): string {
    return this.session.id;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tree.endSession(this.session);
    this.listeners.clear();
  }

  /**
   * Test hook: the session expires as if ZooKeeper had expired it — its ephemerals are deleted
   * and its watches dropped unfired — and a new session takes its place. Resolves after the
   * listeners have seen 'disconnected', 'expired' and 'reconnected-new-session'.
   */
  async expireSession(): Promise<void> {
    this.assertOpen('expire session');
    this.tree.endSession(this.session);
    this.session = this.tree.openSession();
    for (const event of ['disconnected', 'expired', 'reconnected-new-session'] as const) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.emit(event);
    }
  }

  private emit(event: SessionEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.tree.logger.error({ err: error, event }, 'a session listener threw; the error was dropped');
      }
    }
  }

  private check(path: string, operation: string): void {
    this.assertOpen(operation);
    validatePath(path);
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw coordinationError('CLOSED', { operation });
  }
}

/** The error of a failed transaction op, with the op's index in its details. */
function withTransactionIndex(error: unknown, index: number, op: TransactionOp): unknown {
  if (!(error instanceof TributaryError)) return error;
  return new TributaryError({
    code: error.code,
    message: error.message,
    retriable: error.retriable,
    details: { ...error.details, index, op: op.op, path: op.path },
  });
}
