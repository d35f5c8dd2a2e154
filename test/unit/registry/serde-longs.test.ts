/**
 * Longs through the deserializer (src/registry/serde/exact-long.ts): every long a JavaScript
 * number holds exactly decodes to exactly that number, below −2^52 too, where avsc's own long
 * returns another number without a word; a long beyond ±(2^53 − 1) is a SERDE_DECODE_FAILED that
 * names the field, never a nearby number.
 */
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { EXACT_LONG, withExactLongs } from '../../../src/registry/serde/exact-long.js';
import { frame } from '../../../src/registry/serde/framing.js';
import { startTestRegistry, type TestRegistry } from './serde-registry.js';

const FIELDS = [
  { name: 'plain', type: 'long' },
  { name: 'optional', type: ['null', 'long'] },
  { name: 'object', type: { type: 'long' } },
];
const SCHEMA = JSON.stringify({ type: 'record', name: 'Amounts', namespace: 'test.longs', fields: FIELDS });
/** Version 2 for resolution: the same fields plus a defaulted long below −2^52. */
const READER = JSON.stringify({
  type: 'record',
  name: 'Amounts',
  namespace: 'test.longs',
  fields: [...FIELDS, { name: 'extra', type: 'long', default: -4503599627370497 }],
});

/** The Avro binary of a long: zigzag, then a little-endian base-128 varint. */
function longBytes(value: bigint): Buffer {
  let zigzag = BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
  const bytes: number[] = [];
  while (zigzag > 0x7fn) {
    bytes.push(Number(zigzag & 0x7fn) | 0x80);
    zigzag >>= 7n;
  }
  bytes.push(Number(zigzag));
  return Buffer.from(bytes);
}

/** A framed Amounts record: plain = value, optional = value (union branch 1), object = value. */
function message(id: number, value: bigint): Buffer {
  return frame(id, Buffer.concat([longBytes(value), Buffer.from([0x02]), longBytes(value), longBytes(value)]));
}

const EDGES = [
  0n, 1n, -1n, 63n, -64n, 2n ** 31n, -(2n ** 31n) - 1n, 2n ** 48n - 1n, -(2n ** 48n), 2n ** 48n, -(2n ** 48n) - 1n,
  2n ** 52n, -(2n ** 52n), -(2n ** 52n) - 1n, -(2n ** 52n) - 3n, 2n ** 52n + 1n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, -(2n ** 53n) + 2n,
];

let registry: TestRegistry;
let deserializer: AvroDeserializer;
let id: number;

beforeAll(async () => {
  registry = await startTestRegistry();
  const client = registry.client();
  id = (await client.register('longs-value', SCHEMA)).id;
  await client.register('longs-value', READER);
  deserializer = new AvroDeserializer(client);
});

afterAll(async () => {
  await registry.close();
});

describe('longs through the deserializer', () => {
  it('avsc alone misreads a long below −2^52 (why exact-long.ts exists)', () => {
    const plain = avro.Type.forSchema('long');
    expect(plain.fromBuffer(longBytes(-(2n ** 52n) - 1n))).not.toBe(-(2 ** 52) - 1);
  });

  it('decodes every long a number holds exactly, with and without a reader schema', async () => {
    const reader = parseAvroSchema(READER);
    const random = Array.from({ length: 500 }, (_, index) => BigInt(Math.floor((Math.random() * 2 - 1) * Number.MAX_SAFE_INTEGER)) >> BigInt(index % 50));
    for (const value of [...EDGES, ...random]) {
      const expected = Number(value);
      expect(await deserializer.decode(message(id, value)), String(value)).toEqual({ plain: expected, optional: expected, object: expected });
      expect(deserializer.decodeSync(message(id, value), reader), String(value)).toEqual({ plain: expected, optional: expected, object: expected, extra: -4503599627370497 });
    }
  });

  it('refuses a long beyond ±(2^53 − 1) as SERDE_DECODE_FAILED naming the field', async () => {
    for (const value of [2n ** 53n, -(2n ** 53n), 2n ** 60n, -(2n ** 63n), 2n ** 63n - 1n]) {
      const bytes = frame(id, Buffer.concat([longBytes(value), Buffer.from([0x00]), longBytes(0n)]));
      let error: TributaryError | undefined;
      try {
        await deserializer.decode(bytes);
      } catch (thrown) {
        error = thrown as TributaryError;
      }
      expect(error?.code, String(value)).toBe('SERDE_DECODE_FAILED');
      expect(error?.message).toContain(`long ${value} is beyond ±(2^53 − 1)`);
      expect(error?.details).toMatchObject({ field: 'plain', offset: 5 });
    }
  });

  it('refuses a varint longer than 10 bytes, and one cut off, as undecodable', async () => {
    const tooLong = frame(id, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00]));
    await expect(deserializer.decode(tooLong)).rejects.toMatchObject({ code: 'SERDE_DECODE_FAILED' });
    const cutOff = frame(id, Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]));
    await expect(deserializer.decode(cutOff)).rejects.toMatchObject({ code: 'SERDE_DECODE_FAILED' });
  });

  it('writes longs exactly too, byte for byte the Avro encoding, and keeps avsc’s long in every other respect', () => {
    for (const value of EDGES) expect(EXACT_LONG.toBuffer(Number(value)), String(value)).toEqual(longBytes(value));
    expect(EXACT_LONG.typeName).toBe('long');
    expect(EXACT_LONG.isValid(2 ** 53 - 1)).toBe(true);
    expect(EXACT_LONG.isValid(2 ** 53)).toBe(false);
    expect(EXACT_LONG.isValid(1.5)).toBe(false);
    // Unions wrap as with avsc's long: a long beside a double stays an ambiguous, wrapped union.
    const plain = avro.Type.forSchema(['long', 'double']);
    expect(withExactLongs(plain).typeName).toBe(plain.typeName);
    expect(withExactLongs(avro.Type.forSchema(JSON.parse(SCHEMA) as avro.Schema)).schema()).toEqual(avro.Type.forSchema(JSON.parse(SCHEMA) as avro.Schema).schema());
  });
});
