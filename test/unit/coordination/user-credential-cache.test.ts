/**
 * The broker's watched view of SCRAM users: users added, changed and removed show up without a
 * restart, watches come back after a session expiry, and an unreadable node counts as no user.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { userConfigPath } from '../../../src/coordination/paths.js';
import { putUserCredential, removeUser, UserCredentialCache } from '../../../src/coordination/user-credentials.js';
import { scramCredential } from '../../../src/protocol/sasl/scram.js';

const silent = createLogger({ name: 'user-cache-test', level: 'silent' });
const poll = { timeout: 10_000, interval: 5 };
const caches: UserCredentialCache[] = [];

afterEach(() => {
  for (const cache of caches.splice(0)) cache.stop();
});

async function started(coordination: MemoryCoordination): Promise<{ cache: UserCredentialCache; broker: ReturnType<MemoryCoordination['session']> }> {
  const broker = coordination.session();
  const cache = new UserCredentialCache(broker, silent);
  caches.push(cache);
  await cache.start();
  return { cache, broker };
}

describe('UserCredentialCache', () => {
  it('reads the users there at start, then follows adds, changes and removals made elsewhere', async () => {
    const coordination = new MemoryCoordination();
    const admin = coordination.session();
    const first = scramCredential('SCRAM-SHA-512', 'one');
    await putUserCredential(admin, 'alice', 'SCRAM-SHA-512', first);
    const { cache } = await started(coordination);
    expect(cache.credential('alice', 'SCRAM-SHA-512')).toEqual(first);
    expect(cache.credential('alice', 'SCRAM-SHA-256')).toBeUndefined();

    const bob = scramCredential('SCRAM-SHA-256', 'bob');
    await putUserCredential(admin, 'CN=bob,O=acme', 'SCRAM-SHA-256', bob);
    await expect.poll(() => cache.credential('CN=bob,O=acme', 'SCRAM-SHA-256'), poll).toEqual(bob);

    const second = scramCredential('SCRAM-SHA-512', 'two');
    await putUserCredential(admin, 'alice', 'SCRAM-SHA-512', second);
    await expect.poll(() => cache.credential('alice', 'SCRAM-SHA-512'), poll).toEqual(second);

    await removeUser(admin, 'alice');
    await expect.poll(() => cache.userNames(), poll).toEqual(['CN=bob,O=acme']);
    expect(cache.credential('alice', 'SCRAM-SHA-512')).toBeUndefined();

    // Re-added after removal: the children watch was re-armed.
    await putUserCredential(admin, 'alice', 'SCRAM-SHA-256', bob);
    await expect.poll(() => cache.userNames(), poll).toEqual(['CN=bob,O=acme', 'alice']);
  });

  it('re-arms its watches after the session expires, and catches up on what changed meanwhile', async () => {
    const coordination = new MemoryCoordination();
    const admin = coordination.session();
    const { cache, broker } = await started(coordination);
    await broker.expireSession();
    const carol = scramCredential('SCRAM-SHA-512', 'carol');
    await putUserCredential(admin, 'carol', 'SCRAM-SHA-512', carol);
    await expect.poll(() => cache.credential('carol', 'SCRAM-SHA-512'), poll).toEqual(carol);
    const renewed = scramCredential('SCRAM-SHA-512', 'carol2');
    await putUserCredential(admin, 'carol', 'SCRAM-SHA-512', renewed);
    await expect.poll(() => cache.credential('carol', 'SCRAM-SHA-512'), poll).toEqual(renewed);
  });

  it('counts an unreadable node as no credentials, and picks up its repair', async () => {
    const coordination = new MemoryCoordination();
    const admin = coordination.session();
    await admin.ensurePath('/config/users');
    await admin.create(userConfigPath('dave'), Buffer.from('not json'), 'persistent');
    const { cache } = await started(coordination);
    expect(cache.userNames()).toEqual([]);
    const dave = scramCredential('SCRAM-SHA-256', 'dave');
    await removeUser(admin, 'dave');
    await putUserCredential(admin, 'dave', 'SCRAM-SHA-256', dave);
    await expect.poll(() => cache.credential('dave', 'SCRAM-SHA-256'), poll).toEqual(dave);
  });

  it('stops following changes once stopped', async () => {
    const coordination = new MemoryCoordination();
    const admin = coordination.session();
    const { cache } = await started(coordination);
    cache.stop();
    await putUserCredential(admin, 'erin', 'SCRAM-SHA-512', scramCredential('SCRAM-SHA-512', 'erin'));
    // The watch fired into a stopped cache: a later read of the store is all it would take, and none happens.
    await admin.get(userConfigPath('erin'));
    expect(cache.userNames()).toEqual([]);
  });
});
