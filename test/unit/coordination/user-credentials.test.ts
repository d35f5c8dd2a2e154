/**
 * SCRAM users in the coordination store (in-process store): Kafka's node path and JSON, what
 * add/remove/list/read do to it, concurrent writers, and nodes written by hand or by Kafka's tools.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { sanitizeUserName, userConfigPath, userNameOfNode } from '../../../src/coordination/paths.js';
import { formatScramCredential, listUsers, parseScramCredential, putUserCredential, readUserCredentials, removeUser } from '../../../src/coordination/user-credentials.js';
import { scramCredential, verifyPassword } from '../../../src/protocol/sasl/scram.js';

const sha512 = scramCredential('SCRAM-SHA-512', 'alice-secret', { iterations: 8192 });
const sha256 = scramCredential('SCRAM-SHA-256', 'alice-secret');

async function nodeJson(store: ReturnType<MemoryCoordination['session']>, user: string): Promise<unknown> {
  const node = await store.get(userConfigPath(user));
  return node === undefined ? undefined : JSON.parse(node.data.toString('utf8'));
}

describe('user node paths', () => {
  it('URL-encode names as Kafka\'s Sanitizer does, and decode back', () => {
    expect(userConfigPath('alice')).toBe('/config/users/alice');
    expect(sanitizeUserName('CN=client,O=acme')).toBe('CN%3Dclient%2CO%3Dacme');
    expect(sanitizeUserName('a b*~/é.x_y-z')).toBe('a%20b%2A%7E%2F%C3%A9.x_y-z');
    for (const user of ['CN=client,O=acme', 'a b*~/é.x_y-z', 'alice']) expect(userNameOfNode(sanitizeUserName(user))).toBe(user);
    expect(userNameOfNode('bad%zz')).toBeUndefined();
    expect(() => userConfigPath('..')).toThrow(/cannot be a path segment/);
  });
});

describe('credential strings', () => {
  it("are Kafka's salt=…,stored_key=…,server_key=…,iterations=… and parse back", () => {
    const text = formatScramCredential(sha512);
    expect(text).toMatch(/^salt=[A-Za-z0-9+/]+=*,stored_key=[A-Za-z0-9+/]{86}==,server_key=[A-Za-z0-9+/]{86}==,iterations=8192$/);
    expect(parseScramCredential('SCRAM-SHA-512', text)).toEqual(sha512);
  });

  it('refuse missing parts, keys of the wrong length and bad numbers, naming where', () => {
    const text = formatScramCredential(sha256);
    for (const broken of [text.replace(/,iterations=\d+/, ''), text.replace(/iterations=\d+/, 'iterations=-1'), text.replace(/stored_key=[^,]+/, 'stored_key=QUJD'), text.replace(/salt=[^,]+/, 'salt=*')]) {
      expect(() => parseScramCredential('SCRAM-SHA-256', broken, '/config/users/x SCRAM-SHA-256')).toThrow(/^\/config\/users\/x SCRAM-SHA-256: /);
    }
    expect(() => parseScramCredential('SCRAM-SHA-512', text)).toThrow(/stored_key is missing or not 64 base64 bytes/);
  });
});

describe('putUserCredential, readUserCredentials, removeUser, listUsers', () => {
  it('store one credential per mechanism in Kafka\'s JSON, never the password', async () => {
    const store = new MemoryCoordination().session();
    await putUserCredential(store, 'alice', 'SCRAM-SHA-512', sha512);
    await putUserCredential(store, 'alice', 'SCRAM-SHA-256', sha256);
    const json = await nodeJson(store, 'alice');
    expect(json).toEqual({ version: 1, config: { 'SCRAM-SHA-512': formatScramCredential(sha512), 'SCRAM-SHA-256': formatScramCredential(sha256) } });
    expect(JSON.stringify(json)).not.toContain('alice-secret');
    const read = await readUserCredentials(store, 'alice');
    expect([...read.keys()].sort()).toEqual(['SCRAM-SHA-256', 'SCRAM-SHA-512']);
    expect(verifyPassword('SCRAM-SHA-512', read.get('SCRAM-SHA-512') ?? sha256, 'alice-secret')).toBe(true);
    expect(await readUserCredentials(store, 'nobody')).toEqual(new Map());
  });

  it('replace a credential, keep keys other than SCRAM (quotas), and remove one mechanism or all', async () => {
    const store = new MemoryCoordination().session();
    await store.ensurePath('/config/users');
    await store.create(userConfigPath('bob'), Buffer.from(JSON.stringify({ version: 1, config: { producer_byte_rate: '1024' } })), 'persistent');
    await putUserCredential(store, 'bob', 'SCRAM-SHA-256', sha256);
    const renewed = scramCredential('SCRAM-SHA-256', 'new');
    await putUserCredential(store, 'bob', 'SCRAM-SHA-256', renewed);
    expect(await nodeJson(store, 'bob')).toEqual({ version: 1, config: { producer_byte_rate: '1024', 'SCRAM-SHA-256': formatScramCredential(renewed) } });
    expect(await removeUser(store, 'bob', 'SCRAM-SHA-512')).toBe(false);
    expect(await removeUser(store, 'bob')).toBe(true);
    expect(await nodeJson(store, 'bob')).toEqual({ version: 1, config: { producer_byte_rate: '1024' } });

    await putUserCredential(store, 'carol', 'SCRAM-SHA-256', sha256);
    await putUserCredential(store, 'carol', 'SCRAM-SHA-512', sha512);
    expect(await removeUser(store, 'carol', 'SCRAM-SHA-256')).toBe(true);
    expect(Object.keys(((await nodeJson(store, 'carol')) as { config: object }).config)).toEqual(['SCRAM-SHA-512']);
    expect(await removeUser(store, 'carol', 'SCRAM-SHA-512')).toBe(true);
    expect(await nodeJson(store, 'carol')).toBeUndefined();
    expect(await removeUser(store, 'carol')).toBe(false);
  });

  it('lose no write when many admins change one user at once', async () => {
    const coordination = new MemoryCoordination();
    const credentials = ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
    await Promise.all(credentials.map((mechanism) => putUserCredential(coordination.session(), 'dave', mechanism, mechanism === 'SCRAM-SHA-256' ? sha256 : sha512)));
    expect([...(await readUserCredentials(coordination.session(), 'dave')).keys()].sort()).toEqual([...credentials]);
  });

  it('list users by name with mechanisms and iterations only; an unreadable node is listed with why', async () => {
    const store = new MemoryCoordination().session();
    expect(await listUsers(store)).toEqual([]);
    await putUserCredential(store, 'zed', 'SCRAM-SHA-512', sha512);
    await putUserCredential(store, 'CN=client,O=acme', 'SCRAM-SHA-256', sha256);
    await putUserCredential(store, 'zed', 'SCRAM-SHA-256', sha256);
    await store.create(userConfigPath('broken'), Buffer.from('{"version":1,"config":{"SCRAM-SHA-512":"salt=AAAA"}}'), 'persistent');
    await store.create(userConfigPath('quota-only'), Buffer.from('{"version":1,"config":{"consumer_byte_rate":"1"}}'), 'persistent');
    const listed = await listUsers(store);
    expect(listed.map(({ user, mechanisms }) => [user, mechanisms])).toEqual([
      ['CN=client,O=acme', [{ mechanism: 'SCRAM-SHA-256', iterations: 4096 }]],
      ['broken', []],
      ['zed', [{ mechanism: 'SCRAM-SHA-256', iterations: 4096 }, { mechanism: 'SCRAM-SHA-512', iterations: 8192 }]],
    ]);
    expect(listed[1]?.problem).toMatch(/^\/config\/users\/broken SCRAM-SHA-512: iterations is missing/);
    expect(JSON.stringify(listed)).not.toContain(sha512.storedKey.toString('base64'));
    expect(await removeUser(store, 'broken')).toBe(true);
    expect(await store.get(userConfigPath('broken'))).toBeUndefined();
  });
});
