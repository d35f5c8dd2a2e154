import { describe, expect, it } from 'vitest';

import { parseAvroSchema } from '../../../src/registry/avro-schema.js';

const fingerprint = (schema: unknown): string =>
  parseAvroSchema(typeof schema === 'string' ? schema : JSON.stringify(schema)).fingerprint;

const record = (fields: unknown[], extra: Record<string, unknown> = {}) => ({ type: 'record', name: 'R', ...extra, fields });

describe('canonical form: one exact rendering', () => {
  it('writes full names, fixed attribute order, sorted props and no default order', () => {
    const parsed = parseAvroSchema(`{
      "x-team": "growth",
      "fields": [
        {"type": {"type": "enum", "symbols": ["A", "B"], "name": "Kind", "default": "A", "aliases": ["OldKind"]},
         "name": "kind", "order": "ascending", "aliases": ["type"], "doc": "what it is"},
        {"name": "amount", "default": {"b": 2, "a": 1},
         "type": {"type": "record", "name": "Money", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "int"}]}},
        {"name": "at", "type": {"logicalType": "timestamp-millis", "type": "long"}, "order": "descending"},
        {"name": "again", "type": ["null", "Money"], "default": null}
      ],
      "namespace": "com.example",
      "doc": "An event",
      "name": "Event",
      "type": "record",
      "aliases": ["Happening", "old.Event"],
      "a-prop": [1, {"z": true, "y": null}]
    }`);
    expect(parsed.canonical).toBe(
      '{"type":"record","name":"com.example.Event","doc":"An event","fields":[' +
        '{"name":"kind","type":{"type":"enum","name":"com.example.Kind","symbols":["A","B"],"default":"A",' +
        '"aliases":["com.example.OldKind"]},"doc":"what it is","aliases":["type"]},' +
        '{"name":"amount","type":{"type":"record","name":"com.example.Money","fields":[{"name":"a","type":"int"},' +
        '{"name":"b","type":"int"}]},"default":{"a":1,"b":2}},' +
        '{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"},"order":"descending"},' +
        '{"name":"again","type":["null","com.example.Money"],"default":null}],' +
        '"a-prop":[1,{"y":null,"z":true}],"x-team":"growth","aliases":["com.example.Happening","old.Event"]}',
    );
  });

  it('keeps integer-like custom attribute names in sorted order', () => {
    expect(parseAvroSchema(JSON.stringify({ type: 'fixed', name: 'F', size: 2, b: 1, '10': 2, '9': 3 })).canonical).toBe(
      '{"type":"fixed","name":"F","size":2,"10":2,"9":3,"b":1}',
    );
  });
});

describe('canonical form: the same schema written differently gets one fingerprint', () => {
  const equivalences: readonly (readonly [string, unknown, unknown])[] = [
    ['whitespace', '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}', '{ "type" : "record" ,\n\t"name":"R", "fields" : [ { "name" : "a" , "type" : "int" } ] }'],
    ['attribute order', record([{ name: 'a', type: 'int' }]), { fields: [{ type: 'int', name: 'a' }], name: 'R', type: 'record' }],
    ['"int" vs {"type":"int"} at the top', '"int"', { type: 'int' }],
    ['"int" vs {"type":"int"} in a field', record([{ name: 'a', type: 'int' }]), record([{ name: 'a', type: { type: 'int' } }])],
    ['primitives inside unions, arrays and maps', ['null', { type: 'array', items: 'long' }], [{ type: 'null' }, { type: 'array', items: { type: 'long' } }]],
    ['namespace attribute vs dotted name', record([], { name: 'R', namespace: 'a.b' }), record([], { name: 'a.b.R' })],
    [
      'a reference by short name vs by full name',
      record([{ name: 's', type: { type: 'fixed', name: 'S', size: 1 } }, { name: 't', type: 'S' }], { namespace: 'n' }),
      record([{ name: 's', type: { type: 'fixed', name: 'S', size: 1 } }, { name: 't', type: 'n.S' }], { namespace: 'n' }),
    ],
    ['an explicit ascending order', record([{ name: 'a', type: 'int', order: 'ascending' }]), record([{ name: 'a', type: 'int' }])],
    ['custom attribute order', record([], { x: 1, y: 2 }), record([], { y: 2, x: 1 })],
    [
      'key order inside a default',
      record([{ name: 'm', type: { type: 'map', values: 'int' }, default: { a: 1, b: 2 } }]),
      record([{ name: 'm', type: { type: 'map', values: 'int' }, default: { b: 2, a: 1 } }]),
    ],
    ['a short alias vs the qualified one', record([], { namespace: 'n', aliases: ['Old'] }), record([], { namespace: 'n', aliases: ['n.Old'] })],
    ['doc on an unnamed type, which Avro drops', { type: 'int', doc: 'ignored by Avro' }, '"int"'],
    ['an empty aliases list', record([], { aliases: [] }), record([])],
    ['"namespace": null and no namespace', record([], { namespace: null }), record([])],
  ];

  it.each(equivalences)('%s', (_what, left, right) => {
    expect(fingerprint(left)).toBe(fingerprint(right));
  });
});

describe('canonical form: anything a reader could observe changes the fingerprint', () => {
  const base = record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string' }], { namespace: 'n' });
  const variants: readonly (readonly [string, unknown])[] = [
    ['a different default', record([{ name: 'a', type: 'int', default: 2 }, { name: 'b', type: 'string' }], { namespace: 'n' })],
    ['a default removed', record([{ name: 'a', type: 'int' }, { name: 'b', type: 'string' }], { namespace: 'n' })],
    ['a record doc', record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string' }], { namespace: 'n', doc: 'x' })],
    ['a field doc', record([{ name: 'a', type: 'int', default: 1, doc: 'x' }, { name: 'b', type: 'string' }], { namespace: 'n' })],
    ['a custom attribute', record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string' }], { namespace: 'n', owner: 'me' })],
    ['a field attribute', record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string', 'avro.java.string': 'String' }], { namespace: 'n' })],
    ['a descending order', record([{ name: 'a', type: 'int', default: 1, order: 'descending' }, { name: 'b', type: 'string' }], { namespace: 'n' })],
    ['a field alias', record([{ name: 'a', type: 'int', default: 1, aliases: ['x'] }, { name: 'b', type: 'string' }], { namespace: 'n' })],
    ['a type alias', record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string' }], { namespace: 'n', aliases: ['Old'] })],
    ['another namespace', record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string' }], { namespace: 'm' })],
    ['fields swapped', record([{ name: 'b', type: 'string' }, { name: 'a', type: 'int', default: 1 }], { namespace: 'n' })],
    ['a logical type', record([{ name: 'a', type: { type: 'int', logicalType: 'date' }, default: 1 }, { name: 'b', type: 'string' }], { namespace: 'n' })],
    ['error instead of record', { ...record([{ name: 'a', type: 'int', default: 1 }, { name: 'b', type: 'string' }], { namespace: 'n' }), type: 'error' }],
  ];

  it.each(variants)('%s', (_what, variant) => {
    expect(fingerprint(variant)).not.toBe(fingerprint(base));
  });

  it('tells apart enum defaults, symbol orders and decimal scales', () => {
    const enumOf = (extra: Record<string, unknown>) => ({ type: 'enum', name: 'E', symbols: ['A', 'B'], ...extra });
    expect(fingerprint(enumOf({ default: 'A' }))).not.toBe(fingerprint(enumOf({ default: 'B' })));
    expect(fingerprint(enumOf({}))).not.toBe(fingerprint(enumOf({ default: 'A' })));
    expect(fingerprint(enumOf({}))).not.toBe(fingerprint(enumOf({ symbols: ['B', 'A'] })));
    const decimal = (scale: number) => ({ type: 'bytes', logicalType: 'decimal', precision: 9, scale });
    expect(fingerprint(decimal(2))).not.toBe(fingerprint(decimal(3)));
  });
});
