/**
 * The registry's canonical form of an Avro schema: the string two submissions must share to be
 * "the same schema" and get the same id. Modelled on Avro Java's `Schema.toString()`, which is what
 * Confluent deduplicates on: whitespace, attribute order and spelling variants that parse to the
 * same schema vanish, while everything a reader could observe stays (doc, aliases, defaults,
 * order, logical types and their parameters, custom attributes).
 *
 * Format (compact JSON; `<props>` are all attributes not named in the rule, sorted by key):
 *
 *   canonical := "<primitive>"                              a primitive without attributes
 *              | {"type":"<primitive>",<props>}              a primitive with attributes (logicalType, …)
 *              | "<full name>"                              a named type defined earlier
 *              | [canonical,…]                              a union
 *              | {"type":"record"|"error","name":"<full name>","doc"?,"fields":[field,…],<props>,"aliases"?}
 *              | {"type":"enum","name":"<full name>","doc"?,"symbols":[…],"default"?,<props>,"aliases"?}
 *              | {"type":"fixed","name":"<full name>","doc"?,"size":n,<props>,"aliases"?}
 *              | {"type":"array","items":canonical,<props>}
 *              | {"type":"map","values":canonical,<props>}
 *   field     := {"name":"…","type":canonical,"doc"?,"default"?,"order"?,<props>,"aliases"?}
 *
 * Names are always written in full and the namespace attribute is dropped, so `{"name":"R",
 * "namespace":"a"}` ≡ `{"name":"a.R"}`. Type aliases are written as full names; field aliases as
 * given. "order" is written only when it is not the default "ascending". As in Java, `doc` on
 * unnamed types and the attributes Avro reserves for other kinds of type (e.g. "symbols" on a
 * record) are dropped. JSON values (defaults, props) are written with object keys sorted.
 *
 * The input must already have passed `checkSchemaStructure`.
 */
import { fullNameOf, isPrimitiveTypeName, namespaceOf } from './names.js';

type JsonObject = Record<string, unknown>;

/** Attributes Avro Java reserves on every type object (never custom props). */
const TYPE_RESERVED = new Set(['doc', 'fields', 'items', 'name', 'namespace', 'size', 'symbols', 'values', 'type', 'aliases']);
const ENUM_RESERVED = new Set([...TYPE_RESERVED, 'default']);
const FIELD_RESERVED = new Set(['default', 'doc', 'name', 'order', 'type', 'aliases']);

export function canonicalForm(document: unknown): string {
  return canonicalType(document, '');
}

function canonicalType(node: unknown, namespace: string): string {
  if (typeof node === 'string') {
    return JSON.stringify(isPrimitiveTypeName(node) ? node : (fullNameOf(node, namespace) ?? node));
  }
  if (Array.isArray(node)) return `[${node.map((branch) => canonicalType(branch, namespace)).join(',')}]`;
  const object = node as JsonObject;
  const kind = object.type as string;
  switch (kind) {
    case 'record':
    case 'error':
    case 'enum':
    case 'fixed':
      return canonicalNamedType(object, kind, namespace);
    case 'array':
      return writeObject([['type', '"array"'], ['items', canonicalType(object.items, namespace)], ...props(object, TYPE_RESERVED)]);
    case 'map':
      return writeObject([['type', '"map"'], ['values', canonicalType(object.values, namespace)], ...props(object, TYPE_RESERVED)]);
    default: {
      const attributes = props(object, TYPE_RESERVED);
      return attributes.length === 0 ? JSON.stringify(kind) : writeObject([['type', JSON.stringify(kind)], ...attributes]);
    }
  }
}

function canonicalNamedType(object: JsonObject, kind: 'record' | 'error' | 'enum' | 'fixed', namespace: string): string {
  const name = object.name as string;
  const declared = object.namespace;
  const ownNamespace = typeof declared === 'string' && !name.includes('.') ? declared : namespace;
  const fullName = fullNameOf(name, ownNamespace) ?? name;
  const innerNamespace = namespaceOf(fullName);
  const entries: [string, string][] = [
    ['type', JSON.stringify(kind)],
    ['name', JSON.stringify(fullName)],
  ];
  if (typeof object.doc === 'string') entries.push(['doc', JSON.stringify(object.doc)]);
  if (kind === 'record' || kind === 'error') {
    const fields = object.fields as JsonObject[];
    entries.push(['fields', `[${fields.map((field) => canonicalField(field, innerNamespace)).join(',')}]`]);
  } else if (kind === 'enum') {
    entries.push(['symbols', JSON.stringify(object.symbols)]);
    if (object.default !== undefined) entries.push(['default', JSON.stringify(object.default)]);
  } else {
    entries.push(['size', JSON.stringify(object.size)]);
  }
  entries.push(...props(object, kind === 'enum' ? ENUM_RESERVED : TYPE_RESERVED));
  const aliases = object.aliases as string[] | undefined;
  if (aliases !== undefined && aliases.length > 0) {
    entries.push(['aliases', JSON.stringify(aliases.map((alias) => fullNameOf(alias, innerNamespace) ?? alias))]);
  }
  return writeObject(entries);
}

function canonicalField(field: JsonObject, namespace: string): string {
  const entries: [string, string][] = [
    ['name', JSON.stringify(field.name)],
    ['type', canonicalType(field.type, namespace)],
  ];
  if (typeof field.doc === 'string') entries.push(['doc', JSON.stringify(field.doc)]);
  if (field.default !== undefined) entries.push(['default', canonicalJson(field.default)]);
  if (field.order !== undefined && field.order !== 'ascending') entries.push(['order', JSON.stringify(field.order)]);
  entries.push(...props(field, FIELD_RESERVED));
  const aliases = field.aliases as string[] | undefined;
  if (aliases !== undefined && aliases.length > 0) entries.push(['aliases', JSON.stringify(aliases)]);
  return writeObject(entries);
}

/** The attributes outside `reserved`, sorted by key, values in canonical JSON. */
function props(object: JsonObject, reserved: ReadonlySet<string>): [string, string][] {
  return Object.keys(object)
    .filter((key) => !reserved.has(key) && object[key] !== undefined)
    .sort()
    .map((key) => [key, canonicalJson(object[key])]);
}

/** Compact JSON with object keys sorted at every depth, so key order never matters. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const object = value as JsonObject;
    return writeObject(
      Object.keys(object)
        .sort()
        .map((key) => [key, canonicalJson(object[key])]),
    );
  }
  return JSON.stringify(value);
}

/** Writes entries in the given order (a JS object would move integer-like keys to the front). */
function writeObject(entries: readonly (readonly [string, string])[]): string {
  return `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;
}
