/**
 * The Iceberg schema of a load's rows (src/etl/iceberg/table-schema.ts, table-row.ts) and the
 * column metrics of its files (file-metrics.ts): ids are the ones the Parquet files carry, every
 * Avro type maps to its Iceberg type, the loader's columns are appended, and bounds are Iceberg's
 * single-value encodings, left out wherever they could be wrong.
 */
import { describe, expect, it } from 'vitest';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { ParquetStreamWriter } from '../../../src/etl/files/parquet-file.js';
import { planParquetRecord } from '../../../src/etl/files/parquet-schema.js';
import { icebergMetrics } from '../../../src/etl/iceberg/file-metrics.js';
import { hourSpecOf, rowSchemaOf } from '../../../src/etl/iceberg/load-tables.js';
import { tableRow, tableRowType } from '../../../src/etl/iceberg/table-row.js';
import { highestFieldId, nameMappingOf, type IcebergField, type IcebergType } from '../../../src/etl/iceberg/table-schema.js';
import { allTypesSchema } from './data-files-fixture.js';

/** Every id of a type, depth first. */
function idsOf(type: IcebergType): number[] {
  if (typeof type === 'string') return [];
  if (type.type === 'struct') return type.fields.flatMap((field) => [field.id, ...idsOf(field.type)]);
  if (type.type === 'list') return [type['element-id'], ...idsOf(type.element)];
  return [type['key-id'], ...idsOf(type.key), type['value-id'], ...idsOf(type.value)];
}

const byName = (fields: readonly IcebergField[], name: string): IcebergField => {
  const found = fields.find((field) => field.name === name);
  if (found === undefined) throw new Error(`no field ${name}`);
  return found;
};

describe('the Iceberg schema of a load', () => {
  const recordType = allTypesSchema();
  const schema = rowSchemaOf(recordType);

  it('has every Parquet field id exactly once, the same ids the data files carry', () => {
    const ids = idsOf(schema);
    expect(new Set(ids).size).toBe(ids.length);
    const parquetIds = planParquetRecord(tableRowType(recordType))
      .schema.slice(1)
      .filter((element) => !(element.repetition_type === 'REPEATED' && element.num_children !== undefined)) // list/key_value groups have no Iceberg field
      .map((element) => element.field_id);
    expect([...ids].sort((a, b) => a - b)).toEqual([...(parquetIds as number[])].sort((a, b) => a - b));
    expect(highestFieldId(schema)).toBe(Math.max(...ids));
  });

  it('maps each Avro type to its Iceberg type and appends the loader columns', () => {
    const { fields } = schema;
    expect(fields.map((field) => field.name)).toEqual([...(recordType.schema() as { fields: { name: string }[] }).fields.map((field) => field.name), '_event_time', '_kafka']);
    const types = Object.fromEntries(fields.map((field) => [field.name, field.type]));
    expect(types).toMatchObject({
      id: 'long',
      flag: 'boolean',
      count: 'int',
      ratio: 'float',
      score: 'double',
      name: 'string',
      payload: 'binary',
      digest: 'fixed[4]',
      kind: 'string',
      at: 'timestamptz',
      day: 'date',
      clock: 'time',
      note: 'string',
      _event_time: 'timestamptz',
    });
    expect(byName(fields, 'note').required).toBe(false);
    expect(byName(fields, 'id').required).toBe(true);
    expect(types['tags']).toMatchObject({ type: 'list', 'element-required': true, element: 'string' });
    expect(types['maybeNumbers']).toMatchObject({ type: 'list', 'element-required': false, element: 'int' });
    expect(types['scores']).toMatchObject({ type: 'map', key: 'string', value: 'long', 'value-required': true });
    expect(types['itemsByShelf']).toMatchObject({ type: 'map', key: 'string', value: { type: 'struct' } });
    expect(types['_kafka']).toEqual({
      type: 'struct',
      fields: [
        expect.objectContaining({ name: 'topic', type: 'string', required: true }),
        expect.objectContaining({ name: 'partition', type: 'int', required: true }),
        expect.objectContaining({ name: 'offset', type: 'long', required: true }),
        expect.objectContaining({ name: 'timestamp', type: 'timestamptz', required: true }),
      ],
    });
  });

  it('partitions by hour(_event_time) with the partition field id 1000', () => {
    const eventTime = byName(schema.fields, '_event_time');
    expect(hourSpecOf(schema)).toEqual({ 'spec-id': 0, fields: [{ name: '_event_time_hour', transform: 'hour', 'source-id': eventTime.id, 'field-id': 1000 }] });
  });

  it('gives a name mapping that names lists by element and maps by key and value', () => {
    const mapping = nameMappingOf(schema);
    const tags = mapping.find((entry) => entry.names[0] === 'tags');
    expect(tags?.fields?.map((entry) => entry.names[0])).toEqual(['element']);
    const scores = mapping.find((entry) => entry.names[0] === 'scores');
    expect(scores?.fields?.map((entry) => entry.names[0])).toEqual(['key', 'value']);
    expect(mapping.map((entry) => entry['field-id'])).toEqual(schema.fields.map((field) => field.id));
  });

  it('refuses records that already have a loader column, naming it', () => {
    const clash = parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: '_kafka', type: 'string' }] });
    expect(() => tableRowType(clash)).toThrow(/field _kafka, the name of a column the loader adds/);
  });

  it('refuses nanosecond timestamps, which v2 tables cannot hold', () => {
    const nanos = parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'at', type: { type: 'long', logicalType: 'timestamp-nanos' } }] });
    expect(() => rowSchemaOf(nanos)).toThrow(/nanosecond timestamp/);
  });
});

describe('column metrics of a data file', () => {
  const recordType = parseDataFileSchema({
    type: 'record',
    name: 'R',
    fields: [
      { name: 'n', type: 'int' },
      { name: 'l', type: 'long' },
      { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
      { name: 's', type: ['null', 'string'], default: null },
      { name: 'd', type: 'double' },
      { name: 'tags', type: { type: 'array', items: 'int' } },
      { name: 'high', type: 'string' },
      { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
    ],
  });
  const rowType = tableRowType(recordType);

  async function metricsOf(records: Record<string, unknown>[], rowGroupBytes?: number): Promise<ReturnType<typeof icebergMetrics>> {
    const writer = new ParquetStreamWriter(rowType, { compression: 'UNCOMPRESSED', rowGroupBytes }, () => undefined);
    for (const [index, record] of records.entries()) {
      await writer.append(tableRow(record, { topic: 't', partition: 0, offset: 100 + index, timestamp: 1_000, eventTimeMs: 7_200_000 + index }));
    }
    await writer.finish({});
    return icebergMetrics(writer.statistics());
  }

  const schema = rowSchemaOf(recordType);
  const id = (name: string): string => String(byName(schema.fields, name).id);
  const le32 = (value: number): string => {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32LE(value);
    return bytes.toString('hex');
  };
  const le64 = (value: bigint): string => {
    const bytes = Buffer.alloc(8);
    bytes.writeBigInt64LE(value);
    return bytes.toString('hex');
  };
  const price = (cents: number): Buffer => {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32BE(cents);
    return bytes;
  };

  it('counts values, nulls and NaNs and bounds them in Iceberg single-value encoding', async () => {
    const metrics = await metricsOf([
      { n: 5, l: -9, at: 1_000, s: 'b', d: Number.NaN, tags: [1, 2], high: 'a', price: price(100) },
      { n: -3, l: 12, at: 4_000, s: null, d: 2.5, tags: [], high: 'b', price: price(5) },
      { n: 8, l: 3, at: 2_000, s: 'a', d: -1, tags: [9], high: 'c', price: price(7) },
    ]);
    expect(metrics.valueCounts[id('n')]).toBe(3);
    expect(metrics.nullValueCounts[id('s')]).toBe(1);
    expect(metrics.nanValueCounts[id('d')]).toBe(1);
    expect(metrics.lowerBounds[id('n')]).toBe(le32(-3));
    expect(metrics.upperBounds[id('n')]).toBe(le32(8));
    expect(metrics.lowerBounds[id('l')]).toBe(le64(-9n));
    expect(metrics.upperBounds[id('l')]).toBe(le64(12n));
    // timestamp-millis columns are bounded in microseconds, as Iceberg's timestamptz is.
    expect(metrics.lowerBounds[id('at')]).toBe(le64(1_000_000n));
    expect(metrics.upperBounds[id('at')]).toBe(le64(4_000_000n));
    expect(metrics.lowerBounds[id('_event_time')]).toBe(le64(7_200_000_000n));
    expect(metrics.lowerBounds[id('s')]).toBe(Buffer.from('a').toString('hex'));
    expect(metrics.upperBounds[id('s')]).toBe(Buffer.from('b').toString('hex'));
    const double = (value: number): string => {
      const bytes = Buffer.alloc(8);
      bytes.writeDoubleLE(value);
      return bytes.toString('hex');
    };
    expect(metrics.lowerBounds[id('d')]).toBe(double(-1));
    expect(metrics.upperBounds[id('d')]).toBe(double(2.5));
    // Inside lists only sizes (as Java's writer); no bounds for decimals, counts still.
    const tags = byName(schema.fields, 'tags').type as { 'element-id': number };
    expect(metrics.valueCounts[String(tags['element-id'])]).toBeUndefined();
    expect(metrics.columnSizes[String(tags['element-id'])]).toBeGreaterThan(0);
    expect(metrics.lowerBounds[String(tags['element-id'])]).toBeUndefined();
    expect(metrics.lowerBounds[id('price')]).toBeUndefined();
    expect(metrics.splitOffsets).toEqual([4]);
  });

  it('truncates string bounds to 16 code points, the upper one incremented', async () => {
    const long = 'abcdefghijklmnopqrstuvwxyz';
    const metrics = await metricsOf([{ n: 1, l: 1, at: 1, s: long, d: 0, tags: [], high: 'x', price: price(1) }]);
    expect(Buffer.from(metrics.lowerBounds[id('s')] ?? '', 'hex').toString()).toBe('abcdefghijklmnop');
    expect(Buffer.from(metrics.upperBounds[id('s')] ?? '', 'hex').toString()).toBe('abcdefghijklmnoq');
  });

  it('keeps bounds of a column beyond the BMP alone (emoji), ordered by UTF-8 bytes', async () => {
    const metrics = await metricsOf([
      { n: 1, l: 1, at: 1, s: 'a', d: 0, tags: [], high: '\u{1f600}', price: price(1) },
      { n: 1, l: 1, at: 1, s: 'a', d: 0, tags: [], high: 'z', price: price(1) },
    ]);
    expect(Buffer.from(metrics.lowerBounds[id('high')] ?? '', 'hex').toString()).toBe('z');
    expect(Buffer.from(metrics.upperBounds[id('high')] ?? '', 'hex').toString()).toBe('\u{1f600}');
  });

  it('leaves out string bounds where UTF-16 and UTF-8 order part (U+E000 and up beside surrogate pairs)', async () => {
    // JavaScript orders U+FFFD above U+1F600 (by UTF-16 units); Iceberg orders by UTF-8 bytes, the other way.
    const metrics = await metricsOf([
      { n: 1, l: 1, at: 1, s: 'a', d: 0, tags: [], high: '\u{fffd}', price: price(1) },
      { n: 1, l: 1, at: 1, s: 'a', d: 0, tags: [], high: '\u{1f600}', price: price(1) },
    ]);
    expect(metrics.lowerBounds[id('high')]).toBeUndefined();
    expect(metrics.upperBounds[id('high')]).toBeUndefined();
    expect(metrics.lowerBounds[id('s')]).toBe(Buffer.from('a').toString('hex'));
  });

  it('bounds a file by UTF-8 order when its row groups each hold one kind (one group per row here)', async () => {
    const metrics = await metricsOf(
      [
        { n: 1, l: 1, at: 1, s: 'a', d: 0, tags: [], high: '\u{1f600}', price: price(1) },
        { n: 1, l: 1, at: 1, s: 'a', d: 0, tags: [], high: '\u{fffd}', price: price(1) },
      ],
      1,
    );
    expect(metrics.splitOffsets).toHaveLength(2);
    expect(Buffer.from(metrics.lowerBounds[id('high')] ?? '', 'hex').toString()).toBe('\u{fffd}');
    expect(Buffer.from(metrics.upperBounds[id('high')] ?? '', 'hex').toString()).toBe('\u{1f600}');
  });
});
