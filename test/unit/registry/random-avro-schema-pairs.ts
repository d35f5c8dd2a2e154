/**
 * Seeded random Avro schema pairs for differential tests of the compatibility checker: a random
 * writer schema, and a reader made from it by random edits of the kinds schemas evolve by
 * (promotions, added/removed fields and defaults, renames with and without aliases, enum symbols,
 * fixed sizes, union branches, namespaces). Pairs are plain JSON; the same seed gives the same
 * pairs.
 *
 * Two modes keep clear of a known, deliberate difference between Avro Java's rules and avsc's
 * `ignoreNamespaces` resolution: Java matches a type alias by full name, avsc by unqualified name.
 * So a pair either uses namespaces or type aliases, never both.
 */

type Json = unknown;
type JsonObject = Record<string, Json>;

import { seededRandom } from '../../support/seeded-random.js';

export { seededRandom };

const PRIMITIVES = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'] as const;
const PROMOTIONS: Readonly<Record<string, readonly string[]>> = {
  int: ['long', 'float', 'double'],
  long: ['float', 'double'],
  float: ['double'],
  string: ['bytes'],
  bytes: ['string'],
};
const SYMBOLS = ['A', 'B', 'C', 'D', 'E'];
// Never the null namespace, so a full name always has a dot and resolves the same everywhere.
const NAMESPACES = ['org.a', 'org.b', 'org.c'];

class Generator {
  private nameCounter = 0;
  /** Full names an evolution renamed, so later references follow. */
  private readonly renames = new Map<string, string>();

  constructor(
    private readonly random: () => number,
    private readonly withNamespaces: boolean,
  ) {}

  chance(probability: number): boolean {
    return this.random() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.random() * items.length)];
    if (item === undefined) throw new RangeError('pick from an empty list');
    return item;
  }

  private freshName(prefix: string): string {
    this.nameCounter += 1;
    return `${prefix}${this.nameCounter}`;
  }

  /** Defines a named type: its attributes, and its full name (what references use) in `named`. */
  private define(prefix: string, named: string[]): { name: string; namespace?: string } {
    const name = this.freshName(prefix);
    if (!this.withNamespaces) {
      named.push(name);
      return { name };
    }
    const namespace = this.pick(NAMESPACES);
    named.push(`${namespace}.${name}`);
    return { name, namespace };
  }

  /** A random type; `named` collects the named types defined so far, for references. */
  type(depth: number, named: string[]): Json {
    const roll = this.random();
    if (depth <= 0 || roll < 0.35) return this.pick(PRIMITIVES);
    if (roll < 0.45 && named.length > 0) return this.pick(named);
    if (roll < 0.6) return this.record(depth, named);
    if (roll < 0.68) return this.enumeration(named);
    if (roll < 0.74) return this.fixed(named);
    if (roll < 0.82) return { type: 'array', items: this.type(depth - 1, named) };
    if (roll < 0.88) return { type: 'map', values: this.type(depth - 1, named) };
    return this.union(depth, named);
  }

  private union(depth: number, named: string[]): Json {
    const branches: Json[] = [];
    const keys = new Set<string>();
    const count = 1 + Math.floor(this.random() * 3);
    for (let attempt = 0; attempt < 6 && branches.length < count; attempt += 1) {
      const definedBefore = named.length;
      let branch = this.type(depth - 1, named);
      if (Array.isArray(branch)) {
        // A union may not hold a union: the branch and whatever it defined are dropped.
        named.length = definedBefore;
        branch = this.pick(PRIMITIVES);
      }
      const key = branchKey(branch);
      if (keys.has(key)) {
        named.length = definedBefore;
        continue;
      }
      keys.add(key);
      branches.push(branch);
    }
    return branches;
  }

  record(depth: number, named: string[]): JsonObject {
    const identity = this.define('R', named);
    const fullName = named[named.length - 1] ?? identity.name;
    const fields: JsonObject[] = [];
    const count = Math.floor(this.random() * 4);
    for (let index = 0; index < count; index += 1) {
      const field: JsonObject = { name: `f${index}`, type: this.type(depth - 1, named) };
      if (this.chance(0.4)) field.default = PENDING_DEFAULT;
      fields.push(field);
    }
    // Sometimes a recursive field, optional so values stay finite.
    if (this.chance(0.15)) fields.push({ name: 'next', type: ['null', fullName], default: null });
    return { type: 'record', ...identity, fields };
  }

  private enumeration(named: string[]): JsonObject {
    const identity = this.define('E', named);
    const symbols = SYMBOLS.filter(() => this.chance(0.6));
    if (symbols.length === 0) symbols.push(this.pick(SYMBOLS));
    const schema: JsonObject = { type: 'enum', ...identity, symbols };
    if (this.chance(0.25)) schema.default = this.pick(symbols);
    return schema;
  }

  private fixed(named: string[]): JsonObject {
    return { type: 'fixed', ...this.define('F', named), size: 1 + Math.floor(this.random() * 3) };
  }

  /** A copy of `schema` with random evolution edits. */
  evolve(schema: Json, named: string[]): Json {
    if (typeof schema === 'string') return this.evolvePrimitiveOrReference(schema);
    if (Array.isArray(schema)) return this.evolveUnion(schema, named);
    const object = schema as JsonObject;
    switch (object.type) {
      case 'record':
        return this.evolveRecord(object, named);
      case 'enum':
        return this.evolveEnum(object);
      case 'fixed':
        return this.evolveNamed({ ...object, size: this.chance(0.15) ? Number(object.size) + 1 : object.size });
      case 'array':
        if (this.chance(0.05)) return { type: 'map', values: this.evolve(object.items, named) };
        return { ...object, items: this.evolve(object.items, named) };
      default:
        if (this.chance(0.05)) return { type: 'array', items: this.evolve(object.values, named) };
        return { ...object, values: this.evolve(object.values, named) };
    }
  }

  private evolvePrimitiveOrReference(schema: string): Json {
    if (!(PRIMITIVES as readonly string[]).includes(schema)) return this.renames.get(schema) ?? schema;
    if (this.chance(0.15)) return this.pick(PROMOTIONS[schema] ?? [schema]);
    if (this.chance(0.05)) return this.pick(PRIMITIVES);
    if (this.chance(0.05) && schema !== 'null') return [schema, 'null'];
    return schema;
  }

  private evolveUnion(branches: readonly Json[], named: string[]): Json {
    let evolved = branches.map((branch) => this.evolve(branch, named)).filter((branch) => !Array.isArray(branch));
    if (evolved.length > 1 && this.chance(0.15)) evolved = evolved.filter((_, index) => index !== 0);
    if (this.chance(0.15)) evolved = [...evolved, this.pick(PRIMITIVES)];
    if (this.chance(0.1)) evolved = [...evolved].reverse();
    if (evolved.length === 1 && this.chance(0.2)) return evolved[0];
    return evolved.length === 0 ? ['null'] : evolved;
  }

  /** Called before a named type's children are evolved, so recursive references follow too. */
  private evolveNamed(object: JsonObject): JsonObject {
    const name = String(object.name);
    if (this.withNamespaces) {
      if (!this.chance(0.2)) return object;
      const namespace = this.pick(NAMESPACES);
      this.renames.set(`${String(object.namespace)}.${name}`, `${namespace}.${name}`);
      return { ...object, namespace };
    }
    if (!this.chance(0.08)) return object;
    const renamed = `${name}x`;
    this.renames.set(name, renamed);
    return this.chance(0.5) ? { ...object, name: renamed, aliases: [name] } : { ...object, name: renamed };
  }

  private evolveEnum(object: JsonObject): JsonObject {
    let symbols = object.symbols as string[];
    if (this.chance(0.2)) symbols = [...symbols, ...SYMBOLS.filter((symbol) => !symbols.includes(symbol)).slice(0, 1)];
    if (symbols.length > 1 && this.chance(0.2)) symbols = symbols.slice(1);
    const evolved: JsonObject = { ...object, symbols };
    if (this.chance(0.2)) evolved.default = this.pick(symbols);
    else if (evolved.default !== undefined && (this.chance(0.2) || !symbols.includes(evolved.default as string))) {
      delete evolved.default;
    }
    return this.evolveNamed(evolved);
  }

  private evolveRecord(original: JsonObject, named: string[]): JsonObject {
    const object = this.evolveNamed(original);
    let fields = (object.fields as JsonObject[]).map((field) => {
      const evolved: JsonObject = { ...field, type: this.evolve(field.type, named) };
      if (this.chance(0.1)) {
        if (evolved.default === undefined) evolved.default = PENDING_DEFAULT;
        else delete evolved.default;
      }
      if (this.chance(0.08)) {
        evolved.name = `${String(field.name)}_renamed`;
        if (this.chance(0.6)) evolved.aliases = [field.name];
      }
      return evolved;
    });
    if (fields.length > 0 && this.chance(0.15)) fields = fields.filter((_, index) => index !== 0);
    if (this.chance(0.15)) {
      const added: JsonObject = { name: `added${fields.length}`, type: this.type(1, named) };
      if (this.chance(0.5)) added.default = PENDING_DEFAULT;
      fields = [...fields, added];
    }
    return { ...object, fields };
  }
}

/** Marks a default whose value is filled in once the field's final type is known. */
const PENDING_DEFAULT = Symbol('pending default');

function branchKey(branch: Json): string {
  if (typeof branch === 'string') return branch;
  const object = branch as JsonObject;
  if (typeof object.name !== 'string') return String(object.type);
  return typeof object.namespace === 'string' ? `${object.namespace}.${object.name}` : object.name;
}

/**
 * Replaces every pending default (and every default an edit made invalid) with a value of the
 * field's type; drops the default when no finite value exists (a type that only recurses).
 */
function fillDefaults(schema: Json): Json {
  const definitions = new Map<string, JsonObject>();
  const visit = (node: Json): Json => {
    if (typeof node === 'string') return node;
    if (Array.isArray(node)) return node.map(visit);
    const object = { ...(node as JsonObject) };
    if (typeof object.name === 'string') definitions.set(object.name, object);
    if (object.type === 'record') {
      object.fields = (object.fields as JsonObject[]).map((field) => {
        const filled: JsonObject = { ...field, type: visit(field.type) };
        if ('default' in filled) {
          const value = defaultOf(filled.type, definitions, new Set());
          if (value === NO_VALUE) delete filled.default;
          else filled.default = value;
        }
        return filled;
      });
    } else if (object.type === 'array') object.items = visit(object.items);
    else if (object.type === 'map') object.values = visit(object.values);
    return object;
  };
  return visit(schema);
}

const NO_VALUE = Symbol('no finite value');

function defaultOf(type: Json, definitions: Map<string, JsonObject>, visiting: Set<string>): Json {
  if (Array.isArray(type)) return defaultOf(type[0], definitions, visiting);
  if (typeof type === 'string') {
    switch (type) {
      case 'null':
        return null;
      case 'boolean':
        return false;
      case 'int':
      case 'long':
        return 0;
      case 'float':
      case 'double':
        return 0.5;
      case 'bytes':
      case 'string':
        return 'x';
      default: {
        const definition = definitions.get(type);
        if (definition === undefined || visiting.has(type)) return NO_VALUE;
        return defaultOf(definition, definitions, visiting);
      }
    }
  }
  const object = type as JsonObject;
  switch (object.type) {
    case 'enum':
      return (object.symbols as string[])[0];
    case 'fixed':
      return 'z'.repeat(Number(object.size));
    case 'array':
      return [];
    case 'map':
      return {};
    case 'record': {
      const name = String(object.name);
      const value: JsonObject = {};
      const inner = new Set([...visiting, name]);
      for (const field of object.fields as JsonObject[]) {
        const fieldValue = defaultOf(field.type, definitions, inner);
        if (fieldValue === NO_VALUE) return NO_VALUE;
        value[String(field.name)] = fieldValue;
      }
      return value;
    }
    default:
      return defaultOf(object.type, definitions, visiting);
  }
}

export interface SchemaPair {
  readonly writer: Json;
  readonly reader: Json;
}

/** `count` pairs from `seed`; some may be invalid schemas (duplicate branches after an edit…). */
export function randomSchemaPairs(seed: number, count: number): SchemaPair[] {
  const random = seededRandom(seed);
  const pairs: SchemaPair[] = [];
  for (let index = 0; index < count; index += 1) {
    const generator = new Generator(random, random() < 0.5);
    const writerNames: string[] = [];
    const writer = generator.chance(0.85) ? generator.record(3, writerNames) : generator.type(3, writerNames);
    const reader = generator.evolve(writer, [...writerNames]);
    pairs.push({ writer: fillDefaults(writer), reader: fillDefaults(reader) });
  }
  return pairs;
}
