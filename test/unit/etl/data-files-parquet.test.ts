/**
 * The Parquet side: the footer parquetjs-lite writes (schema layout, codecs, key-value metadata, no
 * statistics, nothing from the clock), the Avro schemas that have no Parquet form and the values
 * parquetjs-lite cannot write — each refused with the field named — and damaged files.
 */
import parquet from 'parquetjs-lite';
import { describe, expect, it, vi } from 'vitest';
import { decodeDataFile, encodeDataFile, parseDataFileSchema, type DataFileCodec } from '../../../src/etl/files/data-files.js';
import { allTypesRecords, allTypesSchema } from './data-files-fixture.js';

// Encoding a few hundred records can take a second or more on a busy shared machine.
vi.setConfig({ testTimeout: 30_000 });

const schema = allTypesSchema();
const records = allTypesRecords(200);

interface FooterElement {
  name: string;
  type?: number | null;
  converted_type?: number | null;
  repetition_type?: number | null;
  num_children?: number | null;
  type_length?: number | null;
}
interface Footer {
  created_by: string;
  key_value_metadata: { key: string; value: string }[];
  schema: FooterElement[];
  row_groups: { columns: { meta_data: { codec: number; statistics?: unknown } }[] }[];
}

async function footerOf(bytes: Buffer): Promise<Footer> {
  const envelope = await parquet.ParquetEnvelopeReader.openBuffer(bytes);
  return (await envelope.readFooter()) as unknown as Footer;
}

const encode = (codec: DataFileCodec, metadata: Record<string, string> = {}): Promise<Buffer> =>
  encodeDataFile(records, { format: 'parquet', codec, schema, identity: 'views+0+0+203', metadata });

// Thrift enum values of parquet.thrift.
const CONVERTED = { UTF8: 0, MAP: 1, LIST: 3, DATE: 6, TIME_MILLIS: 7, TIMESTAMP_MILLIS: 9 };
const REPETITION = { REQUIRED: 0, OPTIONAL: 1, REPEATED: 2 };
const CODEC = { UNCOMPRESSED: 0, SNAPPY: 1, GZIP: 2 };

describe('Parquet footer', () => {
  it('has PAR1 at both ends, created_by a constant, parquet.avro.schema then the caller\'s keys sorted', async () => {
    const bytes = await encode('snappy', { 'z.last': '1', 'tributary.offsets': '0-203' });
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(bytes.subarray(-4).toString()).toBe('PAR1');
    const footer = await footerOf(bytes);
    expect(footer.created_by).toBe('parquet.js');
    expect(footer.key_value_metadata.map(({ key }) => key)).toEqual(['parquet.avro.schema', 'tributary.offsets', 'z.last']);
    expect(JSON.parse(footer.key_value_metadata[0]?.value ?? '')).toEqual(schema.schema({ exportAttrs: true }));
  });

  it.each([
    ['null', CODEC.UNCOMPRESSED],
    ['snappy', CODEC.SNAPPY],
    ['gzip', CODEC.GZIP],
  ] as const)('codec %s: every column chunk says so, and none carries statistics', async (codec, expected) => {
    const footer = await footerOf(await encode(codec));
    const columns = footer.row_groups.flatMap((group) => group.columns);
    expect(columns.length).toBeGreaterThan(20);
    expect(new Set(columns.map((column) => column.meta_data.codec))).toEqual(new Set([expected]));
    expect(columns.filter((column) => column.meta_data.statistics !== null && column.meta_data.statistics !== undefined)).toEqual([]);
  });

  it('lays out lists, maps, optionals, enums, fixed and logical types as parquet-avro does', async () => {
    const elements = (await footerOf(await encode('null'))).schema;
    const element = (name: string, after = 0): FooterElement | undefined => elements.slice(after).find((candidate) => candidate.name === name);
    expect(element('at')).toMatchObject({ converted_type: CONVERTED.TIMESTAMP_MILLIS, repetition_type: REPETITION.REQUIRED });
    expect(element('day')).toMatchObject({ converted_type: CONVERTED.DATE });
    expect(element('clock')).toMatchObject({ converted_type: CONVERTED.TIME_MILLIS });
    expect(element('kind')).toMatchObject({ converted_type: CONVERTED.UTF8 });
    expect(element('digest')).toMatchObject({ type_length: 4 });
    expect(element('note')).toMatchObject({ converted_type: CONVERTED.UTF8, repetition_type: REPETITION.OPTIONAL });
    expect(element('amount')).toMatchObject({ repetition_type: REPETITION.OPTIONAL });
    const tags = elements.findIndex((candidate) => candidate.name === 'tags');
    expect(elements.slice(tags, tags + 3)).toMatchObject([
      { name: 'tags', converted_type: CONVERTED.LIST, repetition_type: REPETITION.REQUIRED, num_children: 1 },
      { name: 'list', repetition_type: REPETITION.REPEATED, num_children: 1 },
      { name: 'element', converted_type: CONVERTED.UTF8, repetition_type: REPETITION.REQUIRED },
    ]);
    const scores = elements.findIndex((candidate) => candidate.name === 'scores');
    expect(elements.slice(scores, scores + 4)).toMatchObject([
      { name: 'scores', converted_type: CONVERTED.MAP, num_children: 1 },
      { name: 'key_value', repetition_type: REPETITION.REPEATED, num_children: 2 },
      { name: 'key', converted_type: CONVERTED.UTF8, repetition_type: REPETITION.REQUIRED },
      { name: 'value', repetition_type: REPETITION.REQUIRED },
    ]);
    const maybeNumbers = elements.findIndex((candidate) => candidate.name === 'maybeNumbers');
    expect(elements.slice(maybeNumbers, maybeNumbers + 3)).toMatchObject([
      { name: 'maybeNumbers', converted_type: CONVERTED.LIST, repetition_type: REPETITION.OPTIONAL },
      { name: 'list', repetition_type: REPETITION.REPEATED },
      { name: 'element', repetition_type: REPETITION.OPTIONAL },
    ]);
  });
});

const recordOf = (fields: unknown[]) => parseDataFileSchema({ type: 'record', name: 'tributary.test.R', fields });

describe('Avro schemas without a Parquet form are DATA_FILE_SCHEMA_UNSUPPORTED, naming the field', () => {
  it.each([
    ['a union of two non-null types', recordOf([{ name: 'inner', type: { type: 'record', name: 'Inner', fields: [{ name: 'either', type: ['int', 'string'] }] } }]), 'inner.either', /is the union \["int","string"\]; Parquet holds only \["null", T\] unions/],
    ['a union of null and two types', recordOf([{ name: 'three', type: ['null', 'int', 'string'] }]), 'three', /is the union/],
    ['a union inside an array', recordOf([{ name: 'list', type: { type: 'array', items: ['null', 'int', 'string'] } }]), 'list[]', /is the union/],
    ['null alone', recordOf([{ name: 'nothing', type: 'null' }]), 'nothing', /is null alone/],
    ['a recursive record', recordOf([{ name: 'next', type: ['null', 'tributary.test.R'] }]), 'next', /refers back to its enclosing record tributary.test.R/],
    ['an empty record', recordOf([{ name: 'empty', type: { type: 'record', name: 'Empty', fields: [] } }]), 'empty', /without fields; Parquet has no empty groups/],
    ['timestamp-micros', recordOf([{ name: 'micros', type: { type: 'long', logicalType: 'timestamp-micros' } }]), 'micros', /logical type timestamp-micros, which parquetjs-lite cannot annotate/],
    ['decimal', recordOf([{ name: 'money', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } }]), 'money', /logical type decimal/],
    ['a top-level non-record', parseDataFileSchema('"string"'), '(top level)', /a Parquet file holds records/],
  ])('%s', async (_what, type, field, message) => {
    await expect(encodeDataFile([], { format: 'parquet', codec: 'null', schema: type, identity: 'x' })).rejects.toMatchObject({
      code: 'DATA_FILE_SCHEMA_UNSUPPORTED',
      message: expect.stringMatching(message) as unknown,
      details: { field },
    });
  });

  it('the same schemas are fine in Avro', async () => {
    const either = recordOf([{ name: 'either', type: ['int', 'string'] }, { name: 'micros', type: { type: 'long', logicalType: 'timestamp-micros' } }]);
    const written = [{ either: 'text', micros: 5 }, { either: 3, micros: -1 }];
    const decoded = await decodeDataFile(await encodeDataFile(written, { format: 'avro', codec: 'deflate', schema: either, identity: 'x' }), 'avro');
    expect(decoded.records).toEqual(written);
  });
});

describe('values parquetjs-lite cannot write are DATA_FILE_RECORD_INVALID, naming record and field', () => {
  it.each([
    ['NaN in a double', recordOf([{ name: 'x', type: 'double' }]), { x: Number.NaN }, 'x', 'NaN, which parquetjs-lite cannot write'],
    ['NaN in an optional float in an array', recordOf([{ name: 'xs', type: { type: 'array', items: ['null', 'float'] } }]), { xs: [1, null, Number.NaN] }, 'xs[]', 'NaN'],
    ['a timestamp before 1970', recordOf([{ name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } }]), { at: -1 }, 'at', 'timestamp-millis -1 is before 1970'],
    ['a date before 1970', recordOf([{ name: 'day', type: { type: 'int', logicalType: 'date' } }]), { day: -3 }, 'day', 'date -3 is before 1970'],
  ])('%s', async (_what, type, bad, field, message) => {
    const good = type.random();
    await expect(encodeDataFile([good, bad], { format: 'parquet', codec: 'null', schema: type, identity: 'x' })).rejects.toMatchObject({
      code: 'DATA_FILE_RECORD_INVALID',
      message: expect.stringContaining(`record 1 cannot be written: Parquet: field ${field} holds ${message}`) as unknown,
      details: { record: 1, field },
    });
  });
});

describe('damaged Parquet files are DATA_FILE_CORRUPT', () => {
  it('bytes that are not Parquet', async () => {
    await expect(decodeDataFile(Buffer.from('Obj\x01 certainly not parquet'), 'parquet')).rejects.toMatchObject({
      code: 'DATA_FILE_CORRUPT',
      message: expect.stringContaining('Parquet file cannot be read: not valid parquet file') as unknown,
    });
  });

  it('a file cut short', async () => {
    const bytes = await encode('snappy');
    await expect(decodeDataFile(bytes.subarray(0, bytes.length - 10), 'parquet')).rejects.toMatchObject({ code: 'DATA_FILE_CORRUPT' });
  });

  it('a Parquet file without an Avro schema', async () => {
    const plain = new parquet.ParquetSchema({ n: { type: 'INT32' } });
    const chunks: Buffer[] = [];
    const writer = new parquet.ParquetWriter(plain, new parquet.ParquetEnvelopeWriter(plain, (chunk) => Promise.resolve(void chunks.push(chunk)), () => Promise.resolve(), 0, {}), {});
    await writer.appendRow({ n: 1 });
    await writer.close();
    await expect(decodeDataFile(Buffer.concat(chunks), 'parquet')).rejects.toMatchObject({
      code: 'DATA_FILE_CORRUPT',
      message: 'Parquet file has no parquet.avro.schema in its metadata, so the Avro records it holds are unknown',
    });
  });
});
