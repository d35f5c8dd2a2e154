/**
 * The registry's basic authentication and roles through its REST layer (fastify inject over an
 * in-process store): no or bad credentials get 401 with a Basic challenge and Confluent's error
 * body, a role too low gets 403 and changes nothing, each role can do what it should, and an
 * edited users file takes effect without a restart.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { RegistryAuthenticator } from '../../../src/registry/auth/authenticator.js';
import { userLine } from '../../../src/registry/auth/users-file.js';
import { createRegistryApp } from '../../../src/registry/server.js';
import { RegistryState } from '../../../src/registry/store/registry-state.js';
import { recordSchema } from './registry-state-support.js';

const logger = createLogger({ name: 'registry-access-test', level: 'silent' });
const V1 = 'application/vnd.schemaregistry.v1+json';
const schema = recordSchema('User', ['name']);

let folder: string;
let usersFile: string;
let authenticator: RegistryAuthenticator;
let app: FastifyInstance;

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const credentials = { reader: basic('reader', 'r-pw'), writer: basic('writer', 'w-pw'), admin: basic('admin', 'a-pw') };

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, authorization?: string, body?: unknown) {
  const response = await app.inject({
    method,
    url,
    headers: { 'content-type': V1, ...(authorization === undefined ? {} : { authorization }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: response.statusCode, headers: response.headers, json: JSON.parse(response.body) as unknown };
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tributary-registry-users-'));
  usersFile = join(folder, 'users');
  const lines = await Promise.all([userLine('reader', 'read-only', 'r-pw'), userLine('writer', 'writer', 'w-pw'), userLine('admin', 'admin', 'a-pw')]);
  writeFileSync(usersFile, `${lines.join('\n')}\n`);
  authenticator = new RegistryAuthenticator(usersFile, logger);
  const state = await RegistryState.open(new MemoryCoordination({ logger }).session(), { logger });
  app = createRegistryApp(state, logger, { authenticator });
});

afterAll(async () => {
  await app.close();
  authenticator.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('registry access control', () => {
  it('answers a request without credentials with 401, a Basic challenge and error_code 40101', async () => {
    for (const [method, url] of [['GET', '/subjects'], ['GET', '/no/such/route'], ['POST', '/subjects/s/versions']] as const) {
      const answer = await call(method, url, undefined, method === 'POST' ? { schema } : undefined);
      expect(answer.status).toBe(401);
      expect(answer.headers['www-authenticate']).toBe('Basic realm="tributary-registry", charset="UTF-8"');
      expect(answer.json).toMatchObject({ error_code: 40101 });
    }
  });

  it('answers a wrong password, an unknown user and a malformed header with 401', async () => {
    for (const authorization of [basic('admin', 'wrong'), basic('nobody', 'a-pw'), 'Bearer abc', 'Basic !!!', `Basic ${Buffer.from('nocolon').toString('base64')}`]) {
      const answer = await call('GET', '/subjects', authorization);
      expect(answer.status).toBe(401);
      expect(answer.json).toMatchObject({ error_code: 40101 });
    }
  });

  it('lets a read-only user read and look up, and refuses it registering with 403 (40301), changing nothing', async () => {
    expect(await call('GET', '/subjects', credentials.reader)).toMatchObject({ status: 200, json: [] });
    const refused = await call('POST', '/subjects/users-value/versions', credentials.reader, { schema });
    expect(refused).toMatchObject({ status: 403, json: { error_code: 40301 } });
    expect((refused.json as { message: string }).message).toContain("user 'reader' (read-only)");
    expect(await call('POST', '/compatibility/subjects/users-value/versions/latest', credentials.reader, { schema })).toMatchObject({ status: 403 });
    expect(await call('GET', '/subjects', credentials.admin)).toMatchObject({ status: 200, json: [] });
  });

  it('lets a writer register and test compatibility, but not change config or delete', async () => {
    expect(await call('POST', '/subjects/users-value/versions', credentials.writer, { schema })).toMatchObject({ status: 200, json: { id: 1 } });
    expect(await call('POST', '/compatibility/subjects/users-value/versions/latest', credentials.writer, { schema })).toMatchObject({
      status: 200,
      json: { is_compatible: true },
    });
    expect(await call('POST', '/subjects/users-value', credentials.reader, { schema })).toMatchObject({ status: 200, json: { id: 1, version: 1 } });
    for (const [method, url, body] of [
      ['PUT', '/config', { compatibility: 'NONE' }],
      ['PUT', '/config/users-value', { compatibility: 'NONE' }],
      ['DELETE', '/config/users-value', undefined],
      ['PUT', '/mode', { mode: 'READWRITE' }],
      ['DELETE', '/subjects/users-value/versions/1', undefined],
      ['DELETE', '/subjects/users-value', undefined],
    ] as const) {
      expect(await call(method, url, credentials.writer, body), `${method} ${url}`).toMatchObject({ status: 403, json: { error_code: 40301 } });
    }
    expect(await call('GET', '/config', credentials.reader)).toMatchObject({ json: { compatibilityLevel: 'BACKWARD' } });
    expect(await call('GET', '/subjects/users-value/versions', credentials.reader)).toMatchObject({ json: [1] });
  });

  it('lets an admin change config and delete', async () => {
    expect(await call('PUT', '/config', credentials.admin, { compatibility: 'FULL' })).toMatchObject({ status: 200, json: { compatibility: 'FULL' } });
    expect(await call('GET', '/config', credentials.reader)).toMatchObject({ json: { compatibilityLevel: 'FULL' } });
    expect(await call('DELETE', '/subjects/users-value', credentials.admin)).toMatchObject({ status: 200, json: [1] });
    expect(await call('GET', '/subjects', credentials.reader)).toMatchObject({ json: [] });
  });

  it('takes an edited users file after reload, and keeps the old users when the new file is broken', async () => {
    appendFileSync(usersFile, `${await userLine('late', 'writer', 'l-pw')}\n`);
    expect(await call('GET', '/subjects', basic('late', 'l-pw'))).toMatchObject({ status: 401 });
    expect(await authenticator.reload()).toBe(true);
    expect(await call('GET', '/subjects', basic('late', 'l-pw'))).toMatchObject({ status: 200 });

    appendFileSync(usersFile, 'broken line\n');
    expect(await authenticator.reload()).toBe(false);
    expect(await call('GET', '/subjects', basic('late', 'l-pw'))).toMatchObject({ status: 200 });
  });
});
