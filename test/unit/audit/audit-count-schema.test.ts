import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AUDIT_TIERS, auditCountSchema } from '../../../src/audit/audit-count.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { checkCompatibility } from '../../../src/registry/compatibility.js';

/** The schema as first registered under _audit-value (schemas/AuditCount.avsc before #8). */
const firstVersion = parseAvroSchema(readFileSync(new URL('fixtures/AuditCount-v1.avsc', import.meta.url), 'utf8'));

describe('AuditCount schema evolution', () => {
  it('is FULL_TRANSITIVE compatible with the first version: old and new readers read both', () => {
    expect(checkCompatibility('FULL_TRANSITIVE', auditCountSchema(), [{ version: 1, schema: firstVersion }])).toEqual([]);
  });

  it('reads an event of the first version with null identity, null origin and no latency', () => {
    const old = { topic: 't', tier: 'MIRROR', cluster: null, server: 'm', windowStart: 0, windowEnd: 600_000, count: 3, publishedAt: 1 };
    const resolver = auditCountSchema().type.createResolver(firstVersion.type);
    expect(auditCountSchema().type.fromBuffer(firstVersion.type.toBuffer(old), resolver)).toEqual({ ...old, origin: null, counterId: null, sequence: null, latency: [] });
  });

  it('has exactly the tiers the code knows, in the same order', () => {
    const json = auditCountSchema().json as { fields: { name: string; type: { symbols?: string[] } }[] };
    expect(json.fields.find((field) => field.name === 'tier')?.type.symbols).toEqual([...AUDIT_TIERS]);
  });
});
