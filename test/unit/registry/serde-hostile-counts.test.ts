/**
 * Declared counts the deserializer must not trust (bounded-collections.ts): arrays and maps whose
 * block counts exceed what the bytes can hold are refused before anything is allocated, items of
 * zero bytes are capped, a map key "__proto__" is kept as an entry, and honest collections (in
 * several blocks, with byte sizes, through a reader schema) still decode exactly.
 *
 * Without the fix: the 2^31 declarations spin through avsc's reads (SERDE_DECODE_FAILED only
 * after 2^31 iterations, if the heap survives), 2^21 nulls decode, and the "__proto__" entry
 * vanishes.
 */
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { MAX_EMPTY_ITEMS } from '../../../src/registry/serde/bounded-collections.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { frame } from '../../../src/registry/serde/framing.js';
import { avroLong as long } from '../../support/avro-mutations.js';
import { startTestRegistry, type TestRegistry } from './serde-registry.js';

let registry: TestRegistry;
let deserializer: AvroDeserializer;
const ids: Record<string, number> = {};

const SCHEMAS = {
  ints: { type: 'record', name: 'Ints', fields: [{ name: 'values', type: { type: 'array', items: 'int' } }] },
  nulls: { type: 'record', name: 'Nulls', fields: [{ name: 'values', type: { type: 'array', items: 'null' } }] },
  counts: { type: 'record', name: 'Counts', fields: [{ name: 'values', type: { type: 'map', values: 'long' } }] },
  nested: { type: 'record', name: 'Nested', fields: [{ name: 'values', type: { type: 'array', items: { type: 'array', items: 'null' } } }] },
} as const;

beforeAll(async () => {
  registry = await startTestRegistry();
  const client = registry.client();
  for (const [name, schema] of Object.entries(SCHEMAS)) ids[name] = (await client.register(`${name}-value`, JSON.stringify(schema))).id;
  deserializer = new AvroDeserializer(client);
});

afterAll(async () => {
  await registry.close();
});


async function failure(promise: Promise<unknown>): Promise<TributaryError> {
  try {
    await promise;
  } catch (error) {
    return error as TributaryError;
  }
  throw new Error('expected a failure');
}

describe('declared counts', () => {
  it('refuses an array declaring 2^31 ints in 9 bytes, before reading them', async () => {
    const message = frame(ids['ints']!, Buffer.concat([long(2 ** 31), long(7), long(0)]));
    const error = await failure(deserializer.decode(message));
    expect(error.code).toBe('SERDE_DECODE_FAILED');
    expect(error.message).toContain('declares 2147483648 items with 2 bytes left');
    expect(error.retriable).toBe(false);
  });

  it('refuses a map declaring 2^40 entries, and a negative block count whose size lies', async () => {
    const map = await failure(deserializer.decode(frame(ids['counts']!, Buffer.concat([long(2 ** 40), long(1), Buffer.from('k'), long(5), long(0)]))));
    expect(map.message).toContain('declares 1099511627776 items');
    const negative = await failure(deserializer.decode(frame(ids['ints']!, Buffer.concat([long(-(2 ** 30)), long(3), long(1), long(0)]))));
    expect(negative.message).toContain('declares 1073741824 items');
  });

  it('caps items of zero bytes per message, across blocks and nesting', async () => {
    const tooMany = await failure(deserializer.decode(frame(ids['nulls']!, Buffer.concat([long(MAX_EMPTY_ITEMS + 1), long(0)]))));
    expect(tooMany.code).toBe('SERDE_DECODE_FAILED');
    expect(tooMany.message).toContain(`more than ${MAX_EMPTY_ITEMS} items of zero bytes`);
    // 2^31 nulls in 8 bytes: would be a 2^31-element array.
    expect((await failure(deserializer.decode(frame(ids['nulls']!, Buffer.concat([long(2 ** 31), long(0)]))))).message).toContain('zero bytes');
    // 4 inner arrays of 2^19 nulls each: 2^21 in all, over the cap, though each is under it.
    const inner = Buffer.concat([long(2 ** 19), long(0)]);
    const nested = Buffer.concat([long(4), inner, inner, inner, inner, long(0)]);
    expect((await failure(deserializer.decode(frame(ids['nested']!, nested)))).message).toContain('zero bytes');
    const allowed = await deserializer.decode<{ values: null[] }>(frame(ids['nulls']!, Buffer.concat([long(1000), long(0)])));
    expect(allowed.values).toHaveLength(1000);
  });

  it('keeps a map entry named "__proto__" as an entry', async () => {
    const key = Buffer.from('__proto__');
    const value = await deserializer.decode<{ values: Record<string, number> }>(frame(ids['counts']!, Buffer.concat([long(2), long(key.length), key, long(9), long(1), Buffer.from('a'), long(1), long(0)])));
    expect(Object.keys(value.values)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(value.values)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(value.values, '__proto__')?.value).toBe(9);
  });

  it('decodes honest collections exactly: several blocks, sized blocks, through a reader schema', async () => {
    const type = avro.Type.forSchema(SCHEMAS.ints as unknown as avro.Schema);
    const values = Array.from({ length: 300 }, (_, index) => index * 1000 - 7);
    expect(await deserializer.decode(frame(ids['ints']!, type.toBuffer({ values })))).toEqual({ values });
    // Two blocks, the second with a negative count and its byte size.
    const second = Buffer.concat([long(2), long(3)]);
    const blocks = Buffer.concat([long(1), long(1), long(-2), long(second.length), second, long(0)]);
    expect(await deserializer.decode(frame(ids['ints']!, blocks))).toEqual({ values: [1, 2, 3] });
    const reader = parseAvroSchema(JSON.stringify({ ...SCHEMAS.counts, fields: [...SCHEMAS.counts.fields, { name: 'extra', type: 'string', default: 'x' }] }));
    const map = avro.Type.forSchema(SCHEMAS.counts as unknown as avro.Schema).toBuffer({ values: { a: 1, b: -(2 ** 40) } });
    expect(await deserializer.decode(frame(ids['counts']!, map), reader)).toEqual({ values: { a: 1, b: -(2 ** 40) }, extra: 'x' });
  });
});
