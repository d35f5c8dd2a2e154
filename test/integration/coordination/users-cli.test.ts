/**
 * `tributary users` as an operator runs it (the bin script in a child process) against a real
 * ZooKeeper: add with the password on stdin and from a file, list, remove, and the node read back
 * in Kafka's format with keys that check the password, while a broker-side cache on another
 * session follows every change.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { userConfigPath } from '../../../src/coordination/paths.js';
import { parseScramCredential, UserCredentialCache } from '../../../src/coordination/user-credentials.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { verifyPassword } from '../../../src/protocol/sasl/scram.js';
import { runTributary } from '../../support/cli.js';
import { zookeeperAddress } from '../services.js';

const chroot = `/users-cli-${process.pid}-${randomBytes(4).toString('hex')}`;
const silent = createLogger({ name: 'users-cli-test', level: 'silent' });
const directory = mkdtempSync(join(tmpdir(), 'users-cli-'));
const poll = { timeout: 20_000, interval: 20 };

afterAll(async () => {
  rmSync(directory, { recursive: true, force: true });
  const root = await ZooKeeperStore.connect(zookeeperAddress().connectString, { logger: silent });
  try {
    await root.deleteRecursive(chroot);
  } finally {
    await root.close();
  }
});

// Each command starts node + tsx: seconds on a loaded machine.
describe('tributary users against ZooKeeper', { timeout: 120_000 }, () => {
  it('adds, lists and removes users; the nodes hold Kafka\'s JSON with working keys; a watching cache follows', async () => {
    const zookeeper = `${zookeeperAddress().connectString}${chroot}`;
    const store = await ZooKeeperStore.connect(zookeeper, { logger: silent });
    const cache = new UserCredentialCache(store, silent);
    try {
      await cache.start();

      const added = await runTributary(['users', 'add', 'CN=app,O=acme', '--mechanism', 'SCRAM-SHA-512', '--iterations', '8192', '--password-stdin', '--zookeeper', zookeeper], 'stdin-secret\n');
      expect(added.stderr).toBe('');
      expect([added.status, added.stdout]).toEqual([0, 'added SCRAM-SHA-512 credential of user CN=app,O=acme (8192 iterations)\n']);

      const file = join(directory, 'loader.pw');
      writeFileSync(file, 'file-secret\n', { mode: 0o600 });
      const second = await runTributary(['users', 'add', 'loader', '--mechanism', 'SCRAM-SHA-256', '--mechanism', 'SCRAM-SHA-512', '--password-file', file, '--zookeeper', zookeeper]);
      expect([second.status, second.stderr]).toEqual([0, '']);

      const node = await store.get(userConfigPath('CN=app,O=acme'));
      expect(node).toBeDefined();
      const json = JSON.parse(node?.data.toString('utf8') ?? '{}') as { version: number; config: Record<string, string> };
      expect(json.version).toBe(1);
      expect(Object.keys(json.config)).toEqual(['SCRAM-SHA-512']);
      expect(json.config['SCRAM-SHA-512']).toMatch(/^salt=[^,]+,stored_key=[^,]+,server_key=[^,]+,iterations=8192$/);
      expect(node?.data.toString('utf8')).not.toContain('stdin-secret');
      const credential = parseScramCredential('SCRAM-SHA-512', json.config['SCRAM-SHA-512'] ?? '');
      expect([verifyPassword('SCRAM-SHA-512', credential, 'stdin-secret'), verifyPassword('SCRAM-SHA-512', credential, 'stdin-secret\n')]).toEqual([true, false]);
      expect(await store.children('/config/users')).toEqual(['CN%3Dapp%2CO%3Dacme', 'loader']);
      await expect.poll(() => cache.userNames(), poll).toEqual(['CN=app,O=acme', 'loader']);
      expect(cache.credential('CN=app,O=acme', 'SCRAM-SHA-512')).toEqual(credential);

      const listed = await runTributary(['users', 'list', '--zookeeper', zookeeper]);
      expect([listed.status, listed.stdout]).toEqual([
        0,
        'user           mechanisms\n' + 'CN=app,O=acme  SCRAM-SHA-512 (8192 iterations)\n' + 'loader         SCRAM-SHA-256 (4096 iterations), SCRAM-SHA-512 (4096 iterations)\n',
      ]);

      const removed = await runTributary(['users', 'remove', 'CN=app,O=acme', '--zookeeper', zookeeper]);
      expect([removed.status, removed.stdout]).toEqual([0, 'removed user CN=app,O=acme\n']);
      expect(await store.get(userConfigPath('CN=app,O=acme'))).toBeUndefined();
      await expect.poll(() => cache.userNames(), poll).toEqual(['loader']);

      const again = await runTributary(['users', 'remove', 'CN=app,O=acme', '--zookeeper', zookeeper]);
      expect(again.status).toBe(1);
      expect(again.stderr).toContain('user CN=app,O=acme has no SCRAM credential');
    } finally {
      cache.stop();
      await store.close();
    }
  });

  it('never takes the password as a flag, and does not repeat it', async () => {
    const result = await runTributary(['users', 'add', 'eve', '--mechanism', 'SCRAM-SHA-512', '--password', 'hunter2', '--zookeeper', `${zookeeperAddress().connectString}${chroot}`]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('--password is not accepted');
    expect(result.output).not.toContain('hunter2');
  });
});
