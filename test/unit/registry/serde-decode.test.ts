/**
 * Encoding and decoding through a real registry: round trips of the project's own schema,
 * resolution into a chosen reader schema, and the precise refusals of bad values and bad bytes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { frame } from '../../../src/registry/serde/framing.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startTestRegistry, type TestRegistry } from './serde-registry.js';

const PAGE_VIEW = readFileSync(join(import.meta.dirname, '..', '..', '..', 'schemas', 'PageViewEvent.avsc'), 'utf8');
const ORDER_V1 = JSON.stringify({
  type: 'record',
  name: 'Order',
  namespace: 'test.decode',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'quantity', type: 'int' },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
});

let registry: TestRegistry;
let serializer: AvroSerializer;
let deserializer: AvroDeserializer;

beforeAll(async () => {
  registry = await startTestRegistry();
  serializer = new AvroSerializer(registry.client());
  deserializer = new AvroDeserializer(registry.client());
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

const pageView = {
  header: { eventId: '0b6c7c1e-2f0a-4c55-9d64-3f5f3b1f0a01', time: 1_700_000_000_123, server: 'web-17.example', service: 'frontend' },
  memberId: 42,
  pageKey: 'profile',
  url: '/in/ann?trk=feed',
  referrer: null,
  userAgent: 'Mozilla/5.0',
};

describe('serde round trip', () => {
  it('encodes a PageViewEvent as magic 0 + its id + avsc bytes, and decodes it back', async () => {
    const message = await serializer.encode('PageViewEvent-value', pageView, PAGE_VIEW);
    const id = message.readInt32BE(1);
    expect(message[0]).toBe(0);
    expect(message.subarray(5)).toEqual(parseAvroSchema(PAGE_VIEW).type.toBuffer(pageView));
    expect((await registry.client().version('PageViewEvent-value', 'latest')).id).toBe(id);
    expect(await deserializer.decode(message)).toEqual(pageView);
    expect(deserializer.decodeSync(new Uint8Array(message))).toEqual(pageView);
  });

  it('encodes values larger than its first scratch buffer', async () => {
    const big = { ...pageView, url: `/${'x'.repeat(100_000)}` };
    const message = await serializer.encode('PageViewEvent-value', big, PAGE_VIEW);
    expect(await deserializer.decode(message)).toEqual(big);
  });
});

describe('schema evolution into a reader schema', () => {
  it('reads v1 data with a v2 reader: a new field gets its default, a promoted int reads as long, a dropped field is skipped', async () => {
    const client = registry.client();
    await client.setConfig('BACKWARD', 'Order-value');
    const v1Message = await serializer.encode('Order-value', { id: 'o-1', quantity: 3, note: 'gift' }, ORDER_V1);
    const readerV2 = parseAvroSchema(
      JSON.stringify({
        type: 'record',
        name: 'Order',
        namespace: 'test.decode.v2', // namespaces are ignored in resolution, as in Avro ≥ 1.9
        fields: [
          { name: 'id', type: 'string' },
          { name: 'quantity', type: 'long' },
          { name: 'currency', type: 'string', default: 'EUR' },
        ],
      }),
    );
    expect(await deserializer.decode(v1Message, readerV2)).toEqual({ id: 'o-1', quantity: 3, currency: 'EUR' });
    expect(await deserializer.decode(v1Message, readerV2.type)).toEqual({ id: 'o-1', quantity: 3, currency: 'EUR' });
  });

  it('refuses a reader the writer cannot be resolved into, saying which field and what to do; repeatably', async () => {
    const message = await serializer.encode('Order-value', { id: 'o-2', quantity: 1, note: null }, ORDER_V1);
    const reader = parseAvroSchema(
      JSON.stringify({ type: 'record', name: 'Order', namespace: 'test.decode', fields: [{ name: 'id', type: 'string' }, { name: 'email', type: 'string' }] }),
    );
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await failure(deserializer.decode(message, reader));
      expect(error.code).toBe('SERDE_NOT_RESOLVABLE');
      expect(error.message).toContain(`data written with schema id ${message.readInt32BE(1)} (test.decode.Order) cannot be read as the reader schema test.decode.Order`);
      expect(error.message).toContain('email');
      expect(error.message).toContain('give new reader fields defaults');
    }
  });
});

describe('serde refusals', () => {
  it('refuses a value that does not fit the schema, naming the field, and registers nothing new', async () => {
    const before = await registry.client().versions('PageViewEvent-value');
    const error = await failure(serializer.encode('PageViewEvent-value', { ...pageView, pageKey: 17 }, PAGE_VIEW));
    expect(error.code).toBe('SERDE_INVALID_VALUE');
    expect(error.message).toContain('pageKey: 17 is not a valid string');
    expect(error.message).toContain('subject "PageViewEvent-value"');
    const missing = await failure(serializer.encode('PageViewEvent-value', { ...pageView, header: { ...pageView.header, server: undefined } }, PAGE_VIEW));
    expect(missing.message).toContain('header.server: a missing value is not a valid string');
    expect(await registry.client().versions('PageViewEvent-value')).toEqual(before);
  });

  it('refuses bytes that end before the value does, naming the field and the byte', async () => {
    const message = await serializer.encode('Order-value', { id: 'o-3', quantity: 5, note: 'a long enough note' }, ORDER_V1);
    const truncated = message.subarray(0, message.length - 4);
    const error = await failure(deserializer.decode(truncated));
    expect(error.code).toBe('SERDE_DECODE_FAILED');
    expect(error.message).toContain(`framed with schema id ${message.readInt32BE(1)} (test.decode.Order) does not decode as that schema`);
    // header (5) + "o-3" (1 + 3) + quantity (1) = byte 10, where the note starts
    expect(error.message).toContain('the message ends before the value does (');
    expect(error.message).toContain('in field "note" at byte 10');
    expect(error.details).toMatchObject({ offset: 10, field: 'note' });
  });

  it('refuses bytes left over after the value', async () => {
    const message = await serializer.encode('Order-value', { id: 'o-4', quantity: 5, note: null }, ORDER_V1);
    const error = await failure(deserializer.decode(Buffer.concat([message, Buffer.from([1, 2, 3])])));
    expect(error.code).toBe('SERDE_DECODE_FAILED');
    expect(error.message).toContain(`3 more bytes follow the end of the value at byte ${message.length}`);
  });

  it('refuses a corrupt union branch with avsc\'s reason and where it is', async () => {
    const message = Buffer.from(await serializer.encode('Order-value', { id: 'o-5', quantity: 5, note: null }, ORDER_V1));
    message[10] = 0x09; // the union index of "note": branch -5
    const error = await failure(deserializer.decode(message));
    expect(error.code).toBe('SERDE_DECODE_FAILED');
    expect(error.message).toContain('invalid union index');
    expect(error.message).toContain('in field "note" at byte 10');
  });

  it('refuses unframed bytes before asking the registry anything', async () => {
    const before = registry.requests.length;
    const plainAvro = avro.Type.forSchema('string').toBuffer('hello');
    const error = await failure(deserializer.decode(plainAvro));
    expect(error.code).toBe('SERDE_NOT_FRAMED');
    expect(error.message).toContain('starts with byte 0x0a, not the magic byte 0x00');
    expect((await failure(deserializer.decode(frame(1, new Uint8Array()).subarray(0, 3)))).code).toBe('SERDE_FRAME_TOO_SHORT');
    expect(registry.requests.length).toBe(before);
  });

  it('refuses an invalid writer schema text before contacting the registry', async () => {
    const before = registry.requests.length;
    const error = await failure(serializer.encode('Order-value', {}, '{"type":"record","name":"X","fields":[{"name":"a"}]}'));
    expect(error.code).toBe('SCHEMA_INVALID');
    expect(registry.requests.length).toBe(before);
  });
});
