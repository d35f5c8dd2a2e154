/**
 * The loader's Parquet files, written by encodeDataFile for every Avro type a Parquet file can
 * hold (test/support/parquet-every-type.ts) with each Parquet codec, read back exactly (every
 * value, NaN and −0 included) by two independent readers:
 *
 *   DuckDB 1.5 (@duckdb/node-api, read_parquet)
 *   parquet-avro 1.18.1 (Apache's Java reader; etl-parquet-readers/ParquetAvroRecords.java), three
 *     ways: as it comes, by the file's parquet.avro.schema; the same with its compatibility mode
 *     off; and by the Avro schema it derives from the Parquet schema alone
 *
 * and the CONTRACT below says how each Avro type surfaces: its Parquet physical type and
 * annotation (Parquet's LogicalTypes.md), DuckDB's column type, and the Avro type parquet-avro maps
 * it back to.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Type } from 'avsc';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { encodeDataFile, parseDataFileSchema, type DataFileCodec } from '../../src/etl/files/data-files.js';
import { attributesOf, fieldsOf, itemsOf, kindOf, mapLeaves, slotOf, valuesOf, type AvroKind } from '../support/avro-parquet-shape.js';
import { avroFromDuckDB, duckTypeText, openDuckDB, sqlText, type DuckDB } from '../support/duckdb.js';
import { describeRun, runKafkaTool } from '../support/java.js';
import { everyTypeRecords, everyTypeSchema } from '../support/parquet-every-type.js';
import { parquetSchemaTree, type ParquetSchemaNode } from '../support/parquet-metadata.js';
import { recordDifferences } from '../support/record-diff.js';

type Attributes = ReturnType<typeof attributesOf>;
type ByAttributes = string | ((attributes: Attributes) => string);

interface Surface {
  /** The Parquet physical type of the leaf. */
  readonly physical: 'BOOLEAN' | 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE' | 'BYTE_ARRAY' | 'FIXED_LEN_BYTE_ARRAY';
  /** A FIXED_LEN_BYTE_ARRAY's length, when it is not the Avro fixed's size. */
  readonly length?: number;
  /** The annotation the leaf must carry, as LogicalTypes.md names it; none: DuckDB's type says enough. */
  readonly annotation?: string;
  /** DuckDB's column type. */
  readonly duckdb: ByAttributes;
  /** The Avro type parquet-avro derives from the Parquet schema alone. */
  readonly java: ByAttributes;
}

/**
 * THE CONTRACT: how each Avro type surfaces. Records, arrays and maps become groups (STRUCT,
 * 3-level LIST `list`/`element`, MAP `key_value` with a required STRING `key`), DuckDB STRUCT, T[]
 * and MAP(VARCHAR, T), and parquet-avro record, array and map; ["null", T] and [T, "null"] an
 * OPTIONAL element (otherwise REQUIRED), a nullable value in DuckDB and ["null", T] in parquet-avro.
 *
 * The choices that were open:
 * - enum → STRING (not ENUM): "enums as strings" (issue 32) and Iceberg's string; DuckDB VARCHAR.
 * - uuid → FIXED_LEN_BYTE_ARRAY(16) UUID (Iceberg's uuid), DuckDB UUID; parquet-avro reads it
 *   back into the Avro string. What comes back is RFC 4122's text (lowercase hex), so an uppercase
 *   uuid in a record reads back lowercased: the same UUID, and the one difference from the records
 *   that the readers' comparison allows (canonicalUuids).
 * - decimal on bytes → BYTE_ARRAY DECIMAL, on fixed(n) → FIXED_LEN_BYTE_ARRAY(n) DECIMAL, never
 *   INT32/INT64: parquet-avro reads an INT32/INT64 decimal only into an Avro int or long, so the
 *   bytes field of the file's own Avro schema would fail. DuckDB: DECIMAL(p,s) (p ≤ 38).
 * - time-millis/micros → TIME(unit, isAdjustedToUTC=false): an Avro time has no zone, and
 *   DuckDB reads isAdjustedToUTC=true as TIME WITH TIME ZONE. The unit stays Avro's (INT32 MILLIS,
 *   INT64 MICROS), so parquet-avro reads the int/long the Avro schema names.
 * - timestamp-millis/micros → TIMESTAMP(unit, isAdjustedToUTC=true): instants, DuckDB TIMESTAMP
 *   WITH TIME ZONE; local-timestamp-* → isAdjustedToUTC=false, DuckDB TIMESTAMP. Units kept (a
 *   timestamp-millis stays milliseconds: parquet-avro reads it into the Avro long it came from).
 */
const CONTRACT: Readonly<Record<Exclude<AvroKind, 'record' | 'array' | 'map'>, Surface>> = {
  boolean: { physical: 'BOOLEAN', duckdb: 'BOOLEAN', java: 'boolean' },
  int: { physical: 'INT32', duckdb: 'INTEGER', java: 'int' },
  long: { physical: 'INT64', duckdb: 'BIGINT', java: 'long' },
  float: { physical: 'FLOAT', duckdb: 'FLOAT', java: 'float' },
  double: { physical: 'DOUBLE', duckdb: 'DOUBLE', java: 'double' },
  string: { physical: 'BYTE_ARRAY', annotation: 'STRING', duckdb: 'VARCHAR', java: 'string' },
  enum: { physical: 'BYTE_ARRAY', annotation: 'STRING', duckdb: 'VARCHAR', java: 'string' },
  uuid: { physical: 'FIXED_LEN_BYTE_ARRAY', length: 16, annotation: 'UUID', duckdb: 'UUID', java: 'string uuid' },
  bytes: { physical: 'BYTE_ARRAY', duckdb: 'BLOB', java: 'bytes' },
  fixed: { physical: 'FIXED_LEN_BYTE_ARRAY', duckdb: 'BLOB', java: ({ size }) => `fixed(${size})` },
  'decimal-bytes': {
    physical: 'BYTE_ARRAY',
    annotation: 'DECIMAL',
    duckdb: ({ precision, scale }) => `DECIMAL(${precision},${scale})`,
    java: ({ precision, scale }) => `bytes decimal(${precision},${scale})`,
  },
  'decimal-fixed': {
    physical: 'FIXED_LEN_BYTE_ARRAY',
    annotation: 'DECIMAL',
    duckdb: ({ precision, scale }) => `DECIMAL(${precision},${scale})`,
    java: ({ size, precision, scale }) => `fixed(${size}) decimal(${precision},${scale})`,
  },
  date: { physical: 'INT32', annotation: 'DATE', duckdb: 'DATE', java: 'int date' },
  'time-millis': { physical: 'INT32', annotation: 'TIME(MILLIS,false)', duckdb: 'TIME', java: 'int time-millis' },
  'time-micros': { physical: 'INT64', annotation: 'TIME(MICROS,false)', duckdb: 'TIME', java: 'long time-micros' },
  'timestamp-millis': { physical: 'INT64', annotation: 'TIMESTAMP(MILLIS,true)', duckdb: 'TIMESTAMP WITH TIME ZONE', java: 'long timestamp-millis' },
  'timestamp-micros': { physical: 'INT64', annotation: 'TIMESTAMP(MICROS,true)', duckdb: 'TIMESTAMP WITH TIME ZONE', java: 'long timestamp-micros' },
  'local-timestamp-millis': { physical: 'INT64', annotation: 'TIMESTAMP(MILLIS,false)', duckdb: 'TIMESTAMP', java: 'long local-timestamp-millis' },
  'local-timestamp-micros': { physical: 'INT64', annotation: 'TIMESTAMP(MICROS,false)', duckdb: 'TIMESTAMP', java: 'long local-timestamp-micros' },
};

/** Our codecs, and what a Parquet footer calls them. */
const CODECS: readonly (readonly [DataFileCodec, string])[] = [
  ['null', 'UNCOMPRESSED'],
  ['snappy', 'SNAPPY'],
  ['gzip', 'GZIP'],
  ['zstd', 'ZSTD'],
];

const { runDir, etlReadersDir } = inject('compat');
const RECORDS_PROGRAM = join(dirname(fileURLToPath(import.meta.url)), 'etl-parquet-readers', 'ParquetAvroRecords.java');
const folder = join(runDir, 'etl-parquet-readers');
const schema = everyTypeSchema();
const records = everyTypeRecords(2_000);
/** The records as the readers give them back: uuids as RFC 4122's lowercase text (see CONTRACT). */
const canonicalUuids = records.map((record) => mapLeaves(schema, record, (kind, value) => (kind === 'uuid' ? (value as string).toLowerCase() : value)) as Record<string, unknown>);
const metadata = { 'tributary.offsets': '0-2003', 'tributary.topic': 'every-type' };
const fields = fieldsOf(schema);
let duckdb: DuckDB;

const files = new Map<DataFileCodec, Promise<string>>();
/** The file of one codec, written once; a codec the writer refuses fails each of its tests. */
function fileFor(codec: DataFileCodec): Promise<string> {
  let file = files.get(codec);
  if (file === undefined) {
    file = (async () => {
      const path = join(folder, `every-type+0+0+2003.${codec}.parquet`);
      writeFileSync(path, await encodeDataFile(records, { format: 'parquet', codec, schema, identity: 'every-type+0+0+2003', metadata }));
      return path;
    })();
    files.set(codec, file);
  }
  return file;
}

beforeAll(async () => {
  mkdirSync(folder, { recursive: true });
  duckdb = await openDuckDB();
});

afterAll(() => {
  duckdb.close();
});

function byAttributes(text: ByAttributes, type: Type): string {
  return typeof text === 'string' ? text : text(attributesOf(type));
}

function expectedDuckType(slotType: Type): string {
  const { type } = slotOf(slotType);
  const kind = kindOf(type);
  if (kind === 'record') return `STRUCT(${fieldsOf(type).map((field) => `${field.name} ${expectedDuckType(field.type)}`).join(', ')})`;
  if (kind === 'array') return `${expectedDuckType(itemsOf(type))}[]`;
  if (kind === 'map') return `MAP(VARCHAR, ${expectedDuckType(valuesOf(type))})`;
  return byAttributes(CONTRACT[kind].duckdb, type);
}

/** An Avro type's shape with names left out: what can be compared across parquet-avro's naming. */
type Shape = string | { readonly optional: Shape } | { readonly array: Shape } | { readonly map: Shape } | { readonly record: readonly [string, Shape][] };

function shapeOf(slotType: Type, leaf: (kind: Exclude<AvroKind, 'record' | 'array' | 'map'>, type: Type) => string): Shape {
  const { type, optional } = slotOf(slotType);
  const kind = kindOf(type);
  const shape: Shape =
    kind === 'record'
      ? { record: fieldsOf(type).map((field): [string, Shape] => [field.name, shapeOf(field.type, leaf)]) }
      : kind === 'array'
        ? { array: shapeOf(itemsOf(type), leaf) }
        : kind === 'map'
          ? { map: shapeOf(valuesOf(type), leaf) }
          : leaf(kind, type);
  return optional ? { optional: shape } : shape;
}

/** How an Avro leaf type reads in the contract's `java` column. */
function avroLeafName(kind: Exclude<AvroKind, 'record' | 'array' | 'map'>, type: Type): string {
  const { size, precision, scale } = attributesOf(type);
  switch (kind) {
    case 'fixed':
      return `fixed(${size})`;
    case 'decimal-bytes':
      return `bytes decimal(${precision},${scale})`;
    case 'decimal-fixed':
      return `fixed(${size}) decimal(${precision},${scale})`;
    case 'uuid':
      return 'string uuid';
    case 'date':
    case 'time-millis':
      return `int ${kind}`;
    case 'time-micros':
    case 'timestamp-millis':
    case 'timestamp-micros':
    case 'local-timestamp-millis':
    case 'local-timestamp-micros':
      return `long ${kind}`;
    case 'boolean':
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'string':
    case 'bytes':
    case 'enum':
      return kind;
  }
}

/** The differences between a Parquet schema element (and what is under it) and the contract. */
function elementProblems(node: ParquetSchemaNode, slotType: Type, path: string): string[] {
  const { type, optional } = slotOf(slotType);
  const kind = kindOf(type);
  const problems: string[] = [];
  const check = (ok: boolean, what: string): void => {
    if (!ok) problems.push(`${path}: ${what} (element ${JSON.stringify(node.element)})`);
  };
  check(node.element.repetition_type === (optional ? 'OPTIONAL' : 'REQUIRED'), `should be ${optional ? 'OPTIONAL' : 'REQUIRED'}`);
  const only = (name: string, repetition: string): ParquetSchemaNode | undefined => {
    const child = node.children.length === 1 ? node.children[0] : undefined;
    check(child?.element.name === name && child.element.repetition_type === repetition, `should hold exactly one ${repetition} ${name}`);
    return child?.element.name === name ? child : undefined;
  };
  if (kind === 'record') {
    const names = fieldsOf(type).map((field) => field.name);
    check(node.element.type === null, 'should be a group');
    check(JSON.stringify(node.children.map((child) => child.element.name)) === JSON.stringify(names), `should hold ${names.join(', ')}`);
    fieldsOf(type).forEach((field, index) => {
      const child = node.children[index];
      if (child !== undefined) problems.push(...elementProblems(child, field.type, `${path}.${field.name}`));
    });
    return problems;
  }
  if (kind === 'array') {
    check(node.element.converted_type === 'LIST' || (node.element.logical_type ?? '').startsWith('ListType'), 'should be annotated LIST');
    const list = only('list', 'REPEATED');
    const element = list?.children.length === 1 ? list.children[0] : undefined;
    check(element?.element.name === 'element', 'should be list/element (3 levels)');
    if (element !== undefined) problems.push(...elementProblems(element, itemsOf(type), `${path}[]`));
    return problems;
  }
  if (kind === 'map') {
    check(node.element.converted_type === 'MAP' || (node.element.logical_type ?? '').startsWith('MapType'), 'should be annotated MAP');
    const keyValue = only('key_value', 'REPEATED');
    const [key, value] = keyValue?.children ?? [];
    check(keyValue?.children.length === 2 && key?.element.name === 'key' && value?.element.name === 'value', 'should be key_value/key, value');
    if (key !== undefined) problems.push(...elementProblems(key, parseDataFileSchema({ type: 'string' }), `${path}{key}`));
    if (value !== undefined) problems.push(...elementProblems(value, valuesOf(type), `${path}{}`));
    return problems;
  }
  const surface = CONTRACT[kind];
  const { size, precision, scale } = attributesOf(type);
  check(node.element.type === surface.physical, `should be ${surface.physical}`);
  if (surface.physical === 'FIXED_LEN_BYTE_ARRAY') check(node.element.type_length === (surface.length ?? size), `should be ${surface.length ?? size} bytes long`);
  if (surface.annotation !== undefined) check(annotated(node, surface.annotation, precision, scale), `should be annotated ${surface.annotation}`);
  return problems;
}

/** Whether a leaf carries the annotation (converted_type or logical_type, as parquet_schema() shows them). */
function annotated(node: ParquetSchemaNode, annotation: string, precision: number | undefined, scale: number): boolean {
  const { converted_type: converted, logical_type: logical } = node.element;
  const time = /^(TIME|TIMESTAMP)\((MILLIS|MICROS),(true|false)\)$/.exec(annotation);
  if (time !== null) {
    const [, name = '', unit = '', utc] = time;
    const unitName = unit === 'MILLIS' ? 'MilliSeconds' : 'MicroSeconds';
    // A converted type alone cannot say isAdjustedToUTC=false, and one beside the logical type must
    // agree with it: TIME_MILLIS, TIMESTAMP_MICROS… mean isAdjustedToUTC=true (LogicalTypes.md).
    const agrees = converted === null || (utc === 'true' && converted === `${name}_${unit}`);
    return agrees && new RegExp(`^${name === 'TIME' ? 'Time' : 'Timestamp'}Type\\(isAdjustedToUTC=${utc === 'true' ? 1 : 0}, unit=TimeUnit\\(.*${unit}=${unitName}\\(\\)`).test(logical ?? '');
  }
  switch (annotation) {
    case 'STRING':
      return converted === 'UTF8' || (logical ?? '').startsWith('StringType');
    case 'DATE':
      return converted === 'DATE' || (logical ?? '').startsWith('DateType');
    case 'UUID':
      return (logical ?? '').startsWith('UUIDType');
    case 'DECIMAL':
      // Scale and precision in the element itself too, as LogicalTypes.md asks for older readers.
      return (
        (converted === 'DECIMAL' || logical === `DecimalType(scale=${scale}, precision=${precision})`) &&
        node.element.precision === precision &&
        node.element.scale === scale &&
        (logical === null || logical === `DecimalType(scale=${scale}, precision=${precision})`)
      );
    default:
      throw new Error(`no check for annotation ${annotation}`);
  }
}

describe('the contract: how each Avro type surfaces', () => {
  it('the Parquet schema: physical types, annotations, REQUIRED/OPTIONAL, 3-level lists and maps, as CONTRACT says', async () => {
    const path = await fileFor('snappy');
    const root = parquetSchemaTree(await duckdb.rows(`SELECT * FROM parquet_schema(${sqlText(path)})`));
    expect(root.children.map((child) => child.element.name)).toEqual(fields.map((field) => field.name));
    const problems = fields.flatMap((field, index) => {
      const node = root.children[index];
      return node === undefined ? [] : elementProblems(node, field.type, field.name);
    });
    expect(problems).toEqual([]);
  });

  it('DuckDB types every column as CONTRACT says', async () => {
    const path = await fileFor('snappy');
    const reader = await duckdb.read(`SELECT * FROM read_parquet(${sqlText(path)}) LIMIT 0`);
    const actual = Object.fromEntries(reader.columnNames().map((name, index) => [name, duckTypeText(reader.columnTypes()[index] as Parameters<typeof duckTypeText>[0])]));
    expect(actual).toEqual(Object.fromEntries(fields.map((field) => [field.name, expectedDuckType(field.type)])));
  });

  it('parquet-avro derives from the Parquet schema alone the Avro types CONTRACT says', async () => {
    const read = await javaRead('snappy');
    const derived = parseDataFileSchema(read.head.derivedSchema);
    const actual = fieldsOf(derived).map((field): [string, Shape] => [field.name, shapeOf(field.type, avroLeafName)]);
    const expected = fields.map((field): [string, Shape] => [field.name, shapeOf(field.type, (kind, type) => byAttributes(CONTRACT[kind].java, type))]);
    expect(actual).toEqual(expected);
  });

  it('the footer carries parquet.avro.schema (parquet-avro reads records by it) and our metadata', async () => {
    const path = await fileFor('snappy');
    const rows = await duckdb.rows(`SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlText(path)})`);
    const kv = Object.fromEntries(rows.map((row) => [String(row['key']), String(row['value'])]));
    expect(JSON.parse(kv['parquet.avro.schema'] ?? 'null')).toEqual(schema.schema({ exportAttrs: true }));
    expect(kv).toMatchObject(metadata);
  });
});

describe.each(CODECS)('codec %s: every value read back exactly', (codec, footerName) => {
  it(`DuckDB read_parquet gives back the records written; every column chunk says ${footerName}`, async () => {
    const path = await fileFor(codec);
    const codecs = await duckdb.rows(`SELECT DISTINCT compression FROM parquet_metadata(${sqlText(path)})`);
    expect(codecs.map((row) => row['compression'])).toEqual([footerName]);
    // file_row_number keeps the file's order whatever DuckDB's threads do.
    const rows = await duckdb.rows(`SELECT * EXCLUDE (file_row_number) FROM read_parquet(${sqlText(path)}, file_row_number = true) ORDER BY file_row_number`);
    const read = rows.map((row) => Object.fromEntries(fields.map((field) => [field.name, readableOrWhy(() => avroFromDuckDB(row[field.name] ?? null, field.type, field.name))])));
    expect(recordDifferences(read, canonicalUuids)).toEqual([]);
  });

  it.each(['embedded', 'strict', 'derived'] as const)('parquet-avro (%s) gives back the records written', async (way) => {
    const read = await javaRead(codec);
    expect(read.head.rows).toBe(records.length);
    const readType = way === 'derived' ? parseDataFileSchema(read.head.derivedSchema) : schema;
    const decoded = read.records[way].map((bytes) => readType.fromBuffer(bytes) as unknown);
    expect(recordDifferences(decoded, canonicalUuids)).toEqual([]);
  });
});

/** The value, or why it could not be read (a string that differs from any record's value, so it is listed). */
function readableOrWhy(read: () => unknown): unknown {
  try {
    return read();
  } catch (error) {
    return `unreadable: ${error instanceof Error ? error.message : String(error)}`;
  }
}

interface JavaRead {
  readonly head: { readonly file: string; readonly createdBy: string; readonly rows: number; readonly parquetSchema: string; readonly derivedSchema: string };
  readonly records: Record<'embedded' | 'strict' | 'derived', Buffer[]>;
}

let javaReads: Promise<Map<string, JavaRead>> | undefined;

/** What ParquetAvroRecords.java read from the file of `codec`; one JVM reads every file the writer wrote. */
async function javaRead(codec: DataFileCodec): Promise<JavaRead> {
  const path = await fileFor(codec);
  javaReads ??= (async () => {
    const written = await Promise.allSettled(CODECS.map(([name]) => fileFor(name)));
    const paths = written.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const result = await runKafkaTool(RECORDS_PROGRAM, paths, { kafkaToolsDir: etlReadersDir, runDir, timeoutMs: 110_000 });
    if (result.status !== 0) throw new Error(`ParquetAvroRecords failed: ${describeRun(result)}`);
    const reads = new Map<string, JavaRead>();
    let current: JavaRead | undefined;
    for (const line of result.stdout.split('\n').filter((text) => text !== '')) {
      if (line.startsWith('{')) {
        current = { head: JSON.parse(line) as JavaRead['head'], records: { embedded: [], strict: [], derived: [] } };
        reads.set(current.head.file, current);
      } else {
        const [way, base64 = ''] = line.split('\t') as [keyof JavaRead['records'], string];
        current?.records[way].push(Buffer.from(base64, 'base64'));
      }
    }
    return reads;
  })();
  const read = (await javaReads).get(path);
  if (read === undefined) throw new Error(`ParquetAvroRecords printed nothing for ${path}`);
  return read;
}
