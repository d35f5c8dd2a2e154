/**
 * The data files' public API over both formats: every supported codec round-trips the all-types
 * records through decodeDataFile, the bytes are a function of the inputs alone, and unsupported
 * formats, codecs, metadata and records are refused with precise errors.
 */
import { createHash } from 'node:crypto';
import avro from 'avsc';
import type { Schema } from 'avsc';
import { afterEach, describe, expect, it, vi } from 'vitest';

// A busy shared machine: generous, never a measure of speed.
vi.setConfig({ testTimeout: 30_000 });
import {
  DATA_FILE_EXTENSIONS,
  decodeDataFile,
  encodeDataFile,
  parseDataFileSchema,
  syncMarkerFor,
  validateCodec,
  type DataFileCodec,
  type DataFileFormat,
  type DataFileOptions,
} from '../../../src/etl/files/data-files.js';
import { ALL_TYPES_SCHEMA, allTypesRecords, allTypesSchema } from './data-files-fixture.js';

const SUPPORTED: readonly [DataFileFormat, DataFileCodec][] = [
  ['avro', 'null'],
  ['avro', 'deflate'],
  ['avro', 'snappy'],
  ['avro', 'zstd'],
  ['parquet', 'null'],
  ['parquet', 'snappy'],
  ['parquet', 'gzip'],
  ['parquet', 'zstd'],
];
const schema = allTypesSchema();
// 1,000 generated records fill three 64 KiB Avro blocks.
const records = allTypesRecords(1_000);
const options = (format: DataFileFormat, codec: DataFileCodec, extra: Partial<DataFileOptions> = {}): DataFileOptions => ({
  format,
  codec,
  schema,
  identity: 'page-views+3+100+1103',
  metadata: { 'tributary.offsets': '100-1103', 'tributary.partition': '3' },
  ...extra,
});

afterEach(() => {
  vi.useRealTimers();
});

describe('round trip', () => {
  it.each(SUPPORTED)('%s with codec %s gives back the same records, schema and metadata', async (format, codec) => {
    const bytes = await encodeDataFile(records, options(format, codec));
    const decoded = await decodeDataFile(bytes, format);
    expect(decoded.records).toHaveLength(records.length);
    expect(decoded.records).toEqual(records);
    expect(decoded.schemaJson).toEqual(schema.schema({ exportAttrs: true }));
    expect(decoded.metadata).toEqual({ 'tributary.offsets': '100-1103', 'tributary.partition': '3' });
  });

  it.each(SUPPORTED)('%s with codec %s writes and reads a file of no records', async (format, codec) => {
    const decoded = await decodeDataFile(await encodeDataFile([], options(format, codec)), format);
    expect(decoded.records).toEqual([]);
  });

  it('keeps logical types in the schema the file records', async () => {
    const decoded = await decodeDataFile(await encodeDataFile(records.slice(0, 3), options('avro', 'null')), 'avro');
    const fields = (decoded.schemaJson as { fields: { name: string; type: unknown }[] }).fields;
    expect(fields.find((field) => field.name === 'at')?.type).toEqual({ type: 'long', logicalType: 'timestamp-millis' });
    expect(fields.find((field) => field.name === 'day')?.type).toEqual({ type: 'int', logicalType: 'date' });
  });

  it('writes records valid for a Type parsed the registry way (no logical types kept)', async () => {
    const plain = avro.Type.forSchema(ALL_TYPES_SCHEMA as unknown as Schema, { registry: {} });
    // Ordinary longs only: avsc's own long type corrupts those below -2^52 (see the next test).
    const sample = records.slice(3, 53);
    for (const format of ['avro', 'parquet'] as const) {
      const decoded = await decodeDataFile(await encodeDataFile(sample, options(format, 'snappy', { schema: plain })), format);
      expect(decoded.records).toEqual(sample);
    }
  });

  it('parquet keeps -0.0, NaN and infinities of doubles and floats', async () => {
    const floatSchema = parseDataFileSchema({ type: 'record', name: 'D', fields: [{ name: 'x', type: 'double' }, { name: 'y', type: 'float' }] });
    const written = [{ x: -0, y: -0 }, { x: Number.NaN, y: Number.NaN }, { x: -Infinity, y: Infinity }, { x: -0.5, y: 0.25 }];
    const decoded = await decodeDataFile(await encodeDataFile(written, options('parquet', 'null', { schema: floatSchema })), 'parquet');
    expect(decoded.records).toEqual(written);
    expect(Object.is((decoded.records[0] as { x: number }).x, -0)).toBe(true);
    expect(Object.is((decoded.records[0] as { y: number }).y, -0)).toBe(true);
  });

  it('writes longs below -2^52 exactly, which avsc 5.7.9 alone does not', async () => {
    const longs = [-(2 ** 52) - 1, -9_007_199_254_740_990, 2 ** 52 + 1, 9_007_199_254_740_990];
    const longSchema = parseDataFileSchema({ type: 'record', name: 'L', fields: [{ name: 'n', type: 'long' }] });
    for (const format of ['avro', 'parquet'] as const) {
      const decoded = await decodeDataFile(await encodeDataFile(longs.map((n) => ({ n })), options(format, 'null', { schema: longSchema })), format);
      expect(decoded.records.map((record) => (record as { n: number }).n)).toEqual(longs);
    }
    // The record's bytes are the zigzag varint of -(2^52) - 1, i.e. of 2^53 + 1: 81 80 80 80 80 80 80 10.
    expect(longSchema.toBuffer({ n: -(2 ** 52) - 1 }).toString('hex')).toBe('8180808080808010');
    // So are the longs under a logical type (avsc builds those past the registry).
    const microsSchema = parseDataFileSchema({ type: 'record', name: 'M', fields: [{ name: 'n', type: { type: 'long', logicalType: 'timestamp-micros' } }] });
    expect(microsSchema.toBuffer({ n: -(2 ** 52) - 1 }).toString('hex')).toBe('8180808080808010');
    for (const format of ['avro', 'parquet'] as const) {
      const decoded = await decodeDataFile(await encodeDataFile(longs.map((n) => ({ n })), options(format, 'null', { schema: microsSchema })), format);
      expect(decoded.records.map((record) => (record as { n: number }).n)).toEqual(longs);
    }
  });
});

describe('determinism', () => {
  it.each(SUPPORTED)('%s with codec %s: the same inputs give the same bytes, whatever the clock says', async (format, codec) => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2001-02-03T04:05:06Z'));
    const first = await encodeDataFile(records, options(format, codec));
    vi.setSystemTime(new Date('2039-12-31T23:59:59Z'));
    const second = await encodeDataFile(records, options(format, codec));
    expect(second.equals(first)).toBe(true);
  });

  it('a different identity changes the Avro sync marker and nothing else', async () => {
    const first = await encodeDataFile(records, options('avro', 'deflate', { identity: 'page-views+3+100+1103' }));
    const second = await encodeDataFile(records, options('avro', 'deflate', { identity: 'page-views+4+100+1103' }));
    const firstMarker = syncMarkerFor('page-views+3+100+1103');
    const secondMarker = syncMarkerFor('page-views+4+100+1103');
    expect(firstMarker.equals(secondMarker)).toBe(false);
    expect(second.equals(first)).toBe(false);
    expect(second.length).toBe(first.length);
    // Put the second file's marker wherever the first has its own: the files are then identical.
    const rewritten = Buffer.from(first);
    let occurrences = 0;
    for (let at = rewritten.indexOf(firstMarker); at !== -1; at = rewritten.indexOf(firstMarker, at + 1)) {
      secondMarker.copy(rewritten, at);
      occurrences += 1;
    }
    expect(occurrences).toBeGreaterThan(2); // the header and at least two blocks
    expect(rewritten.equals(second)).toBe(true);
  });

  it('the sync marker is the first 16 bytes of SHA-256 of the identity', () => {
    expect(syncMarkerFor('t+0+0+1')).toEqual(createHash('sha256').update('t+0+0+1').digest().subarray(0, 16));
  });
});

describe('refusals', () => {
  it('DATA_FILE_EXTENSIONS names the file extension of each format', () => {
    expect(DATA_FILE_EXTENSIONS).toEqual({ avro: 'avro', parquet: 'parquet' });
  });

  it.each(SUPPORTED)('validateCodec accepts %s with %s', (format, codec) => {
    expect(() => validateCodec(format, codec)).not.toThrow();
  });

  it.each([
    ['avro', 'gzip', /avro data files cannot be written with codec "gzip"; choose one of null, deflate, snappy, zstd/],
    ['parquet', 'deflate', /parquet data files cannot be written with codec "deflate"; choose one of null, snappy, gzip, zstd/],
    ['avro', 'lz4', /avro data files cannot be written with codec "lz4"/],
    ['orc', 'null', /unknown data file format "orc"; choose one of avro, parquet/],
  ])('validateCodec refuses %s with %s as CONFIG_INVALID', (format, codec, message) => {
    expect(() => validateCodec(format as DataFileFormat, codec as DataFileCodec)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(message) as unknown }) as unknown,
    );
  });

  it('encodeDataFile refuses an unsupported codec before writing anything', async () => {
    await expect(encodeDataFile(records, options('parquet', 'deflate'))).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('decodeDataFile refuses an unknown format', async () => {
    await expect(decodeDataFile(Buffer.from('Obj\x01'), 'orc' as DataFileFormat)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it.each(['avro.codec', 'avro.schema', 'parquet.avro.schema', 'avro.anything'])('refuses the reserved metadata key %s', async (key) => {
    for (const format of ['avro', 'parquet'] as const) {
      await expect(encodeDataFile(records.slice(0, 1), options(format, 'null', { metadata: { [key]: 'x' } }))).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining(`"${key}" is reserved`) as unknown,
      });
    }
  });

  it('refuses an empty identity', async () => {
    await expect(encodeDataFile(records.slice(0, 1), options('avro', 'null', { identity: '' }))).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('identity') as unknown });
  });

  it.each(['avro', 'parquet'] as const)('%s: refuses a record that is not valid for the schema, naming the record and the field', async (format) => {
    const bad = [...records.slice(0, 5), { ...records[5], header: { source: 42, hops: [], trace: null } }];
    await expect(encodeDataFile(bad, options(format, 'null'))).rejects.toMatchObject({
      code: 'DATA_FILE_RECORD_INVALID',
      message: 'record 5 is not valid for the data file\'s schema: field header.source holds 42, not "string"',
      details: { record: 5 },
    });
  });
});
