/**
 * SASL/SCRAM users in the coordination store, at Kafka's ZooKeeper path and in its format
 * (user-credential-format.ts), so a cluster's credentials read the same to Kafka's tools and ours:
 *
 *   /config/users/<user, URL-encoded as Kafka's Sanitizer does (paths.ts userConfigPath)>
 *
 * Only salts, iteration counts and derived keys are stored, never a password. Writes are
 * conditional on the node's version, so two admins changing one user at once both land, and keys
 * of `config` other than the SCRAM mechanisms are kept. The broker reads through
 * UserCredentialCache (user-credential-cache.ts), which watches these nodes.
 */
import { TributaryError } from '../common/errors.js';
import { SCRAM_MECHANISMS, type ScramCredential, type ScramMechanism } from '../protocol/sasl/scram.js';
import { sanitizeUserName, userConfigPath, userConfigsPath, userNameOfNode } from './paths.js';
import { hasCode, type CoordinationStore } from './store.js';
import { credentialsOf, encodeUserNode, formatScramCredential, parseScramCredential, parseUserNode } from './user-credential-format.js';

export { UserCredentialCache } from './user-credential-cache.js';
export { formatScramCredential, parseScramCredential } from './user-credential-format.js';

export type UserCredentials = ReadonlyMap<ScramMechanism, ScramCredential>;

export interface UserListing {
  readonly user: string;
  /** Each mechanism the user has a credential for, with its iteration count (not a secret). */
  readonly mechanisms: readonly { readonly mechanism: ScramMechanism; readonly iterations: number }[];
  /** Why the node could not be read, when it could not (its credentials then count as none). */
  readonly problem?: string;
}

/** Attempts of a conditional write; each attempt loses only to another writer's success. */
const WRITE_ATTEMPTS = 10;

async function readConfig(store: CoordinationStore, user: string): Promise<{ version: number; config: Record<string, string> } | undefined> {
  const path = userConfigPath(user);
  const node = await store.get(path);
  return node === undefined ? undefined : { version: node.version, config: parseUserNode(path, node.data) };
}

/**
 * Applies `change` to one user's config (it returns the new config, or undefined for no node),
 * again on what another writer wrote if one got in between. Returns whether anything was written.
 */
async function updateUser(store: CoordinationStore, user: string, change: (config: Record<string, string> | undefined) => Record<string, string> | undefined): Promise<boolean> {
  const path = userConfigPath(user);
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt += 1) {
    const current = await readConfig(store, user);
    const next = change(current === undefined ? undefined : { ...current.config });
    try {
      if (current === undefined) {
        if (next === undefined) return false;
        await store.ensurePath(userConfigsPath());
        await store.create(path, encodeUserNode(next), 'persistent');
      } else if (next === undefined) {
        await store.delete(path, current.version);
      } else {
        await store.set(path, encodeUserNode(next), current.version);
      }
      return true;
    } catch (error) {
      if (!hasCode(error, 'NODE_EXISTS') && !hasCode(error, 'BAD_VERSION') && !hasCode(error, 'NO_NODE')) throw error;
    }
  }
  throw new TributaryError({ code: 'CONCURRENT_MODIFICATION', retriable: true, message: `${path} kept changing during ${WRITE_ATTEMPTS} attempts to update it; try again` });
}

/** Sets (adds or replaces) `user`'s credential for `mechanism`; other mechanisms and keys are kept. */
export async function putUserCredential(store: CoordinationStore, user: string, mechanism: ScramMechanism, credential: ScramCredential): Promise<void> {
  const value = formatScramCredential(credential);
  parseScramCredential(mechanism, value, `the new ${mechanism} credential of ${user}`); // a wrong key length never reaches the store
  await updateUser(store, user, (config) => ({ ...(config ?? {}), [mechanism]: value }));
}

/**
 * Removes `user`'s credential for `mechanism`, or for every SCRAM mechanism without one; the node
 * goes when nothing else is left in it (an unreadable node goes whole). Returns whether there was
 * such a credential.
 */
export async function removeUser(store: CoordinationStore, user: string, mechanism?: ScramMechanism): Promise<boolean> {
  let had = false;
  try {
    await updateUser(store, user, (config) => {
      if (config === undefined) return undefined;
      const removing = mechanism === undefined ? SCRAM_MECHANISMS : [mechanism];
      had = removing.some((name) => name in config);
      for (const name of removing) delete config[name];
      return Object.keys(config).length === 0 ? undefined : config;
    });
  } catch (error) {
    if (mechanism !== undefined || !(error instanceof TributaryError) || error.code !== 'USER_CREDENTIALS_INVALID') throw error;
    await store.delete(userConfigPath(user)).catch((failure: unknown) => {
      if (!hasCode(failure, 'NO_NODE')) throw failure;
    });
    return true;
  }
  return had;
}

/** `user`'s credentials by mechanism (empty when the user has none); throws USER_CREDENTIALS_INVALID. */
export async function readUserCredentials(store: CoordinationStore, user: string): Promise<UserCredentials> {
  const found = await readConfig(store, user);
  return found === undefined ? new Map() : credentialsOf(userConfigPath(user), found.config);
}

/** Every user node, sorted by name: mechanisms and iteration counts only, or why it is unreadable. */
export async function listUsers(store: CoordinationStore): Promise<UserListing[]> {
  const listings: UserListing[] = [];
  for (const node of (await store.children(userConfigsPath())) ?? []) {
    const user = userNameOfNode(node);
    // A name that does not encode back to its node is not one Kafka's tools or ours would write.
    if (user === undefined || sanitizeUserName(user) !== node) continue;
    try {
      const found = await readConfig(store, user);
      if (found === undefined) continue; // removed meanwhile
      const mechanisms = [...credentialsOf(userConfigPath(user), found.config)].map(([mechanism, credential]) => ({ mechanism, iterations: credential.iterations }));
      if (mechanisms.length > 0) listings.push({ user, mechanisms: mechanisms.sort((a, b) => a.mechanism.localeCompare(b.mechanism)) });
    } catch (error) {
      if (!(error instanceof TributaryError) || error.code !== 'USER_CREDENTIALS_INVALID') throw error;
      listings.push({ user, mechanisms: [], problem: error.message });
    }
  }
  return listings.sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : 0));
}
