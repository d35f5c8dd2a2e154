/**
 * The users' SCRAM credentials for a broker's SASL listeners: the watched cache of `/config/users`
 * (coordination/user-credentials.ts), so a user added or removed with `tributary users` counts at
 * the next authentication, without a restart. Started only by brokers with a SASL listener.
 */
import type { Logger } from '../../common/logger.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { UserCredentialCache } from '../../coordination/user-credentials.js';
import type { CredentialSource } from './sasl-mechanisms.js';

export interface StartedCredentialCache {
  readonly source: CredentialSource;
  stop(): Promise<void>;
}

export async function startCredentialCache(store: CoordinationStore, logger: Logger): Promise<StartedCredentialCache> {
  const cache = new UserCredentialCache(store, logger.child({ component: 'sasl-users' }));
  await cache.start();
  return {
    source: cache,
    stop: async () => cache.stop(),
  };
}
