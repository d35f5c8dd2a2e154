/**
 * How data files parse Avro schemas. avsc drops a `logicalType` it has no implementation for, so a
 * Type parsed the registry's way would write `timestamp-millis` fields as plain longs (in the
 * file's schema and as Parquet columns). Here every logical type of the Avro specification gets an
 * implementation that changes no value (a timestamp-millis stays a number of milliseconds, a
 * decimal stays bytes), so records decoded by the registry's Types are valid for these Types too,
 * and the annotation, with decimal's precision and scale, survives into the file.
 */
import avro from 'avsc';
import type { Schema, Type } from 'avsc';

/** Logical types of the Avro specification (1.12). */
const SPECIFIED_LOGICAL_TYPES = [
  'decimal',
  'uuid',
  'date',
  'time-millis',
  'time-micros',
  'timestamp-millis',
  'timestamp-micros',
  'timestamp-nanos',
  'local-timestamp-millis',
  'local-timestamp-micros',
  'local-timestamp-nanos',
  'duration',
] as const;

/** Attributes a logical type carries besides its name. */
const LOGICAL_ATTRIBUTES = ['precision', 'scale'] as const;

class AnnotationOnly extends avro.types.LogicalType {
  private readonly attributes: Readonly<Record<string, unknown>>;

  constructor(schema: Schema, opts?: unknown) {
    super(schema, opts);
    // avsc builds the long under a logical type itself, past the registry: make it the exact one.
    if (this.underlyingType.typeName === 'long') Object.defineProperty(this, '_underlyingType', { value: EXACT_LONG });
    const source = schema as unknown as Record<string, unknown>;
    this.attributes = Object.fromEntries(LOGICAL_ATTRIBUTES.filter((name) => source[name] !== undefined).map((name) => [name, source[name]]));
  }

  protected override _fromValue(value: unknown): unknown {
    return value;
  }

  protected override _toValue(value: unknown): unknown {
    return value;
  }

  /**
   * Reads from any writer type the underlying type can read. avsc hands over the writer's value,
   * so promotions (int to long, bytes to string) go through the underlying resolver.
   */
  protected override _resolve(type: Type): unknown {
    let resolver: avro.Resolver;
    try {
      resolver = this.underlyingType.createResolver(type);
    } catch {
      return undefined; // avsc then reports that the writer type cannot be read as this one
    }
    return (value: unknown): unknown => this.underlyingType.fromBuffer(type.toBuffer(value), resolver) as unknown;
  }

  protected override _export(schema: Schema): void {
    Object.assign(schema as object, this.attributes);
  }
}

const LOGICAL_TYPES = Object.fromEntries(SPECIFIED_LOGICAL_TYPES.map((name) => [name, AnnotationOnly]));

/**
 * Longs as JavaScript numbers, like avsc's own, but encoded exactly. avsc 5.7.9 zigzags a long
 * with floating-point arithmetic, and 2|n| − 1 is not a double for n < −2^52: it writes
 * −4503599627370497 as the varint of +4503599627370496 (and reads such varints wrongly). Here the
 * number goes through a 64-bit two's complement buffer, which avsc zigzags bit by bit (its
 * halves computed with exact double arithmetic: no BigInt per value).
 */
const TWO_TO_32 = 2 ** 32;
/** avsc copies what toBuffer answers before it calls again, so one scratch buffer serves every long. */
const LONG_SCRATCH = Buffer.alloc(8);
const EXACT_LONG = avro.types.LongType.__with({
  fromBuffer: (buffer: Buffer): number => {
    // The two halves as numbers: exact while the high half stays within ±2^21 (|value| < 2^53).
    const high = buffer.readInt32LE(4);
    if (high >= -(2 ** 21) && high < 2 ** 21) {
      const value = high * TWO_TO_32 + buffer.readUInt32LE(0);
      if (Number.isSafeInteger(value)) return value;
    }
    throw new RangeError(`long ${buffer.readBigInt64LE(0)} is beyond ±(2^53 − 1), where JavaScript numbers are exact`);
  },
  toBuffer: (value: number): Buffer => {
    const high = Math.floor(value / TWO_TO_32);
    LONG_SCRATCH.writeInt32LE(high, 4);
    LONG_SCRATCH.writeUInt32LE(value - high * TWO_TO_32, 0);
    return LONG_SCRATCH;
  },
  fromJSON: (value: unknown): number => Number(value),
  toJSON: (value: number): number => value,
  isValid: (value: unknown): boolean => typeof value === 'number' && Number.isSafeInteger(value),
  compare: (left: number, right: number): number => (left < right ? -1 : left > right ? 1 : 0),
});

/**
 * Parses an Avro schema (JSON text or its parsed form) into the Type to give `encodeDataFile`:
 * avsc's default representation of values (unions unwrapped when unambiguous, longs as numbers),
 * with logical types kept as annotations and longs encoded exactly.
 */
export function parseDataFileSchema(schema: unknown): Type {
  const parsed: unknown = typeof schema === 'string' ? JSON.parse(schema) : schema;
  return avro.Type.forSchema(parsed as Schema, { registry: { long: EXACT_LONG }, logicalTypes: LOGICAL_TYPES });
}

/** The schema a file records: what `type` writes, with doc, defaults and logical types. */
export function schemaJsonOf(type: Type): unknown {
  return type.schema({ exportAttrs: true });
}
