/**
 * What the serde fetches, and how often: one request per schema id (even under 100 concurrent
 * first decodes), one per (subject, schema) when encoding, none once warm; failed lookups are
 * not remembered; resolvers are built once per (writer id, reader fingerprint).
 */
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { withExactLongs } from '../../../src/registry/serde/exact-long.js';
import { frame } from '../../../src/registry/serde/framing.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startTestRegistry, type TestRegistry } from './serde-registry.js';

const USER_V1 = JSON.stringify({ type: 'record', name: 'User', namespace: 'test.cache', fields: [{ name: 'name', type: 'string' }] });
const USER_V2 = JSON.stringify({
  type: 'record',
  name: 'User',
  namespace: 'test.cache',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'age', type: 'int', default: -1 },
  ],
});
const OTHER = JSON.stringify({ type: 'record', name: 'Other', namespace: 'test.cache', fields: [{ name: 'n', type: 'long' }] });

let registry: TestRegistry;
let v1: number;
let v2: number;
let other: number;

beforeAll(async () => {
  registry = await startTestRegistry();
  const setup = registry.client();
  // These tests are about caching; compatibility rules are tested with the registry.
  await setup.setConfig('NONE', 'cache-user-value');
  v1 = (await setup.register('cache-user-value', USER_V1)).id;
  v2 = (await setup.register('cache-user-value', USER_V2)).id;
  other = (await setup.register('cache-other-value', OTHER)).id;
});

afterAll(async () => {
  await registry.close();
});

function requestsDuring<T>(run: () => Promise<T>): Promise<{ result: T; requests: string[] }> {
  const before = registry.requests.length;
  return run().then((result) => ({ result, requests: registry.requests.slice(before) }));
}

/** The error a call fails with; a call that succeeds fails the test. */
async function failed(promise: Promise<unknown>): Promise<TributaryError> {
  try {
    await promise;
  } catch (error) {
    return error as TributaryError;
  }
  throw new Error('expected the call to fail');
}

function userMessage(id: number, name: string): Buffer {
  return frame(id, avro.Type.forSchema(JSON.parse(USER_V1) as avro.Schema).toBuffer({ name }));
}

describe('AvroDeserializer cache', () => {
  it('fetches a schema id once for 100 concurrent first decodes', async () => {
    const deserializer = new AvroDeserializer(registry.client());
    const messages = Array.from({ length: 100 }, (_, i) => userMessage(v1, `user-${i}`));
    const { result, requests } = await requestsDuring(() => Promise.all(messages.map((m) => deserializer.decode<{ name: string }>(m))));
    expect(result.map((user) => user.name)).toEqual(messages.map((_, i) => `user-${i}`));
    expect(requests).toEqual([`GET /schemas/ids/${v1}`]);
  });

  it('fetches each id once when concurrent decodes mix ids, and nothing more once warm', async () => {
    const deserializer = new AvroDeserializer(registry.client());
    const otherType = avro.Type.forSchema(JSON.parse(OTHER) as avro.Schema);
    const messages = Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? userMessage(v1, `u${i}`) : frame(other, otherType.toBuffer({ n: i }))));
    const first = await requestsDuring(() => Promise.all(messages.map((m) => deserializer.decode(m))));
    expect([...first.requests].sort()).toEqual([`GET /schemas/ids/${other}`, `GET /schemas/ids/${v1}`].sort());
    const again = await requestsDuring(() => Promise.all(messages.map((m) => deserializer.decode(m))));
    expect(again.requests).toEqual([]);
    expect(again.result).toEqual(first.result);
  });

  it('decodes synchronously only once the id is cached, and decodeSync never fetches', async () => {
    const deserializer = new AvroDeserializer(registry.client());
    const message = userMessage(v1, 'ann');
    const before = registry.requests.length;
    expect(() => deserializer.decodeSync(message)).toThrow(expect.objectContaining({ code: 'SERDE_SCHEMA_NOT_CACHED', retriable: true }) as Error);
    expect(registry.requests.length).toBe(before);
    await deserializer.prefetch(v1);
    expect(deserializer.decodeSync<{ name: string }>(message).name).toBe('ann');
  });

  it('does not remember a failed lookup: an unknown id is asked again next time', async () => {
    const deserializer = new AvroDeserializer(registry.client());
    const unknownId = 900_000;
    const message = userMessage(unknownId, 'ghost');
    const first = await requestsDuring(() => failed(deserializer.decode(message)));
    expect(first.result.code).toBe('REGISTRY_SCHEMA_NOT_FOUND');
    expect(first.result.message).toContain(`written with schema id ${unknownId}, which schema registry ${registry.url} does not have`);
    expect(first.result.details).toMatchObject({ schemaId: unknownId, status: 404, errorCode: 40403 });
    const second = await requestsDuring(() => failed(deserializer.decode(message)));
    expect(second.result.code).toBe('REGISTRY_SCHEMA_NOT_FOUND');
    expect(second.requests).toEqual([`GET /schemas/ids/${unknownId}`]);
  });

  it('builds one resolver per (writer id, reader fingerprint), even for a reader schema parsed again', async () => {
    const deserializer = new AvroDeserializer(registry.client());
    const reader = parseAvroSchema(USER_V2);
    const sameReaderParsedAgain = parseAvroSchema(USER_V2);
    // avsc freezes its types, so watch the shared prototype and tell callers apart by `this`.
    const created = vi.spyOn(avro.Type.prototype, 'createResolver');
    // avsc recurses into field types; only calls on the two reader types count here (the types
    // the deserializer decodes with: each parse's Type with exact longs).
    const first = withExactLongs(reader.type);
    const second = withExactLongs(sameReaderParsedAgain.type);
    const readersAsked = () => created.mock.contexts.flatMap((type) => (type === first ? ['first parse'] : type === second ? ['second parse'] : []));
    try {
      for (let i = 0; i < 5; i++) {
        expect(await deserializer.decode(userMessage(v1, `a${i}`), reader)).toEqual({ name: `a${i}`, age: -1 });
        expect(await deserializer.decode(userMessage(v1, `b${i}`), sameReaderParsedAgain)).toEqual({ name: `b${i}`, age: -1 });
      }
      expect(readersAsked()).toEqual(['first parse']);
      // A second writer id gets its own resolver.
      const v2Type = avro.Type.forSchema(JSON.parse(USER_V2) as avro.Schema);
      expect(await deserializer.decode(frame(v2, v2Type.toBuffer({ name: 'c', age: 3 })), reader)).toEqual({ name: 'c', age: 3 });
      expect(readersAsked()).toEqual(['first parse', 'first parse']);
    } finally {
      created.mockRestore();
    }
  });
});

describe('AvroSerializer cache', () => {
  it('registers a (subject, schema) once for 100 concurrent first encodes, then sends nothing', async () => {
    const serializer = new AvroSerializer(registry.client());
    const first = await requestsDuring(() => Promise.all(Array.from({ length: 100 }, (_, i) => serializer.encode('cache-user-value', { name: `n${i}` }, USER_V1))));
    expect(first.requests).toEqual(['POST /subjects/cache-user-value/versions']);
    expect(first.result.every((message) => message.readInt32BE(1) === v1)).toBe(true);
    const again = await requestsDuring(() => serializer.encode('cache-user-value', { name: 'again' }, parseAvroSchema(USER_V1)));
    expect(again.requests).toEqual([]);
  });

  it('looks the schema up instead of registering when autoRegister is off, and asks again after a failure', async () => {
    const serializer = new AvroSerializer(registry.client(), { autoRegister: false });
    const found = await requestsDuring(() => serializer.encode('cache-user-value', { name: 'x', age: 1 }, USER_V2));
    expect(found.requests).toEqual(['POST /subjects/cache-user-value']);
    expect(found.result.readInt32BE(1)).toBe(v2);
    const missing = JSON.stringify({ type: 'record', name: 'Missing', fields: [{ name: 'm', type: 'int' }] });
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await requestsDuring(() => failed(serializer.encode('cache-user-value', { m: 1 }, missing)));
      expect(refused.result.code).toBe('REGISTRY_SCHEMA_NOT_FOUND');
      expect(refused.requests).toEqual(['POST /subjects/cache-user-value']);
    }
  });

  it("uses the subject's latest version when no schema is given, fetched once", async () => {
    const serializer = new AvroSerializer(registry.client());
    const { result, requests } = await requestsDuring(() => Promise.all([serializer.encode('cache-user-value', { name: 'l', age: 9 }), serializer.encode('cache-user-value', { name: 'm', age: 8 })]));
    expect(requests).toEqual(['GET /subjects/cache-user-value/versions/latest']);
    expect(result.map((message) => message.readInt32BE(1))).toEqual([v2, v2]);
  });
});
