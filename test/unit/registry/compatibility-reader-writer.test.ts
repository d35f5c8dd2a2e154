import avro from 'avsc';
import type { Type } from 'avsc';
import { describe, expect, it } from 'vitest';

import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { readerWriterIncompatibilities } from '../../../src/registry/compatibility.js';

const parse = (schema: unknown): Type => parseAvroSchema(JSON.stringify(schema)).type;
const check = (reader: unknown, writer: unknown) => readerWriterIncompatibilities(parse(reader), parse(writer));

describe('readerWriterIncompatibilities: locations', () => {
  it('reports a named type used in two fields at both places', () => {
    const point = (coordinate: string) => ({
      type: 'record',
      name: 'Point',
      fields: [{ name: 'x', type: coordinate }],
    });
    const reader = { type: 'record', name: 'Line', fields: [{ name: 'from', type: point('int') }, { name: 'to', type: 'Point' }] };
    const writer = { type: 'record', name: 'Line', fields: [{ name: 'from', type: point('long') }, { name: 'to', type: 'Point' }] };
    expect(check(reader, writer).map(({ location }) => location)).toEqual([
      '/fields/0/type/fields/0/type',
      '/fields/1/type/fields/0/type',
    ]);
  });

  it('terminates on mutually recursive types and reports a deep mismatch once', () => {
    const tree = (leaf: string) => ({
      type: 'record',
      name: 'Tree',
      fields: [
        { name: 'value', type: leaf },
        {
          name: 'children',
          type: {
            type: 'array',
            items: { type: 'record', name: 'Node', fields: [{ name: 'tree', type: 'Tree' }, { name: 'next', type: ['null', 'Node'] }] },
          },
        },
      ],
    });
    expect(check(tree('long'), tree('int'))).toEqual([]);
    expect(check(tree('int'), tree('long'))).toEqual([
      {
        type: 'TYPE_MISMATCH',
        location: '/fields/0/type',
        message: 'reader type: INT not compatible with writer type: LONG',
      },
    ]);
  });

  it('escapes nothing it does not need to: union branch indexes and field positions are plain tokens', () => {
    const reader = { type: 'record', name: 'R', fields: [{ name: 'a', type: ['null', { type: 'map', values: 'int' }] }] };
    const writer = { type: 'record', name: 'R', fields: [{ name: 'a', type: ['null', { type: 'map', values: 'double' }] }] };
    expect(check(reader, writer)).toEqual([
      {
        type: 'MISSING_UNION_BRANCH',
        location: '/fields/0/type/1',
        message: 'reader union lacking writer type: MAP',
      },
    ]);
  });
});

describe('readerWriterIncompatibilities: names and aliases (Avro ≥ 1.9 rules)', () => {
  const named = (name: string, extra: Record<string, unknown> = {}) => ({ type: 'fixed', name, size: 2, ...extra });

  it('ignores namespaces', () => {
    expect(check(named('a.F'), named('b.F'))).toEqual([]);
  });

  it("accepts a writer whose full name is among the reader's aliases", () => {
    expect(check(named('New', { aliases: ['ns.Old'] }), named('ns.Old'))).toEqual([]);
    expect(check(named('ns.New', { aliases: ['Old'] }), named('ns.Old'))).toEqual([]);
  });

  it('compares aliases by full name: an alias in another namespace does not match', () => {
    expect(check(named('New', { aliases: ['Old'] }), named('ns.Old'))).toEqual([
      { type: 'NAME_MISMATCH', location: '/name', message: 'expected: ns.Old' },
    ]);
  });

  it('matches renamed fields through the reader field aliases', () => {
    const writer = { type: 'record', name: 'R', fields: [{ name: 'old', type: 'int' }] };
    const reader = { type: 'record', name: 'R', fields: [{ name: 'renamed', type: 'long', aliases: ['old'] }] };
    expect(check(reader, writer)).toEqual([]);
  });

  it('reports a reader field whose name and aliases match several writer fields', () => {
    const writer = {
      type: 'record',
      name: 'R',
      fields: [
        { name: 'a', type: 'int' },
        { name: 'b', type: 'int' },
      ],
    };
    const reader = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'int', aliases: ['b'] }] };
    expect(check(reader, writer)).toEqual([
      {
        type: 'READER_FIELD_MATCHES_MULTIPLE_WRITER_FIELDS',
        location: '/fields/0',
        message: 'reader field a matches writer fields a, b',
      },
    ]);
  });

  it('reads an error type as a record of the same name', () => {
    const fields = [{ name: 'reason', type: 'string' }];
    expect(check({ type: 'error', name: 'Failure', fields }, { type: 'record', name: 'Failure', fields })).toEqual([]);
  });
});

describe('readerWriterIncompatibilities: what Java does not consider', () => {
  it('ignores doc, order, custom attributes and default values', () => {
    const writer = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'int', default: 1 }] };
    const reader = {
      type: 'record',
      name: 'R',
      doc: 'changed',
      'x-owner': 'team',
      fields: [{ name: 'a', type: 'int', default: 2, order: 'descending', doc: 'also changed' }],
    };
    expect(check(reader, writer)).toEqual([]);
  });

  it('compares logical types as their underlying types, also when avsc implements them', () => {
    class MillisType extends avro.types.LogicalType {
      protected override _fromValue(value: number): Date {
        return new Date(value);
      }
      protected override _toValue(date: unknown): number | undefined {
        return date instanceof Date ? date.getTime() : undefined;
      }
    }
    const logicalTypes = { 'timestamp-millis': MillisType };
    const millis = avro.Type.forSchema({ type: 'long', logicalType: 'timestamp-millis' }, { logicalTypes });
    expect(millis.typeName).toBe('logical:timestamp-millis');
    expect(readerWriterIncompatibilities(millis, parse('long'))).toEqual([]);
    expect(readerWriterIncompatibilities(millis, parse('int'))).toEqual([]);
    expect(readerWriterIncompatibilities(parse('long'), millis)).toEqual([]);
    expect(readerWriterIncompatibilities(millis, parse('string'))).toEqual([
      { type: 'TYPE_MISMATCH', location: '/', message: 'reader type: LONG not compatible with writer type: STRING' },
    ]);
    // Without an implementation, parseAvroSchema keeps the underlying type: a decimal scale change is no mismatch.
    const decimal = (scale: number) => ({ type: 'bytes', logicalType: 'decimal', precision: 9, scale });
    expect(check(decimal(2), decimal(4))).toEqual([]);
  });

  it('reads an avsc custom long (LongType.__with, e.g. bigint longs) as a long', () => {
    const bigintLong = avro.types.LongType.__with({
      fromBuffer: (buffer: Buffer) => buffer.readBigInt64LE(),
      toBuffer: (value: bigint) => {
        const buffer = Buffer.alloc(8);
        buffer.writeBigInt64LE(value);
        return buffer;
      },
      fromJSON: (value: number) => BigInt(value),
      toJSON: (value: bigint) => Number(value),
      isValid: (value: unknown) => typeof value === 'bigint',
      compare: (left: bigint, right: bigint) => (left < right ? -1 : left > right ? 1 : 0),
    });
    const schema = { type: 'record', name: 'R', fields: [{ name: 'at', type: 'long' }] };
    const withBigints = avro.Type.forSchema(schema as avro.Schema, { registry: { long: bigintLong } });
    const intField = { type: 'record', name: 'R', fields: [{ name: 'at', type: 'int' }] };
    expect(readerWriterIncompatibilities(withBigints, parse(schema))).toEqual([]);
    expect(readerWriterIncompatibilities(withBigints, parse(intField))).toEqual([]);
    expect(readerWriterIncompatibilities(parse(intField), withBigints)).toEqual([
      { type: 'TYPE_MISMATCH', location: '/fields/0/type', message: 'reader type: INT not compatible with writer type: LONG' },
    ]);
  });

  it('gives the same answers for wrapped and unwrapped avsc unions', () => {
    const reader = ['null', 'string', 'long'];
    const writer = ['null', 'int', 'boolean'];
    const wrapped = (schema: unknown) => avro.Type.forSchema(schema as avro.Schema, { wrapUnions: true });
    const expected = [{ type: 'MISSING_UNION_BRANCH', location: '/2', message: 'reader union lacking writer type: BOOLEAN' }];
    expect(check(reader, writer)).toEqual(expected);
    expect(readerWriterIncompatibilities(wrapped(reader), wrapped(writer))).toEqual(expected);
    expect(readerWriterIncompatibilities(wrapped(reader), parse(writer))).toEqual(expected);
  });
});
