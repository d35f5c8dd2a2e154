/**
 * The ZooKeeper coordination store against real ZooKeeper: the shared contract, the chroot, the
 * connection limits, and session expiry decided by the real server.
 *
 * Expiry is produced by cutting the client off through a TCP proxy until the server has expired
 * the session (its ephemeral marker disappears for an observer), then letting it reconnect: the
 * server answers the old session id with "expired". Restarting the server instead does not
 * expire anything — ZooKeeper restores sessions from its log with a fresh timeout. (A test of
 * riding out such a restart was removed: on a loaded 2-core machine the client sometimes took
 * over a minute to reconnect to the restarted JVM, which made it flaky rather than informative.)
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import type { SessionEvent } from '../../../src/coordination/store.js';
import { ZooKeeperStore, type ZooKeeperStoreOptions } from '../../../src/coordination/zookeeper-store.js';
import { freePort } from '../../services/network.js';
import { coordinationStoreContract, failure } from '../../unit/coordination/store-contract.js';
import { zookeeperAddress } from '../services.js';
import { hostAndPort, startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const chroot = `/test-${process.pid}-${randomBytes(4).toString('hex')}`;
const silent = createLogger({ name: 'coordination-test', level: 'silent' });
const poll = { timeout: 30_000, interval: 100 };
const cleanups: (() => Promise<void>)[] = [];
let names = 0;

const servers = (): string => zookeeperAddress().connectString;
const unique = (prefix: string): string => `/${prefix}-${(names += 1)}`;

function connect(connectString: string, options: ZooKeeperStoreOptions = {}): Promise<ZooKeeperStore> {
  return ZooKeeperStore.connect(connectString, { logger: silent, ...options }).then((store) => {
    cleanups.push(() => store.close());
    return store;
  });
}

interface ProxiedStore {
  readonly store: ZooKeeperStore;
  readonly proxy: TcpProxy;
  /** Cuts the store off until the server has expired its session, then lets it reconnect. */
  readonly expire: () => Promise<void>;
}

/** A store that reaches ZooKeeper through a proxy the test can cut. */
async function proxiedStore(options: ZooKeeperStoreOptions = {}): Promise<ProxiedStore> {
  const proxy = await startTcpProxy(hostAndPort(servers()));
  cleanups.push(() => proxy.close());
  const store = await connect(`${proxy.address}${chroot}`, { sessionTimeoutMs: 2_000, ...options });
  const expire = async (): Promise<void> => {
    const observer = await connect(`${servers()}${chroot}`);
    const marker = await store.create('/expiry-marker-', Buffer.alloc(0), 'ephemeral-sequential');
    proxy.block();
    // The server deletes the session's ephemerals when it expires the session.
    await expect.poll(() => observer.exists(marker), poll).toBe(false);
    proxy.unblock();
    await observer.close();
  };
  return { store, proxy, expire };
}

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  const root = await ZooKeeperStore.connect(servers(), { logger: silent });
  try {
    await root.deleteRecursive(chroot);
  } finally {
    await root.close();
  }
});

coordinationStoreContract(
  'ZooKeeperStore',
  async () => ({
    open: () => connect(`${servers()}${chroot}`),
    openExpirable: async () => {
      const { store, expire } = await proxiedStore();
      return { store, expire };
    },
  }),
  { pollTimeoutMs: 30_000 },
);

describe('ZooKeeperStore', () => {
  it('creates a missing chroot at first connect and works inside it', async () => {
    const nested = `${chroot}${unique('nested')}/deeper`;
    const store = await connect(`${servers()}${nested}`);
    expect(await store.children('/')).toEqual([]);
    expect(await store.create('/hello', Buffer.from('inside'), 'persistent')).toBe('/hello');
    expect(await store.create('/seq-', Buffer.alloc(0), 'persistent-sequential')).toBe('/seq-0000000001');
    expect(await store.children('/')).toEqual(['hello', 'seq-0000000001']);
    const root = await connect(servers());
    expect((await root.get(`${nested}/hello`))?.data.toString('utf8')).toBe('inside');
    // A second connect finds the chroot in place.
    const again = await connect(`${servers()}${nested}`);
    expect(await again.exists('/hello')).toBe(true);
  });

  it('fails loudly, naming the address, when no server answers in time', async () => {
    const port = await freePort();
    const error = await failure(ZooKeeperStore.connect(`127.0.0.1:${port}/somewhere`, { connectTimeoutMs: 1_000, logger: silent }), 'ZOOKEEPER_UNREACHABLE');
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.retriable).toBe(true);
  });

  it('refuses a malformed connect string or options', async () => {
    for (const connectString of ['', 'localhost', 'host:1,/x', 'host:port', 'host:1/a//b']) {
      await expect(ZooKeeperStore.connect(connectString, { logger: silent })).rejects.toMatchObject({ code: expect.stringMatching(/^(CONFIG_INVALID|INVALID_PATH)$/) as unknown });
    }
    await expect(ZooKeeperStore.connect(servers(), { sessionTimeoutMs: 0, logger: silent })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('keeps its session across a short disconnection; operations meanwhile fail with a retriable TIMEOUT', async () => {
    const { store, proxy } = await proxiedStore({ sessionTimeoutMs: 30_000, operationTimeoutMs: 500 });
    const path = unique('kept');
    await store.create(path, Buffer.from('mine'), 'ephemeral');
    const sessionId = store.sessionId();
    const events: SessionEvent[] = [];
    store.onSessionEvent((event) => void events.push(event));

    proxy.block();
    await expect.poll(() => events, poll).toEqual(['disconnected']);
    const timeout = await failure(store.get(path), 'TIMEOUT');
    expect(timeout.retriable).toBe(true);
    expect(timeout.message).toContain('not sent');

    proxy.unblock();
    await expect.poll(() => events, poll).toEqual(['disconnected', 'connected']);
    expect(store.sessionId()).toBe(sessionId);
    expect((await store.get(path))?.data.toString('utf8')).toBe('mine');
  });

  it('on a real expiry fails pending operations with SESSION_EXPIRED, then opens a new session for its owner', async () => {
    const { store, proxy } = await proxiedStore({ sessionTimeoutMs: 2_000, operationTimeoutMs: 60_000 });
    const observer = await connect(`${servers()}${chroot}`);
    const path = unique('owned');
    await store.create(path, Buffer.from('old session'), 'ephemeral');
    const oldSession = store.sessionId();
    const events: SessionEvent[] = [];
    store.onSessionEvent((event) => {
      events.push(event);
      // What an owner does: re-create its ephemeral on the new session.
      if (event === 'reconnected-new-session') void store.create(path, Buffer.from('new session'), 'ephemeral');
    });

    proxy.block();
    await expect.poll(() => events, poll).toEqual(['disconnected']);
    const pending = store.get(path).then(
      () => undefined,
      (error: unknown) => error,
    );
    // The server, not the client, decides: the ephemeral goes when the server expires the session.
    await expect.poll(() => observer.exists(path), poll).toBe(false);
    proxy.unblock();

    expect(await pending).toMatchObject({ code: 'SESSION_EXPIRED', retriable: false });
    await expect.poll(() => events, poll).toEqual(['disconnected', 'expired', 'reconnected-new-session']);
    expect(store.sessionId()).not.toBe(oldSession);
    await expect.poll(async () => (await observer.get(path))?.data.toString('utf8'), poll).toBe('new session');
    expect(await store.set(path, Buffer.from('written'))).toBe(1);
  });
});
