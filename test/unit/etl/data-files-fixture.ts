/**
 * One Avro schema with every type the data files support (nested records, ["null", T] unions both
 * ways round, arrays, maps, enums, fixed, bytes, logical timestamp-millis, date and time-millis),
 * and records that reach the edges: empty strings, arrays and maps, nulls at each level, bytes
 * 00 and ff, non-ASCII text, longs at avsc's limit ±(2^53 − 2), floats exact in 32 bits. Shared by the unit tests
 * and the Java readers' compat test.
 */
import type { Type } from 'avsc';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';

export const ALL_TYPES_SCHEMA = {
  type: 'record',
  name: 'AllTypes',
  namespace: 'tributary.test',
  doc: 'every Avro type the loader writes',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'flag', type: 'boolean' },
    { name: 'count', type: 'int' },
    { name: 'ratio', type: 'float' },
    { name: 'score', type: 'double' },
    { name: 'name', type: 'string' },
    { name: 'payload', type: 'bytes' },
    { name: 'digest', type: { type: 'fixed', name: 'Digest', size: 4 } },
    { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['CLICK', 'VIEW', 'BUY'] } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'clock', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'amount', type: ['double', 'null'] },
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
            type: ['null', { type: 'record', name: 'Trace', fields: [{ name: 'traceId', type: 'string' }, { name: 'sampled', type: 'boolean' }] }],
          },
        ],
      },
    },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'scores', type: { type: 'map', values: 'long' } },
    { name: 'maybeNumbers', type: ['null', { type: 'array', items: ['null', 'int'] }] },
    { name: 'attributes', type: { type: 'map', values: ['null', 'string'] } },
    {
      name: 'items',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'Item',
          fields: [
            { name: 'sku', type: 'string' },
            { name: 'quantity', type: 'int' },
            { name: 'price', type: ['null', 'double'] },
          ],
        },
      },
    },
    { name: 'itemsByShelf', type: { type: 'map', values: 'Item' } },
    { name: 'lastKind', type: ['null', 'Kind'] },
  ],
} as const;

export function allTypesSchema(): Type {
  return parseDataFileSchema(ALL_TYPES_SCHEMA);
}

/** The edge cases, then `generated` ordinary records (enough to fill several Avro blocks). */
export function allTypesRecords(generated = 0): Record<string, unknown>[] {
  const edges: Record<string, unknown>[] = [
    {
      id: 0, flag: false, count: 0, ratio: 0, score: 0, name: '', payload: Buffer.alloc(0), digest: Buffer.from([0, 0, 0, 0]),
      kind: 'CLICK', at: 0, day: 0, clock: 0, note: null, amount: null,
      header: { source: '', hops: [], trace: null }, tags: [], scores: {}, maybeNumbers: null, attributes: {}, items: [], itemsByShelf: {}, lastKind: null,
    },
    {
      id: 9_007_199_254_740_990, flag: true, count: 2 ** 31 - 1, ratio: -1.5, score: -1e300, name: 'grüße 🚀 \u0000 "quoted"', payload: Buffer.from([0x00, 0xff, 0x80, 0x7f]),
      digest: Buffer.from([0xff, 0xfe, 0x01, 0x00]), kind: 'BUY', at: 1_764_428_400_123, day: 20_421, clock: 86_399_999, note: 'a note', amount: 12.75,
      header: { source: 'web-01', hops: ['a', '', 'ç'], trace: { traceId: 't-1', sampled: true } },
      tags: ['x', 'y', ''], scores: { a: -9_007_199_254_740_990, '': 7, 'clé': 0 }, maybeNumbers: [1, null, -3, null], attributes: { k: null, v: 'value', '': '' },
      items: [{ sku: 'sku-1', quantity: -2_147_483_648, price: null }, { sku: '', quantity: 3, price: 0.1 }],
      itemsByShelf: { top: { sku: 'sku-9', quantity: 1, price: 2.5 } }, lastKind: 'VIEW',
    },
    {
      id: -9_007_199_254_740_990, flag: false, count: -7, ratio: 3.125, score: 5e-324, name: 'x'.repeat(1000), payload: Buffer.alloc(300, 0xab),
      digest: Buffer.from('abcd'), kind: 'VIEW', at: 1, day: 1, clock: 1, note: '', amount: -0.5,
      header: { source: 's', hops: ['only'], trace: { traceId: '', sampled: false } },
      tags: [''], scores: { only: 1 }, maybeNumbers: [], attributes: { only: null }, items: [{ sku: 'a', quantity: 0, price: -0.125 }], itemsByShelf: {}, lastKind: 'CLICK',
    },
  ];
  const kinds = ['CLICK', 'VIEW', 'BUY'];
  for (let i = 0; i < generated; i += 1) {
    edges.push({
      id: 1_000_000 + i, flag: i % 2 === 0, count: i, ratio: (i % 64) / 8, score: i / 3, name: `user-${i}`, payload: Buffer.from(`payload-${i}`),
      digest: Buffer.from([i & 0xff, (i >> 8) & 0xff, 0, 1]), kind: kinds[i % 3], at: 1_764_428_400_000 + i, day: 20_000 + (i % 400), clock: (i * 1000) % 86_400_000,
      note: i % 5 === 0 ? null : `note ${i}`, amount: i % 7 === 0 ? null : i * 0.25,
      header: { source: `host-${i % 4}`, hops: Array.from({ length: i % 3 }, (_, h) => `hop-${h}`), trace: i % 2 === 0 ? null : { traceId: `trace-${i}`, sampled: i % 3 === 0 } },
      tags: Array.from({ length: i % 4 }, (_, t) => `tag-${t}`), scores: i % 3 === 0 ? {} : { [`s${i % 10}`]: i, z: -i },
      maybeNumbers: i % 4 === 0 ? null : [i, null], attributes: i % 2 === 0 ? {} : { a: `${i}`, b: null },
      items: Array.from({ length: i % 3 }, (_, n) => ({ sku: `sku-${n}`, quantity: n, price: n === 1 ? null : n + 0.5 })),
      itemsByShelf: i % 5 === 0 ? { [`shelf-${i % 2}`]: { sku: `sku-${i}`, quantity: i, price: null } } : {}, lastKind: i % 4 === 0 ? null : kinds[(i + 1) % 3],
    });
  }
  return edges;
}
