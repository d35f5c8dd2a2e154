/**
 * Ints through the deserializer (src/registry/serde/exact-int.ts): avsc reads an `int` with its
 * long reader, so a payload could decode an int field to 2^47 and the loader's data file writer
 * then failed the whole run on it (found by test/chaos/avro-fuzz-loader.ts). Every 32-bit int
 * decodes exactly, also promoted to a long by a reader schema; a value beyond 32 bits or a varint
 * past 5 bytes is a SERDE_DECODE_FAILED naming the field (a record failure: quarantined).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { frame } from '../../../src/registry/serde/framing.js';
import { avroLong } from '../../support/avro-mutations.js';
import { startTestRegistry, type TestRegistry } from './serde-registry.js';

const SCHEMA = JSON.stringify({ type: 'record', name: 'Counts', namespace: 'test.ints', fields: [{ name: 'plain', type: 'int' }, { name: 'many', type: { type: 'array', items: 'int' } }] });
/** A reader that promotes the int to a long (resolution reads with the writer's int). */
const PROMOTED = JSON.stringify({ type: 'record', name: 'Counts', namespace: 'test.ints', fields: [{ name: 'plain', type: 'long' }, { name: 'many', type: { type: 'array', items: 'long' } }] });

let registry: TestRegistry;
let deserializer: AvroDeserializer;
let id: number;

beforeAll(async () => {
  registry = await startTestRegistry();
  id = (await registry.client().register('ints-value', SCHEMA)).id;
  deserializer = new AvroDeserializer(registry.client());
});

afterAll(async () => {
  await registry.close();
});

/** A framed Counts record: plain = `plain` as a varint, many = one block of `many`. */
function message(plain: Buffer, many: readonly Buffer[] = []): Buffer {
  return frame(id, Buffer.concat([plain, ...(many.length === 0 ? [] : [avroLong(many.length), ...many]), Buffer.from([0])]));
}

async function failure(bytes: Buffer): Promise<TributaryError | undefined> {
  try {
    await deserializer.decode(bytes);
  } catch (error) {
    return error as TributaryError;
  }
  return undefined;
}

describe('ints through the deserializer', () => {
  const edges = [0, 1, -1, 63, -64, 64, 8191, -8192, 2 ** 20, 2 ** 27, -(2 ** 28), 2 ** 31 - 1, -(2 ** 31)];

  it('decodes every 32-bit int exactly, with its own schema and promoted to a long', async () => {
    await deserializer.prefetch(id);
    const promoted = parseAvroSchema(PROMOTED);
    for (const value of edges) {
      const bytes = message(avroLong(value), [avroLong(value), avroLong(~value)]);
      expect(deserializer.decodeSync(bytes, parseAvroSchema(SCHEMA)), String(value)).toEqual({ plain: value, many: [value, ~value] });
      expect(deserializer.decodeSync(bytes, promoted), String(value)).toEqual({ plain: value, many: [value, ~value] });
    }
  });

  it('refuses an int beyond 32 bits as SERDE_DECODE_FAILED naming the field, never a long', async () => {
    // Up to 2^34 in magnitude a zigzag varint takes 5 bytes: the value is read, then refused.
    for (const value of [2 ** 31, -(2 ** 31) - 1, 2 ** 33, -(2 ** 34)]) {
      const error = await failure(message(avroLong(value)));
      expect(error?.code, String(value)).toBe('SERDE_DECODE_FAILED');
      expect(error?.retriable).toBe(false);
      expect(error?.message).toContain(`int ${value} is beyond the 32-bit range`);
      expect(error?.details).toMatchObject({ field: 'plain' });
    }
    const inArray = await failure(message(avroLong(1), [avroLong(5), avroLong(2 ** 32)]));
    expect(inArray?.code).toBe('SERDE_DECODE_FAILED');
    expect(inArray?.message).toContain(`int ${2 ** 32} is beyond the 32-bit range`);
    // Longer varints (2^47 + 9, as the fuzz run produced) are refused by their length.
    expect((await failure(message(avroLong(2 ** 47 + 9))))?.message).toContain('an int varint runs past 5 bytes');
  });

  it('refuses a varint past 5 bytes, and reports one cut off as truncated', async () => {
    // 0 written in 6 bytes: Avro Java's readInt refuses it too ("Invalid int encoding").
    const padded = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
    expect((await failure(message(padded)))?.message).toContain('an int varint runs past 5 bytes');
    const cutOff = frame(id, Buffer.from([0x80, 0x80]));
    expect((await failure(cutOff))?.code).toBe('SERDE_DECODE_FAILED');
  });
});
