/**
 * The registry's schema caches stay within their bounds however many large schemas are stored
 * (before, every schema read and every avsc type parsed for a compatibility check was kept for
 * ever: a fuzz run storing 3,578 schemas took the registry past 1 GiB), and a schema evicted is
 * read again from the store, unchanged.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import type { ParsedSchema } from '../../../src/registry/avro-schema.js';
import type { StoredSchema } from '../../../src/registry/store/layout.js';
import { RegistryState } from '../../../src/registry/store/registry-state.js';
import { DEFAULT_PARSED_CACHE_BYTES, DEFAULT_SCHEMA_CACHE_BYTES, SchemaCache } from '../../../src/registry/store/schema-cache.js';

const logger = createLogger({ name: 'registry-cache-test', level: 'silent' });

/** An enum of `count` symbols: about 7 characters of schema text each. */
function enumSchema(name: string, count: number): string {
  return JSON.stringify({ type: 'enum', name, symbols: Array.from({ length: count }, (_, index) => `S${index}`) });
}

describe('registry schema caches', () => {
  it('keep at most their bound of stored and parsed schemas, and serve evicted ones again from the store', async () => {
    const store = new MemoryCoordination({ logger }).session();
    const schemaCacheBytes = 200_000;
    const parsedCacheBytes = 500_000;
    const state = await RegistryState.open(store, { logger, schemaCacheBytes, parsedCacheBytes });
    const texts = new Map<number, string>();
    // Each new version of the subject is checked (BACKWARD) against the one before: parsed.
    for (let index = 0; index < 40; index += 1) {
      const text = enumSchema('Wide', 2_000 + index); // grows by a symbol: backward compatible
      const { id } = await state.register('wide-value', { schema: text });
      texts.set(id, text);
      await state.schemaById(id);
      const usage = state.cacheUsage();
      expect(usage.schemaBytes).toBeLessThanOrEqual(schemaCacheBytes);
      expect(usage.parsedBytes).toBeLessThanOrEqual(parsedCacheBytes);
    }
    const usage = state.cacheUsage();
    expect(usage.schemas).toBeGreaterThan(0);
    expect(usage.schemas).toBeLessThan(40);
    expect(usage.parsed).toBeGreaterThan(0);
    expect(usage.parsed).toBeLessThan(39);
    for (const [id, text] of texts) expect((await state.schemaById(id)).schema).toBe(text);
  });

  it('are bounded by default: 64 MiB of schema text, 128 MiB of parsed schemas', () => {
    const cache = new SchemaCache();
    // One string shared by every entry: the cache weighs each by its length, as if distinct.
    const text = 'x'.repeat(1_000_000);
    for (let id = 1; id <= 200; id += 1) {
      cache.keepStoredSchema(id, { id, schema: text, schemaType: 'AVRO', fingerprint: String(id) } satisfies StoredSchema);
      cache.keepParsedSchema(id, {} as ParsedSchema, text.length);
    }
    const usage = cache.usage();
    expect(usage.schemaBytes).toBeLessThanOrEqual(DEFAULT_SCHEMA_CACHE_BYTES);
    expect(usage.schemas).toBe(Math.floor(DEFAULT_SCHEMA_CACHE_BYTES / 2_000_000));
    expect(usage.parsedBytes).toBeLessThanOrEqual(DEFAULT_PARSED_CACHE_BYTES);
    expect(usage.parsed).toBe(Math.floor(DEFAULT_PARSED_CACHE_BYTES / 10_000_000));
    expect(cache.storedSchema(200)?.schema).toBe(text);
    expect(cache.storedSchema(1)).toBeUndefined();
  });
});
