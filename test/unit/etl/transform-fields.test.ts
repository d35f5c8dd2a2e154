/**
 * The load's transformation (src/etl/records/transform.ts): the `transform:` section of load files is
 * checked with precise refusals, the output schema is derived from the reader schema (types, docs
 * and logical types kept, named types defined once), records are mapped in field order, a path
 * the reader schema lacks is refused naming the field, and the output writes and reads back as a
 * data file.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { decodeDataFile, encodeDataFile, parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { parseLoadFile } from '../../../src/etl/load-file.js';
import type { ReaderSchema } from '../../../src/etl/load/plan.js';
import { compileTransform, describeTransform, type TransformDefinition } from '../../../src/etl/records/transform.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';

const BASE = `
name: views
source: { bootstrap: 127.0.0.1:9092 }
topics: [views]
registry: http://127.0.0.1:8081
warehouse: { url: ./warehouse }
format: avro
codec: deflate
`;

const PAGE_VIEW = await readFile(new URL('../../../schemas/PageViewEvent.avsc', import.meta.url), 'utf8');

function reader(schemaText: string): ReaderSchema {
  const schema = parseAvroSchema(schemaText);
  return { ref: { subject: 'views-value', version: 3, id: 7 }, schema, fileType: parseDataFileSchema(schema.json) };
}

function transformOf(section: string): TransformDefinition {
  const transform = parseLoadFile(`${BASE}${section}`, '/jobs/views.yaml').transform;
  if (transform === undefined) throw new Error('no transform parsed');
  return transform;
}

function refusal(section: string): TributaryError {
  try {
    parseLoadFile(`${BASE}${section}`, '/jobs/bad.yaml');
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('the load file was accepted');
}

const VIEW = {
  header: { eventId: '0b7c1a52-3f0e-4a53-9d0b-6a2e1f7d9c11', time: 1_795_000_000_000, server: 'web-1', service: 'frontend' },
  memberId: 42,
  pageKey: 'profile',
  url: '/in/someone',
  referrer: null,
  userAgent: 'agent',
};

describe('transform section of a load file', () => {
  it('is optional: without it the load has no transformation', () => {
    expect(parseLoadFile(BASE, '/jobs/views.yaml').transform).toBeUndefined();
  });

  it('keeps the fields in the order written, paths split, constants typed', () => {
    const transform = transformOf('transform:\n  fields:\n    page: pageKey\n    time: header.time\n    source: { const: web }\n    weight: { const: 1.5 }\n    nothing: { const: null }\n');
    expect([...transform.fields.entries()]).toEqual([
      ['page', { kind: 'path', path: ['pageKey'] }],
      ['time', { kind: 'path', path: ['header', 'time'] }],
      ['source', { kind: 'const', value: 'web' }],
      ['weight', { kind: 'const', value: 1.5 }],
      ['nothing', { kind: 'const', value: null }],
    ]);
    expect(describeTransform(transform)).toBe('{"page":"pageKey","time":"header.time","source":{"const":"web"},"weight":{"const":1.5},"nothing":{"const":null}}');
    expect(describeTransform(undefined)).toBeNull();
  });

  it.each([
    ['transform:\n  fields: {}\n', 'transform.fields: name at least one output field, or leave transform out to write records as decoded'],
    ['transform:\n  fields:\n    page: "header..time"\n', 'transform.fields.page: "header..time" is not a field path: expected a dotted field path of the decoded record (e.g. header.time) or { const: VALUE }'],
    ['transform:\n  fields:\n    page: { from: url }\n', 'transform.fields.page: unknown key from: expected a dotted field path of the decoded record (e.g. header.time) or { const: VALUE }'],
    ['transform:\n  fields:\n    page: { const: [1, 2] }\n', 'transform.fields.page: const [1,2] is not a string, finite number, boolean or null'],
    ['transform:\n  fields:\n    page: 12\n', 'transform.fields.page: 12 is neither: expected a dotted field path'],
    ['transform:\n  fields:\n    "2page": url\n', 'transform.fields.2page: an output field name is an Avro name: a letter or _, then letters, digits or _'],
    ['transform:\n  fields: { page: url }\n  drop: [url]\n', 'transform: Unrecognized key: "drop"'],
  ])('refuses %j naming the file and the field', (section, message) => {
    const error = refusal(section);
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('/jobs/bad.yaml');
    expect(error.message).toContain(message);
  });
});

describe('compiled transformation', () => {
  it('derives the output record from the reader schema: types, docs and logical types of the fields it copies', () => {
    const transform = compileTransform(transformOf('transform:\n  fields:\n    eventId: header.eventId\n    time: header.time\n    page: pageKey\n    member: memberId\n    source: { const: web }\n    version: { const: 2 }\n'), reader(PAGE_VIEW), 'views');
    expect(transform.outputType.schema({ exportAttrs: true })).toEqual({
      name: 'io.tributary.events.PageViewEvent',
      type: 'record',
      fields: [
        { name: 'eventId', type: { type: 'string', logicalType: 'uuid' }, doc: expect.stringContaining('Random UUID') as unknown },
        { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' }, doc: expect.stringContaining('When the event was created') as unknown },
        { name: 'page', type: 'string', doc: expect.stringContaining('Stable key of the page template') as unknown },
        { name: 'member', type: ['null', 'long'], doc: expect.stringContaining('signed-in member') as unknown },
        { name: 'source', type: 'string' },
        { name: 'version', type: 'long' },
      ],
    });
    expect(transform.apply(VIEW)).toEqual({ eventId: VIEW.header.eventId, time: VIEW.header.time, page: 'profile', member: 42, source: 'web', version: 2 });
  });

  it('maps records in the order of the fields, and the output writes and reads back as a data file', async () => {
    const transform = compileTransform(transformOf('transform:\n  fields:\n    url: url\n    header: header\n    again: header\n'), reader(PAGE_VIEW), 'views');
    const mapped = transform.apply(VIEW);
    expect(Object.keys(mapped as object)).toEqual(['url', 'header', 'again']);
    const bytes = await encodeDataFile([mapped], { format: 'avro', codec: 'null', schema: transform.outputType, identity: 'views+0+0+1' });
    const decoded = await decodeDataFile(bytes, 'avro');
    expect(decoded.records).toEqual([mapped]);
    // EventHeader is used twice and defined once (by name the second time).
    expect((decoded.schemaJson as { fields: { type: unknown }[] }).fields[2]?.type).toBe('io.tributary.events.EventHeader');
  });

  it.each([
    ['pageKy', 'transform.fields.out of the load reads pageKy, but the reader schema of topic views (views-value version 3, id 7) has no field pageKy; its fields are header, memberId, pageKey, url, referrer, userAgent'],
    ['header.tim', 'transform.fields.out of the load reads header.tim, but record header of the reader schema of topic views (views-value version 3, id 7) has no field tim; its fields are eventId, time, server, service'],
    ['url.length', 'transform.fields.out of the load reads url.length, but url in the reader schema of topic views (views-value version 3, id 7) is a string, not a record, so it has no field length'],
    ['memberId.value', 'is a union of null | long, not a record, so it has no field value (fields behind a union cannot be read)'],
  ])('refuses the path %s with ETL_SCHEMA_PROBLEM naming what is there', (path, message) => {
    const definition = transformOf(`transform:\n  fields:\n    out: ${path}\n`);
    let caught: unknown;
    try {
      compileTransform(definition, reader(PAGE_VIEW), 'views');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TributaryError);
    expect((caught as TributaryError).code).toBe('ETL_SCHEMA_PROBLEM');
    expect((caught as TributaryError).message).toContain(message);
    expect((caught as TributaryError).message).toContain("Fix the path in the load file's transform section");
  });

  it('the example in jobs/page-views.yaml, uncommented, compiles against PageViewEvent', async () => {
    const example = await readFile(new URL('../../../jobs/page-views.yaml', import.meta.url), 'utf8');
    const uncommented = example.replace(/^# (transform:| {2}fields:| {4}\w+: .*)$/gm, '$1');
    expect(uncommented).not.toBe(example);
    const load = parseLoadFile(uncommented, '/jobs/page-views.yaml');
    const transform = compileTransform(load.transform!, reader(PAGE_VIEW), 'page-views');
    expect(transform.apply(VIEW)).toEqual({ header: VIEW.header, memberId: 42, page: 'profile', url: '/in/someone', source: 'web' });
  });

  it('compiles once per reader schema and definition', () => {
    const definition = transformOf('transform:\n  fields:\n    page: pageKey\n');
    const schema = reader(PAGE_VIEW);
    expect(compileTransform(definition, schema, 'views')).toBe(compileTransform(definition, schema, 'views'));
    expect(compileTransform(definition, reader(PAGE_VIEW), 'views')).not.toBe(compileTransform(definition, schema, 'views'));
  });
});
