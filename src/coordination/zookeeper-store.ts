/**
 * The coordination store over a real ZooKeeper ensemble, with node-zookeeper-client.
 *
 * One client is one ZooKeeper session. The client rides out lost connections by itself (same
 * session, ephemerals and watches kept), but an expired session is final for it, so this store
 * owns the cycle the library leaves to its user: on expiry it fails everything pending on the
 * dead session with SESSION_EXPIRED, reports 'expired', closes the dead client, connects a new
 * one and reports 'reconnected-new-session' once it has a session — then the owners re-create
 * their ephemerals and re-arm their watches.
 *
 * What the library does not do and this store adds:
 * - Bounded operations. The library queues requests made while disconnected until a connection
 *   comes back, however long that takes; here every operation fails with a retriable TIMEOUT
 *   after `operationTimeoutMs` (waiting for a connection included).
 * - Operations pending at expiry. Requests queued but not yet sent when a session expires are
 *   never answered by the library; here they fail with SESSION_EXPIRED.
 * - Version 0 in transactions. The library's Transaction turns a version of 0 into -1 ("any"),
 *   so a check, set or delete expecting a fresh node would pass at any version; the version is
 *   put back before the transaction is sent.
 * - The chroot of the connect string (`host:port/chroot`) is created at first connect.
 * - Watchers are called inside a try/catch (a throwing watcher would otherwise escape the
 *   library's socket handler), and never after their session is gone or the store is closed.
 * - The library's internal retries are off: it would resend a create after a lost connection.
 */
import zookeeper from 'node-zookeeper-client';
import { TributaryError } from '../common/errors.js';
import { createLogger, type Logger } from '../common/logger.js';
import {
  childPath,
  coordinationError,
  hasCode,
  validateData,
  validatePath,
  validateTransaction,
  validateVersion,
  COORDINATION_ERROR_CODES,
  type CoordinationErrorCode,
  type CoordinationStore,
  type CreateMode,
  type NodeData,
  type SessionEvent,
  type SessionListener,
  type TransactionOp,
  type TransactionResult,
  type WatchEventType,
  type Watcher,
} from './store.js';
import { processZooKeeperAuth, type ZooKeeperAuth } from './zookeeper-auth.js';

const { CreateMode: ZkCreateMode, Event: ZkEvent, Exception: ZkException, State: ZkState } = zookeeper;
type Client = zookeeper.Client;
type ZkWatcher = (event: zookeeper.Event) => void;

export interface ZooKeeperStoreOptions {
  /** Requested session timeout; the server may adjust it to its min/max. Default 6000 ms. */
  readonly sessionTimeoutMs?: number;
  /** How long the first connection may take before `connect` fails. Default 15000 ms. */
  readonly connectTimeoutMs?: number;
  /**
   * How long one operation may take, waiting for a connection included, before it fails with a
   * retriable TIMEOUT. Default: the session timeout — a connection that stays away longer has
   * most likely cost the session anyway.
   */
  readonly operationTimeoutMs?: number;
  /** Longest random pause between reconnection rounds over the servers. Default 250 ms. */
  readonly spinDelayMs?: number;
  readonly logger?: Logger;
  /** Credentials added to every session; default: the process's (zookeeper-auth.ts); null: none. */
  readonly auth?: ZooKeeperAuth | null;
}

interface Settings {
  readonly connectString: string;
  readonly servers: string;
  readonly chroot: string | undefined;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly operationTimeoutMs: number;
  readonly spinDelayMs: number;
  readonly logger: Logger;
  readonly auth: ZooKeeperAuth | undefined;
}

type SessionState = 'connecting' | 'connected' | 'disconnected' | 'expired' | 'closed';

/** Why a session stopped serving operations. */
type Ending = 'SESSION_EXPIRED' | 'CLOSED';

interface Waiter {
  resolve(): void;
  end(ending: Ending): void;
}

/** One client, one ZooKeeper session. */
interface Session {
  /** 1 for the first session of the store, then one more per expiry. */
  readonly number: number;
  readonly client: Client;
  state: SessionState;
  everConnected: boolean;
  /** Operations waiting for this session to connect. */
  readonly waiters: Set<Waiter>;
  /** Fails an operation submitted on this session when the session ends. */
  readonly inflight: Set<(ending: Ending) => void>;
  /** One wrapper per watcher, so a watcher set twice on a path fires once, as in ZooKeeper. */
  readonly wrappers: WeakMap<Watcher, ZkWatcher>;
}

type Done<T> = (error: unknown, value?: T) => void;

const MODES: Readonly<Record<CreateMode, number>> = {
  persistent: ZkCreateMode.PERSISTENT,
  ephemeral: ZkCreateMode.EPHEMERAL,
  'persistent-sequential': ZkCreateMode.PERSISTENT_SEQUENTIAL,
  'ephemeral-sequential': ZkCreateMode.EPHEMERAL_SEQUENTIAL,
};

const EVENT_TYPES: ReadonlyMap<number, WatchEventType> = new Map([
  [ZkEvent.NODE_CREATED, 'created'],
  [ZkEvent.NODE_DELETED, 'deleted'],
  [ZkEvent.NODE_DATA_CHANGED, 'data-changed'],
  [ZkEvent.NODE_CHILDREN_CHANGED, 'children-changed'],
]);

/** Multi-op result type of a failed op (jute OP_CODES.ERROR). */
const MULTI_ERROR = -1;
const CLOSE_WAIT_MS = 5_000;

export class ZooKeeperStore implements CoordinationStore {
  private session: Session;
  private readonly listeners = new Set<SessionListener>();
  private sessions = 0;
  private closing: Promise<void> | undefined;

  private constructor(private readonly settings: Settings) {
    this.session = this.openSession();
  }

  /**
   * Connects to `host:port[,host:port…][/chroot]`, creating the chroot if it is missing, and
   * resolves once the first session is established. Fails with ZOOKEEPER_UNREACHABLE, naming the
   * address, when that takes longer than `connectTimeoutMs`.
   */
  static async connect(connectString: string, options: ZooKeeperStoreOptions = {}): Promise<ZooKeeperStore> {
    const settings = resolveSettings(connectString, options);
    if (settings.chroot !== undefined) {
      const root = await ZooKeeperStore.connect(settings.servers, { ...options, operationTimeoutMs: settings.operationTimeoutMs });
      try {
        await root.ensurePath(settings.chroot);
      } finally {
        await root.close();
      }
    }
    const store = new ZooKeeperStore(settings);
    try {
      await store.waitConnected(store.session, Date.now() + settings.connectTimeoutMs, 'connect', () =>
        coordinationError('ZOOKEEPER_UNREACHABLE', {
          message:
            `no ZooKeeper session with ${settings.connectString} within ${settings.connectTimeoutMs} ms ` +
            `(session timeout ${settings.sessionTimeoutMs} ms): is ZooKeeper running and reachable at ${settings.servers}?`,
          details: { connectString: settings.connectString, connectTimeoutMs: settings.connectTimeoutMs },
        }),
      );
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  async create(path: string, data: Buffer, mode: CreateMode): Promise<string> {
    const operation = `create ${path}`;
    validatePath(path);
    validateData(data, operation);
    return this.call<string>(operation, (session, done) => {
      session.client.create(path, Buffer.from(data), MODES[mode], (error, created) => done(error, created));
    });
  }

  async ensurePath(path: string): Promise<void> {
    validatePath(path);
    if (path === '/' || (await this.exists(path))) return;
    let current = '';
    for (const segment of path.slice(1).split('/')) {
      current = `${current}/${segment}`;
      try {
        await this.create(current, Buffer.alloc(0), 'persistent');
      } catch (error) {
        if (!hasCode(error, 'NODE_EXISTS')) throw error;
      }
    }
  }

  async get(path: string, watcher?: Watcher): Promise<NodeData | undefined> {
    validatePath(path);
    return this.call<NodeData | undefined>(`get ${path}`, (session, done) => {
      const callback = (error: unknown, data: Buffer | null, stat: zookeeper.Stat): void => {
        if (isZkCode(error, ZkException.NO_NODE)) done(null, undefined);
        else if (isFailure(error)) done(error);
        else done(null, { data: data ?? Buffer.alloc(0), version: stat.version });
      };
      if (watcher === undefined) session.client.getData(path, callback);
      else session.client.getData(path, this.wrap(session, watcher), callback);
    });
  }

  async set(path: string, data: Buffer, expectedVersion?: number): Promise<number> {
    const operation = `set ${path}`;
    validatePath(path);
    validateData(data, operation);
    validateVersion(expectedVersion, operation);
    return this.call<number>(operation, (session, done) => {
      session.client.setData(path, Buffer.from(data), expectedVersion ?? -1, (error, stat) => {
        if (isFailure(error)) done(error);
        else done(null, stat.version);
      });
    });
  }

  async delete(path: string, expectedVersion?: number): Promise<void> {
    const operation = `delete ${path}`;
    validatePath(path);
    validateVersion(expectedVersion, operation);
    if (path === '/') throw coordinationError('BAD_ARGUMENTS', { operation, message: 'the root cannot be deleted' });
    return this.call<undefined>(operation, (session, done) => {
      session.client.remove(path, expectedVersion ?? -1, (error) => done(error, undefined));
    });
  }

  async deleteRecursive(path: string): Promise<void> {
    validatePath(path);
    if (path === '/') throw coordinationError('BAD_ARGUMENTS', { operation: `delete recursively ${path}`, message: 'the root cannot be deleted' });
    // A child created while we delete makes the final delete fail NOT_EMPTY: go round again.
    for (let round = 1; ; round += 1) {
      const children = await this.children(path);
      if (children === undefined) return;
      for (const child of children) await this.deleteRecursive(childPath(path, child));
      try {
        await this.delete(path);
        return;
      } catch (error) {
        if (hasCode(error, 'NO_NODE')) return;
        if (!hasCode(error, 'NOT_EMPTY') || round >= 10) throw error;
      }
    }
  }

  async exists(path: string, watcher?: Watcher): Promise<boolean> {
    validatePath(path);
    return this.call<boolean>(`exists ${path}`, (session, done) => {
      const callback = (error: unknown, stat: zookeeper.Stat | null): void => {
        if (isFailure(error)) done(error);
        else done(null, stat !== null && stat !== undefined);
      };
      if (watcher === undefined) session.client.exists(path, callback);
      else session.client.exists(path, this.wrap(session, watcher), callback);
    });
  }

  async children(path: string, watcher?: Watcher): Promise<string[] | undefined> {
    validatePath(path);
    return this.call<string[] | undefined>(`children ${path}`, (session, done) => {
      const callback = (error: unknown, children: string[]): void => {
        if (isZkCode(error, ZkException.NO_NODE)) done(null, undefined);
        else if (isFailure(error)) done(error);
        else done(null, [...children].sort());
      };
      if (watcher === undefined) session.client.getChildren(path, callback);
      else session.client.getChildren(path, this.wrap(session, watcher), callback);
    });
  }

  async transaction(ops: readonly TransactionOp[]): Promise<TransactionResult[]> {
    validateTransaction(ops);
    if (ops.length === 0) return [];
    const operation = `transaction of ${ops.length} ops (${ops.map((op) => `${op.op} ${op.path}`).join(', ')})`;
    return this.call<TransactionResult[]>(operation, (session, done) => {
      const transaction = session.client.transaction();
      for (const op of ops) {
        switch (op.op) {
          case 'create':
            transaction.create(op.path, Buffer.from(op.data ?? Buffer.alloc(0)), MODES[op.mode ?? 'persistent']);
            break;
          case 'set':
            transaction.setData(op.path, Buffer.from(op.data), op.expectedVersion ?? -1);
            restoreVersion(transaction, op.expectedVersion);
            break;
          case 'delete':
            transaction.remove(op.path, op.expectedVersion ?? -1);
            restoreVersion(transaction, op.expectedVersion);
            break;
          case 'check':
            transaction.check(op.path, op.expectedVersion ?? -1);
            restoreVersion(transaction, op.expectedVersion);
            break;
        }
      }
      transaction.commit((error, results: unknown) => {
        if (isFailure(error)) {
          done(this.transactionError(error, results, ops));
          return;
        }
        done(null, transactionResults(results, ops));
      });
    });
  }

  onSessionEvent(listener: SessionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  sessionId(): string {
    return this.session.client.getSessionId().toString('hex');
  }

  /** Closes the session (the server deletes its ephemerals) and waits, briefly, for the goodbye. */
  async close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    const session = this.session;
    const wasConnected = session.state === 'connected';
    this.end(session, 'CLOSED');
    this.listeners.clear();
    this.closing = closeClient(session.client, wasConnected, this.settings.logger);
    return this.closing;
  }

  // --- sessions ---------------------------------------------------------------------------------

  private openSession(): Session {
    this.sessions += 1;
    const client = zookeeper.createClient(this.settings.connectString, {
      sessionTimeout: this.settings.sessionTimeoutMs,
      spinDelay: this.settings.spinDelayMs,
      retries: 0,
    });
    const session: Session = {
      number: this.sessions,
      client,
      state: 'connecting',
      everConnected: false,
      waiters: new Set(),
      inflight: new Set(),
      wrappers: new WeakMap(),
    };
    client.on('state', (state: zookeeper.State) => this.onState(session, state));
    // Added before connect: the library sends it as soon as the connection is up, and again after
    // each reconnection within the session.
    const auth = this.settings.auth;
    if (auth !== undefined) client.addAuthInfo(auth.scheme, Buffer.from(auth.credentials, 'utf8'));
    client.connect();
    return session;
  }

  private onState(session: Session, state: zookeeper.State): void {
    // Events of a client already given up (expired or closed) are of no interest.
    if (session !== this.session || session.state === 'expired' || session.state === 'closed') return;
    const log = this.settings.logger;
    if (state === ZkState.SYNC_CONNECTED) {
      const first = !session.everConnected;
      session.everConnected = true;
      session.state = 'connected';
      for (const waiter of [...session.waiters]) waiter.resolve();
      if (first && session.number > 1) {
        log.warn({ sessionId: this.sessionId(), session: session.number }, 'new ZooKeeper session established after expiry');
        this.emit('reconnected-new-session');
      } else {
        log.info({ sessionId: this.sessionId(), reconnected: !first }, 'connected to ZooKeeper');
        this.emit('connected');
      }
    } else if (state === ZkState.DISCONNECTED) {
      if (session.state !== 'connected') return;
      session.state = 'disconnected';
      log.warn({ sessionId: this.sessionId() }, 'disconnected from ZooKeeper; reconnecting within the session');
      this.emit('disconnected');
    } else if (state === ZkState.EXPIRED) {
      log.warn({ sessionId: this.sessionId() }, 'ZooKeeper session expired; opening a new session');
      this.end(session, 'SESSION_EXPIRED');
      // closeClient waits a turn, so the library finishes its own state change first.
      void closeClient(session.client, false, log);
      // The new session first, so anything a listener does on 'expired' goes to it.
      this.session = this.openSession();
      this.emit('expired');
    } else if (state === ZkState.AUTH_FAILED) {
      log.error('ZooKeeper authentication failed');
    }
  }

  /** Marks a session dead and fails everything waiting on it or pending in it. */
  private end(session: Session, ending: Ending): void {
    session.state = ending === 'CLOSED' ? 'closed' : 'expired';
    for (const waiter of [...session.waiters]) waiter.end(ending);
    for (const fail of [...session.inflight]) fail(ending);
  }

  private emit(event: SessionEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.settings.logger.error({ err: error, event }, 'a session listener threw; the error was dropped');
      }
    }
  }

  /** Resolves once `session` is connected; rejects when it ends or `deadline` passes. */
  private waitConnected(session: Session, deadline: number, operation: string, timeoutError: () => TributaryError): Promise<void> {
    switch (session.state) {
      case 'connected':
        return Promise.resolve();
      case 'expired':
        return Promise.reject(coordinationError('SESSION_EXPIRED', { operation }));
      case 'closed':
        return Promise.reject(coordinationError('CLOSED', { operation }));
      case 'connecting':
      case 'disconnected':
        break;
    }
    return new Promise<void>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        session.waiters.delete(waiter);
      };
      const waiter: Waiter = {
        resolve: () => {
          finish();
          resolve();
        },
        end: (ending) => {
          finish();
          reject(coordinationError(ending, { operation }));
        },
      };
      const timer = setTimeout(() => {
        finish();
        reject(timeoutError());
      }, Math.max(0, deadline - Date.now()));
      session.waiters.add(waiter);
    });
  }

  /**
   * Runs one request on the current session: waits for a connection, sends, and settles on the
   * answer, on the end of the session, or at the operation deadline — whichever comes first.
   */
  private async call<T>(operation: string, invoke: (session: Session, done: Done<T>) => void): Promise<T> {
    if (this.closing !== undefined) throw coordinationError('CLOSED', { operation });
    const session = this.session;
    const timeoutMs = this.settings.operationTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    await this.waitConnected(session, deadline, operation, () =>
      coordinationError('TIMEOUT', {
        operation,
        message: `no connection to ZooKeeper at ${this.settings.connectString} within ${timeoutMs} ms, so the request was not sent`,
        details: { timeoutMs },
      }),
    );
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        session.inflight.delete(end);
        return true;
      };
      const fail = (error: TributaryError): void => {
        if (settle()) reject(error);
      };
      const end = (ending: Ending): void => fail(coordinationError(ending, { operation }));
      const timer = setTimeout(
        () =>
          fail(
            coordinationError('TIMEOUT', {
              operation,
              message: `no answer from ZooKeeper within ${timeoutMs} ms; the outcome is unknown`,
              details: { timeoutMs },
            }),
          ),
        Math.max(0, deadline - Date.now()),
      );
      session.inflight.add(end);
      try {
        invoke(session, (error, value) => {
          if (isFailure(error)) fail(translate(error, operation));
          else if (settle()) resolve(value as T);
        });
      } catch (error) {
        fail(translate(error, operation));
      }
    });
  }

  /** The library's watcher for `watcher` on `session`: typed events, guarded, once per path. */
  private wrap(session: Session, watcher: Watcher): ZkWatcher {
    let wrapped = session.wrappers.get(watcher);
    if (wrapped === undefined) {
      wrapped = (event: zookeeper.Event): void => {
        if (session !== this.session || session.state === 'expired' || session.state === 'closed') return;
        const type = EVENT_TYPES.get(event.getType());
        if (type === undefined) return;
        try {
          watcher({ type, path: event.getPath() });
        } catch (error) {
          this.settings.logger.error({ err: error, type, path: event.getPath() }, 'a coordination watcher threw; the error was dropped');
        }
      };
      session.wrappers.set(watcher, wrapped);
    }
    return wrapped;
  }

  private transactionError(error: unknown, results: unknown, ops: readonly TransactionOp[]): TributaryError {
    const index = Array.isArray(results)
      ? results.findIndex((result: unknown) => isRecord(result) && result['type'] === MULTI_ERROR && result['err'] !== 0)
      : -1;
    const op = ops[index];
    if (op === undefined) return translate(error, `transaction of ${ops.length} ops`);
    const failed = translate(error, `transaction op ${index} (${op.op} ${op.path})`);
    return new TributaryError({
      code: failed.code,
      message: failed.message,
      retriable: failed.retriable,
      cause: error,
      details: { index, op: op.op, path: op.path },
    });
  }
}

// --- helpers ----------------------------------------------------------------------------------

function resolveSettings(connectString: string, options: ZooKeeperStoreOptions): Settings {
  const match = /^([^,/\s]+:\d{1,5}(?:,[^,/\s]+:\d{1,5})*)(\/\S*)?$/.exec(connectString);
  const servers = match?.[1];
  if (servers === undefined) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `ZooKeeper connect string ${JSON.stringify(connectString)} is not HOST:PORT[,HOST:PORT…][/chroot]`,
      details: { connectString },
    });
  }
  let chroot = match?.[2];
  if (chroot === '/') chroot = undefined;
  if (chroot !== undefined) validatePath(chroot);
  const sessionTimeoutMs = positive(options.sessionTimeoutMs, 6_000, 'sessionTimeoutMs');
  return {
    connectString: chroot === undefined ? servers : `${servers}${chroot}`,
    servers,
    chroot,
    sessionTimeoutMs,
    connectTimeoutMs: positive(options.connectTimeoutMs, 15_000, 'connectTimeoutMs'),
    operationTimeoutMs: positive(options.operationTimeoutMs, sessionTimeoutMs, 'operationTimeoutMs'),
    spinDelayMs: positive(options.spinDelayMs, 250, 'spinDelayMs'),
    logger: options.logger ?? createLogger({ name: 'coordination', level: 'warn' }),
    auth: options.auth === null ? undefined : (options.auth ?? processZooKeeperAuth()),
  };
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `ZooKeeper option ${name} must be a positive number, not ${String(value)}` });
  }
  return value;
}

/** The library reports success as `null` (or, in places, `undefined`). */
function isFailure(error: unknown): boolean {
  return error !== null && error !== undefined;
}

function isZkCode(error: unknown, code: number): boolean {
  return error instanceof ZkException && error.getCode() === code;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

const KNOWN_CODES: ReadonlySet<string> = new Set(COORDINATION_ERROR_CODES);

/** A library error as a TributaryError: ZooKeeper's code name, the original as the cause. */
function translate(error: unknown, operation: string): TributaryError {
  if (error instanceof TributaryError) return error;
  if (error instanceof ZkException) {
    const name = error.getName();
    const code: CoordinationErrorCode = name === 'OPERATION_TIMEOUT' ? 'TIMEOUT' : KNOWN_CODES.has(name) ? (name as CoordinationErrorCode) : 'ZOOKEEPER_ERROR';
    return coordinationError(code, {
      operation,
      ...(code === 'ZOOKEEPER_ERROR' ? { message: `ZooKeeper answered ${name} (${error.getCode()})` } : {}),
      cause: error,
      details: { zookeeperCode: error.getCode(), zookeeperName: name },
    });
  }
  return coordinationError('ZOOKEEPER_ERROR', {
    operation,
    message: `the ZooKeeper client failed: ${error instanceof Error ? error.message : String(error)}`,
    cause: error,
  });
}

/**
 * node-zookeeper-client's Transaction stores `version || -1`, turning an expected version of 0
 * into "any version". Put the intended version back on the op just added.
 */
function restoreVersion(transaction: zookeeper.Transaction, expectedVersion: number | undefined): void {
  if (expectedVersion === undefined) return;
  const ops = (transaction as unknown as { ops?: unknown }).ops;
  const last: unknown = Array.isArray(ops) ? ops[ops.length - 1] : undefined;
  if (!isRecord(last) || typeof last['version'] !== 'number') {
    throw coordinationError('ZOOKEEPER_ERROR', {
      message: 'node-zookeeper-client Transaction internals changed (no ops[].version); cannot send expected versions safely',
    });
  }
  last['version'] = expectedVersion;
}

function transactionResults(results: unknown, ops: readonly TransactionOp[]): TransactionResult[] {
  const list: unknown[] = Array.isArray(results) ? results : [];
  return ops.map((op, index): TransactionResult => {
    const result = list[index];
    switch (op.op) {
      case 'create':
        return { op: 'create', path: isRecord(result) && typeof result['path'] === 'string' ? result['path'] : op.path };
      case 'set': {
        const stat = isRecord(result) ? result['stat'] : undefined;
        const version = isRecord(stat) && typeof stat['version'] === 'number' ? stat['version'] : -1;
        return { op: 'set', path: op.path, version };
      }
      case 'delete':
        return { op: 'delete', path: op.path };
      case 'check':
        return { op: 'check', path: op.path };
    }
  });
}

/**
 * Closes a client. A connected one says goodbye (the server deletes its ephemerals before it
 * drops the connection), which we wait for, briefly; a dead or connecting one is just let go.
 */
async function closeClient(client: Client, connected: boolean, logger: Logger): Promise<void> {
  // A client created in this very turn has no socket yet (it makes one on the next tick), and
  // the library throws if asked to close then, leaving that socket to connect anyway.
  if (!connected) await new Promise<void>((resolve) => setImmediate(resolve));
  const gone = connected
    ? new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CLOSE_WAIT_MS);
        client.once('disconnected', () => {
          clearTimeout(timer);
          resolve();
        });
      })
    : Promise.resolve();
  try {
    client.close();
  } catch (error) {
    logger.debug({ err: error }, 'closing the ZooKeeper client failed; dropping it');
    return;
  }
  await gone;
}
