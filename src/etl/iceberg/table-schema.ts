/**
 * A table's Iceberg schema, read off the Parquet schema its data files are written with
 * (files/parquet-schema.ts), so the ids in the table metadata and in every file are the same ids
 * by construction. The Parquet elements map to Iceberg types (the format's Appendix A, read
 * backwards):
 *
 *   BOOLEAN / INT32 / INT64 / FLOAT / DOUBLE           boolean / int / long / float / double
 *   INT32 DATE                                         date
 *   TIME(MILLIS|MICROS, not UTC)                       time
 *   INT64 TIMESTAMP(MILLIS|MICROS, UTC / not UTC)      timestamptz / timestamp
 *   BYTE_ARRAY STRING / BYTE_ARRAY                     string / binary
 *   FIXED_LEN_BYTE_ARRAY(16) UUID / (n)                uuid / fixed[n]
 *   DECIMAL(p, s) on bytes or fixed                    decimal(p,s)
 *   group LIST { repeated group list { element } }     list
 *   group MAP { repeated group key_value { key; value } }   map
 *   other group                                        struct
 *
 * REQUIRED / OPTIONAL become `required`; nanosecond timestamps have no v2 type and are refused.
 */
import type { SchemaElement } from 'hyparquet';
import { etlError } from '../errors.js';

export type IcebergType = string | IcebergStruct | IcebergList | IcebergMap;

export interface IcebergField {
  readonly id: number;
  readonly name: string;
  readonly required: boolean;
  readonly type: IcebergType;
}

export interface IcebergStruct {
  readonly type: 'struct';
  readonly fields: readonly IcebergField[];
}

export interface IcebergList {
  readonly type: 'list';
  readonly 'element-id': number;
  readonly 'element-required': boolean;
  readonly element: IcebergType;
}

export interface IcebergMap {
  readonly type: 'map';
  readonly 'key-id': number;
  readonly key: IcebergType;
  readonly 'value-id': number;
  readonly 'value-required': boolean;
  readonly value: IcebergType;
}

export interface IcebergSchema extends IcebergStruct {
  readonly 'schema-id': number;
}

/** One entry of `schema.name-mapping.default` (the format's "Column Projection"). */
export interface NameMapping {
  readonly 'field-id': number;
  readonly names: readonly string[];
  readonly fields?: readonly NameMapping[];
}

/** The Iceberg schema (id `schemaId`) of files written with the Parquet schema `elements` (root first, depth first). */
export function icebergSchemaOf(elements: readonly SchemaElement[], schemaId: number): IcebergSchema {
  const reader = new ElementReader(elements);
  const fields = reader.fields(reader.next());
  reader.finish();
  return { type: 'struct', 'schema-id': schemaId, fields };
}

/** The highest field id in a type (the table's last-column-id). */
export function highestFieldId(type: IcebergType): number {
  if (typeof type === 'string') return 0;
  if (type.type === 'struct') return Math.max(0, ...type.fields.map((field) => Math.max(field.id, highestFieldId(field.type))));
  if (type.type === 'list') return Math.max(type['element-id'], highestFieldId(type.element));
  return Math.max(type['key-id'], type['value-id'], highestFieldId(type.key), highestFieldId(type.value));
}

/** The name mapping of a struct: what readers fall back to for files without field ids. */
export function nameMappingOf(struct: IcebergStruct): NameMapping[] {
  return struct.fields.map((field) => mappingEntry(field.id, field.name, field.type));
}

function mappingEntry(id: number, name: string, type: IcebergType): NameMapping {
  const nested = nestedMapping(type);
  return nested === undefined ? { 'field-id': id, names: [name] } : { 'field-id': id, names: [name], fields: nested };
}

function nestedMapping(type: IcebergType): NameMapping[] | undefined {
  if (typeof type === 'string') return undefined;
  if (type.type === 'struct') return nameMappingOf(type);
  if (type.type === 'list') return [mappingEntry(type['element-id'], 'element', type.element)];
  return [mappingEntry(type['key-id'], 'key', type.key), mappingEntry(type['value-id'], 'value', type.value)];
}

/** The field of a struct at a top-level name, or undefined. */
export function topLevelField(schema: IcebergStruct, name: string): IcebergField | undefined {
  return schema.fields.find((field) => field.name === name);
}

/** Every primitive field by id, with whether it sits inside a list or map (where Iceberg keeps no bounds). */
export function primitiveFields(struct: IcebergStruct): Map<number, { readonly type: string; readonly repeated: boolean }> {
  const found = new Map<number, { type: string; repeated: boolean }>();
  const visit = (id: number, type: IcebergType, repeated: boolean): void => {
    if (typeof type === 'string') {
      found.set(id, { type, repeated });
      return;
    }
    if (type.type === 'struct') for (const field of type.fields) visit(field.id, field.type, repeated);
    else if (type.type === 'list') visit(type['element-id'], type.element, true);
    else {
      visit(type['key-id'], type.key, true);
      visit(type['value-id'], type.value, true);
    }
  };
  for (const field of struct.fields) visit(field.id, field.type, false);
  return found;
}

/** Reads the depth-first element list: a group's children each come with their own subtree. */
class ElementReader {
  private position = 0;

  constructor(private readonly elements: readonly SchemaElement[]) {}

  next(): SchemaElement {
    const element = this.elements[this.position];
    if (element === undefined) throw new Error('the Parquet schema ends inside a group');
    this.position += 1;
    return element;
  }

  finish(): void {
    if (this.position !== this.elements.length) throw new Error('the Parquet schema has elements after its root group');
  }

  /** The fields of a group whose element was just read. */
  fields(group: SchemaElement): IcebergField[] {
    return Array.from({ length: group.num_children ?? 0 }, () => this.field(this.next()));
  }

  /** A field from its element (just read); its subtree is read next. */
  field(element: SchemaElement): IcebergField {
    return { id: idOf(element), name: element.name, required: element.repetition_type === 'REQUIRED', type: this.type(element) };
  }

  private type(element: SchemaElement): IcebergType {
    if (element.num_children === undefined) return primitiveType(element);
    if (element.converted_type === 'LIST' || element.logical_type?.type === 'LIST') {
      const repeated = this.onlyChild(element);
      const item = this.onlyChild(repeated);
      return { type: 'list', 'element-id': idOf(item), 'element-required': item.repetition_type === 'REQUIRED', element: this.type(item) };
    }
    if (element.converted_type === 'MAP' || element.logical_type?.type === 'MAP') {
      const repeated = this.onlyChild(element);
      if (repeated.num_children !== 2) throw new Error(`map ${element.name} has ${repeated.num_children ?? 0} fields in its key_value group`);
      const key = this.next();
      const keyType = this.type(key);
      const value = this.next();
      return { type: 'map', 'key-id': idOf(key), key: keyType, 'value-id': idOf(value), 'value-required': value.repetition_type === 'REQUIRED', value: this.type(value) };
    }
    return { type: 'struct', fields: this.fields(element) };
  }

  private onlyChild(group: SchemaElement): SchemaElement {
    if (group.num_children !== 1) throw new Error(`group ${group.name} has ${group.num_children ?? 0} children, not one`);
    return this.next();
  }
}

function idOf(element: SchemaElement): number {
  if (element.field_id === undefined) throw new Error(`Parquet element ${element.name} has no field id`);
  return element.field_id;
}

function primitiveType(element: SchemaElement): string {
  const logical = element.logical_type;
  if (logical?.type === 'DECIMAL' || element.converted_type === 'DECIMAL') return `decimal(${element.precision ?? 0},${element.scale ?? 0})`;
  switch (element.type) {
    case 'BOOLEAN':
      return 'boolean';
    case 'INT32':
      if (logical?.type === 'DATE') return 'date';
      if (logical?.type === 'TIME') return 'time';
      return 'int';
    case 'INT64':
      if (logical?.type === 'TIMESTAMP') {
        if (logical.unit === 'NANOS') throw unsupported(element, 'a nanosecond timestamp, which Iceberg v2 tables cannot hold (timestamp_ns is v3)');
        return logical.isAdjustedToUTC ? 'timestamptz' : 'timestamp';
      }
      if (logical?.type === 'TIME') return 'time';
      return 'long';
    case 'FLOAT':
      return 'float';
    case 'DOUBLE':
      return 'double';
    case 'BYTE_ARRAY':
      return logical?.type === 'STRING' || element.converted_type === 'UTF8' ? 'string' : 'binary';
    case 'FIXED_LEN_BYTE_ARRAY':
      return logical?.type === 'UUID' ? 'uuid' : `fixed[${element.type_length ?? 0}]`;
    case 'INT96':
    case undefined:
      break;
  }
  throw unsupported(element, `the Parquet type ${String(element.type)}, which Iceberg has no type for`);
}

function unsupported(element: SchemaElement, what: string): Error {
  return etlError('ETL_SCHEMA_PROBLEM', `field ${element.name} is ${what}; change the schema or load this topic as avro or parquet`, { details: { field: element.name } });
}
