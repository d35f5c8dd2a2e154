/**
 * Credentials of the services under Tributary (ZooKeeper, Redis), from the environment, so they
 * never appear in argv:
 *
 *   TRIBUTARY_ZOOKEEPER_AUTH_FILE   file whose first line is user:password (ZooKeeper digest)
 *   TRIBUTARY_ZOOKEEPER_AUTH        user:password, when no file is named
 *   TRIBUTARY_REDIS_USERNAME        Redis ACL user (default: Redis's `default`)
 *   TRIBUTARY_REDIS_PASSWORD_FILE   file whose first line is the Redis password (requirepass or the user's)
 *   TRIBUTARY_REDIS_PASSWORD        the password, when no file is named
 *   TRIBUTARY_REDIS_CA_FILE         PEM CAs for a rediss:// server's certificate (default: the system's)
 *
 * Credentials in a `redis://user:password@host` URL still work, and win over these.
 */
import { readFileSync } from 'node:fs';
import { TributaryError } from '../common/errors.js';
import type { RedisCredentials } from '../common/redis-options.js';
import { parseZooKeeperAuth, setProcessZooKeeperAuth, type ZooKeeperAuth } from '../coordination/zookeeper-auth.js';

export type Environment = Readonly<Record<string, string | undefined>>;


export function zookeeperAuthFrom(env: Environment): ZooKeeperAuth | undefined {
  const file = env['TRIBUTARY_ZOOKEEPER_AUTH_FILE'];
  if (file !== undefined && file !== '') return parseZooKeeperAuth(firstLine(file, 'TRIBUTARY_ZOOKEEPER_AUTH_FILE'), `TRIBUTARY_ZOOKEEPER_AUTH_FILE (${file})`);
  const value = env['TRIBUTARY_ZOOKEEPER_AUTH'];
  return value === undefined || value === '' ? undefined : parseZooKeeperAuth(value, 'TRIBUTARY_ZOOKEEPER_AUTH');
}

/** Makes every ZooKeeperStore of this process authenticate as the environment says. */
export function applyZooKeeperAuth(env: Environment): void {
  setProcessZooKeeperAuth(zookeeperAuthFrom(env));
}

export function redisCredentialsFrom(env: Environment): RedisCredentials {
  const username = env['TRIBUTARY_REDIS_USERNAME'];
  const file = env['TRIBUTARY_REDIS_PASSWORD_FILE'];
  const password = file !== undefined && file !== '' ? firstLine(file, 'TRIBUTARY_REDIS_PASSWORD_FILE') : env['TRIBUTARY_REDIS_PASSWORD'];
  const caFile = env['TRIBUTARY_REDIS_CA_FILE'];
  return {
    ...(username === undefined || username === '' ? {} : { username }),
    ...(password === undefined || password === '' ? {} : { password }),
    ...(caFile === undefined || caFile === '' ? {} : { ca: Buffer.from(readText(caFile, 'TRIBUTARY_REDIS_CA_FILE')) }),
  };
}

function firstLine(file: string, variable: string): string {
  return readText(file, variable).split(/\r?\n/)[0] ?? '';
}

function readText(file: string, variable: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `${variable}: cannot read ${file}: ${(error as Error).message}`, cause: error });
  }
}
