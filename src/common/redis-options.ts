/**
 * Credentials of a Redis connection kept out of its URL (argv is visible to every local user):
 * an ACL user and password (or `requirepass`'s password alone), and the PEM CAs a `rediss://`
 * server's certificate is checked against instead of the system's. The URL's own user and
 * password, if any, win (ioredis reads the URL first).
 */
export interface RedisCredentials {
  readonly username?: string;
  readonly password?: string;
  readonly ca?: Buffer;
}

/** ioredis options for the credentials; the CA only with `rediss://`, the scheme that asks for TLS. */
export function redisClientOptions(url: string, credentials: RedisCredentials): { username?: string; password?: string; tls?: { ca: Buffer } } {
  const { ca, ...userAndPassword } = credentials;
  return { ...userAndPassword, ...(ca !== undefined && url.startsWith('rediss://') ? { tls: { ca } } : {}) };
}
