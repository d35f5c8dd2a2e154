/**
 * The broker's view of the SCRAM users under /config/users, kept current by watches, so a user
 * added, changed or removed with `tributary users` counts for the next authentication without a
 * restart. Lookups are synchronous (an authentication never waits on the store).
 *
 * Watches are one-shot: a children watch on /config/users (users added or removed) and a data
 * watch on each user's node (credential changed). A fired watch leads to one coalesced re-read,
 * which reads again only the nodes whose watch fired. After a session is rebuilt every watch is
 * gone: everything is read again. A node that cannot be read is logged and counts as no
 * credentials (nobody logs in with it) until it is fixed.
 */
import type { Logger } from '../common/logger.js';
import type { ScramCredential, ScramMechanism } from '../protocol/sasl/scram.js';
import { CoalescingReload, retryWhenRetriable } from './coalescing-reload.js';
import { sanitizeUserName, userConfigPath, userConfigsPath, userNameOfNode } from './paths.js';
import type { CoordinationStore, WatchEvent } from './store.js';
import { credentialsOf, parseUserNode } from './user-credential-format.js';

type Credentials = ReadonlyMap<ScramMechanism, ScramCredential>;

/** How long to wait before reading again after a retriable failure (connection loss, timeout). */
const RETRY_MS = 500;

export class UserCredentialCache {
  private readonly users = new Map<string, Credentials>();
  /** Paths with a watch armed on the current session: their data has not changed since read. */
  private readonly armed = new Set<string>();
  private closed = false;
  private unsubscribe: (() => void) | undefined;
  /** Re-reads what changed; its failures reach the caller (start() must fail when nothing can be read). */
  private readonly reload = new CoalescingReload(() => this.load(), { isClosed: () => this.closed });
  private readonly onRefreshFailure: (error: unknown) => void;

  constructor(
    private readonly store: CoordinationStore,
    private readonly logger: Logger,
  ) {
    // Events may have been missed while the store was unreachable: read everything again.
    this.onRefreshFailure = retryWhenRetriable({ logger, message: 'could not read SASL users from the coordination store', isClosed: () => this.closed, retry: () => this.refreshInBackground(), retryMs: RETRY_MS });
  }

  /** Reads every user and arms the watches; fails if the store cannot be read now. */
  async start(): Promise<void> {
    this.unsubscribe = this.store.onSessionEvent((event) => {
      if (event !== 'reconnected-new-session' || this.closed) return;
      this.armed.clear(); // the watches died with the old session
      this.refreshInBackground();
    });
    await this.store.ensurePath(userConfigsPath());
    await this.reload.run();
  }

  stop(): void {
    this.closed = true;
    this.unsubscribe?.();
  }

  /** `user`'s credential for `mechanism`, if there is one. */
  credential(user: string, mechanism: ScramMechanism): ScramCredential | undefined {
    return this.users.get(user)?.get(mechanism);
  }

  /** The users with at least one readable credential, sorted. */
  userNames(): string[] {
    return [...this.users.keys()].filter((user) => (this.users.get(user)?.size ?? 0) > 0).sort();
  }

  private refreshInBackground(): void {
    this.reload.run().catch(this.onRefreshFailure);
  }

  /** A one-shot watcher for `path` unless one is armed already (watches must not pile up). */
  private watch(path: string): ((event: WatchEvent) => void) | undefined {
    if (this.armed.has(path)) return undefined;
    this.armed.add(path);
    return () => {
      this.armed.delete(path);
      if (!this.closed) this.refreshInBackground();
    };
  }

  private async load(): Promise<void> {
    const nodes = (await this.store.children(userConfigsPath(), this.watch(userConfigsPath()))) ?? [];
    const present = new Set<string>();
    for (const node of nodes) {
      const user = userNameOfNode(node);
      if (user === undefined || sanitizeUserName(user) !== node) continue; // not a node any tool writes for a user
      present.add(user);
      const path = userConfigPath(user);
      if (this.armed.has(path) && this.users.has(user)) continue; // unchanged since read
      const watcher = this.watch(path);
      const data = await this.store.get(path, watcher);
      if (data === undefined) {
        // Removed between the listing and the read: no watch was set, the children watch tells the rest.
        this.armed.delete(path);
        present.delete(user);
        continue;
      }
      this.users.set(user, this.parse(path, data.data));
    }
    for (const user of [...this.users.keys()]) if (!present.has(user)) this.users.delete(user);
  }

  private parse(path: string, data: Buffer): Credentials {
    try {
      return credentialsOf(path, parseUserNode(path, data));
    } catch (error) {
      this.logger.warn({ err: error, path }, 'a SASL user node cannot be read; nobody can log in as that user until it is fixed');
      return new Map();
    }
  }
}
