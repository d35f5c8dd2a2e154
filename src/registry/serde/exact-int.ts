/**
 * Avro ints read as 32-bit values or refused. avsc reads an `int` with the same varint reader as
 * a `long` (its Tap's readInt is readLong), so a hostile payload's int field can hold 2^47 or any
 * other number a long holds: decoding "succeeds" with a value that is not an int, and whatever
 * writes it next (the loader's data files, which check values against the schema) fails on it —
 * one such record stopped a whole `tributary etl run` instead of being quarantined. The Avro spec
 * makes an int a 32-bit value, at most 5 varint bytes; Avro Java refuses a 6th byte ("Invalid int
 * encoding"). This type refuses both a varint past 5 bytes and a value beyond the 32-bit range
 * with a RangeError (the deserializer's SERDE_DECODE_FAILED, a record failure), so a decoded int
 * is always an int.
 *
 * It is still avsc's `int` (typeName, union buckets, resolution and promotions unchanged): only
 * `_read` differs. avsc copies the writer's `_read` onto resolvers (int promoted to long, float,
 * double), so it reads with its argument only.
 */
import avro from 'avsc';
import type { Type } from 'avsc';

/** avsc's cursor over a buffer (lib/utils.js Tap): the parts used here. */
interface Tap {
  buf: Buffer;
  pos: number;
}

const INT_MAX = 2 ** 31 - 1;
const INT_MIN = -(2 ** 31);

/** Reads one int. Past the end of the buffer it leaves `tap.pos` beyond it (avsc then reports a truncated value). */
function readExactInt(tap: Tap): number {
  const buf = tap.buf;
  let pos = tap.pos;
  let byte = buf[pos++] ?? 0;
  if ((byte & 0x80) === 0) {
    // One byte: most ints; the zigzag decode of 0..127.
    tap.pos = pos;
    return (byte >>> 1) ^ -(byte & 1);
  }
  // Up to 5 bytes (35 bits) in floating point, exact far beyond that.
  let zigzag = byte & 0x7f;
  let scale = 128;
  for (let index = 1; index < 5; index += 1) {
    byte = buf[pos++] ?? 0;
    zigzag += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) break;
    scale *= 128;
  }
  tap.pos = pos;
  if (pos > buf.length) return 0; // truncated: avsc says so
  if ((byte & 0x80) !== 0) throw new RangeError('an int varint runs past 5 bytes');
  const value = zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2;
  if (value > INT_MAX || value < INT_MIN) throw new RangeError(`int ${value} is beyond the 32-bit range of an Avro int`);
  return value;
}

const IntType = avro.types.IntType as unknown as new () => Type;

class ExactIntType extends IntType {
  _read(tap: Tap): number {
    return readExactInt(tap);
  }
}

/** The one instance: stateless, and frozen by avsc's constructor. */
export const EXACT_INT: Type = new ExactIntType();

/** Where avsc would make a plain int (`"int"` or `{"type": "int", …}`), the exact one (as exact-long.ts does for longs). */
export function exactIntHook(schema: unknown): Type | undefined {
  if (schema === 'int') return EXACT_INT;
  if (typeof schema === 'object' && schema !== null && !Array.isArray(schema) && (schema as { type?: unknown }).type === 'int') return EXACT_INT;
  return undefined;
}
