/**
 * The short version of the Avro payload fuzz run (test/chaos/avro-fuzz.ts): seeded valid and
 * broken framed payloads (bit flips, truncation, unknown ids, wrong magic, length lies, 2^31
 * counts) through the loader's decoder with a real registry process: valid ones decode exactly,
 * broken ones are record failures the loader quarantines (or still-valid Avro read as avsc reads
 * it), memory stays bounded. Without src/registry/serde/bounded-collections.ts a 2^31 declared
 * array count runs the heap out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatAvroFuzzLine, runAvroFuzz } from '../../chaos/avro-fuzz.js';

const folder = mkdtempSync(join(tmpdir(), 'tributary-avro-fuzz-'));

afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('Avro payload fuzz, short', () => {
  it('decodes 4,000 seeded payloads: valid ones exactly, broken ones quarantined with their code', async () => {
    const result = await runAvroFuzz({ folder, payloads: 4000, seed: 2026 });
    expect(result.violations, formatAvroFuzzLine(result)).toEqual([]);
    expect(result.validDecoded).toBe(result.valid);
    expect(result.byMutation['huge-count']).toBeGreaterThan(100);
    expect(result.quarantined['SERDE_DECODE_FAILED']).toBeGreaterThan(0);
    // A 2^31 count that allocated would take gigabytes.
    expect(result.peakRssBytes - result.rssBeforeBytes).toBeLessThan(512 * 1024 * 1024);
  });
});
