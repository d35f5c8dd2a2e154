/**
 * The loader's data files read by Apache's Java readers: avro-tools 1.12.2 (`tojson`, `getmeta`)
 * for Avro container files, and parquet-avro 1.18.1's AvroParquetReader (through the small
 * etl-java-readers/ParquetAvroDump.java, as parquet-cli is not served here) for Parquet. Every
 * codec we write, over the all-types schema (nested records, unions, arrays, maps, enums, fixed,
 * bytes, logical timestamp/date/time), and the Java side must see exactly the records we wrote.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { encodeDataFile, type DataFileCodec, type DataFileFormat } from '../../src/etl/files/data-files.js';
import { CREATED_BY } from '../../src/etl/files/parquet-file.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { allTypesRecords, allTypesSchema } from '../unit/etl/data-files-fixture.js';

const { runDir, etlReadersDir } = inject('compat');
const PARQUET_DUMP = join(dirname(fileURLToPath(import.meta.url)), 'etl-java-readers', 'ParquetAvroDump.java');
const folder = join(runDir, 'etl-java-readers');
const schema = allTypesSchema();
// 9,000 generated records: many Avro blocks, and several Parquet pages per column.
const records = allTypesRecords(9_000);
/** The records in Avro's JSON encoding, which avro-tools tojson prints (unions as {"branch": value}). */
const expectedJson = records.map((record) => JSON.parse(schema.toString(record)) as unknown);
const metadata = { 'tributary.offsets': '500-9503', 'tributary.topic': 'page-views' };

async function java(mainClassOrSource: string, args: readonly string[]): Promise<JavaToolResult> {
  // The etl-readers folder holds avro-tools (Avro and a Hadoop client, shaded) and parquet-avro.
  const result = await runKafkaTool(mainClassOrSource, args, { kafkaToolsDir: etlReadersDir, runDir, timeoutMs: 110_000 });
  expect(result.status, describeRun(result)).toBe(0);
  return result;
}

const jsonLines = (stdout: string): unknown[] =>
  stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as unknown);

async function writeFile(format: DataFileFormat, codec: DataFileCodec): Promise<string> {
  const path = join(folder, `page-views+0+500+9503.${codec}.${format}`);
  writeFileSync(path, await encodeDataFile(records, { format, codec, schema, identity: 'page-views+0+500+9503', metadata }));
  return path;
}

beforeAll(() => {
  mkdirSync(folder, { recursive: true });
});

describe('avro-tools 1.12.2 reads our Avro container files', () => {
  it.each([
    ['null', 'null'],
    ['deflate', 'deflate'],
    ['snappy', 'snappy'],
    ['zstd', 'zstandard'],
  ] as const)('codec %s: tojson prints exactly our records; getmeta shows codec %s, the schema and our metadata', async (codec, fileCodec) => {
    const path = await writeFile('avro', codec);
    const json = await java('org.apache.avro.tool.Main', ['tojson', path]);
    const read = jsonLines(json.stdout);
    expect(read).toHaveLength(records.length);
    expect(read).toEqual(expectedJson);

    const meta = await java('org.apache.avro.tool.Main', ['getmeta', path]);
    const entries = Object.fromEntries(
      meta.stdout
        .split('\n')
        .filter((line) => line.includes('\t'))
        .map((line) => [line.slice(0, line.indexOf('\t')), line.slice(line.indexOf('\t') + 1)]),
    );
    expect(entries['avro.codec']).toBe(fileCodec);
    expect(JSON.parse(entries['avro.schema'] ?? '')).toEqual(schema.schema({ exportAttrs: true }));
    expect(entries['tributary.offsets']).toBe('500-9503');
    expect(entries['tributary.topic']).toBe('page-views');
  });
});

describe('parquet-avro 1.18.1 reads our Parquet files', () => {
  it.each([
    ['null', 'UNCOMPRESSED'],
    ['snappy', 'SNAPPY'],
    ['gzip', 'GZIP'],
  ] as const)('codec %s: AvroParquetReader gives exactly our records; the footer shows %s, the layout and our metadata', async (codec, parquetCodec) => {
    const path = await writeFile('parquet', codec);
    const [footerLine, ...recordLines] = jsonLines((await java(PARQUET_DUMP, [path])).stdout);
    expect(recordLines).toHaveLength(records.length);
    expect(recordLines).toEqual(expectedJson);

    const meta = footerLine as {
      createdBy: string;
      keyValue: Record<string, string>;
      schema: string;
      rows: number;
      columns: { path: string; codec: string }[];
    };
    expect(meta.rows).toBe(records.length);
    expect(meta.createdBy).toBe(CREATED_BY);
    expect(meta.keyValue).toEqual({ ...metadata, 'parquet.avro.schema': JSON.stringify(schema.schema({ exportAttrs: true })) });
    expect(new Set(meta.columns.map((column) => column.codec))).toEqual(new Set([parquetCodec]));
    // Each element as parquet-mr prints it, up to its field id (` = 12;`).
    for (const line of [
      'required int64 at (TIMESTAMP(MILLIS,true))',
      'required int32 day (DATE)',
      'required int32 clock (TIME(MILLIS,false))',
      'required fixed_len_byte_array(4) digest',
      'required binary kind (STRING)',
      'optional binary note (STRING)',
      'required group tags (LIST)',
      'required group scores (MAP)',
      'optional group maybeNumbers (LIST)',
    ]) {
      expect(meta.schema).toContain(line);
    }
  });
});
