/**
 * A broker whose ZooKeeper session expires (cut off by a proxy until the real server expires it)
 * builds a new session, registers again under /brokers/ids, and keeps serving.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { createLogger } from '../../../src/common/logger.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { kcat } from '../../support/kcat.js';
import { hostAndPort, startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { zookeeperAddress } from '../services.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('ZooKeeper session expiry', () => {
  it('re-registers the broker under a new session and keeps serving', async () => {
    const chroot = `/expiry-${process.pid}-${randomBytes(3).toString('hex')}`;
    const proxy: TcpProxy = await startTcpProxy(hostAndPort(zookeeperAddress().connectString));
    cleanups.push(() => proxy.close());
    const store = await ZooKeeperStore.connect(`${proxy.address}${chroot}`, { sessionTimeoutMs: 2_000 });
    const broker = await Broker.start({
      id: 5,
      listen: { host: '127.0.0.1', port: 0 },
      dataDir: mkdtempSync(join(tmpdir(), 'tributary-expiry-')),
      config: parseBrokerConfig({ 'zookeeper.session.timeout.ms': '2000' }, 'test'),
      store,
      logger: createLogger({ name: 'expiry-test', level: 'warn' }),
    });
    cleanups.push(() => broker.stop());
    const observer = await ZooKeeperStore.connect(`${zookeeperAddress().connectString}${chroot}`);
    cleanups.push(() => observer.close());
    const bootstrap = `127.0.0.1:${broker.port}`;
    expect(await observer.exists('/brokers/ids/5')).toBe(true);
    const before = await kcat(['-b', bootstrap, '-P', '-t', 'survives', '-p', '0', '-X', 'acks=all'], 'before\n');
    expect(before.status, before.stderr).toBe(0);

    proxy.block();
    // The server expires the session and deletes the broker's ephemeral registration.
    await expect.poll(() => observer.exists('/brokers/ids/5'), { timeout: 30_000, interval: 200 }).toBe(false);
    proxy.unblock();
    await expect.poll(() => observer.exists('/brokers/ids/5'), { timeout: 30_000, interval: 200 }).toBe(true);

    const after = await kcat(['-b', bootstrap, '-P', '-t', 'survives', '-p', '0', '-X', 'acks=all'], 'after\n');
    expect(after.status, after.stderr).toBe(0);
    const read = await kcat(['-b', bootstrap, '-C', '-t', 'survives', '-p', '0', '-o', 'beginning', '-e', '-f', '%s\n']);
    expect(read.stdout.split('\n').filter((line) => line !== '')).toEqual(['before', 'after']);
  });
});
