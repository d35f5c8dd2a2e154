/**
 * A load's transformation: the records a load writes are built from named fields instead of being
 * the reader schema's records as decoded. Declared in the load file (jobs/README.md):
 *
 *   transform:
 *     fields:                    # the output record: exactly these fields, in this order
 *       page: pageKey            # the value at a dotted path of the decoded record, with its type and doc
 *       time: header.time
 *       source: { const: web }   # a constant: string, integer (long), other number (double), boolean or null
 *
 * The output schema is derived, never registered: a record with the reader schema's full name and
 * these fields. It is applied after decoding and after the event time is taken (the time field is a
 * path of the decoded record, not of the output), before the data file is written. A path enters
 * plain records only: a field behind a union (an optional record) cannot be reached, so a path
 * that resolves against the schema yields a value for every record, and a transformation never
 * fails on one record. A path the reader schema lacks fails the run, before anything is written,
 * with ETL_SCHEMA_PROBLEM naming the field, the path and the fields there are.
 */
import avro from 'avsc';
import type { Schema, Type, types } from 'avsc';
import { z } from 'zod';
import { etlError } from '../errors.js';
import { parseDataFileSchema, schemaJsonOf } from '../files/schema-types.js';
import type { ReaderSchema } from '../load-types.js';

export type TransformField = { readonly kind: 'path'; readonly path: readonly string[] } | { readonly kind: 'const'; readonly value: ConstValue };
export type ConstValue = string | number | boolean | null;

export interface TransformDefinition {
  /** Output field name → where its value comes from, in output order. */
  readonly fields: ReadonlyMap<string, TransformField>;
}

export interface RecordTransform {
  /** The data files' Type: the derived output record (logical types kept, as data-files.ts wants). */
  readonly outputType: Type;
  readonly apply: (value: unknown) => unknown;
}

const AVRO_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const FIELD_SOURCE_HINT = 'expected a dotted field path of the decoded record (e.g. header.time) or { const: VALUE }';

const fieldSource = z.unknown().transform((value, context): TransformField => {
  if (typeof value === 'string') {
    if (FIELD_PATH.test(value)) return { kind: 'path', path: value.split('.') };
    context.addIssue({ code: 'custom', message: `"${value}" is not a field path: ${FIELD_SOURCE_HINT}` });
    return z.NEVER;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const constant = (value as Record<string, unknown>)['const'];
    if (keys.length === 1 && keys[0] === 'const') {
      if (constant === null || typeof constant === 'string' || typeof constant === 'boolean' || (typeof constant === 'number' && Number.isFinite(constant))) {
        return { kind: 'const', value: constant };
      }
      context.addIssue({ code: 'custom', message: `const ${JSON.stringify(constant)} is not a string, finite number, boolean or null` });
      return z.NEVER;
    }
    context.addIssue({ code: 'custom', message: `unknown key${keys.length === 1 ? '' : 's'} ${keys.filter((key) => key !== 'const').join(', ') || '(none)'}: ${FIELD_SOURCE_HINT}` });
    return z.NEVER;
  }
  context.addIssue({ code: 'custom', message: `${JSON.stringify(value) ?? String(value)} is neither: ${FIELD_SOURCE_HINT}` });
  return z.NEVER;
});

/** The `transform:` section of a load file (load-file.ts). */
export const transformSchema = z
  .strictObject({
    fields: z.record(z.string(), fieldSource),
  })
  .transform((section, context): TransformDefinition => {
    const entries = Object.entries(section.fields);
    if (entries.length === 0) {
      context.addIssue({ code: 'custom', path: ['fields'], message: 'name at least one output field, or leave transform out to write records as decoded' });
      return z.NEVER;
    }
    const badNames = entries.filter(([name]) => !AVRO_NAME.test(name));
    for (const [name] of badNames) {
      context.addIssue({ code: 'custom', path: ['fields', name], message: 'an output field name is an Avro name: a letter or _, then letters, digits or _' });
    }
    if (badNames.length > 0) return z.NEVER;
    return { fields: new Map(entries) };
  });

/**
 * The transformation as canonical JSON (`{"page":"pageKey","source":{"const":"web"}}`): equal
 * definitions give equal text, so it can be recorded and compared.
 */
export function describeTransform(definition: TransformDefinition | undefined): string | null {
  if (definition === undefined) return null;
  const fields = [...definition.fields].map(([name, field]) => [name, field.kind === 'path' ? field.path.join('.') : { const: field.value }]);
  return JSON.stringify(Object.fromEntries(fields));
}

const compiled = new WeakMap<ReaderSchema, WeakMap<TransformDefinition, RecordTransform>>();

/** The transformation for records of `reader` (cached per reader schema and definition). */
export function compileTransform(definition: TransformDefinition, reader: ReaderSchema, topic: string): RecordTransform {
  let byDefinition = compiled.get(reader);
  if (byDefinition === undefined) compiled.set(reader, (byDefinition = new WeakMap()));
  let transform = byDefinition.get(definition);
  if (transform === undefined) byDefinition.set(definition, (transform = build(definition, reader, topic)));
  return transform;
}

function build(definition: TransformDefinition, reader: ReaderSchema, topic: string): RecordTransform {
  const root = reader.fileType;
  const where = `the reader schema of topic ${topic} (${reader.ref.subject} version ${reader.ref.version}, id ${reader.ref.id})`;
  if (root.typeName !== 'record') {
    throw etlError('ETL_SCHEMA_PROBLEM', `transform of the load: ${where} is a ${root.typeName}, not a record; a transformation maps record fields`, {
      details: { topic, subject: reader.ref.subject, version: reader.ref.version },
    });
  }
  const fields: { name: string; type: Type | string; doc?: string }[] = [];
  const getters: ((value: unknown) => unknown)[] = [];
  for (const [name, source] of definition.fields) {
    if (source.kind === 'const') {
      fields.push({ name, type: constType(source.value) });
      getters.push(() => source.value);
      continue;
    }
    const field = resolvePath(root as types.RecordType, source.path, name, where, topic, reader);
    const doc = (field as types.Field & { readonly doc?: unknown }).doc;
    fields.push({ name, type: field.type, ...(typeof doc === 'string' ? { doc } : {}) });
    const path = source.path;
    getters.push((value) => {
      let current = value;
      for (const segment of path) current = (current as Record<string, unknown>)[segment];
      return current;
    });
  }
  const record = root as types.RecordType;
  let outputType: Type;
  try {
    // Field types are the reader's own Type objects; exporting and parsing again gives one clean
    // schema in which a named type used by several fields is defined once.
    const composed = avro.Type.forSchema({ type: 'record', name: record.name ?? 'Record', fields } as unknown as Schema);
    outputType = parseDataFileSchema(schemaJsonOf(composed));
  } catch (error) {
    throw etlError('ETL_SCHEMA_PROBLEM', `transform of the load: the output record built from ${where} is not a valid Avro schema: ${(error as Error).message}`, {
      cause: error,
      details: { topic, subject: reader.ref.subject },
    });
  }
  const names = [...definition.fields.keys()];
  return {
    outputType,
    apply: (value) => {
      const output: Record<string, unknown> = {};
      names.forEach((name, index) => (output[name] = getters[index]!(value)));
      return output;
    },
  };
}

function constType(value: ConstValue): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  return Number.isSafeInteger(value) ? 'long' : 'double';
}

function resolvePath(root: types.RecordType, path: readonly string[], output: string, where: string, topic: string, reader: ReaderSchema): types.Field {
  const fail = (why: string): never => {
    throw etlError('ETL_SCHEMA_PROBLEM', `transform.fields.${output} of the load reads ${path.join('.')}, but ${why}. Fix the path in the load file's transform section`, {
      details: { topic, field: output, path: path.join('.'), subject: reader.ref.subject, version: reader.ref.version },
    });
  };
  let record = root;
  for (const [index, segment] of path.entries()) {
    const field = record.fields.find((candidate) => candidate.name === segment);
    if (field === undefined) {
      const inside = index === 0 ? where : `record ${path.slice(0, index).join('.')} of ${where}`;
      return fail(`${inside} has no field ${segment}; its fields are ${record.fields.map((candidate) => candidate.name).join(', ')}`);
    }
    if (index === path.length - 1) return field;
    if (field.type.typeName !== 'record') {
      const union = field.type.typeName.startsWith('union') ? ' (fields behind a union cannot be read)' : '';
      return fail(`${path.slice(0, index + 1).join('.')} in ${where} is ${describeType(field.type)}, not a record, so it has no field ${path[index + 1]}${union}`);
    }
    record = field.type as types.RecordType;
  }
  return fail('the path is empty');
}

function describeType(type: Type): string {
  if (type.typeName.startsWith('union')) return `a union of ${(type as types.UnwrappedUnionType).types.map(typeName).join(' | ')}`;
  return `a ${typeName(type)}`;
}

/** `long` for our exact long (avsc calls it abstract:long), a named type by its name. */
function typeName(type: Type): string {
  return type.name ?? type.typeName.replace(/^(abstract|logical):/, '');
}
