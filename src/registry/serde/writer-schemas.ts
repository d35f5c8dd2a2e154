/**
 * Writer schemas by global id, fetched from the registry once and kept for the life of the
 * process: an id never changes meaning (ARCHITECTURE.md, decision 8). Concurrent first lookups
 * of one id share a single request; a failed lookup is forgotten so a later one asks again.
 */
import type { Type } from 'avsc';
import { TributaryError } from '../../common/errors.js';
import { parseAvroSchema, type ParsedSchema } from '../avro-schema.js';
import type { RegistryClient } from '../client.js';
import { withExactLongs } from './exact-long.js';

export interface WriterSchema {
  readonly id: number;
  readonly schema: ParsedSchema;
  /** What values are decoded with: `schema.type` with exact longs (exact-long.ts). */
  readonly type: Type;
}

export class WriterSchemas {
  private readonly loaded = new Map<number, WriterSchema>();
  private readonly loading = new Map<number, Promise<WriterSchema>>();

  constructor(private readonly client: RegistryClient) {}

  /** The schema of `id` if it has been fetched already. */
  cached(id: number): WriterSchema | undefined {
    return this.loaded.get(id);
  }

  get(id: number): Promise<WriterSchema> {
    const known = this.loaded.get(id);
    if (known !== undefined) return Promise.resolve(known);
    let pending = this.loading.get(id);
    if (pending === undefined) {
      pending = this.fetch(id).then(
        (writer) => {
          this.loaded.set(id, writer);
          this.loading.delete(id);
          return writer;
        },
        (error: unknown) => {
          this.loading.delete(id);
          throw error;
        },
      );
      this.loading.set(id, pending);
    }
    return pending;
  }

  private async fetch(id: number): Promise<WriterSchema> {
    let answer;
    try {
      answer = await this.client.schemaById(id);
    } catch (error) {
      if (error instanceof TributaryError && error.code === 'REGISTRY_SCHEMA_NOT_FOUND') {
        throw new TributaryError({
          code: 'REGISTRY_SCHEMA_NOT_FOUND',
          message:
            `the message was written with schema id ${id}, which schema registry ${this.client.url} does not have: ` +
            'it was produced against another registry, or the bytes are corrupt',
          cause: error,
          details: { ...error.details, schemaId: id },
        });
      }
      throw error;
    }
    const schemaType = answer.schemaType ?? 'AVRO';
    if (schemaType.toUpperCase() !== 'AVRO') {
      throw new TributaryError({
        code: 'SERDE_UNSUPPORTED_SCHEMA_TYPE',
        message: `schema id ${id} is a ${schemaType} schema; this deserializer reads Avro only`,
        details: { schemaId: id, schemaType },
      });
    }
    let schema: ParsedSchema;
    try {
      schema = parseAvroSchema(answer.schema);
    } catch (error) {
      throw new TributaryError({
        code: 'SERDE_BAD_WRITER_SCHEMA',
        message: `schema id ${id} from ${this.client.url} is not a valid Avro schema: ${error instanceof Error ? error.message : String(error)}`,
        cause: error,
        details: { schemaId: id },
      });
    }
    // Decoded with exact longs (exact-long.ts): avsc's own would misread longs below −2^52.
    return { id, schema, type: withExactLongs(schema.type) };
  }
}
