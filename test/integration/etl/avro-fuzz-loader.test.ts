/**
 * The short version of the end-to-end Avro payload fuzz run (test/chaos/avro-fuzz-loader.ts):
 * seeded valid and broken framed payloads produced into five topics (one per writer schema) of a
 * real broker process over 4 partitions and 3 hours of timestamps, loaded by `tributary etl run`
 * into a local-folder warehouse, then a second run. From the warehouse files alone: every payload
 * the loader's decoder accepts is stored exactly once with its value in its hour; every other one
 * is in a quarantine file with the code the decoder gives; the manifests count what the files
 * hold; nothing else is stored; the second run commits nothing; the loader's memory stays bounded.
 */
import { describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { formatAvroLoaderFuzzLine, LOADER_RSS_BOUND_BYTES, runAvroLoaderFuzz } from '../../chaos/avro-fuzz-loader.js';
import { services } from '../services.js';

describe('Avro payload fuzz through `tributary etl run`, short', () => {
  it('loads 3,000 seeded payloads: valid ones exactly once in their hour, broken ones quarantined with their code, nothing on a second run', async () => {
    const result = await runAvroLoaderFuzz({ run: openRun(services().runDir), payloads: 3000, seed: 2026 });
    const line = formatAvroLoaderFuzzLine(result);
    expect(result.violations, line).toEqual([]);
    expect(result.loadedOnce + Object.values(result.quarantined).reduce((sum, count) => sum + count, 0), line).toBe(result.payloads);
    expect(result.loadedOnce, line).toBeGreaterThan(result.valid);
    expect(result.byMutation['huge-count'], line).toBeGreaterThan(100);
    expect(Object.keys(result.quarantined).sort(), line).toEqual(['REGISTRY_SCHEMA_NOT_FOUND', 'SERDE_DECODE_FAILED', 'SERDE_FRAME_TOO_SHORT', 'SERDE_NOT_FRAMED']);
    expect(result.summary, line).toEqual({ records: result.loadedOnce, files: expect.any(Number) as unknown, quarantined: result.payloads - result.loadedOnce });
    expect(result.lost + result.duplicates + result.foreign, line).toBe(0);
    expect(result.commits, line).toBe(1);
    expect(result.peakRssBytes, line).toBeGreaterThan(0);
    expect(result.peakRssBytes, line).toBeLessThan(LOADER_RSS_BOUND_BYTES);
  }, 120_000);
});
