/**
 * ZooKeeper authentication of this process's sessions: the `digest` scheme (`user:password`),
 * added to every session the ZooKeeperStore opens (a new session after expiry included), so
 * nodes whose ACL names `digest:user:<hash>` are readable and writable by it.
 *
 * As with Kafka's JAAS `Client` section, the identity is the process's, not a connection's:
 * `src/cli` sets it once from TRIBUTARY_ZOOKEEPER_AUTH_FILE (a file whose first line is
 * user:password) or TRIBUTARY_ZOOKEEPER_AUTH (user:password), and every store uses it unless
 * given another one. Nothing logs the credentials.
 */
import { TributaryError } from '../common/errors.js';

export interface ZooKeeperAuth {
  readonly scheme: 'digest';
  /** `user:password`. */
  readonly credentials: string;
}

let processAuth: ZooKeeperAuth | undefined;

/** `user:password` (an optional `digest:` prefix is accepted) as digest credentials. */
export function parseZooKeeperAuth(text: string, source: string): ZooKeeperAuth {
  const value = text.trim().replace(/^digest:/, '');
  const colon = value.indexOf(':');
  if (colon <= 0) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `${source} must hold ZooKeeper digest credentials as user:password` });
  }
  return { scheme: 'digest', credentials: value };
}

/** The identity every ZooKeeperStore of this process authenticates as; undefined: none. */
export function setProcessZooKeeperAuth(auth: ZooKeeperAuth | undefined): void {
  processAuth = auth;
}

export function processZooKeeperAuth(): ZooKeeperAuth | undefined {
  return processAuth;
}
