/**
 * The registry users file: the lines `user-line` writes parse back and verify their password
 * (and only it); malformed lines fail naming the line; each route needs the role route-roles.ts
 * says.
 */
import { describe, expect, it } from 'vitest';
import { requiredRole, roleAllows } from '../../../src/registry/auth/route-roles.js';
import { parseScryptHash, parseUsersFile, userLine, verifyPassword } from '../../../src/registry/auth/users-file.js';

describe('users file', () => {
  it('reads the lines user-line writes, and verifies only the right password', async () => {
    const ann = await userLine('ann', 'admin', 'pässwörd:with colon');
    const bob = await userLine('bob', 'read-only', 'secret');
    expect(ann).toMatch(/^ann:admin:scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(bob).not.toContain('secret');
    const users = parseUsersFile(`# registry users\n\n${ann}\n  ${bob}  \n`, 'users');
    expect([...users.keys()]).toEqual(['ann', 'bob']);
    expect(users.get('bob')?.role).toBe('read-only');
    expect(await verifyPassword(users.get('ann')!.hash, 'pässwörd:with colon')).toBe(true);
    expect(await verifyPassword(users.get('ann')!.hash, 'pässwörd:with colo')).toBe(false);
    expect(await verifyPassword(users.get('bob')!.hash, 'Secret')).toBe(false);
  });

  it('gives the same password a different salt each time', async () => {
    expect(await userLine('a', 'writer', 'x')).not.toBe(await userLine('a', 'writer', 'x'));
  });

  it('refuses malformed lines, naming the file and line', async () => {
    const good = await userLine('ann', 'admin', 'pw');
    const hash = good.split(':')[2]!;
    expect(() => parseUsersFile(`${good}\nbob:root:${hash}`, 'f')).toThrow(/f line 2: role "root" is not one of read-only, writer, admin/);
    expect(() => parseUsersFile(`${good}\n${good}`, 'f')).toThrow(/f line 2: user "ann" appears twice/);
    expect(() => parseUsersFile('ann:admin', 'f')).toThrow(/f line 1: the hash is not scrypt/);
    expect(() => parseUsersFile('ann:admin:bcrypt$2b$10$abc', 'f')).toThrow(/f line 1: the hash is not scrypt/);
    expect(() => parseUsersFile('a b:admin:' + hash, 'f')).toThrow(/f line 1: expected name:role/);
    expect(() => parseUsersFile('ann:admin:' + hash + ':extra', 'f')).toThrow(/f line 1: expected name:role/);
    await expect(userLine('a:b', 'admin', 'pw')).rejects.toThrow(/may not be empty or contain ":"/);
    await expect(userLine('a', 'admin', '')).rejects.toThrow(/the password is empty/);
  });

  it('bounds the scrypt parameters a line may ask for', () => {
    const salt = Buffer.alloc(16).toString('base64');
    const key = Buffer.alloc(32).toString('base64');
    expect(parseScryptHash(`scrypt$16384$8$1$${salt}$${key}`, 'x').N).toBe(16384);
    for (const [n, r, p] of [[2 ** 21, 8, 1], [1000, 8, 1], [16384, 0, 1], [16384, 8, 99]]) {
      expect(() => parseScryptHash(`scrypt$${n}$${r}$${p}$${salt}$${key}`, 'x')).toThrow(/out of range/);
    }
    expect(() => parseScryptHash(`scrypt$16384$8$1$${salt}$${Buffer.alloc(8).toString('base64')}`, 'x')).toThrow(/out of range/);
  });
});

describe('route roles', () => {
  it('lets read-only users read and look up, writers register and test, admins do the rest', () => {
    expect(requiredRole('GET', '/subjects/:subject/versions')).toBe('read-only');
    expect(requiredRole('GET', '/config')).toBe('read-only');
    expect(requiredRole('POST', '/subjects/:subject')).toBe('read-only');
    expect(requiredRole('POST', '/subjects/:subject/versions')).toBe('writer');
    expect(requiredRole('POST', '/compatibility/subjects/:subject/versions/:version')).toBe('writer');
    expect(requiredRole('PUT', '/config')).toBe('admin');
    expect(requiredRole('PUT', '/config/:subject')).toBe('admin');
    expect(requiredRole('DELETE', '/config/:subject')).toBe('admin');
    expect(requiredRole('PUT', '/mode')).toBe('admin');
    expect(requiredRole('DELETE', '/subjects/:subject')).toBe('admin');
    expect(requiredRole('DELETE', '/subjects/:subject/versions/:version')).toBe('admin');
    expect(requiredRole('PATCH', '/subjects/:subject')).toBe('admin');
    expect(requiredRole('POST', '/some/future/route')).toBe('admin');
    expect(requiredRole('DELETE', undefined)).toBe('read-only');
    expect(roleAllows('admin', 'writer')).toBe(true);
    expect(roleAllows('writer', 'admin')).toBe(false);
    expect(roleAllows('read-only', 'writer')).toBe(false);
    expect(roleAllows('read-only', 'read-only')).toBe(true);
  });
});
