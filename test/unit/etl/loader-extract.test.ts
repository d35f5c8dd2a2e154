/**
 * The task's decode loop (src/etl/load/extract.ts): the writer schemas a fetched batch names are
 * fetched before its records, which then decode synchronously. What a record decodes to, which
 * records are quarantined and which failures fail the task stay as with one `await decode` per
 * record.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { extractRange } from '../../../src/etl/load/extract.js';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import type { ReaderSchema } from '../../../src/etl/load/plan.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { frame } from '../../../src/registry/serde/framing.js';
import { FakeSource } from './loader-fakes.js';

const T0 = Date.UTC(2026, 10, 29, 13);
const HOUR = 3_600_000;
const V1 = JSON.stringify({ type: 'record', name: 'View', fields: [{ name: 'id', type: 'long' }, { name: 'time', type: 'long' }] });
const V2 = JSON.stringify({ type: 'record', name: 'View', fields: [{ name: 'id', type: 'long' }, { name: 'time', type: 'long' }, { name: 'tag', type: 'string', default: 'none' }] });

/** A registry that knows ids 1 (V1) and 2 (V2), counts lookups, and can be made to fail. */
function fakeRegistry(): { client: RegistryClient; lookups: number[]; down: { now: boolean } } {
  const lookups: number[] = [];
  const down = { now: false };
  const schemas = new Map([[1, V1], [2, V2]]);
  const client = {
    url: 'http://registry.test',
    schemaById: async (id: number) => {
      lookups.push(id);
      if (down.now) throw new TributaryError({ code: 'REGISTRY_UNAVAILABLE', message: 'registry down', retriable: true });
      const schema = schemas.get(id);
      if (schema === undefined) throw new TributaryError({ code: 'REGISTRY_SCHEMA_NOT_FOUND', message: `no schema ${id}` });
      return { id, schema, schemaType: 'AVRO' };
    },
  } as unknown as RegistryClient;
  return { client, lookups, down };
}

function reader(): ReaderSchema {
  const schema = parseAvroSchema(V2);
  return { ref: { subject: 'views-value', version: 2, id: 2 }, schema, fileType: parseDataFileSchema(schema.json) };
}

const v1 = parseAvroSchema(V1).type;
const v2 = parseAvroSchema(V2).type;

describe('extractRange decoding', () => {
  it('decodes every record of both writer versions into the reader, asking the registry once per id', async () => {
    const source = new FakeSource();
    source.addTopic('views', 1);
    for (let index = 0; index < 400; index += 1) {
      const time = T0 + (index % 3) * HOUR;
      const bytes = index % 2 === 0 ? frame(1, v1.toBuffer({ id: index, time })) : frame(2, v2.toBuffer({ id: index, time, tag: `t${index}` }));
      source.append('views', 0, bytes, time);
    }
    const { client, lookups } = fakeRegistry();
    const range = await extractRange({ topic: 'views', partition: 0, start: 0, end: 400, reader: reader(), timeField: 'time', source, deserializer: new AvroDeserializer(client) });
    expect(source.fetches).toBeGreaterThan(1); // several batches
    expect(lookups.sort()).toEqual([1, 2]);
    expect(range.quarantined).toEqual([]);
    expect(range.hours.map((bucket) => bucket.values.length)).toEqual([134, 133, 133]);
    const all = range.hours.flatMap((bucket) => bucket.values.map((value, index) => ({ value, offset: bucket.offsets[index]! })));
    for (const { value, offset } of all) {
      expect(value).toEqual({ id: offset, time: T0 + (offset % 3) * HOUR, tag: offset % 2 === 0 ? 'none' : `t${offset}` });
    }
  });

  it('quarantines records whose schema id the registry lacks, or whose bytes are not framed, and loads the rest', async () => {
    const source = new FakeSource();
    source.addTopic('views', 1);
    source.append('views', 0, frame(1, v1.toBuffer({ id: 0, time: T0 })), T0);
    source.append('views', 0, frame(7, v1.toBuffer({ id: 1, time: T0 })), T0);
    source.append('views', 0, Buffer.from('{"id":2}'), T0);
    source.append('views', 0, frame(1, Buffer.from([0x80])), T0);
    source.append('views', 0, frame(1, v1.toBuffer({ id: 4, time: T0 })), T0);
    const { client } = fakeRegistry();
    const range = await extractRange({ topic: 'views', partition: 0, start: 0, end: 5, reader: reader(), timeField: 'time', source, deserializer: new AvroDeserializer(client) });
    expect(range.quarantined.map((record) => [record.offset, record.code])).toEqual([
      [1, 'REGISTRY_SCHEMA_NOT_FOUND'],
      [2, 'SERDE_NOT_FRAMED'],
      [3, 'SERDE_DECODE_FAILED'],
    ]);
    expect(range.hours.flatMap((bucket) => bucket.offsets)).toEqual([0, 4]);
  });

  it('fails the task, quarantining nothing, when the registry cannot be reached', async () => {
    const source = new FakeSource();
    source.addTopic('views', 1);
    source.append('views', 0, frame(1, v1.toBuffer({ id: 0, time: T0 })), T0);
    const { client, down } = fakeRegistry();
    down.now = true;
    await expect(extractRange({ topic: 'views', partition: 0, start: 0, end: 1, reader: reader(), timeField: 'time', source, deserializer: new AvroDeserializer(client) })).rejects.toMatchObject({
      code: 'REGISTRY_UNAVAILABLE',
    });
  });
});

describe('extractRange after a failover', () => {
  function views(count: number): FakeSource {
    const source = new FakeSource();
    source.addTopic('views', 1);
    for (let index = 0; index < count; index += 1) source.append('views', 0, frame(1, v1.toBuffer({ id: index, time: T0 })), T0);
    return source;
  }

  it('waits while a new leader serves a high watermark behind the plan, then reads the range whole', async () => {
    const source = views(120);
    // The plan read up to 120 from the old leader; the new one says 70 for its next 5 answers.
    source.lagging = { highWatermark: 70, looks: 5 };
    const { client } = fakeRegistry();
    const range = await extractRange({ topic: 'views', partition: 0, start: 0, end: 120, reader: reader(), timeField: 'time', source, deserializer: new AvroDeserializer(client), highWatermarkWaitMs: 10_000 });
    expect(range.hours.flatMap((bucket) => bucket.offsets)).toEqual(Array.from({ length: 120 }, (_, offset) => offset));
    expect(source.lagging.looks).toBe(0);
  });

  it('fails with ETL_FETCH_INCOMPLETE when the high watermark stays behind the plan (the log was truncated)', async () => {
    const source = views(120);
    source.lagging = { highWatermark: 70, looks: Number.MAX_SAFE_INTEGER };
    const { client } = fakeRegistry();
    const read = extractRange({ topic: 'views', partition: 0, start: 0, end: 120, reader: reader(), timeField: 'time', source, deserializer: new AvroDeserializer(client), highWatermarkWaitMs: 500 });
    await expect(read).rejects.toMatchObject({ code: 'ETL_FETCH_INCOMPLETE', details: { topic: 'views', partition: 0, offset: 70, end: 120, highWatermark: 70 } });
    await expect(read).rejects.toThrow('ends at 70 now, and stayed there for 1 s, but the plan reads up to 120');
  });
});
