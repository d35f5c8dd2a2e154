/**
 * ZooKeeper digest authentication against the real server: a node whose ACL allows only
 * `digest:alice` is readable and writable by a store with alice's credentials (given per store or
 * as the process's), refused (NO_AUTH) without them or with a wrong password, and still readable
 * after the store's session expired and it opened a new one (the credentials go with every
 * session). The environment variables the CLI reads are checked too.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zookeeperAuthFrom } from '../../../src/cli/service-credentials.js';
import { createLogger } from '../../../src/common/logger.js';
import { parseZooKeeperAuth, setProcessZooKeeperAuth } from '../../../src/coordination/zookeeper-auth.js';
import { ZooKeeperStore, type ZooKeeperStoreOptions } from '../../../src/coordination/zookeeper-store.js';
import { hostAndPort, startTcpProxy } from '../../support/tcp-proxy.js';
import { zookeeperAddress } from '../services.js';

const silent = createLogger({ name: 'zookeeper-digest-test', level: 'silent' });
const poll = { timeout: 30_000, interval: 100 };
const root = `/t-digest-${process.pid}-${randomBytes(4).toString('hex')}`;
const secret = `${root}/secret`;
const alice = parseZooKeeperAuth('alice:alice-pw', 'test');
const stores: ZooKeeperStore[] = [];
const servers = (): string => zookeeperAddress().connectString;

async function connect(connectString: string, options: ZooKeeperStoreOptions = {}): Promise<ZooKeeperStore> {
  const store = await ZooKeeperStore.connect(connectString, { logger: silent, ...options });
  stores.push(store);
  return store;
}

/** Creates `secret` with an ACL of alice only, through the bare library (our store creates open nodes). */
async function createProtectedNode(): Promise<void> {
  const client = zookeeper.createClient(servers(), { retries: 0 });
  client.addAuthInfo('digest', Buffer.from('alice:alice-pw'));
  await new Promise<void>((resolve) => {
    client.once('connected', () => resolve());
    client.connect();
  });
  const digest = createHash('sha1').update('alice:alice-pw').digest('base64');
  const aliceOnly = [new zookeeper.ACL(zookeeper.Permission.ALL, new zookeeper.Id('digest', `alice:${digest}`))];
  try {
    await new Promise<void>((resolve, reject) => client.mkdirp(root, (error) => (error ? reject(new Error('mkdirp failed', { cause: error })) : resolve())));
    await new Promise<void>((resolve, reject) =>
      client.create(secret, Buffer.from('for alice'), aliceOnly, zookeeper.CreateMode.PERSISTENT, (error) => (error ? reject(new Error('create failed', { cause: error })) : resolve())),
    );
  } finally {
    client.close();
  }
}

beforeAll(createProtectedNode);

afterAll(async () => {
  setProcessZooKeeperAuth(undefined);
  for (const store of stores.splice(0)) await store.close().catch(() => undefined);
  const cleaner = await ZooKeeperStore.connect(servers(), { logger: silent, auth: alice });
  try {
    await cleaner.deleteRecursive(root);
  } finally {
    await cleaner.close();
  }
});

describe('ZooKeeper digest authentication', () => {
  it('reads and writes a digest-protected node with the credentials, and gets NO_AUTH without them', async () => {
    const withAuth = await connect(servers(), { auth: alice });
    expect((await withAuth.get(secret))?.data.toString()).toBe('for alice');
    expect(await withAuth.set(secret, Buffer.from('by alice'))).toBe(1);

    const without = await connect(servers(), { auth: null });
    await expect(without.get(secret)).rejects.toMatchObject({ details: { zookeeperName: 'NO_AUTH' } });
    const wrong = await connect(servers(), { auth: parseZooKeeperAuth('alice:guess', 'test') });
    await expect(wrong.get(secret)).rejects.toMatchObject({ details: { zookeeperName: 'NO_AUTH' } });
  });

  it("uses the process's credentials when a store is given none", async () => {
    setProcessZooKeeperAuth(alice);
    try {
      const store = await connect(servers());
      expect((await store.get(secret))?.data.toString()).toBe('by alice');
    } finally {
      setProcessZooKeeperAuth(undefined);
    }
    const store = await connect(servers());
    await expect(store.get(secret)).rejects.toMatchObject({ details: { zookeeperName: 'NO_AUTH' } });
  });

  it('authenticates the new session after an expiry too', async () => {
    const proxy = await startTcpProxy(hostAndPort(servers()));
    try {
      const store = await connect(proxy.address, { auth: alice, sessionTimeoutMs: 2_000 });
      const observer = await connect(servers(), { auth: null });
      const marker = await store.create(`${root}/marker-`, Buffer.alloc(0), 'ephemeral-sequential');
      const before = store.sessionId();
      proxy.block();
      await expect.poll(() => observer.exists(marker), poll).toBe(false);
      proxy.unblock();
      await expect.poll(() => store.sessionId() !== before && store.sessionId() !== undefined, poll).toBe(true);
      await expect.poll(async () => (await store.get(secret).catch(() => undefined))?.data.toString(), poll).toBe('by alice');
    } finally {
      await proxy.close();
    }
  });

  it('takes the credentials from TRIBUTARY_ZOOKEEPER_AUTH_FILE or TRIBUTARY_ZOOKEEPER_AUTH', () => {
    const folder = mkdtempSync(join(tmpdir(), 'tributary-zk-auth-'));
    try {
      writeFileSync(join(folder, 'zk'), 'alice:from-file\n');
      expect(zookeeperAuthFrom({ TRIBUTARY_ZOOKEEPER_AUTH_FILE: join(folder, 'zk'), TRIBUTARY_ZOOKEEPER_AUTH: 'x:y' })).toEqual({ scheme: 'digest', credentials: 'alice:from-file' });
      expect(zookeeperAuthFrom({ TRIBUTARY_ZOOKEEPER_AUTH: 'digest:bob:pw' })).toEqual({ scheme: 'digest', credentials: 'bob:pw' });
      expect(zookeeperAuthFrom({})).toBeUndefined();
      expect(() => zookeeperAuthFrom({ TRIBUTARY_ZOOKEEPER_AUTH: 'no-password' })).toThrow(/user:password/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
