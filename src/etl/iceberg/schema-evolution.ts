/**
 * A table's schema evolving with the registry (the format's "Schema Evolution"). The rows a load
 * writes have a shape (their Iceberg schema with fresh ids, table-schema.ts); the table has a
 * current schema and a last column id. The rows' schema with the table's ids is:
 *
 *   a field whose path (names from the top, `element` / `key` / `value` inside lists and maps)
 *   the table has   keeps the table's id; its type must be the table's, or a promotion Iceberg
 *                   allows: int → long, float → double, decimal(P,S) → decimal(P',S) with P' > P;
 *                   a required column may become optional, an optional one stays optional
 *   a new field     gets the next id above the last column id, and is optional (files written
 *                   before it do not have it)
 *   a table field the rows lack   is dropped from the new schema (old files keep it, unread)
 *
 * Anything else (a struct becoming a primitive, a list a map, string becoming long, …) is refused
 * with ETL_ICEBERG_SCHEMA_CHANGED naming the field. Ids are never reused: the last column id only
 * grows. The same inputs always give the same schema, so the plan and the commit agree.
 */
import { isDeepStrictEqual } from 'node:util';
import { etlError } from '../errors.js';
import { highestFieldId, type IcebergField, type IcebergSchema, type IcebergStruct, type IcebergType } from './table-schema.js';

export interface EvolvedSchema {
  /** The rows' schema with the table's ids (schema id: the table's current one, or the next when it changed). */
  readonly schema: IcebergSchema;
  readonly lastColumnId: number;
  /** What changed, for messages and logs ("added header.campaign", "memberId int → long"). */
  readonly changes: readonly string[];
}

/** The rows' schema with the table's ids; `table` undefined: a new table, the rows' ids as they are. */
export function evolveSchema(table: { readonly schema: IcebergSchema; readonly lastColumnId: number; readonly schemaIds: readonly number[] } | undefined, rows: IcebergSchema, where: string): EvolvedSchema {
  if (table === undefined) return { schema: { ...rows, 'schema-id': 0 }, lastColumnId: highestFieldId(rows), changes: [] };
  const state = { last: table.lastColumnId, changes: [] as string[], where };
  const fields = evolveFields(table.schema.fields, rows.fields, '', state);
  for (const field of table.schema.fields) if (!rows.fields.some((row) => row.name === field.name)) state.changes.push(`dropped ${field.name}`);
  const same = isDeepStrictEqual(fields, table.schema.fields);
  const schemaId = same ? table.schema['schema-id'] : Math.max(...table.schemaIds) + 1;
  return { schema: { type: 'struct', 'schema-id': schemaId, fields }, lastColumnId: state.last, changes: state.changes };
}

interface EvolveState {
  last: number;
  readonly changes: string[];
  readonly where: string;
}

function evolveFields(table: readonly IcebergField[], rows: readonly IcebergField[], prefix: string, state: EvolveState): IcebergField[] {
  return rows.map((row) => {
    const path = `${prefix}${row.name}`;
    const existing = table.find((field) => field.name === row.name);
    if (existing === undefined) {
      state.changes.push(`added ${path}`);
      return { id: nextId(state), name: row.name, required: false, type: freshType(row.type, state) };
    }
    const required = existing.required && row.required;
    if (existing.required && !row.required) state.changes.push(`${path} made optional`);
    return { id: existing.id, name: row.name, required, type: evolveType(existing.type, row.type, path, state) };
  });
}

function evolveType(table: IcebergType, rows: IcebergType, path: string, state: EvolveState): IcebergType {
  if (typeof table === 'string' || typeof rows === 'string') {
    if (typeof table === 'string' && typeof rows === 'string') {
      if (table === rows) return table;
      if (promotes(table, rows)) {
        state.changes.push(`${path} ${table} → ${rows}`);
        return rows;
      }
    }
    throw incompatible(path, describe(table), describe(rows), state.where);
  }
  if (table.type === 'struct' && rows.type === 'struct') {
    const fields = evolveFields(table.fields, rows.fields, `${path}.`, state);
    for (const field of table.fields) if (!rows.fields.some((row) => row.name === field.name)) state.changes.push(`dropped ${path}.${field.name}`);
    return { type: 'struct', fields };
  }
  if (table.type === 'list' && rows.type === 'list') {
    const required = table['element-required'] && rows['element-required'];
    return { type: 'list', 'element-id': table['element-id'], 'element-required': required, element: evolveType(table.element, rows.element, `${path}.element`, state) };
  }
  if (table.type === 'map' && rows.type === 'map') {
    return {
      type: 'map',
      'key-id': table['key-id'],
      key: evolveType(table.key, rows.key, `${path}.key`, state),
      'value-id': table['value-id'],
      'value-required': table['value-required'] && rows['value-required'],
      value: evolveType(table.value, rows.value, `${path}.value`, state),
    };
  }
  throw incompatible(path, describe(table), describe(rows), state.where);
}

/** A type new to the table: every id inside it new. */
function freshType(type: IcebergType, state: EvolveState): IcebergType {
  if (typeof type === 'string') return type;
  if (type.type === 'struct') return { type: 'struct', fields: type.fields.map((field) => ({ ...field, id: nextId(state), type: freshType(field.type, state) })) };
  if (type.type === 'list') return { ...type, 'element-id': nextId(state), element: freshType(type.element, state) };
  const keyId = nextId(state);
  const valueId = nextId(state);
  return { ...type, 'key-id': keyId, key: freshType(type.key, state), 'value-id': valueId, value: freshType(type.value, state) };
}

function nextId(state: EvolveState): number {
  state.last += 1;
  return state.last;
}

function promotes(from: string, to: string): boolean {
  if ((from === 'int' && to === 'long') || (from === 'float' && to === 'double')) return true;
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/;
  const a = decimal.exec(from);
  const b = decimal.exec(to);
  return a !== null && b !== null && a[2] === b[2] && Number(b[1]) > Number(a[1]);
}

function describe(type: IcebergType): string {
  return typeof type === 'string' ? type : type.type;
}

function incompatible(path: string, table: string, rows: string, where: string): Error {
  return etlError(
    'ETL_ICEBERG_SCHEMA_CHANGED',
    `Iceberg table ${where}: field ${path} is ${table} in the table and ${rows} in the records now written, a change Iceberg cannot make to a table (it allows adding optional fields, dropping fields, int → long, float → double and wider decimals). ` +
      'Nothing was read or committed. Register a compatible schema version, or load the new shape into another table (another warehouse root)',
    { details: { field: path, table, rows } },
  );
}

/** Each id of `fresh` mapped to the id the same path has in `evolved` (the same rows' schema, with the table's ids). */
export function idMapping(fresh: IcebergStruct, evolved: IcebergStruct): Map<number, number> {
  const mapping = new Map<number, number>();
  const visit = (a: IcebergType, b: IcebergType): void => {
    if (typeof a === 'string' || typeof b === 'string') return;
    if (a.type === 'struct' && b.type === 'struct') {
      for (const field of a.fields) {
        const other = b.fields.find((candidate) => candidate.name === field.name);
        if (other === undefined) continue;
        mapping.set(field.id, other.id);
        visit(field.type, other.type);
      }
    } else if (a.type === 'list' && b.type === 'list') {
      mapping.set(a['element-id'], b['element-id']);
      visit(a.element, b.element);
    } else if (a.type === 'map' && b.type === 'map') {
      mapping.set(a['key-id'], b['key-id']);
      mapping.set(a['value-id'], b['value-id']);
      visit(a.key, b.key);
      visit(a.value, b.value);
    }
  };
  visit(fresh, evolved);
  return mapping;
}
