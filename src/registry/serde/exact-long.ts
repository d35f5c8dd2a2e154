/**
 * Avro longs as JavaScript numbers, read exactly or refused. avsc's own long reads a varint of
 * more than 4 bytes with floating-point arithmetic: the zigzag form of a long below −2^52 is an odd
 * number above 2^53, which a double cannot hold, so −4503599627370497 comes back as +4503599627370496
 * without a word (avsc only refuses results beyond ±(2^53 − 2)). This type reads varints of up to
 * 7 bytes (|n| < 2^48, every long a program writes as a number in practice) with the same
 * arithmetic, exact in that range, and longer ones through a BigInt: a value a number holds exactly
 * comes back exactly, any other is a RangeError naming it. Writing goes through a BigInt as well
 * beyond ±2^52, where avsc's writer has the same fault.
 *
 * It is still avsc's `long` (typeName, union buckets, resolution and defaults unchanged): only
 * `_read` and `_write` differ, so decoded values and union wrapping are the same as before.
 */
import avro from 'avsc';
import type { Type } from 'avsc';
import { boundedCollectionHook } from './bounded-collections.js';
import { exactIntHook } from './exact-int.js';

/** avsc's cursor over a buffer (lib/utils.js Tap): the parts used here. */
interface Tap {
  buf: Buffer;
  pos: number;
  writeLong(n: number): void;
}

const EXACT_WRITE_LIMIT = 2 ** 52;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

/**
 * Reads one long. Called with `this` bound to a resolver as well (avsc copies `_read` onto
 * resolvers), so it uses only its argument. Past the end of the buffer it leaves `tap.pos` beyond
 * it, which avsc reports as a truncated value, as with its own long.
 */
function readExactLong(tap: Tap): number {
  const buf = tap.buf;
  let pos = tap.pos;
  // Up to 4 bytes (28 bits) in integer arithmetic, as avsc does; past the end a byte reads as 0.
  let n = 0;
  let shift = 0;
  let byte: number;
  do {
    byte = buf[pos++] ?? 0;
    n |= (byte & 0x7f) << shift;
    shift += 7;
  } while ((byte & 0x80) !== 0 && shift < 28);
  if ((byte & 0x80) === 0) {
    tap.pos = pos;
    return (n >>> 1) ^ -(n & 1);
  }
  // Then up to 3 more (49 bits in all) in floating point, exact below 2^53.
  let zigzag = n;
  let scale = 2 ** 28;
  for (let index = 0; index < 3; index += 1) {
    byte = buf[pos++] ?? 0;
    zigzag += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) {
      tap.pos = pos;
      return zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2;
    }
    scale *= 128;
  }
  let big = BigInt(zigzag);
  let bigShift = 49n;
  do {
    byte = buf[pos++] ?? 0;
    big |= BigInt(byte & 0x7f) << bigShift;
    bigShift += 7n;
  } while ((byte & 0x80) !== 0 && bigShift < 70n);
  tap.pos = pos;
  if ((byte & 0x80) !== 0) throw new RangeError('a long varint runs past 10 bytes');
  big = BigInt.asUintN(64, big);
  const value = (big >> 1n) ^ -(big & 1n);
  if (value > MAX_SAFE || value < MIN_SAFE) {
    throw new RangeError(`long ${value} is beyond ±(2^53 − 1), where JavaScript numbers are exact: it cannot be read as a number`);
  }
  return Number(value);
}

function writeExactLong(tap: Tap, value: number): void {
  if (value >= -EXACT_WRITE_LIMIT && value <= EXACT_WRITE_LIMIT) {
    tap.writeLong(value); // 2|n| fits a double exactly here
    return;
  }
  const n = BigInt(value);
  let zigzag = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const buf = tap.buf;
  while (zigzag > 0x7fn) {
    buf[tap.pos++] = Number(zigzag & 0x7fn) | 0x80;
    zigzag >>= 7n;
  }
  buf[tap.pos++] = Number(zigzag);
}

const LongType = avro.types.LongType as unknown as new () => Type;

class ExactLongType extends LongType {
  _check(value: unknown, _flags: unknown, hook?: (value: unknown, type: Type) => void): boolean {
    const valid = typeof value === 'number' && Number.isSafeInteger(value);
    if (!valid && hook !== undefined) hook(value, this);
    return valid;
  }

  _read(tap: Tap): number {
    return readExactLong(tap);
  }

  _write(tap: Tap, value: unknown): void {
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new Error(`invalid "long": ${JSON.stringify(value) ?? String(value)}`);
    writeExactLong(tap, value);
  }
}

/** The one instance: stateless, and frozen by avsc's constructor. */
export const EXACT_LONG: Type = new ExactLongType();

/** Where avsc would make a plain long (`"long"` or `{"type": "long", …}`), the exact one. */
function exactLongHook(schema: unknown): Type | undefined {
  if (schema === 'long') return EXACT_LONG;
  if (typeof schema === 'object' && schema !== null && !Array.isArray(schema) && (schema as { type?: unknown }).type === 'long') return EXACT_LONG;
  return undefined;
}

const exactTypes = new WeakMap<Type, Type>();

/**
 * `type` rebuilt for decoding untrusted bytes (cached per Type): exact longs, ints refused beyond
 * 32 bits (exact-int.ts), and arrays and maps whose declared counts are checked before they
 * allocate (bounded-collections.ts); everything else as avsc parses its schema.
 */
export function withExactLongs(type: Type): Type {
  let exact = exactTypes.get(type);
  if (exact === undefined) {
    const typeHook = (schema: unknown, options: unknown): Type | undefined => exactLongHook(schema) ?? exactIntHook(schema) ?? boundedCollectionHook(schema, options);
    exact = avro.Type.forSchema(type.schema({ exportAttrs: true }), { registry: {}, typeHook: typeHook });
    exactTypes.set(type, exact);
  }
  return exact;
}
