/**
 * Turns the schema text a client submits into everything the registry keeps about it: the text to
 * serve back, the avsc type to encode, decode and check compatibility with, and the canonical form
 * and fingerprint that decide whether two submissions are the same schema (and so share an id).
 *
 * Validation is strict, as Confluent's is with `schema.validate.new.schemas=true`: names must be
 * valid, every named type must be defined before use, anonymous records/enums/fixed are refused,
 * and every field default must be a valid value of its field's type (for a union, of its first
 * branch). Logical types are not interpreted (as in Avro Java's compatibility check), so
 * `type` holds their underlying types.
 */
import { createHash } from 'node:crypto';

import avro from 'avsc';
import type { Type } from 'avsc';

import { TributaryError } from '../common/errors.js';
import { canonicalForm } from './avro-schema/canonical-form.js';
import { findJsonSyntaxError, type JsonSyntaxError } from './avro-schema/json-syntax-error.js';
import { pointerTokens, showJson } from './avro-schema/pointer.js';
import { checkSchemaStructure, type DefaultedField } from './avro-schema/structure.js';

export interface ParsedSchema {
  /** The submitted schema JSON, minified: what read endpoints return. */
  readonly text: string;
  /** The parsed JSON document, as submitted; deeply frozen. */
  readonly json: unknown;
  readonly type: Type;
  /** Canonical JSON used to deduplicate schemas (see avro-schema/canonical-form.ts). */
  readonly canonical: string;
  /** sha256 hex of `canonical`: same schema, same fingerprint, same global id. */
  readonly fingerprint: string;
}

/** The one schema type this registry stores; Confluent's name for it. */
export const AVRO_SCHEMA_TYPE = 'AVRO';

export function parseAvroSchema(text: string, schemaType?: string): ParsedSchema {
  checkSchemaType(schemaType);
  const document = parseJson(text);
  const { avscInput, defaultedFields } = checkSchemaStructure(document);
  const type = buildType(avscInput, defaultedFields);
  const canonical = canonicalForm(document);
  return Object.freeze({
    text: JSON.stringify(document),
    json: deepFreeze(document),
    type,
    canonical,
    fingerprint: createHash('sha256').update(canonical).digest('hex'),
  });
}

/** Schemas are immutable once registered; so is the document every holder of them shares. */
function deepFreeze(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function checkSchemaType(schemaType: string | undefined): void {
  if (schemaType === undefined || schemaType === AVRO_SCHEMA_TYPE) return;
  const caseHint = schemaType.toUpperCase() === AVRO_SCHEMA_TYPE ? ' (schemaType is case-sensitive)' : '';
  throw new TributaryError({
    code: 'SCHEMA_TYPE_UNSUPPORTED',
    message:
      `Unsupported schemaType ${JSON.stringify(schemaType)}: this registry stores Avro schemas only; ` +
      `omit schemaType or send "${AVRO_SCHEMA_TYPE}"${caseHint}`,
    details: { schemaType },
  });
}

function parseJson(text: string): unknown {
  if (text.trim() === '') {
    throw new TributaryError({
      code: 'SCHEMA_INVALID',
      message: 'Empty schema: the schema text is empty; send the schema JSON, e.g. "\\"string\\"" or a record object',
    });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new TributaryError({
      code: 'SCHEMA_INVALID',
      message: `Invalid schema: the schema text is not valid JSON: ${describeJsonError(text, error)}; fix the JSON syntax`,
      cause: error,
    });
  }
}

function describeJsonError(text: string, parseError: unknown): string {
  let syntaxError: JsonSyntaxError | undefined;
  try {
    syntaxError = findJsonSyntaxError(text);
  } catch {
    // Too deeply nested for the scanner's recursion: Node's own message is all there is.
    syntaxError = undefined;
  }
  if (syntaxError === undefined) return parseError instanceof Error ? parseError.message : String(parseError);
  const { line, column, position, problem } = syntaxError;
  return `at line ${line} column ${column} (character ${position}): ${problem}`;
}

function forSchema(avscInput: unknown): Type {
  // A fresh registry per parse: avsc records every named type in it.
  return avro.Type.forSchema(avscInput as avro.Schema, { noAnonymousTypes: true, registry: {} });
}

function buildType(avscInput: unknown, defaultedFields: readonly DefaultedField[]): Type {
  try {
    return forSchema(avscInput);
  } catch (error) {
    throw diagnose(error, avscInput, defaultedFields);
  }
}

/**
 * avsc names a bad default but not its field; everything else was checked with a location
 * already. So parse again without defaults, then check each default alone to say where it is.
 */
function diagnose(error: unknown, avscInput: unknown, defaultedFields: readonly DefaultedField[]): TributaryError {
  const avscReason = error instanceof Error ? error.message : String(error);
  const unlocated = new TributaryError({
    code: 'SCHEMA_INVALID',
    message: `Invalid Avro schema: ${avscReason}`,
    cause: error,
  });
  if (defaultedFields.length === 0) return unlocated;
  for (const field of defaultedFields) delete field.avscField.default;
  let withoutDefaults: Type;
  try {
    withoutDefaults = forSchema(avscInput);
  } catch {
    return unlocated;
  }
  const problems = defaultedFields.flatMap((field) => {
    const problem = defaultProblem(withoutDefaults, field);
    return problem === undefined ? [] : [{ field, problem }];
  });
  const first = problems[0];
  if (first === undefined) return unlocated;
  return new TributaryError({
    code: 'SCHEMA_INVALID',
    message: `Invalid Avro schema at ${problems.map(({ problem }) => problem).join('; and at ')}`,
    cause: error,
    details: { location: `${first.field.pointer}/default`, locations: problems.map(({ field }) => `${field.pointer}/default`) },
  });
}

function defaultProblem(root: Type, field: DefaultedField): string | undefined {
  const fieldType = fieldTypeAt(root, field.pointer);
  if (fieldType === undefined) return undefined;
  try {
    avro.Type.forSchema(
      { type: 'record', name: 'DefaultCheck', fields: [{ name: 'value', type: fieldType, default: field.value }] },
      { registry: {} },
    );
    return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const value = field.value;
    const precisionHint =
      typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)
        ? ' (integers beyond ±2^53−1 lose precision in JSON parsing and are refused)'
        : '';
    return (
      `${field.pointer}/default: field "${field.fieldName}" of record "${field.recordName}" has default ` +
      `${showJson(value)}, which is not a value of its type ${showJson(fieldType.schema())}${precisionHint} ` +
      `(avsc: ${reason}); give a default of the field's type, for a union one of its first branch`
    );
  }
}

/** The type of the record field a pointer such as /fields/2/type/1/fields/0 designates. */
function fieldTypeAt(root: Type, pointer: string): Type | undefined {
  let current: unknown = root;
  for (const token of pointerTokens(pointer)) {
    if (current === undefined || current === null) return undefined;
    const node = current as Record<string, unknown>;
    if (token === 'fields' || token === 'type' || token === 'items' || token === 'values') {
      // A Field's "type" holds the Type; array and map types expose itemsType / valuesType.
      current = token === 'items' ? node.itemsType : token === 'values' ? node.valuesType : node[token];
    } else if (/^\d+$/.test(token)) {
      const list = Array.isArray(node) ? node : (node.types as unknown[] | undefined);
      current = list?.[Number(token)];
    } else {
      return undefined;
    }
  }
  const field = current as { type?: Type } | undefined;
  return field?.type;
}
