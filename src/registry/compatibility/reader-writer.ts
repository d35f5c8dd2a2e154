/**
 * Can data written with one Avro schema be read with another? The rules of Avro Java's
 * `SchemaCompatibility` (Avro ≥ 1.9), re-expressed over avsc types, collecting every violation
 * with the JSON pointer (into the reader schema) of where it is:
 *
 * - same primitive type: compatible. Promotions: int → long, float, double; long → float, double;
 *   float → double; string ↔ bytes.
 * - array / map: their items / values must be compatible.
 * - record, enum, fixed: the unqualified names must be equal, or the reader's aliases must hold
 *   the writer's full name (namespaces are ignored since AVRO-2400).
 *   - record: every reader field is matched to the writer field of its name or of one of its
 *     aliases; if none matches, the reader field needs a default.
 *   - enum: every writer symbol must be a reader symbol, unless the reader has an enum default.
 *   - fixed: the sizes must be equal.
 * - writer union: every branch must be readable (the check is static: any branch may be written).
 * - reader union, writer not: some branch must read the writer's type.
 * - anything else: a type mismatch.
 *
 * Not considered, as in Java: doc, order, custom attributes, logical types, default values (only
 * their presence). Recursive types terminate because a pair of types already being compared
 * counts as compatible; each pair's findings are memoised relative to where the pair starts, so a
 * type used in several places reports its problems at each place.
 */
import type { Type } from 'avsc';
import type { types as avroTypes } from 'avsc';

import { unqualifiedName } from '../avro-schema/names.js';
import type { IncompatibilityType } from './incompatibility.js';

/** A violation, located by the pointer tokens from where its pair of types was compared. */
export interface Finding {
  readonly type: IncompatibilityType;
  readonly path: readonly string[];
  readonly message: string;
}

type Kind =
  | 'null'
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'bytes'
  | 'string'
  | 'array'
  | 'map'
  | 'enum'
  | 'fixed'
  | 'record'
  | 'union';

const KINDS_BY_TYPE_NAME: Readonly<Record<string, Kind>> = {
  null: 'null',
  boolean: 'boolean',
  int: 'int',
  long: 'long',
  // avsc's LongType.__with (e.g. longs as bigint) makes this type name.
  'abstract:long': 'long',
  float: 'float',
  double: 'double',
  bytes: 'bytes',
  string: 'string',
  array: 'array',
  map: 'map',
  enum: 'enum',
  fixed: 'fixed',
  record: 'record',
  error: 'record',
  'union:wrapped': 'union',
  'union:unwrapped': 'union',
};

/** Which writer kinds a reader kind accepts besides its own (Avro's promotions). */
const NAMED_KINDS: ReadonlySet<Kind> = new Set<Kind>(['record', 'enum', 'fixed']);

const PROMOTIONS: Readonly<Partial<Record<Kind, readonly Kind[]>>> = {
  long: ['int'],
  float: ['int', 'long'],
  double: ['int', 'long', 'float'],
  bytes: ['string'],
  string: ['bytes'],
};

/** Logical types are compared as their underlying types. */
function underlying(type: Type): Type {
  let current = type;
  while (current.typeName.startsWith('logical:')) current = (current as avroTypes.LogicalType).underlyingType;
  return current;
}

function kindOf(type: Type): Kind {
  const kind = KINDS_BY_TYPE_NAME[type.typeName];
  if (kind === undefined) throw new TypeError(`unsupported avsc type "${type.typeName}"`);
  return kind;
}

/** The name Avro Java prints for a type in messages: INT, RECORD, UNION, … */
function javaTypeName(type: Type): string {
  return kindOf(type).toUpperCase();
}

function under(tokens: readonly string[], findings: readonly Finding[]): Finding[] {
  return findings.map((finding) => ({ ...finding, path: [...tokens, ...finding.path] }));
}

function finding(type: IncompatibilityType, path: readonly string[], message: string): Finding {
  return { type, path, message };
}

function typeMismatch(reader: Type, writer: Type): Finding {
  return finding(
    'TYPE_MISMATCH',
    [],
    `reader type: ${javaTypeName(reader)} not compatible with writer type: ${javaTypeName(writer)}`,
  );
}

function branchesOf(union: Type): readonly Type[] {
  return (union as avroTypes.WrappedUnionType).types;
}

/** One comparison of a reader schema with a writer schema; keeps its memo for that comparison. */
export class ReaderWriterChecker {
  /** reader → writer → findings, or null while the pair is being compared. */
  private readonly memo = new Map<Type, Map<Type, readonly Finding[] | null>>();
  /** Per reader union: its branches by the kind (and name) of writer they could read. */
  private readonly unionIndexes = new Map<Type, Map<string, Type[]>>();

  check(readerType: Type, writerType: Type): readonly Finding[] {
    const reader = underlying(readerType);
    const writer = underlying(writerType);
    let byWriter = this.memo.get(reader);
    if (byWriter === undefined) {
      byWriter = new Map();
      this.memo.set(reader, byWriter);
    }
    const known = byWriter.get(writer);
    if (known !== undefined) return known ?? [];
    byWriter.set(writer, null);
    const findings = this.compare(reader, writer);
    byWriter.set(writer, findings);
    return findings;
  }

  private compare(reader: Type, writer: Type): readonly Finding[] {
    const readerKind = kindOf(reader);
    const writerKind = kindOf(writer);
    if (readerKind === writerKind) return this.compareSameKind(readerKind, reader, writer);
    if (writerKind === 'union') {
      return branchesOf(writer).flatMap((branch, index) => under([String(index)], this.check(reader, branch)));
    }
    if (readerKind === 'union') {
      const readable = this.candidateBranches(reader, writer).some((branch) => this.check(branch, writer).length === 0);
      return readable
        ? []
        : [finding('MISSING_UNION_BRANCH', [], `reader union lacking writer type: ${javaTypeName(writer)}`)];
    }
    return PROMOTIONS[readerKind]?.includes(writerKind) === true ? [] : [typeMismatch(reader, writer)];
  }

  private compareSameKind(kind: Kind, reader: Type, writer: Type): readonly Finding[] {
    switch (kind) {
      case 'null':
      case 'boolean':
      case 'int':
      case 'long':
      case 'float':
      case 'double':
      case 'bytes':
      case 'string':
        return [];
      case 'array':
        return under(
          ['items'],
          this.check((reader as avroTypes.ArrayType).itemsType, (writer as avroTypes.ArrayType).itemsType),
        );
      case 'map':
        return under(
          ['values'],
          this.check((reader as avroTypes.MapType).valuesType as Type, (writer as avroTypes.MapType).valuesType as Type),
        );
      case 'fixed':
        return [...nameFindings(reader, writer), ...fixedSizeFindings(reader, writer)];
      case 'enum':
        return [...nameFindings(reader, writer), ...enumSymbolFindings(reader, writer)];
      case 'record':
        return [...nameFindings(reader, writer), ...this.recordFieldFindings(reader, writer)];
      case 'union':
        // Every branch the writer may have written must be readable by the reader's union.
        return branchesOf(writer).flatMap((branch, index) =>
          this.check(reader, branch).length === 0
            ? []
            : [finding('MISSING_UNION_BRANCH', [String(index)], `reader union lacking writer type: ${javaTypeName(branch)}`)],
        );
    }
  }

  /**
   * The branches of a reader union that could read `writer` at all: of its kind or one it is
   * promoted to, and for named kinds of its name (or aliased to it). Trying every branch made a
   * union of n branches against one of m cost n·m comparisons, each kept in the memo: 30,000
   * against 5,000 held the registry's event loop for minutes and its heap for 150 million
   * entries. The answer is the same: no other branch can pass nameFindings or the kind test.
   */
  private candidateBranches(union: Type, writer: Type): readonly Type[] {
    let index = this.unionIndexes.get(union);
    if (index === undefined) {
      index = new Map();
      const add = (key: string, branch: Type): void => {
        const list = index!.get(key);
        if (list === undefined) index!.set(key, [branch]);
        else if (!list.includes(branch)) list.push(branch);
      };
      for (const branch of branchesOf(union)) {
        const kind = kindOf(underlying(branch));
        if (!NAMED_KINDS.has(kind)) {
          add(kind, branch);
          for (const promoted of PROMOTIONS[kind] ?? []) add(promoted, branch);
          continue;
        }
        add(`${kind} ${unqualifiedName(branch.name ?? '')}`, branch);
        for (const alias of branch.aliases ?? []) add(`${kind} alias ${alias}`, branch);
      }
      this.unionIndexes.set(union, index);
    }
    const kind = kindOf(writer);
    if (!NAMED_KINDS.has(kind)) return index.get(kind) ?? [];
    const name = writer.name ?? '';
    return [...(index.get(`${kind} ${unqualifiedName(name)}`) ?? []), ...(index.get(`${kind} alias ${name}`) ?? [])];
  }

  private recordFieldFindings(reader: Type, writer: Type): Finding[] {
    const writerFields = (writer as avroTypes.RecordType).fields;
    return (reader as avroTypes.RecordType).fields.flatMap((readerField, index) => {
      const path = ['fields', String(index)];
      const names = new Set([readerField.name, ...readerField.aliases]);
      const matches = writerFields.filter((writerField) => names.has(writerField.name));
      const [match, ...others] = matches;
      if (others.length > 0) {
        return [
          finding(
            'READER_FIELD_MATCHES_MULTIPLE_WRITER_FIELDS',
            path,
            `reader field ${readerField.name} matches writer fields ${matches.map((field) => field.name).join(', ')}`,
          ),
        ];
      }
      if (match !== undefined) return under([...path, 'type'], this.check(readerField.type, match.type));
      if (readerField.defaultValue() !== undefined) return [];
      // Java's special case: an enum with its own default is checked against the whole writer
      // record, which can only mismatch; kept so the reported type matches Java's.
      const fieldType = underlying(readerField.type);
      if (kindOf(fieldType) === 'enum' && enumDefault(fieldType) !== undefined) {
        return under([...path, 'type'], this.check(fieldType, writer));
      }
      return [finding('READER_FIELD_MISSING_DEFAULT_VALUE', path, readerField.name)];
    });
  }
}

function nameFindings(reader: Type, writer: Type): Finding[] {
  const readerName = reader.name ?? '';
  const writerName = writer.name ?? '';
  if (unqualifiedName(readerName) === unqualifiedName(writerName)) return [];
  if ((reader.aliases ?? []).includes(writerName)) return [];
  return [finding('NAME_MISMATCH', ['name'], `expected: ${writerName}`)];
}

function fixedSizeFindings(reader: Type, writer: Type): Finding[] {
  const readerSize = (reader as avroTypes.FixedType).size;
  const writerSize = (writer as avroTypes.FixedType).size;
  return readerSize === writerSize
    ? []
    : [finding('FIXED_SIZE_MISMATCH', ['size'], `expected: ${writerSize}, found: ${readerSize}`)];
}

/** avsc keeps an enum's default on the type but does not declare it. */
function enumDefault(type: Type): string | undefined {
  const value = (type as unknown as { readonly default?: unknown }).default;
  return typeof value === 'string' ? value : undefined;
}

function enumSymbolFindings(reader: Type, writer: Type): Finding[] {
  const readerSymbols = new Set((reader as avroTypes.EnumType).symbols);
  const missing = [...new Set((writer as avroTypes.EnumType).symbols)].filter((symbol) => !readerSymbols.has(symbol));
  if (missing.length === 0) return [];
  const fallback = enumDefault(reader);
  if (fallback !== undefined && readerSymbols.has(fallback)) return [];
  return [finding('MISSING_ENUM_SYMBOLS', ['symbols'], `[${missing.sort().join(', ')}]`)];
}
