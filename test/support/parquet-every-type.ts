/**
 * One Avro schema holding every type the registry accepts that a Parquet file can hold (all
 * primitives, enum, fixed, nested records, arrays and maps of primitives, of records and of
 * optionals, ["null", T] and [T, "null"] at every level, and the logical types decimal on bytes and
 * on fixed, uuid, date, time-millis/micros, timestamp-millis/micros, local-timestamp-millis/micros),
 * and records that reach each type's edges: longs at ±(2^53 − 1) (logical longs as far as avsc
 * goes), NaN, ±Infinity and −0 in float and double, empty and non-ASCII strings, empty and 10 KB
 * bytes, decimals at their precision's limits, dates and timestamps at 0001-01-01 and 9999-12-31,
 * an uppercase uuid. For the Parquet readers' compat tests (etl-parquet-readers, -quality).
 *
 * Left out, on purpose: timestamp-nanos and local-timestamp-nanos (today's instants in nanoseconds
 * pass 2^53, which the loader's longs refuse), duration (no Parquet logical type, only the
 * deprecated INTERVAL converted type), unions of two non-null types (no Parquet form), and decimals
 * of precision above 38 (DuckDB reads them as DOUBLE, which cannot be exact).
 */
import type { Type } from 'avsc';
import { parseDataFileSchema } from '../../src/etl/files/data-files.js';
import { decimalBytes } from './avro-parquet-shape.js';

const decimal = (precision: number, scale: number) => ({ type: 'bytes', logicalType: 'decimal', precision, scale }) as const;
const item = {
  type: 'record',
  name: 'Item',
  fields: [
    { name: 'sku', type: 'string' },
    { name: 'quantity', type: 'int' },
    { name: 'price', type: ['null', 'double'] },
  ],
} as const;

export const EVERY_TYPE_SCHEMA = {
  type: 'record',
  name: 'EveryType',
  namespace: 'tributary.test.parquet',
  fields: [
    { name: 'flag', type: 'boolean' },
    { name: 'small', type: 'int' },
    { name: 'big', type: 'long' },
    { name: 'ratio', type: 'float' },
    { name: 'score', type: 'double' },
    { name: 'name', type: 'string' },
    { name: 'payload', type: 'bytes' },
    { name: 'digest', type: { type: 'fixed', name: 'Digest', size: 5 } },
    { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['CLICK', 'VIEW', 'BUY'] } },
    { name: 'amount', type: decimal(9, 2) },
    { name: 'wideAmount', type: decimal(38, 10) },
    { name: 'price', type: { type: 'fixed', name: 'Price', size: 8, logicalType: 'decimal', precision: 18, scale: 4 } },
    { name: 'balance', type: { type: 'fixed', name: 'Balance', size: 13, logicalType: 'decimal', precision: 30, scale: 0 } },
    { name: 'eventId', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'clock', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'clockMicros', type: { type: 'long', logicalType: 'time-micros' } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'atMicros', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'localAt', type: { type: 'long', logicalType: 'local-timestamp-millis' } },
    { name: 'localAtMicros', type: { type: 'long', logicalType: 'local-timestamp-micros' } },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'maybeRatio', type: ['float', 'null'] },
    { name: 'maybeAt', type: ['null', { type: 'long', logicalType: 'timestamp-millis' }] },
    { name: 'maybeAmount', type: [decimal(12, 3), 'null'] },
    { name: 'maybeId', type: ['null', { type: 'string', logicalType: 'uuid' }] },
    {
      name: 'header',
      type: {
        type: 'record',
        name: 'Header',
        fields: [
          { name: 'source', type: 'string' },
          { name: 'hops', type: { type: 'array', items: 'string' } },
          {
            name: 'trace',
            type: [
              'null',
              {
                type: 'record',
                name: 'Trace',
                fields: [
                  { name: 'traceId', type: 'string' },
                  { name: 'sampled', type: ['boolean', 'null'] },
                  { name: 'spans', type: ['null', { type: 'array', items: ['null', 'long'] }] },
                ],
              },
            ],
          },
        ],
      },
    },
    { name: 'maybeHeader', type: ['null', 'Header'] },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'numbers', type: { type: 'array', items: ['null', 'int'] } },
    { name: 'items', type: { type: 'array', items: item } },
    { name: 'maybeItems', type: [{ type: 'array', items: ['null', 'Item'] }, 'null'] },
    { name: 'grid', type: { type: 'array', items: { type: 'array', items: 'long' } } },
    { name: 'eventTimes', type: { type: 'array', items: { type: 'long', logicalType: 'timestamp-micros' } } },
    { name: 'scores', type: { type: 'map', values: 'long' } },
    { name: 'attributes', type: { type: 'map', values: ['null', 'string'] } },
    { name: 'itemsByShelf', type: { type: 'map', values: 'Item' } },
    { name: 'maybeLists', type: ['null', { type: 'map', values: { type: 'array', items: 'string' } }] },
    { name: 'matrix', type: { type: 'map', values: { type: 'map', values: 'int' } } },
    { name: 'prices', type: { type: 'map', values: decimal(10, 3) } },
    { name: 'lastKind', type: ['null', 'Kind'] },
  ],
} as const;

export function everyTypeSchema(): Type {
  return parseDataFileSchema(EVERY_TYPE_SCHEMA);
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/**
 * A logical type's long is avsc's own LongType (schema-types.ts gives the exact long only to plain
 * `long`s): it refuses ±(2^53 − 1) and zigzags with doubles, which is exact down to −2^52 only.
 */
const LOGICAL_MAX = 2 ** 53 - 2;
const LOGICAL_MIN = -(2 ** 52);
const ten = (digits: number): bigint => 10n ** BigInt(digits);

/** Three records at the edges, then `generated` ordinary ones. */
export function everyTypeRecords(generated = 0): Record<string, unknown>[] {
  const records: Record<string, unknown>[] = [
    {
      flag: false, small: 0, big: 0, ratio: 0, score: 0, name: '', payload: Buffer.alloc(0), digest: Buffer.alloc(5), kind: 'CLICK',
      amount: decimalBytes(0n), wideAmount: decimalBytes(0n), price: decimalBytes(0n, 8), balance: decimalBytes(0n, 13),
      eventId: '00000000-0000-0000-0000-000000000000', day: 0, clock: 0, clockMicros: 0, at: 0, atMicros: 0, localAt: 0, localAtMicros: 0,
      note: null, maybeRatio: null, maybeAt: null, maybeAmount: null, maybeId: null,
      header: { source: '', hops: [], trace: null }, maybeHeader: null, tags: [], numbers: [], items: [], maybeItems: null, grid: [], eventTimes: [],
      scores: {}, attributes: {}, itemsByShelf: {}, maybeLists: null, matrix: {}, prices: {}, lastKind: null,
    },
    {
      flag: true, small: 2 ** 31 - 1, big: MAX_SAFE, ratio: NaN, score: NaN, name: 'grüße 🚀 \u0000 "quoted" 日本語', payload: Buffer.from([0x00, 0xff, 0x80, 0x7f]),
      digest: Buffer.from([0xff, 0xfe, 0x01, 0x00, 0x80]), kind: 'BUY',
      amount: decimalBytes(ten(9) - 1n), wideAmount: decimalBytes(ten(38) - 1n), price: decimalBytes(ten(18) - 1n, 8), balance: decimalBytes(ten(30) - 1n, 13),
      // Uppercase on purpose: a uuid is a string in Avro, and the string is what comes back.
      eventId: 'F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6', day: 2_932_896, clock: 86_399_999, clockMicros: 86_399_999_999,
      at: 253_402_300_799_999, atMicros: LOGICAL_MAX, localAt: 253_402_300_799_999, localAtMicros: LOGICAL_MAX,
      note: 'a note', maybeRatio: Infinity, maybeAt: 1_764_428_400_123, maybeAmount: decimalBytes(-(ten(12) - 1n)), maybeId: '123e4567-e89b-12d3-a456-426614174000',
      header: { source: 'web-01', hops: ['a', '', 'ç'], trace: { traceId: 't-1', sampled: true, spans: [1, null, -MAX_SAFE] } },
      maybeHeader: { source: 'mirror', hops: ['only'], trace: { traceId: '', sampled: null, spans: null } },
      tags: ['x', 'y', ''], numbers: [1, null, -2_147_483_648, null], items: [{ sku: 'sku-1', quantity: -2_147_483_648, price: null }, { sku: '', quantity: 3, price: 0.1 }],
      maybeItems: [null, { sku: 'm', quantity: 1, price: -0 }, null], grid: [[], [MAX_SAFE, -MAX_SAFE], [0]], eventTimes: [0, -1, LOGICAL_MAX],
      scores: { a: -MAX_SAFE, '': 7, 'clé': 0 }, attributes: { k: null, v: 'value', '': '' }, itemsByShelf: { top: { sku: 'sku-9', quantity: 1, price: 2.5 } },
      maybeLists: { empty: [], full: ['α', 'β'] }, matrix: { row: { col: 1, '': -1 }, none: {} }, prices: { max: decimalBytes(ten(10) - 1n), min: decimalBytes(-(ten(10) - 1n)) },
      lastKind: 'VIEW',
    },
    {
      flag: false, small: -(2 ** 31), big: -MAX_SAFE, ratio: -Infinity, score: -0, name: 'x'.repeat(5000), payload: Buffer.alloc(10_000, 0xab),
      digest: Buffer.from('abcde'), kind: 'VIEW',
      amount: decimalBytes(-(ten(9) - 1n)), wideAmount: decimalBytes(-(ten(38) - 1n)), price: decimalBytes(-(ten(18) - 1n), 8), balance: decimalBytes(-(ten(30) - 1n), 13),
      eventId: 'ffffffff-ffff-ffff-ffff-ffffffffffff', day: -719_162, clock: 1, clockMicros: 1,
      at: -62_135_596_800_000, atMicros: LOGICAL_MIN, localAt: -62_135_596_800_000, localAtMicros: LOGICAL_MIN,
      note: '', maybeRatio: -0, maybeAt: -1, maybeAmount: decimalBytes(1n), maybeId: null,
      header: { source: 's', hops: ['only'], trace: { traceId: '', sampled: false, spans: [] } }, maybeHeader: null,
      tags: [''], numbers: [null], items: [{ sku: 'a', quantity: 0, price: -0.125 }], maybeItems: [], grid: [[-1]], eventTimes: [LOGICAL_MIN],
      scores: { only: 1 }, attributes: { only: null }, itemsByShelf: {}, maybeLists: {}, matrix: { x: {} }, prices: { zero: decimalBytes(0n) }, lastKind: 'CLICK',
    },
  ];
  const kinds = ['CLICK', 'VIEW', 'BUY'];
  const base = 1_764_428_400_000;
  for (let i = 0; i < generated; i += 1) {
    const hex = i.toString(16).padStart(12, '0');
    records.push({
      flag: i % 2 === 0, small: i - 1000, big: (i % 2 === 0 ? 1 : -1) * i * 1_000_003, ratio: Math.fround(i / 7), score: i / 3, name: `user-${i % 50}-é`,
      payload: Buffer.from(`payload-${i}`), digest: Buffer.from([i & 0xff, (i >> 8) & 0xff, 0, 1, 2]), kind: kinds[i % 3],
      amount: decimalBytes(BigInt(i * 12_345 - 5_000_000)), wideAmount: decimalBytes(BigInt(i) * ten(25) + 7n), price: decimalBytes(BigInt(-i * 99_999), 8),
      balance: decimalBytes(BigInt(i) * ten(20) - 1n, 13), eventId: `0000${hex.slice(0, 4)}-0000-4000-8000-${hex}`, day: 20_000 + (i % 400),
      clock: (i * 1001) % 86_400_000, clockMicros: (i * 1_000_003) % 86_400_000_000, at: base + i * 1000, atMicros: (base + i * 1000) * 1000 + (i % 1000),
      localAt: base + i, localAtMicros: (base + i) * 1000 + 1, note: i % 5 === 0 ? null : `note ${i}`, maybeRatio: i % 7 === 0 ? null : Math.fround(i / 8),
      maybeAt: i % 3 === 0 ? null : base - i, maybeAmount: i % 4 === 0 ? null : decimalBytes(BigInt(i * 1001)), maybeId: i % 2 === 0 ? null : `abcdef01-2345-6789-abcd-${hex}`,
      header: { source: `host-${i % 4}`, hops: Array.from({ length: i % 3 }, (_, h) => `hop-${h}`), trace: i % 2 === 0 ? null : { traceId: `trace-${i}`, sampled: i % 3 === 0 ? null : i % 3 === 1, spans: i % 4 === 1 ? null : [i, null] } },
      maybeHeader: i % 3 === 0 ? null : { source: `m-${i % 2}`, hops: [], trace: null },
      tags: Array.from({ length: i % 4 }, (_, t) => `tag-${t}`), numbers: i % 3 === 0 ? [] : [i, null, -i],
      items: Array.from({ length: i % 3 }, (_, n) => ({ sku: `sku-${n}`, quantity: n, price: n === 1 ? null : n + 0.5 })),
      maybeItems: i % 5 === 0 ? null : [{ sku: `s-${i}`, quantity: i, price: null }, null], grid: i % 2 === 0 ? [] : [[i], [i, -i]], eventTimes: [base * 1000 + i],
      scores: i % 3 === 0 ? {} : { [`s${i % 10}`]: i, z: -i }, attributes: i % 2 === 0 ? {} : { a: `${i}`, b: null },
      itemsByShelf: i % 5 === 0 ? { [`shelf-${i % 2}`]: { sku: `sku-${i}`, quantity: i, price: null } } : {},
      maybeLists: i % 4 === 0 ? null : { [`k${i % 3}`]: [`v${i}`] }, matrix: i % 6 === 0 ? {} : { r: { c: i } }, prices: { p: decimalBytes(BigInt(i * 7)) },
      lastKind: i % 4 === 0 ? null : kinds[(i + 1) % 3],
    });
  }
  return records;
}
