/**
 * The registry's caches of schemas by id. Ids are immutable (never deleted, never reused), so a
 * cached schema is never stale and one evicted is read again from the store; what needs a bound
 * is memory: a registry that stores thousands of large schemas (60,000-symbol enums) must not
 * keep every one of them, and the avsc types parsed from them, for ever. Both caches are
 * least-recently-used and weighed by an estimate of their heap cost from the schema's length.
 */
import { LRUCache } from 'lru-cache';
import type { ParsedSchema } from '../avro-schema.js';
import type { StoredSchema } from './layout.js';

/** Heap bytes per character of schema text: the string itself, as V8 may keep it two-byte. */
const STORED_BYTES_PER_CHARACTER = 2;
/** Heap bytes per character of schema text once parsed (avsc types, canonical form): measured ≈ 10. */
const PARSED_BYTES_PER_CHARACTER = 10;

export const DEFAULT_SCHEMA_CACHE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_PARSED_CACHE_BYTES = 128 * 1024 * 1024;

export interface SchemaCacheLimits {
  /** Estimated heap bytes of schema text kept; default 64 MiB. */
  readonly schemaCacheBytes?: number;
  /** Estimated heap bytes of parsed schemas kept; default 128 MiB. */
  readonly parsedCacheBytes?: number;
}

export interface SchemaCacheUsage {
  readonly schemas: number;
  readonly schemaBytes: number;
  readonly parsed: number;
  readonly parsedBytes: number;
}

export class SchemaCache {
  private readonly stored: LRUCache<number, StoredSchema>;
  private readonly parsed: LRUCache<number, { readonly schema: ParsedSchema; readonly length: number }>;

  constructor(limits: SchemaCacheLimits = {}) {
    this.stored = new LRUCache({
      maxSize: limits.schemaCacheBytes ?? DEFAULT_SCHEMA_CACHE_BYTES,
      sizeCalculation: (schema) => Math.max(1, schema.schema.length * STORED_BYTES_PER_CHARACTER),
    });
    this.parsed = new LRUCache({
      maxSize: limits.parsedCacheBytes ?? DEFAULT_PARSED_CACHE_BYTES,
      sizeCalculation: (entry) => Math.max(1, entry.length * PARSED_BYTES_PER_CHARACTER),
    });
  }

  storedSchema(id: number): StoredSchema | undefined {
    return this.stored.get(id);
  }

  /** Keeps `schema` unless it alone is heavier than the whole cache. */
  keepStoredSchema(id: number, schema: StoredSchema): void {
    this.stored.set(id, schema);
  }

  parsedSchema(id: number): ParsedSchema | undefined {
    return this.parsed.get(id)?.schema;
  }

  /** `length` is that of the schema's text, the parsed form's weight. */
  keepParsedSchema(id: number, schema: ParsedSchema, length: number): void {
    this.parsed.set(id, { schema, length });
  }

  usage(): SchemaCacheUsage {
    return { schemas: this.stored.size, schemaBytes: this.stored.calculatedSize, parsed: this.parsed.size, parsedBytes: this.parsed.calculatedSize };
  }
}
