import { createHash } from 'node:crypto';

import type { Type } from 'avsc';
import { describe, expect, it } from 'vitest';

import { isTributaryError, type TributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';

function parseError(text: string, schemaType?: string): TributaryError {
  try {
    parseAvroSchema(text, schemaType);
  } catch (error) {
    if (isTributaryError(error)) return error;
    throw new Error(`expected a TributaryError, got ${String(error)}`);
  }
  throw new Error(`expected ${text} to be refused`);
}

const json = (value: unknown) => JSON.stringify(value);
const recordOf = (fields: unknown[], extra: Record<string, unknown> = {}) => json({ type: 'record', name: 'R', ...extra, fields });

describe('parseAvroSchema: what it returns', () => {
  const submitted = `{
    "type": "record", "name": "User", "namespace": "com.example",
    "fields": [
      {"name": "id", "type": "long"},
      {"name": "email", "type": ["null", "string"], "default": null}
    ]
  }`;
  const parsed = parseAvroSchema(submitted);

  it('keeps the submitted JSON, minified, and its parsed document', () => {
    expect(parsed.text).toBe(JSON.stringify(JSON.parse(submitted)));
    expect(parsed.json).toEqual(JSON.parse(submitted));
  });

  it('gives an avsc type that encodes and decodes values, defaults included', () => {
    expect(parsed.type.name).toBe('com.example.User');
    const value = { id: 7, email: 'ann@example.com' };
    expect(parsed.type.fromBuffer(parsed.type.toBuffer(value))).toEqual(value);
    const fields = (parsed.type as unknown as { fields: { defaultValue(): unknown }[] }).fields;
    expect(fields[1]?.defaultValue()).toBeNull();
  });

  it('fingerprints the canonical form with sha256', () => {
    expect(parsed.fingerprint).toBe(createHash('sha256').update(parsed.canonical).digest('hex'));
    expect(parsed.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is immutable, its document included', () => {
    expect(Object.isFrozen(parsed)).toBe(true);
    const document = parsed.json as { fields: { type: unknown[] }[] };
    expect(Object.isFrozen(document.fields[1]?.type)).toBe(true);
  });

  it('accepts a primitive as the whole schema, with or without schemaType AVRO', () => {
    expect(parseAvroSchema('"string"').type.typeName).toBe('string');
    expect(parseAvroSchema('"string"', 'AVRO').canonical).toBe('"string"');
  });

  it('keeps logical types as their underlying type, as Avro Java does when checking compatibility', () => {
    const timestamp = parseAvroSchema(json({ type: 'long', logicalType: 'timestamp-millis' }));
    expect(timestamp.type.typeName).toBe('long');
    expect(timestamp.canonical).toBe('{"type":"long","logicalType":"timestamp-millis"}');
  });
});

describe('parseAvroSchema: avsc 5.7.9 workarounds', () => {
  const fieldType = (type: Type, index: number): Type =>
    (type as unknown as { fields: { type: Type }[] }).fields[index]?.type as Type;

  it('puts types nested in a dotted name in that name\'s namespace, not the namespace attribute\'s', () => {
    const parsed = parseAvroSchema(
      json({ type: 'record', name: 'a.b.R', namespace: 'c', fields: [{ name: 's', type: { type: 'record', name: 'S', fields: [] } }] }),
    );
    expect(parsed.type.name).toBe('a.b.R');
    expect(fieldType(parsed.type, 0).name).toBe('a.b.S');
    expect(parsed.canonical).toContain('"name":"a.b.S"');
  });

  it('treats "namespace": null as absent, as Java does', () => {
    const parsed = parseAvroSchema(
      json({ type: 'record', name: 'o.Outer', fields: [{ name: 'r', type: { type: 'record', name: 'R', namespace: null, fields: [] } }] }),
    );
    expect(fieldType(parsed.type, 0).name).toBe('o.R');
  });

  it("qualifies a type's aliases with its own namespace", () => {
    const parsed = parseAvroSchema(
      json({
        type: 'record',
        name: 'Outer',
        namespace: 'other',
        fields: [{ name: 'e', type: { type: 'enum', name: 'ns.E', aliases: ['Old'], symbols: ['A'] } }],
      }),
    );
    expect(fieldType(parsed.type, 0).aliases).toEqual(['ns.Old']);
  });
});

describe('parseAvroSchema: schemaType', () => {
  it.each(['JSON', 'PROTOBUF', 'XML'])('refuses %s with SCHEMA_TYPE_UNSUPPORTED before reading the schema', (schemaType) => {
    const error = parseError('{"type": "object"}', schemaType);
    expect(error.code).toBe('SCHEMA_TYPE_UNSUPPORTED');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(`"${schemaType}"`);
    expect(error.message).toContain('"AVRO"');
  });

  it('says schemaType is case-sensitive when it is "avro"', () => {
    const error = parseError('"int"', 'avro');
    expect(error.code).toBe('SCHEMA_TYPE_UNSUPPORTED');
    expect(error.message).toContain('case-sensitive');
  });
});

describe('parseAvroSchema: text that is not JSON', () => {
  it.each([
    ['an empty text', '', 'Empty schema'],
    ['blank text', ' \n\t ', 'Empty schema'],
    ['a missing comma', '{"type": "record",\n "name": "R"\n "fields": []}', "line 3 column 2 (character 33): expected ',' or '}' after the property value, found '\"'"],
    ['a trailing comma', '["int",]', 'line 1 column 8 (character 7): expected a value'],
    ['an unterminated string', '"int', 'line 1 column 5 (character 4): expected the closing \'"\' of the string, found the end of the text'],
    ['a single-quoted key', "{'type': 'int'}", 'line 1 column 2 (character 1): expected a double-quoted property name'],
    ['text after the value', '"int" "long"', 'line 1 column 7 (character 6): expected the end of the text'],
  ])('refuses %s, saying where', (_what, text, expected) => {
    const error = parseError(text);
    expect(error.code).toBe('SCHEMA_INVALID');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(expected);
  });
});

describe('parseAvroSchema: invalid schemas are refused with where and what', () => {
  const deeplyNested = Array.from({ length: 250 }).reduce<unknown>((inner) => ({ type: 'array', items: inner }), 'int');
  const cases: readonly (readonly [string, string, string, string])[] = [
    ['null', 'null', '/', 'the null type is written as the string "null"'],
    ['a number', '5', '/', 'expected a type'],
    ['an undefined name', '"Foo"', '/', '"Foo" is neither a primitive type nor a named type defined earlier'],
    ['a reference to another subject', recordOf([{ name: 'a', type: 'com.other.Address' }]), '/fields/0/type', 'inline their definitions'],
    ['an unknown type', json({ type: 'integer' }), '/type', 'unknown type "integer"'],
    ['a named type written as an object', recordOf([{ name: 'self', type: ['null', { type: 'R' }] }]), '/fields/0/type/1/type', 'write the string "R"'],
    ['a type object as "type"', json({ type: { type: 'int' } }), '/type', '"type" must be a string'],
    ['a type object without "type"', json({ name: 'R', fields: [] }), '/', 'no "type" attribute'],
    ['an anonymous record', json({ type: 'record', fields: [] }), '/', 'anonymous record types are not allowed'],
    ['an anonymous enum', json({ type: 'enum', symbols: ['A'] }), '/', 'anonymous enum types are not allowed'],
    ['an invalid name', json({ type: 'record', name: '1R', fields: [] }), '/name', 'invalid name "1R"'],
    ['an invalid namespace', json({ type: 'record', name: 'R', namespace: 'a.1b', fields: [] }), '/namespace', 'invalid namespace "a.1b"'],
    ['a primitive name reused', json({ type: 'fixed', name: 'int', size: 1 }), '/name', '"int" is a primitive type name'],
    [
      'a name defined twice',
      recordOf([
        { name: 'a', type: { type: 'fixed', name: 'F', size: 1 } },
        { name: 'b', type: { type: 'fixed', name: 'F', size: 2 } },
      ]),
      '/fields/1/type/name',
      'the name "F" is already defined at /fields/0/type',
    ],
    ['a record without fields', json({ type: 'record', name: 'R' }), '/', 'a record needs "fields"'],
    ['a field that is not an object', recordOf(['int']), '/fields/0', 'a field must be an object'],
    ['an invalid field name', recordOf([{ name: 'f-x', type: 'int' }]), '/fields/0/name', 'invalid field name "f-x"'],
    [
      'a field name used twice',
      recordOf([
        { name: 'a', type: 'int' },
        { name: 'a', type: 'long' },
      ]),
      '/fields/1',
      'record "R" already has a field "a" (at index 0)',
    ],
    ['a field without type', recordOf([{ name: 'a' }]), '/fields/0', 'field "a" has no "type"'],
    ['an invalid field order', recordOf([{ name: 'a', type: 'int', order: 'up' }]), '/fields/0/order', 'invalid order "up"'],
    ['field aliases that are not a list', recordOf([{ name: 'a', type: 'int', aliases: 'b' }]), '/fields/0/aliases', '"aliases" must be an array'],
    ['an invalid type alias', json({ type: 'fixed', name: 'F', size: 1, aliases: ['ok', '2bad'] }), '/aliases/1', 'invalid alias "2bad"'],
    ['a doc that is not a string', json({ type: 'record', name: 'R', doc: 5, fields: [] }), '/doc', '"doc" must be a string'],
    ['an enum without symbols', json({ type: 'enum', name: 'E', symbols: [] }), '/symbols', 'a non-empty array of names'],
    ['an invalid enum symbol', json({ type: 'enum', name: 'E', symbols: ['A', 'b-c'] }), '/symbols/1', 'invalid enum symbol "b-c"'],
    ['a repeated enum symbol', json({ type: 'enum', name: 'E', symbols: ['A', 'A'] }), '/symbols/1', 'enum symbol "A" appears twice'],
    ['an enum default not among the symbols', json({ type: 'enum', name: 'E', symbols: ['A'], default: 'B' }), '/default', 'the enum default "B" is not one of the symbols'],
    ['a negative fixed size', json({ type: 'fixed', name: 'F', size: -1 }), '/size', 'a whole number of bytes'],
    ['a fractional fixed size', json({ type: 'fixed', name: 'F', size: 1.5 }), '/size', 'got 1.5'],
    ['an array without items', json({ type: 'array' }), '/', 'an array type needs "items"'],
    ['a map without values', json({ type: 'map' }), '/', 'a map type needs "values"'],
    ['an empty union', '[]', '/', 'an empty union cannot hold any value'],
    ['a union inside a union', json(['null', ['int']]), '/1', 'a union cannot directly contain another union'],
    ['a repeated union branch', json(['int', 'string', { type: 'int' }]), '/2', 'already has a branch of type "int" (at index 0)'],
    [
      'a named type twice in a union',
      recordOf([{ name: 'a', type: { type: 'enum', name: 'E', symbols: ['A'] } }, { name: 'b', type: ['E', 'E'] }]),
      '/fields/1/type/1',
      'already has a branch of type "E"',
    ],
    ['types nested too deep', json(deeplyNested), '/items'.repeat(201), 'more than 200 levels deep'],
    ['a default of the wrong type', recordOf([{ name: 'a', type: 'int', default: 'x' }]), '/fields/0/default', 'field "a" of record "R" has default "x", which is not a value of its type "int"'],
    [
      'a union default of a later branch',
      recordOf([{ name: 'email', type: ['null', 'string'], default: 'none' }]),
      '/fields/0/default',
      'for a union one of its first branch',
    ],
    [
      'a bad default deep inside',
      recordOf([{ name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'ok', type: 'int' }, { name: 'n', type: 'long', default: 1.5 }] } }]),
      '/fields/0/type/fields/1/default',
      'field "n" of record "I" has default 1.5',
    ],
    [
      'a long default beyond 2^53',
      '{"type":"record","name":"R","fields":[{"name":"big","type":"long","default":12345678901234567890}]}',
      '/fields/0/default',
      'integers beyond ±2^53−1 lose precision',
    ],
  ];

  it.each(cases)('refuses %s', (_what, text, location, expected) => {
    const error = parseError(text);
    expect(error.code).toBe('SCHEMA_INVALID');
    expect(error.retriable).toBe(false);
    expect(error.details.location).toBe(location);
    expect(error.message).toContain(`at ${location}`);
    expect(error.message).toContain(expected);
  });

  it('refuses JSON nested thousands deep anywhere, custom attributes and defaults included, without overflowing', () => {
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    for (const text of [
      `{"type":"record","name":"R","x-deep":${deep},"fields":[]}`,
      `{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":${deep}}]}`,
    ]) {
      const error = parseError(text);
      expect(error.code).toBe('SCHEMA_INVALID');
      expect(error.message).toContain('nested more than 1000 levels deep');
    }
  });

  it('names every bad default at once', () => {
    const error = parseError(
      recordOf([
        { name: 'a', type: 'int', default: 'x' },
        { name: 'b', type: 'string' },
        { name: 'c', type: 'boolean', default: 0 },
      ]),
    );
    expect(error.details.locations).toEqual(['/fields/0/default', '/fields/2/default']);
    expect(error.message).toContain('field "a"');
    expect(error.message).toContain('field "c"');
  });
});
