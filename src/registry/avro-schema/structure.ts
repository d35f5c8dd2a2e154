/**
 * Checks the shape of a parsed Avro schema document before avsc sees it, so that every mistake is
 * reported with the JSON pointer of where it is, and prepares the copy avsc parses.
 *
 * The document grammar checked here (Avro specification, "Schema Declaration"):
 *
 *   schema    := "<primitive>" | "<name of a type defined earlier>" | union | object
 *   union     := [ schema, … ]            non-empty; no union directly inside; no two branches of
 *                                          the same type (same full name for named types)
 *   object    := {"type": "<primitive>", attributes…}
 *              | {"type": "record"|"error", "name", "namespace"?, "doc"?, "aliases"?, "fields": [field, …]}
 *              | {"type": "enum", "name", "namespace"?, "doc"?, "aliases"?, "symbols": [name, …], "default"?}
 *              | {"type": "fixed", "name", "namespace"?, "doc"?, "aliases"?, "size": int ≥ 0}
 *              | {"type": "array", "items": schema} | {"type": "map", "values": schema}
 *   field     := {"name", "type": schema, "doc"?, "default"?, "order"?: "ascending"|"descending"|"ignore",
 *                 "aliases"?: [string, …]}
 *
 * Names follow names.ts. A named type is defined once and may then be referred to by its name,
 * including from inside itself (recursion). Field defaults are not judged here: that needs the
 * resolved types, so avro-schema.ts checks them with avsc (see `DefaultedField`).
 *
 * The avsc copy differs from the document in three ways, all avsc 5.7.9 workarounds: a dotted
 * name drops its `namespace` attribute (avsc would otherwise put nested types in that namespace
 * instead of the dotted name's), a `"namespace": null` is dropped (Java treats it as absent, avsc
 * as the null namespace), and type aliases are written as full names (see `absoluteAlias`).
 */
import { TributaryError } from '../../common/errors.js';
import {
  fullNameOf,
  isPrimitiveTypeName,
  isValidName,
  isValidNamespace,
  namespaceOf,
  unqualifiedName,
} from './names.js';
import { ROOT_POINTER, childPointer, showJson } from './pointer.js';

/** Deeper documents are refused: no real schema comes near, and recursion must stay bounded. */
export const MAX_SCHEMA_NESTING = 200;

type JsonObject = Record<string, unknown>;

/** A record field that declares a default, to be checked once the field's type is resolved. */
export interface DefaultedField {
  /** Pointer of the field object, e.g. /fields/1. */
  readonly pointer: string;
  readonly fieldName: string;
  readonly recordName: string;
  readonly value: unknown;
  /** The field object inside `avscInput`, so a diagnosis can parse without the default. */
  readonly avscField: JsonObject;
}

export interface CheckedStructure {
  /** What to hand to avsc's `Type.forSchema`: a fresh copy, never the caller's document. */
  readonly avscInput: unknown;
  readonly defaultedFields: readonly DefaultedField[];
}

/**
 * JSON nesting allowed anywhere in the document, defaults and custom attributes included: the
 * walks after this one recurse, and a document nested thousands deep would exhaust the stack.
 * MAX_SCHEMA_NESTING types take at most about four JSON levels each.
 */
export const MAX_JSON_NESTING = 1000;

export function checkSchemaStructure(document: unknown): CheckedStructure {
  checkJsonNesting(document);
  const walker = new StructureWalker();
  const avscInput = walker.schema(document, ROOT_POINTER, '', 0);
  return { avscInput, defaultedFields: walker.defaultedFields };
}

/**
 * Iterative, so that it cannot overflow the stack itself. Also refuses numbers JSON.parse made
 * infinite (1e400): the stored text is re-serialized, where they would become `null` and the
 * registry would serve a schema other than the one it checked (a double default of null).
 */
function checkJsonNesting(document: unknown): void {
  // Each entry links to its parent's; a pointer string is built only for a number refused.
  interface Step {
    readonly parent: Step | undefined;
    readonly key: string;
  }
  const pointerOf = (step: Step | undefined): string => {
    const keys: string[] = [];
    for (let at = step; at !== undefined; at = at.parent) keys.push(at.key);
    return keys.reverse().reduce(childPointer, ROOT_POINTER);
  };
  const pending: [value: unknown, depth: number, step: Step | undefined][] = [[document, 0, undefined]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, depth, step] = next;
    if (typeof value === 'number' && !Number.isFinite(value)) {
      invalid(pointerOf(step), `the number is too large for a double (${value}); write it within ±1.7976931348623157e308`);
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= MAX_JSON_NESTING) {
      throw new TributaryError({
        code: 'SCHEMA_INVALID',
        message: `Invalid Avro schema: the JSON is nested more than ${MAX_JSON_NESTING} levels deep; no schema needs that, flatten it`,
      });
    }
    for (const [key, child] of Object.entries(value)) pending.push([child, depth + 1, { parent: step, key }]);
  }
}

function invalid(pointer: string, problem: string): never {
  throw new TributaryError({
    code: 'SCHEMA_INVALID',
    message: `Invalid Avro schema at ${pointer}: ${problem}`,
    details: { location: pointer },
  });
}

/**
 * An alias spelled so avsc reads it as the full name the specification gives it (relative to the
 * type's own namespace); avsc 5.7.9 qualifies an enum's or fixed's aliases with the enclosing
 * namespace instead when the type's name is dotted. A leading dot makes avsc take a name as is.
 */
function absoluteAlias(alias: string, typeFullName: string): string {
  const full = fullNameOf(alias, namespaceOf(typeFullName)) ?? alias;
  return full.includes('.') ? full : `.${full}`;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const NAMED_KINDS = new Set(['record', 'error', 'enum', 'fixed']);
const FIELD_ORDERS = new Set(['ascending', 'descending', 'ignore']);

class StructureWalker {
  readonly defaultedFields: DefaultedField[] = [];
  /** Full name → pointer of its definition. */
  private readonly definitions = new Map<string, string>();

  schema(node: unknown, pointer: string, namespace: string, depth: number): unknown {
    if (depth > MAX_SCHEMA_NESTING) {
      invalid(pointer, `types are nested more than ${MAX_SCHEMA_NESTING} levels deep; flatten the schema`);
    }
    if (typeof node === 'string') return this.reference(node, pointer, namespace);
    if (Array.isArray(node)) return this.union(node, pointer, namespace, depth);
    if (isObject(node)) return this.object(node, pointer, namespace, depth);
    if (node === null) invalid(pointer, 'null is not a type; the null type is written as the string "null"');
    return invalid(
      pointer,
      `expected a type (a type name string, a union array or an object with a "type"), got ${showJson(node)}`,
    );
  }

  private reference(name: string, pointer: string, namespace: string): string {
    if (isPrimitiveTypeName(name)) return name;
    const full = fullNameOf(name, namespace);
    if (full !== undefined && this.definitions.has(full)) return name;
    const looked = full === undefined || full === name ? `"${name}"` : `"${name}" (as "${full}")`;
    return invalid(
      pointer,
      `${looked} is neither a primitive type nor a named type defined earlier in this schema. Define ` +
        'each record, enum and fixed type before its first use, or fix the name; references to types ' +
        'registered under other subjects are not supported, so inline their definitions',
    );
  }

  private union(branches: readonly unknown[], pointer: string, namespace: string, depth: number): unknown[] {
    if (branches.length === 0) {
      invalid(pointer, 'an empty union cannot hold any value; list at least one branch type');
    }
    const seen = new Map<string, number>();
    return branches.map((branch, index) => {
      const branchPointer = childPointer(pointer, index);
      if (Array.isArray(branch)) {
        invalid(branchPointer, 'a union cannot directly contain another union; merge its branches into this one');
      }
      const copy = this.schema(branch, branchPointer, namespace, depth + 1);
      const key = this.branchKey(branch, namespace);
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        invalid(
          branchPointer,
          `the union already has a branch of type "${key}" (at index ${earlier}); a union may hold each ` +
            'type once (named types once per full name)',
        );
      }
      seen.set(key, index);
      return copy;
    });
  }

  /** What makes two union branches the same: their primitive or container type, or full name. */
  private branchKey(branch: unknown, namespace: string): string {
    if (typeof branch === 'string') {
      return isPrimitiveTypeName(branch) ? branch : (fullNameOf(branch, namespace) ?? branch);
    }
    const object = branch as JsonObject;
    const kind = object.type as string;
    if (!NAMED_KINDS.has(kind)) return kind;
    return this.definedName(object, namespace);
  }

  /** The full name an already-checked named type definition received. */
  private definedName(object: JsonObject, namespace: string): string {
    const name = object.name as string;
    const ownNamespace = typeof object.namespace === 'string' && !name.includes('.') ? object.namespace : namespace;
    return fullNameOf(name, ownNamespace) ?? name;
  }

  private object(node: JsonObject, pointer: string, namespace: string, depth: number): JsonObject {
    const kind = node.type;
    if (kind === undefined) {
      invalid(pointer, 'the type object has no "type" attribute; add one ("record", "enum", "array", "int", …)');
    }
    if (typeof kind !== 'string') {
      invalid(
        childPointer(pointer, 'type'),
        `"type" must be a string naming the kind of type, got ${showJson(kind)}; a nested type belongs in a ` +
          'record field\'s "type", or in "items"/"values"',
      );
    }
    if (isPrimitiveTypeName(kind)) return { ...node };
    switch (kind) {
      case 'record':
      case 'error':
        return this.record(node, pointer, namespace, depth);
      case 'enum':
        return this.enumeration(node, pointer, namespace);
      case 'fixed':
        return this.fixed(node, pointer, namespace);
      case 'array':
        return this.container(node, 'items', pointer, namespace, depth);
      case 'map':
        return this.container(node, 'values', pointer, namespace, depth);
      default: {
        const full = fullNameOf(kind, namespace);
        const hint =
          full !== undefined && this.definitions.has(full)
            ? `; to use the named type "${full}", write the string "${kind}" instead of {"type": "${kind}"}`
            : '; use a primitive type name or one of record, error, enum, fixed, array, map';
        return invalid(childPointer(pointer, 'type'), `unknown type "${kind}"${hint}`);
      }
    }
  }

  private container(
    node: JsonObject,
    key: 'items' | 'values',
    pointer: string,
    namespace: string,
    depth: number,
  ): JsonObject {
    if (!(key in node)) {
      invalid(pointer, `${key === 'items' ? 'an array' : 'a map'} type needs "${key}": the type of its ${key}`);
    }
    return { ...node, [key]: this.schema(node[key], childPointer(pointer, key), namespace, depth + 1) };
  }

  /**
   * Checks and registers the name of a record, enum or fixed type; returns its full name and the
   * copy for avsc without the attributes avsc would misread.
   */
  private define(node: JsonObject, pointer: string, namespace: string): { fullName: string; copy: JsonObject } {
    const kind = String(node.type);
    const name = node.name;
    if (name === undefined) {
      invalid(pointer, `a ${kind} type needs a "name"; anonymous ${kind} types are not allowed`);
    }
    if (typeof name !== 'string') invalid(childPointer(pointer, 'name'), `"name" must be a string, got ${showJson(name)}`);
    const declaredNamespace = node.namespace;
    if (declaredNamespace !== undefined && declaredNamespace !== null) {
      if (typeof declaredNamespace !== 'string' || !isValidNamespace(declaredNamespace)) {
        invalid(
          childPointer(pointer, 'namespace'),
          `invalid namespace ${showJson(declaredNamespace)}; a namespace is dot-separated names, each matching ` +
            '[A-Za-z_][A-Za-z0-9_]*, or "" for none',
        );
      }
    }
    const ownNamespace = typeof declaredNamespace === 'string' && !name.includes('.') ? declaredNamespace : namespace;
    const fullName = fullNameOf(name, ownNamespace);
    if (fullName === undefined) {
      invalid(
        childPointer(pointer, 'name'),
        `invalid name "${name}"; a name is made of [A-Za-z_][A-Za-z0-9_]* parts joined by dots`,
      );
    }
    if (isPrimitiveTypeName(unqualifiedName(fullName))) {
      invalid(childPointer(pointer, 'name'), `"${name}" is a primitive type name and cannot name a ${kind} type`);
    }
    const earlier = this.definitions.get(fullName);
    if (earlier !== undefined) {
      invalid(
        childPointer(pointer, 'name'),
        `the name "${fullName}" is already defined at ${earlier}; define each named type once and refer ` +
          'to it by name afterwards',
      );
    }
    this.checkDoc(node, pointer);
    this.checkTypeAliases(node, pointer, namespaceOf(fullName));
    this.definitions.set(fullName, pointer);
    const copy = { ...node };
    if (name.includes('.') || declaredNamespace === null) delete copy.namespace;
    if (Array.isArray(node.aliases)) copy.aliases = node.aliases.map((alias) => absoluteAlias(alias as string, fullName));
    return { fullName, copy };
  }

  private checkDoc(node: JsonObject, pointer: string): void {
    if (node.doc !== undefined && typeof node.doc !== 'string') {
      invalid(childPointer(pointer, 'doc'), `"doc" must be a string, got ${showJson(node.doc)}`);
    }
  }

  private checkTypeAliases(node: JsonObject, pointer: string, namespace: string): void {
    const aliases = node.aliases;
    if (aliases === undefined) return;
    if (!Array.isArray(aliases)) {
      invalid(childPointer(pointer, 'aliases'), `"aliases" must be an array of names, got ${showJson(aliases)}`);
    }
    aliases.forEach((alias: unknown, index) => {
      if (typeof alias !== 'string' || fullNameOf(alias, namespace) === undefined) {
        invalid(
          childPointer(childPointer(pointer, 'aliases'), index),
          `invalid alias ${showJson(alias)}; an alias is a name or a full name (dot-joined names)`,
        );
      }
    });
  }

  private record(node: JsonObject, pointer: string, namespace: string, depth: number): JsonObject {
    // Defined before its fields are read, so a field may refer to the record itself.
    const { fullName, copy } = this.define(node, pointer, namespace);
    const fields = node.fields;
    if (!Array.isArray(fields)) {
      invalid(pointer, `a record needs "fields": an array of field objects, got ${showJson(fields)}`);
    }
    const fieldsPointer = childPointer(pointer, 'fields');
    const fieldNamespace = namespaceOf(fullName);
    const seenNames = new Map<string, number>();
    copy.fields = fields.map((field: unknown, index) => {
      const fieldPointer = childPointer(fieldsPointer, index);
      if (!isObject(field)) invalid(fieldPointer, `a field must be an object with "name" and "type", got ${showJson(field)}`);
      const fieldName = field.name;
      if (typeof fieldName !== 'string' || !isValidName(fieldName)) {
        invalid(
          childPointer(fieldPointer, 'name'),
          `invalid field name ${showJson(fieldName)}; a field name matches [A-Za-z_][A-Za-z0-9_]*`,
        );
      }
      const earlier = seenNames.get(fieldName);
      if (earlier !== undefined) {
        invalid(fieldPointer, `record "${fullName}" already has a field "${fieldName}" (at index ${earlier})`);
      }
      seenNames.set(fieldName, index);
      if (!('type' in field)) invalid(fieldPointer, `field "${fieldName}" has no "type"`);
      this.checkDoc(field, fieldPointer);
      if (field.order !== undefined && (typeof field.order !== 'string' || !FIELD_ORDERS.has(field.order))) {
        invalid(
          childPointer(fieldPointer, 'order'),
          `invalid order ${showJson(field.order)}; use "ascending", "descending" or "ignore"`,
        );
      }
      const aliases = field.aliases;
      if (aliases !== undefined && !(Array.isArray(aliases) && aliases.every((alias) => typeof alias === 'string'))) {
        invalid(childPointer(fieldPointer, 'aliases'), `"aliases" must be an array of field names, got ${showJson(aliases)}`);
      }
      const fieldCopy: JsonObject = {
        ...field,
        type: this.schema(field.type, childPointer(fieldPointer, 'type'), fieldNamespace, depth + 1),
      };
      if (field.default !== undefined) {
        this.defaultedFields.push({
          pointer: fieldPointer,
          fieldName,
          recordName: fullName,
          value: field.default,
          avscField: fieldCopy,
        });
      }
      return fieldCopy;
    });
    return copy;
  }

  private enumeration(node: JsonObject, pointer: string, namespace: string): JsonObject {
    const { fullName, copy } = this.define(node, pointer, namespace);
    const symbols = node.symbols;
    const symbolsPointer = childPointer(pointer, 'symbols');
    if (!Array.isArray(symbols) || symbols.length === 0) {
      invalid(symbolsPointer, `enum "${fullName}" needs "symbols": a non-empty array of names, got ${showJson(symbols)}`);
    }
    const seen = new Set<string>();
    symbols.forEach((symbol: unknown, index) => {
      if (typeof symbol !== 'string' || !isValidName(symbol)) {
        invalid(
          childPointer(symbolsPointer, index),
          `invalid enum symbol ${showJson(symbol)}; a symbol matches [A-Za-z_][A-Za-z0-9_]*`,
        );
      }
      if (seen.has(symbol)) invalid(childPointer(symbolsPointer, index), `enum symbol "${symbol}" appears twice`);
      seen.add(symbol);
    });
    if (node.default !== undefined && (typeof node.default !== 'string' || !seen.has(node.default))) {
      invalid(
        childPointer(pointer, 'default'),
        `the enum default ${showJson(node.default)} is not one of the symbols of "${fullName}"; use one of ` +
          `${showJson(symbols)}`,
      );
    }
    return copy;
  }

  private fixed(node: JsonObject, pointer: string, namespace: string): JsonObject {
    const { fullName, copy } = this.define(node, pointer, namespace);
    const size = node.size;
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0 || size > 2 ** 31 - 1) {
      invalid(
        childPointer(pointer, 'size'),
        `fixed "${fullName}" needs "size": a whole number of bytes from 0 to 2147483647, got ${showJson(size)}`,
      );
    }
    return copy;
  }
}
