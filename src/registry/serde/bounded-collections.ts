/**
 * Avro arrays and maps whose declared counts are checked before anything is read or allocated.
 * avsc's own `_read` trusts a block count: `new Array(n)` and then n item reads, each of which
 * reads zeros once past the end of the buffer. A 10-byte payload declaring 2^31 ints therefore
 * spins through 2^31 reads and a 16 GiB array before avsc notices the value was truncated; one
 * declaring 2^31 nulls (items of zero bytes) is even "valid". Either ends the process.
 *
 * The rule here (the decoding rule of ARCHITECTURE.md: check every count against the bytes that
 * remain): an item that takes at least one byte cannot be declared more times than bytes remain.
 * Items that take no bytes at all (null, a record of nulls, fixed of size 0) are capped per
 * decoded message at MAX_EMPTY_ITEMS. An Avro type either always takes ≥ 1 byte or never any,
 * so the first item read tells which. A map entry always has a key (≥ 1 byte).
 *
 * The types stay avsc's `array` and `map` (typeName, resolution, defaults unchanged): only
 * `_read` differs. avsc copies `_read` onto resolvers, so it reads with `this.itemsType` /
 * `this.valuesType`, which on a resolver are the item resolvers.
 */
import avro from 'avsc';
import type { Type } from 'avsc';

/** Zero-byte items (e.g. nulls) one decoded message may hold in all; more is refused. */
export const MAX_EMPTY_ITEMS = 1 << 20;

/** avsc's cursor (lib/utils.js Tap), with this module's per-message budget of zero-byte items. */
interface Tap {
  buf: Buffer;
  pos: number;
  readLong(): number;
  skipLong(): void;
  readString(): string;
  emptyItems?: number;
}

interface ItemReader {
  _read(tap: Tap): unknown;
}

/** A block count: negative counts are followed by the block's byte size, which is skipped. */
function blockCount(tap: Tap): number {
  let count = tap.readLong();
  if (count < 0) {
    count = -count;
    tap.skipLong();
  }
  return count;
}

function refuse(what: string, count: number, remaining: number, reason: string): never {
  throw new RangeError(`${what} declares ${count} items with ${remaining} byte${remaining === 1 ? '' : 's'} left: ${reason}`);
}

/**
 * Reads `count` items with `readItem`, after checking the count can be real. Returns false once
 * the buffer ran out (the caller stops; avsc then reports a truncated value).
 */
function readBlock(what: string, count: number, tap: Tap, readItem: () => void): boolean {
  const remaining = tap.buf.length - tap.pos;
  if (remaining <= 0) return false;
  const before = tap.pos;
  readItem();
  if (tap.pos > tap.buf.length) return false;
  if (tap.pos === before) {
    // Items of zero bytes: nothing in the payload bounds them but this budget.
    const spent = (tap.emptyItems ?? 0) + count;
    if (spent > MAX_EMPTY_ITEMS) refuse(what, count, remaining, `more than ${MAX_EMPTY_ITEMS} items of zero bytes in one message are refused`);
    tap.emptyItems = spent;
  } else if (count - 1 > tap.buf.length - tap.pos) {
    refuse(what, count, remaining, 'each takes at least one byte, so the count is a lie');
  }
  for (let index = 1; index < count; index += 1) {
    readItem();
    if (tap.pos > tap.buf.length) return false;
  }
  return true;
}

const ArrayType = avro.types.ArrayType as unknown as new (schema: unknown, options: unknown) => Type;
const MapType = avro.types.MapType as unknown as new (schema: unknown, options: unknown) => Type;

class BoundedArrayType extends ArrayType {
  _read(this: { itemsType: ItemReader }, tap: Tap): unknown[] {
    const items = this.itemsType;
    const values: unknown[] = [];
    let count: number;
    while ((count = blockCount(tap)) !== 0) {
      if (!readBlock('an array block', count, tap, () => void values.push(items._read(tap)))) return values;
    }
    return values;
  }
}

class BoundedMapType extends MapType {
  _read(this: { valuesType: ItemReader }, tap: Tap): Record<string, unknown> {
    const valuesType = this.valuesType;
    const map: Record<string, unknown> = {};
    let count: number;
    while ((count = blockCount(tap)) !== 0) {
      const readEntry = (): void => {
        const key = tap.readString();
        // An own property even for "__proto__": an assignment would set the prototype instead
        // and lose the entry.
        Object.defineProperty(map, key, { value: valuesType._read(tap), enumerable: true, writable: true, configurable: true });
      };
      if (!readBlock('a map block', count, tap, readEntry)) return map;
    }
    return map;
  }
}

function isComplex(schema: unknown, typeName: string): schema is Record<string, unknown> {
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema) && (schema as { type?: unknown }).type === typeName;
}

/** avsc typeHook: where avsc would make an array or a map, the bounded one. */
export function boundedCollectionHook(schema: unknown, options: unknown): Type | undefined {
  if (isComplex(schema, 'array')) return new BoundedArrayType(schema, options);
  if (isComplex(schema, 'map')) return new BoundedMapType(schema, options);
  return undefined;
}
