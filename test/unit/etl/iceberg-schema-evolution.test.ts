/**
 * Table schemas following the registry (src/etl/iceberg/schema-evolution.ts): ids kept by path,
 * new fields numbered above the last column id and optional, the promotions Iceberg allows, and
 * refusals of every other change, naming the field.
 */
import { describe, expect, it } from 'vitest';
import { evolveSchema, idMapping } from '../../../src/etl/iceberg/schema-evolution.js';
import type { IcebergField, IcebergSchema, IcebergStruct } from '../../../src/etl/iceberg/table-schema.js';

const schema = (fields: IcebergField[], id = 0): IcebergSchema => ({ type: 'struct', 'schema-id': id, fields });
const TABLE = schema([
  { id: 1, name: 'id', required: true, type: 'int' },
  { id: 2, name: 'score', required: false, type: 'float' },
  { id: 3, name: 'header', required: true, type: { type: 'struct', fields: [{ id: 6, name: 'time', required: true, type: 'timestamptz' }] } },
  { id: 4, name: 'tags', required: true, type: { type: 'list', 'element-id': 7, 'element-required': true, element: 'string' } },
  { id: 5, name: 'price', required: false, type: 'decimal(9,2)' },
]);
const table = { schema: TABLE, lastColumnId: 7, schemaIds: [0] };

/** The same shape as rows would have it: fresh ids, different from the table's. */
function rows(change: (fields: IcebergField[]) => IcebergField[] = (fields) => fields): IcebergSchema {
  let next = 100;
  const renumber = (field: IcebergField): IcebergField => {
    const type = field.type;
    const id = next++;
    if (typeof type === 'string') return { ...field, id };
    if (type.type === 'struct') return { ...field, id, type: { type: 'struct', fields: type.fields.map(renumber) } };
    if (type.type === 'list') return { ...field, id, type: { ...type, 'element-id': next++ } };
    return { ...field, id, type: { ...type, 'key-id': next++, 'value-id': next++ } };
  };
  return schema(change(structuredClone(TABLE.fields) as IcebergField[]).map(renumber));
}

describe('evolving a table schema', () => {
  it('keeps the table ids and schema id when the shape is the same', () => {
    const evolved = evolveSchema(table, rows(), 't');
    expect(evolved).toEqual({ schema: TABLE, lastColumnId: 7, changes: [] });
    expect([...idMapping(rows(), evolved.schema).values()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('adds fields at the top and inside records, optional, with ids above the last', () => {
    const evolved = evolveSchema(
      table,
      rows((fields) => [
        ...fields.map((field) => (field.name === 'header' ? { ...field, type: { type: 'struct' as const, fields: [...(field.type as IcebergStruct).fields, { id: 0, name: 'region', required: true, type: 'string' }] } } : field)),
        { id: 0, name: 'attrs', required: true, type: { type: 'map', 'key-id': 0, key: 'string', 'value-id': 0, 'value-required': true, value: 'long' } },
      ]),
      't',
    );
    expect(evolved.changes).toEqual(['added header.region', 'added attrs']);
    expect(evolved.lastColumnId).toBe(11);
    expect(evolved.schema['schema-id']).toBe(1);
    const header = evolved.schema.fields[2]!.type as IcebergStruct;
    expect(header.fields[1]).toEqual({ id: 8, name: 'region', required: false, type: 'string' });
    expect(evolved.schema.fields[5]).toEqual({ id: 9, name: 'attrs', required: false, type: { type: 'map', 'key-id': 10, key: 'string', 'value-id': 11, 'value-required': true, value: 'long' } });
  });

  it('promotes int → long, float → double and widens decimals; makes a required field optional', () => {
    const evolved = evolveSchema(
      table,
      rows((fields) => fields.map((field) => (field.name === 'id' ? { ...field, required: false, type: 'long' } : field.name === 'score' ? { ...field, type: 'double' } : field.name === 'price' ? { ...field, type: 'decimal(12,2)' } : field))),
      't',
    );
    expect(evolved.changes).toEqual(['id made optional', 'id int → long', 'score float → double', 'price decimal(9,2) → decimal(12,2)']);
    expect(evolved.schema.fields.map((field) => [field.id, field.type, field.required])).toEqual([
      [1, 'long', false],
      [2, 'double', false],
      [3, expect.objectContaining({ type: 'struct' }), true],
      [4, expect.objectContaining({ type: 'list' }), true],
      [5, 'decimal(12,2)', false],
    ]);
  });

  it('drops what the rows no longer have, and never reuses its id', () => {
    const evolved = evolveSchema(table, rows((fields) => [...fields.filter((field) => field.name !== 'score'), { id: 0, name: 'score2', required: false, type: 'float' }]), 't');
    expect(evolved.changes).toEqual(['added score2', 'dropped score']);
    expect(evolved.schema.fields.find((field) => field.name === 'score2')?.id).toBe(8);
  });

  it.each([
    ['id', 'double', 'field id is int in the table and double'],
    ['score', 'long', 'field score is float in the table and long'],
    ['price', 'decimal(9,3)', 'field price is decimal(9,2) in the table and decimal(9,3)'],
    ['header', 'string', 'field header is struct in the table and string'],
  ])('refuses %s becoming %s, naming it', (name, type, message) => {
    expect(() => evolveSchema(table, rows((fields) => fields.map((field) => (field.name === name ? { ...field, type } : field))), 't')).toThrow(message);
  });

  it('refuses a list element that changes type incompatibly, naming its path', () => {
    expect(() => evolveSchema(table, rows((fields) => fields.map((field) => (field.name === 'tags' ? { ...field, type: { type: 'list' as const, 'element-id': 0, 'element-required': true, element: 'long' } } : field))), 't')).toThrow(
      'field tags.element is string in the table and long',
    );
  });
});
