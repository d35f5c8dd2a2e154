/**
 * ACLs in the coordination store, in Kafka's ZooKeeper layout and JSON, so the same tree reads
 * the same to Tributary and to Kafka's tools:
 *
 *   /kafka-acl/<Topic|Group|Cluster|…>/<name>                    LITERAL patterns
 *   /kafka-acl-extended/prefixed/<Topic|Group|…>/<name>          PREFIXED patterns
 *
 *   {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
 *
 * One node per resource pattern holds all of its entries, so a change is a read-modify-write:
 * every write is conditional on the node version read (create-if-absent for a new node, delete
 * at that version for the last entry), and a lost race is read again and retried — two admins
 * adding entries to one topic at once keep both.
 *
 * `AclCache` keeps every node in memory, kept current by watches (one-shot, re-armed; all re-read
 * after a session is rebuilt), as the broker's Cluster does for topics.
 */
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { CoalescingReload, retryWhenRetriable } from './coalescing-reload.js';
import { aclResourcePath, aclResourceTypePath, aclRootPath } from './paths.js';
import { hasCode, parentPath, type CoordinationStore, type Watcher } from './store.js';

export type AclPatternName = 'LITERAL' | 'PREFIXED';

/** A resource pattern as the store names it: Kafka's `Topic`, `Group`, `Cluster`, … */
export interface StoredAclResource {
  readonly patternType: AclPatternName;
  readonly resourceType: string;
  readonly name: string;
}

/** One entry as Kafka writes it: `permissionType` `Allow`/`Deny`, `operation` `Read`, `DescribeConfigs`, … */
export interface StoredAclEntry {
  readonly principal: string;
  readonly permissionType: string;
  readonly operation: string;
  readonly host: string;
}

export interface StoredAcls {
  readonly resource: StoredAclResource;
  readonly entries: readonly StoredAclEntry[];
}

const PATTERN_TYPES: readonly AclPatternName[] = ['LITERAL', 'PREFIXED'];

/** How often a conditional write that lost a race is read and tried again before giving up. */
const MAX_UPDATE_ATTEMPTS = 20;

export function encodeAcls(entries: readonly StoredAclEntry[]): Buffer {
  return Buffer.from(JSON.stringify({ version: 1, acls: entries.map(({ principal, permissionType, operation, host }) => ({ principal, permissionType, operation, host })) }));
}

/** Parses a node's JSON; throws ACL_NODE_INVALID naming the path when it is not Kafka's format. */
export function decodeAcls(data: Buffer, path: string): StoredAclEntry[] {
  const invalid = (reason: string): TributaryError =>
    new TributaryError({ code: 'ACL_NODE_INVALID', message: `ACL node ${path} is not Kafka's ACL JSON: ${reason}`, details: { path } });
  if (data.length === 0) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch (error) {
    throw invalid((error as Error).message);
  }
  if (typeof parsed !== 'object' || parsed === null) throw invalid('not an object');
  const { version, acls } = parsed as { version?: unknown; acls?: unknown };
  if (version !== 1) throw invalid(`version ${JSON.stringify(version)} is not 1`);
  if (!Array.isArray(acls)) throw invalid('"acls" is not an array');
  return acls.map((item: unknown, index) => {
    const entry = item as Record<string, unknown> | null;
    const text = (key: string): string => {
      const value = entry?.[key];
      if (typeof value !== 'string' || value === '') throw invalid(`acls[${index}].${key} is not a non-empty string`);
      return value;
    };
    return { principal: text('principal'), permissionType: text('permissionType'), operation: text('operation'), host: text('host') };
  });
}

function entryKey(entry: StoredAclEntry): string {
  return JSON.stringify([entry.principal, entry.permissionType, entry.operation, entry.host]);
}

/** The entries without repeats, in first-seen order (a node is a set, as in Kafka). */
export function distinctEntries(entries: readonly StoredAclEntry[]): StoredAclEntry[] {
  const seen = new Map<string, StoredAclEntry>();
  for (const entry of entries) if (!seen.has(entryKey(entry))) seen.set(entryKey(entry), entry);
  return [...seen.values()];
}

function sameEntries(a: readonly StoredAclEntry[], b: readonly StoredAclEntry[]): boolean {
  const keys = new Set(a.map(entryKey));
  return a.length === b.length && b.every((entry) => keys.has(entryKey(entry)));
}

export function storedAclPath(resource: StoredAclResource): string {
  return aclResourcePath(resource.patternType, resource.resourceType, resource.name);
}

/**
 * Replaces one resource's entries with `change(current)`, conditionally on the version read;
 * a node left without entries is deleted. Returns the entries before and after.
 */
export async function updateResourceAcls(
  store: CoordinationStore,
  resource: StoredAclResource,
  change: (current: readonly StoredAclEntry[]) => readonly StoredAclEntry[],
): Promise<{ readonly before: readonly StoredAclEntry[]; readonly after: readonly StoredAclEntry[] }> {
  const path = storedAclPath(resource);
  for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt += 1) {
    const node = await store.get(path);
    const before = node === undefined ? [] : decodeAcls(node.data, path);
    const after = distinctEntries(change(before));
    if (node !== undefined && after.length > 0 && sameEntries(before, after)) return { before, after };
    if (node === undefined && after.length === 0) return { before, after };
    try {
      if (node === undefined) {
        await store.ensurePath(parentPath(path));
        await store.create(path, encodeAcls(after), 'persistent');
      } else if (after.length === 0) {
        await store.delete(path, node.version);
      } else {
        await store.set(path, encodeAcls(after), node.version);
      }
      return { before, after };
    } catch (error) {
      // Someone else changed the node between our read and write: read it again.
      if (hasCode(error, 'BAD_VERSION') || hasCode(error, 'NODE_EXISTS') || hasCode(error, 'NO_NODE')) continue;
      throw error;
    }
  }
  throw new TributaryError({
    code: 'ACL_UPDATE_CONFLICT',
    message: `the ACLs of ${path} changed under ${MAX_UPDATE_ATTEMPTS} attempts in a row; nothing was written by the last attempt, retry`,
    retriable: true,
    details: { path },
  });
}

/**
 * Reads every ACL node. `watchFor` may give a watcher per path (the cache's); a path it gives
 * none for and that `known` holds is unchanged since it was read (its watch is still armed).
 */
async function loadAcls(
  store: CoordinationStore,
  watchFor: (path: string) => Watcher | undefined,
  known: (path: string) => readonly StoredAclEntry[] | undefined,
  onInvalid: (error: unknown) => void,
  onMissing: (path: string) => void = () => {},
): Promise<Map<string, StoredAcls>> {
  const loaded = new Map<string, StoredAcls>();
  for (const patternType of PATTERN_TYPES) {
    const root = aclRootPath(patternType);
    const types = (await store.children(root, watchFor(root))) ?? [];
    for (const resourceType of types) {
      const typePath = aclResourceTypePath(patternType, resourceType);
      const names = (await store.children(typePath, watchFor(typePath))) ?? [];
      for (const name of names) {
        const resource = { patternType, resourceType, name };
        const path = storedAclPath(resource);
        const watcher = watchFor(path);
        const unchanged = watcher === undefined ? known(path) : undefined;
        if (unchanged !== undefined) {
          loaded.set(path, { resource, entries: unchanged });
          continue;
        }
        const node = await store.get(path, watcher);
        if (node === undefined) {
          onMissing(path);
          continue;
        }
        try {
          loaded.set(path, { resource, entries: decodeAcls(node.data, path) });
        } catch (error) {
          onInvalid(error);
        }
      }
    }
  }
  return loaded;
}

/** Every stored resource pattern with its entries (no watches). Invalid nodes throw. */
export async function readAllAcls(store: CoordinationStore): Promise<StoredAcls[]> {
  const loaded = await loadAcls(
    store,
    () => undefined,
    () => undefined,
    (error) => {
      throw error;
    },
  );
  return [...loaded.values()];
}

/** Every ACL node in memory, re-read when a watch fires. */
export class AclCache {
  private current: ReadonlyMap<string, StoredAcls> = new Map();
  private readonly armed = new Set<string>();
  private closed = false;
  private unsubscribe: () => void = () => {};
  private readonly reload: CoalescingReload;

  constructor(
    private readonly store: CoordinationStore,
    private readonly logger: Logger,
    /** Called after each reload that may have changed the ACLs. */
    private readonly onChange: () => void = () => {},
  ) {
    const isClosed = (): boolean => this.closed;
    this.reload = new CoalescingReload(() => this.load(), {
      isClosed,
      onFailure: retryWhenRetriable({ logger, message: 'could not read the ACLs from the coordination store', isClosed, retry: () => void this.refresh() }),
    });
  }

  /** Creates the roots (as Kafka does at start-up) and loads every node. */
  async start(): Promise<void> {
    for (const patternType of PATTERN_TYPES) await this.store.ensurePath(aclRootPath(patternType));
    this.unsubscribe = this.store.onSessionEvent((event) => {
      if (event === 'reconnected-new-session' && !this.closed) {
        this.armed.clear(); // watches died with the old session
        void this.refresh();
      }
    });
    await this.refresh();
  }

  stop(): void {
    this.closed = true;
    this.unsubscribe();
  }

  /** Every resource pattern with ACLs, as last read. */
  all(): Iterable<StoredAcls> {
    return this.current.values();
  }

  /**
   * Re-reads what changed. Bursts coalesce; a call made during a reload is covered by one more
   * reload, so after `await refresh()` the cache holds at least what was stored at the call.
   */
  refresh(): Promise<void> {
    return this.reload.run();
  }

  private async load(): Promise<void> {
    this.current = await loadAcls(
      this.store,
      (path) => this.watch(path),
      (path) => this.current.get(path)?.entries,
      (error) => this.logger.error({ err: error }, 'ignoring an ACL node that does not parse; fix or delete it with tributary acls'),
      (path) => this.armed.delete(path), // a get on a missing node sets no watch
    );
    this.onChange();
  }

  /** A one-shot watcher for `path`, unless one is armed already (watches must not pile up). */
  private watch(path: string): Watcher | undefined {
    if (this.armed.has(path)) return undefined;
    this.armed.add(path);
    return () => {
      this.armed.delete(path);
      if (!this.closed) void this.refresh();
    };
  }
}
