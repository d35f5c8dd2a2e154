/**
 * The REST layer in process (fastify inject) over an in-process store: Confluent's routes,
 * shapes, status codes and error codes, content types and negotiation, and that failures
 * change nothing.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination, type MemoryCoordinationStore } from '../../../src/coordination/memory-store.js';
import { coordinationError, type CoordinationStore } from '../../../src/coordination/store.js';
import { negotiateResponseType } from '../../../src/registry/routes/http.js';
import { createRegistryApp } from '../../../src/registry/server.js';
import { RegistryState } from '../../../src/registry/store/registry-state.js';
import { dumpTree, recordSchema } from './registry-state-support.js';

const logger = createLogger({ name: 'registry-server-test', level: 'silent' });
const V1 = 'application/vnd.schemaregistry.v1+json';
const user = recordSchema('User', ['name']);
const userWithEmail = recordSchema('User', ['name', 'email']);

let store: MemoryCoordinationStore;
let app: FastifyInstance;

interface Answer {
  readonly status: number;
  readonly type: string;
  readonly text: string;
  readonly json: unknown;
}

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const payload = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const response = await app.inject({ method, url, headers: { 'content-type': V1, ...headers }, ...(payload === undefined ? {} : { payload }) });
  let json: unknown;
  try {
    json = JSON.parse(response.body);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, type: String(response.headers['content-type']), text: response.body, json };
}

const register = (subject: string, schema: string): Promise<Answer> => call('POST', `/subjects/${encodeURIComponent(subject)}/versions`, { schema });

beforeEach(async () => {
  store = new MemoryCoordination({ logger }).session();
  app = createRegistryApp(await RegistryState.open(store, { logger }), logger);
});

afterEach(async () => {
  await app.close();
});

describe('content types', () => {
  it('answers GET / with {} as application/vnd.schemaregistry.v1+json', async () => {
    const answer = await call('GET', '/');
    expect(answer).toMatchObject({ status: 200, json: {} });
    expect(answer.type).toMatch(/^application\/vnd\.schemaregistry\.v1\+json/);
  });

  it.each([V1, 'application/vnd.schemaregistry+json', 'application/json', 'application/octet-stream', 'application/json; charset=utf-8'])(
    'accepts a request body sent as %s',
    async (type) => {
      const answer = await call('POST', '/subjects/s/versions', { schema: user }, { 'content-type': type });
      expect(answer).toMatchObject({ status: 200, json: { id: 1 } });
    },
  );

  it('honours the charset of the Content-Type', async () => {
    const body = Buffer.from(JSON.stringify({ schema: JSON.stringify({ type: 'enum', name: 'E', symbols: ['A'], doc: 'café' }) }), 'latin1');
    const answer = await call('POST', '/subjects/s/versions', body, { 'content-type': 'application/json; charset=ISO-8859-1' });
    expect(answer.status).toBe(200);
    expect((await call('GET', '/schemas/ids/1/schema')).json).toMatchObject({ doc: 'café' });
  });

  it('refuses a body of another media type with 415, but not a GET or DELETE that only names one', async () => {
    const refused = await call('POST', '/subjects/s/versions', JSON.stringify({ schema: user }), { 'content-type': 'text/html' });
    expect(refused.status).toBe(415);
    expect(refused.json).toMatchObject({ error_code: 415, message: expect.stringContaining("Content-Type 'text/html' is not accepted") as unknown });
    expect((await call('GET', '/subjects', undefined, { 'content-type': 'text/html' })).status).toBe(200);
    await register('s', user);
    expect((await call('DELETE', '/subjects/s', undefined, { 'content-type': 'application/json' })).json).toEqual([1]);
  });

  it('negotiates the response type from Accept, and answers an unsatisfiable one with 406', async () => {
    expect((await call('GET', '/', undefined, { accept: 'application/json' })).type).toMatch(/^application\/json/);
    expect((await call('GET', '/', undefined, { accept: 'text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2' })).type).toMatch(/^application\/vnd\.schemaregistry\.v1\+json/);
    const refused = await call('GET', '/', undefined, { accept: 'application/vnd.schemaregistry.v2+json' });
    expect(refused).toMatchObject({ status: 406, json: { error_code: 406 } });
  });

  it('ranks types by the client quality times the server preference', () => {
    expect(negotiateResponseType(undefined)).toBe(V1);
    expect(negotiateResponseType('application/json, text/plain, */*')).toBe(V1);
    expect(negotiateResponseType('application/vnd.schemaregistry+json')).toBe('application/vnd.schemaregistry+json');
    expect(negotiateResponseType('application/*;q=0.4, application/json')).toBe('application/json');
    expect(negotiateResponseType('*/*;q=0')).toBeUndefined();
  });
});

describe('bad input', () => {
  beforeEach(async () => {
    await register('s', user);
  });

  it.each([
    ['malformed JSON', '{"schema": '],
    ['a body that is not an object', '[1,2]'],
    ['an empty body', ''],
    ['no schema', JSON.stringify({ schemaType: 'AVRO' })],
    ['a schema that is not a string', JSON.stringify({ schema: { type: 'string' } })],
    ['an invalid Avro schema', JSON.stringify({ schema: '{"type":"record","name":"R","fields":[{"name":"x","type":"nope"}]}' })],
    ['an unsupported schema type', JSON.stringify({ schema: '{"type":"object"}', schemaType: 'JSON' })],
    ['schema references', JSON.stringify({ schema: user, references: [{ name: 'x', subject: 'y', version: 1 }] })],
  ])('answers %s with 422 / 42201 and changes nothing', async (_what, body) => {
    const before = await dumpTree(store);
    const answer = await call('POST', '/subjects/s/versions', body);
    expect(answer.status).toBe(422);
    expect(answer.json).toMatchObject({ error_code: 42201, message: expect.any(String) as unknown });
    expect(await dumpTree(store)).toEqual(before);
  });

  it('answers unknown subjects, versions and ids with 40401, 40402 and 40403', async () => {
    expect(await call('GET', '/subjects/nobody/versions')).toMatchObject({ status: 404, json: { error_code: 40401, message: "Subject 'nobody' not found." } });
    expect(await call('GET', '/subjects/s/versions/7')).toMatchObject({ status: 404, json: { error_code: 40402, message: 'Version 7 not found.' } });
    expect(await call('GET', '/schemas/ids/99')).toMatchObject({ status: 404, json: { error_code: 40403, message: 'Schema 99 not found' } });
    expect(await call('POST', '/subjects/s', { schema: userWithEmail })).toMatchObject({ status: 404, json: { error_code: 40403, message: 'Schema not found' } });
    expect(await call('GET', '/schemas/ids/abc')).toMatchObject({ status: 404, json: { error_code: 404 } });
  });

  it('answers a version that is not 1 … 2^31-1 or latest with 42202', async () => {
    for (const version of ['0', '-2', 'abc', '2147483648', '1.5']) {
      expect(await call('GET', `/subjects/s/versions/${version}`)).toMatchObject({ status: 422, json: { error_code: 42202 } });
    }
    expect((await call('GET', '/subjects/s/versions/-1')).json).toMatchObject({ version: 1 });
    expect((await call('GET', '/subjects/s/versions/LATEST')).json).toMatchObject({ version: 1 });
  });

  it('answers an incompatible schema with 409 and the reasons, and changes nothing', async () => {
    const before = await dumpTree(store);
    const answer = await register('s', userWithEmail);
    expect(answer.status).toBe(409);
    expect(answer.json).toMatchObject({ error_code: 409, message: expect.stringContaining('READER_FIELD_MISSING_DEFAULT_VALUE') as unknown });
    expect(await dumpTree(store)).toEqual(before);
  });

  it('answers an invalid subject name with 42208', async () => {
    expect(await register('__GLOBAL', user)).toMatchObject({ status: 422, json: { error_code: 42208 } });
  });

  it('answers an unknown route with a JSON 404', async () => {
    expect(await call('GET', '/associations/resources/-/t')).toMatchObject({ status: 404, json: { error_code: 404 } });
    expect(await call('PUT', '/subjects/s/versions')).toMatchObject({ status: 404, json: { error_code: 404 } });
  });
});

describe('subjects, versions and schemas', () => {
  it('registers, dedupes, reads and lists with Confluent shapes', async () => {
    expect((await call('POST', '/subjects/a%2Fb/versions?normalize=false', { schema: user })).json).toEqual({ id: 1 });
    expect((await call('POST', '/subjects/other/versions?normalize=true', { schema: ` ${user}`, schemaType: 'AVRO' })).json).toEqual({ id: 1 });
    expect((await call('GET', '/subjects')).json).toEqual(['a/b', 'other']);
    expect((await call('GET', '/subjects/a%2Fb/versions')).json).toEqual([1]);
    expect((await call('GET', '/subjects/a%2Fb/versions/latest')).json).toEqual({ subject: 'a/b', version: 1, id: 1, schema: user });
    expect((await call('GET', '/subjects/a%2Fb/versions/1/schema')).text).toBe(user);
    expect((await call('GET', '/subjects/a%2Fb/versions/1/referencedby')).json).toEqual([]);
    expect((await call('POST', '/subjects/other', { schema: user })).json).toEqual({ subject: 'other', version: 1, id: 1, schema: user });
    expect((await call('GET', '/schemas/ids/1?subject=other&fetchMaxId=false')).json).toEqual({ schema: user });
    expect((await call('GET', '/schemas/ids/1?fetchMaxId=true')).json).toEqual({ schema: user, maxId: 1 });
    expect((await call('GET', '/schemas/ids/1/schema')).text).toBe(user);
    expect((await call('GET', '/schemas/ids/1/subjects')).json).toEqual(['a/b', 'other']);
    expect((await call('GET', '/schemas/ids/1/versions')).json).toEqual([
      { subject: 'a/b', version: 1 },
      { subject: 'other', version: 1 },
    ]);
    expect((await call('GET', '/schemas/types')).json).toEqual(['AVRO']);
  });

  it('deletes softly then permanently, with 40404 … 40407 for the wrong order', async () => {
    await register('s', user);
    expect(await call('DELETE', '/subjects/s?permanent=true')).toMatchObject({ status: 404, json: { error_code: 40405 } });
    expect(await call('DELETE', '/subjects/s/versions/1?permanent=true')).toMatchObject({ status: 404, json: { error_code: 40407 } });
    expect((await call('DELETE', '/subjects/s/versions/1')).json).toBe(1);
    expect(await call('DELETE', '/subjects/s/versions/1')).toMatchObject({ status: 404, json: { error_code: 40406 } });
    expect(await call('DELETE', '/subjects/s')).toMatchObject({ status: 404, json: { error_code: 40404 } });
    expect((await call('GET', '/subjects?deleted=true')).json).toEqual(['s']);
    expect((await call('GET', '/subjects')).json).toEqual([]);
    expect((await call('GET', '/subjects/s/versions/1?deleted=true')).json).toMatchObject({ version: 1 });
    expect((await call('DELETE', '/subjects/s?permanent=true')).json).toEqual([1]);
    expect(await call('GET', '/subjects/s/versions?deleted=true')).toMatchObject({ status: 404, json: { error_code: 40401 } });
    expect((await call('GET', '/schemas/ids/1')).json).toEqual({ schema: user });
  });
});

describe('config and mode', () => {
  it('keeps the asymmetric Confluent shapes: PUT echoes "compatibility", GET answers "compatibilityLevel"', async () => {
    expect((await call('GET', '/config')).json).toEqual({ compatibilityLevel: 'BACKWARD' });
    expect((await call('PUT', '/config', { compatibility: 'full' })).json).toEqual({ compatibility: 'FULL' });
    expect((await call('GET', '/config')).json).toEqual({ compatibilityLevel: 'FULL' });
    expect(await call('GET', '/config/s')).toMatchObject({
      status: 404,
      json: { error_code: 40408, message: "Subject 's' does not have subject-level compatibility configured" },
    });
    expect((await call('GET', '/config/s?defaultToGlobal=true')).json).toEqual({ compatibilityLevel: 'FULL' });
    expect((await call('PUT', '/config/s', { compatibility: 'NONE' })).json).toEqual({ compatibility: 'NONE' });
    expect((await call('GET', '/config/s')).json).toEqual({ compatibilityLevel: 'NONE' });
    expect((await call('DELETE', '/config/s')).json).toEqual({ compatibilityLevel: 'NONE' });
    expect(await call('DELETE', '/config/s')).toMatchObject({ status: 404, json: { error_code: 40408 } });
    expect((await call('DELETE', '/config')).json).toEqual({ compatibilityLevel: 'FULL' });
    expect((await call('GET', '/config')).json).toEqual({ compatibilityLevel: 'BACKWARD' });
  });

  it('answers an invalid level with 42203 and changes nothing', async () => {
    const before = await dumpTree(store);
    for (const body of [{ compatibility: 'SIDEWAYS' }, {}, { compatibility: 3 }]) {
      expect(await call('PUT', '/config', body)).toMatchObject({ status: 422, json: { error_code: 42203 } });
      expect(await call('PUT', '/config/s', body)).toMatchObject({ status: 422, json: { error_code: 42203 } });
    }
    expect(await dumpTree(store)).toEqual(before);
  });

  it('is always READWRITE', async () => {
    expect((await call('GET', '/mode')).json).toEqual({ mode: 'READWRITE' });
    expect((await call('GET', '/mode/s')).json).toEqual({ mode: 'READWRITE' });
    expect((await call('PUT', '/mode', { mode: 'readwrite' })).json).toEqual({ mode: 'READWRITE' });
    expect(await call('PUT', '/mode/s', { mode: 'READONLY' })).toMatchObject({ status: 422, json: { error_code: 42205 } });
    expect(await call('PUT', '/mode', { mode: 'SIDEWAYS' })).toMatchObject({ status: 422, json: { error_code: 42204 } });
  });
});

describe('compatibility test', () => {
  beforeEach(async () => {
    await register('s', user);
  });

  it('answers is_compatible, with messages when verbose', async () => {
    expect((await call('POST', '/compatibility/subjects/s/versions/latest', { schema: user })).json).toEqual({ is_compatible: true });
    expect((await call('POST', '/compatibility/subjects/s/versions/1', { schema: userWithEmail })).json).toEqual({ is_compatible: false });
    const verbose = (await call('POST', '/compatibility/subjects/s/versions/latest?verbose=true', { schema: userWithEmail })).json as { is_compatible: boolean; messages: string[] };
    expect(verbose.is_compatible).toBe(false);
    expect(verbose.messages).toHaveLength(1);
    expect(verbose.messages[0]).toContain('READER_FIELD_MISSING_DEFAULT_VALUE');
    expect((await call('POST', '/compatibility/subjects/s/versions', { schema: userWithEmail })).json).toEqual({ is_compatible: false });
  });

  it('finds a missing subject compatible with latest, but answers a missing version with 40402', async () => {
    expect((await call('POST', '/compatibility/subjects/nobody/versions/latest', { schema: user })).json).toEqual({ is_compatible: true });
    expect(await call('POST', '/compatibility/subjects/nobody/versions/3', { schema: user })).toMatchObject({ status: 404, json: { error_code: 40402 } });
  });

  it('answers an invalid candidate with 42201, or with a message when verbose', async () => {
    const invalid = { schema: '{"type":"record"}' };
    expect(await call('POST', '/compatibility/subjects/s/versions/latest', invalid)).toMatchObject({ status: 422, json: { error_code: 42201 } });
    const verbose = await call('POST', '/compatibility/subjects/s/versions/latest?verbose=true', invalid);
    expect(verbose).toMatchObject({ status: 200, json: { is_compatible: false, messages: [expect.any(String)] } });
  });
});

describe('store failures', () => {
  /** An app whose store fails every read with `failure` once it is open. */
  async function failingApp(failure: Error): Promise<FastifyInstance> {
    const inner = new MemoryCoordination({ logger }).session();
    let failing = false;
    const broken: CoordinationStore = new Proxy(inner, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (failing && property === 'get') return () => Promise.reject(failure);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const brokenApp = createRegistryApp(await RegistryState.open(broken, { logger }), logger);
    failing = true;
    return brokenApp;
  }

  it.each([
    ['a lost connection', coordinationError('CONNECTION_LOSS', { operation: 'get /schemas/subjects/s' }), 50002],
    ['a store failure', coordinationError('ZOOKEEPER_ERROR', { operation: 'get /schemas/subjects/s' }), 50001],
    ['a bug', new Error('boom'), 50001],
  ])('answers %s with 500 and the cause', async (_what, failure, errorCode) => {
    const broken = await failingApp(failure);
    try {
      const response = await broken.inject({ method: 'GET', url: '/subjects/s/versions' });
      expect(response.statusCode).toBe(500);
      expect(JSON.parse(response.body)).toMatchObject({ error_code: errorCode, message: expect.stringContaining(failure.message) as unknown });
    } finally {
      await broken.close();
    }
  });
});
