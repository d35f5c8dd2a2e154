/** The project's own Avro schemas (schemas/*.avsc) are valid for the registry and stay in step. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { types } from 'avsc';
import { describe, expect, it } from 'vitest';
import { parseAvroSchema, type ParsedSchema } from '../../../src/registry/avro-schema.js';

const folder = join(import.meta.dirname, '..', '..', '..', 'schemas');
const files = readdirSync(folder).filter((name) => name.endsWith('.avsc')).sort();

function parsed(file: string): ParsedSchema {
  return parseAvroSchema(readFileSync(join(folder, file), 'utf8'));
}

function field(schema: ParsedSchema, name: string): types.Field {
  const found = (schema.type as types.RecordType).fields.find((f) => f.name === name);
  if (found === undefined) throw new Error(`${schema.type.name ?? '?'} has no field ${name}`);
  return found;
}

describe('schemas/*.avsc', () => {
  it('holds the three schemas of the project', () => {
    expect(files).toEqual(['AuditCount.avsc', 'EventHeader.avsc', 'PageViewEvent.avsc']);
  });

  it.each(files)('%s parses with the registry parser and is named after its file', (file) => {
    const schema = parsed(file);
    expect(schema.type.typeName).toBe('record');
    expect(schema.type.name?.split('.').pop()).toBe(file.replace(/\.avsc$/, ''));
  });

  it('PageViewEvent embeds EventHeader exactly as EventHeader.avsc defines it', () => {
    const header = parsed('EventHeader.avsc');
    const embedded = field(parsed('PageViewEvent.avsc'), 'header');
    expect(embedded.type.name).toBe('io.tributary.events.EventHeader');
    // Same canonical form: same fields, types, defaults, docs and logical types.
    const pageView = parsed('PageViewEvent.avsc').json as { fields: { name: string; type: unknown }[] };
    const embeddedJson = pageView.fields.find((f) => f.name === 'header')?.type;
    expect(parseAvroSchema(JSON.stringify(embeddedJson)).canonical).toBe(header.canonical);
  });

  it('EventHeader carries the audit fields: creation time as timestamp-millis, origin server, a unique id', () => {
    const header = parsed('EventHeader.avsc');
    const json = header.json as { fields: { name: string; type: unknown }[] };
    const typeOf = (name: string) => json.fields.find((f) => f.name === name)?.type;
    expect(typeOf('time')).toEqual({ type: 'long', logicalType: 'timestamp-millis' });
    expect(typeOf('server')).toBe('string');
    expect(typeOf('eventId')).toEqual({ type: 'string', logicalType: 'uuid' });
  });

  it('AuditCount has the counting key, its window as timestamp-millis, the count and when it was published', () => {
    const audit = parsed('AuditCount.avsc');
    expect(audit.type.name).toBe('io.tributary.audit.AuditCount');
    const json = audit.json as { fields: { name: string; type: unknown }[] };
    const typeOf = (name: string) => json.fields.find((f) => f.name === name)?.type;
    for (const name of ['windowStart', 'windowEnd', 'publishedAt']) expect(typeOf(name)).toEqual({ type: 'long', logicalType: 'timestamp-millis' });
    expect(typeOf('count')).toBe('long');
    expect(typeOf('topic')).toBe('string');
    expect(typeOf('server')).toBe('string');
    expect(field(audit, 'tier').type.typeName).toBe('enum');
    const value = { topic: 'PageViewEvent', tier: 'MIRROR', cluster: null, server: 'mirror-1', windowStart: 0, windowEnd: 600_000, count: 12_345, publishedAt: 600_500 };
    // Fields added later (with defaults, as evolution requires) may come back too.
    expect(audit.type.fromBuffer(audit.type.toBuffer(value))).toMatchObject(value);
  });
});
