/**
 * Decodes schema-registry framed Avro (see framing.ts): the writer schema comes from the registry
 * by the id in the header, once per id; the value is resolved into the caller's reader schema
 * when one is given (avsc's schema resolution: defaults, promotions, aliases).
 *
 * With the writer schema cached, `decodeSync` does what avsc's own decode does plus a header
 * check and a map lookup, so a loader decoding millions of records pays little for the framing
 * (bench:serde measures it). `decode` fetches what is missing first; awaiting it per record costs
 * a promise each, so hot loops prefetch the ids and call `decodeSync`.
 */
import type { Resolver, Type } from 'avsc';
import { TributaryError } from '../../common/errors.js';
import type { ParsedSchema } from '../avro-schema.js';
import type { RegistryClient } from '../client.js';
import { undecodable, unresolvable } from './decode-errors.js';
import { withExactLongs } from './exact-long.js';
import { FRAME_HEADER_BYTES, schemaIdOf } from './framing.js';
import { WriterSchemas, type WriterSchema } from './writer-schemas.js';

/**
 * The schema to read values as. A ParsedSchema is identified by its fingerprint (so a schema
 * parsed afresh reuses earlier resolvers); a bare avsc Type by identity, because its logical-type
 * implementations change what it decodes to and no fingerprint captures them.
 *
 * Longs: writer schemas and ParsedSchema readers decode them exactly (exact-long.ts), so a long
 * that a number cannot hold fails the decode (SERDE_DECODE_FAILED) instead of coming back as
 * another number, as avsc's own long does below −2^52. A bare Type reads longs its own way.
 */
export type ReaderSchema = ParsedSchema | Type;

interface Reader {
  readonly type: Type;
  /** Per writer id: the resolver, or why the writer cannot be read (writers never change). */
  readonly resolvers: Map<number, Resolver | TributaryError>;
}

export class AvroDeserializer {
  private readonly writers: WriterSchemas;
  private readonly readers = new WeakMap<object, Reader>();
  private readonly readersByFingerprint = new Map<string, Reader>();
  /** The (reader, writer id) pair resolved most recently. */
  private last: { readonly schema: ReaderSchema; readonly writerId: number; readonly type: Type; readonly resolver: Resolver } | undefined;

  constructor(client: RegistryClient) {
    this.writers = new WriterSchemas(client);
  }

  /** Decodes one framed message, fetching its writer schema first if this process has not yet. */
  async decode<T = unknown>(message: Uint8Array, readerSchema?: ReaderSchema): Promise<T> {
    const id = schemaIdOf(message);
    // No await when the id is cached: the value is ready in the same tick.
    const writer = this.writers.cached(id) ?? (await this.writers.get(id));
    return this.decodeWith<T>(writer, message, readerSchema);
  }

  /**
   * Decodes without waiting, when the writer schema is already cached (after one `decode` or
   * `prefetch` of its id); otherwise throws SERDE_SCHEMA_NOT_CACHED and fetches nothing.
   */
  decodeSync<T = unknown>(message: Uint8Array, readerSchema?: ReaderSchema): T {
    const id = schemaIdOf(message);
    const writer = this.writers.cached(id);
    if (writer === undefined) {
      throw new TributaryError({
        code: 'SERDE_SCHEMA_NOT_CACHED',
        message: `schema id ${id} has not been fetched yet: call decode() (or prefetch(${id})) once before decodeSync()`,
        retriable: true,
        details: { schemaId: id },
      });
    }
    return this.decodeWith<T>(writer, message, readerSchema);
  }

  /** Fetches the writer schema of an id into the cache (the ETL reads the ids of a batch up front). */
  async prefetch(id: number): Promise<void> {
    await this.writers.get(id);
  }

  /** The writer schema of an id, fetched once. */
  writerSchema(id: number): Promise<WriterSchema> {
    return this.writers.get(id);
  }

  private decodeWith<T>(writer: WriterSchema, message: Uint8Array, readerSchema: ReaderSchema | undefined): T {
    let type = writer.type;
    let resolver: Resolver | undefined;
    if (readerSchema !== undefined) {
      // A stream of records mostly repeats one (reader, writer) pair: skip both map lookups then.
      const last = this.last;
      if (last !== undefined && readerSchema === last.schema && writer.id === last.writerId) {
        type = last.type;
        resolver = last.resolver;
      } else {
        const reader = this.reader(readerSchema);
        type = reader.type;
        resolver = this.resolver(reader, writer);
        this.last = { schema: readerSchema, writerId: writer.id, type, resolver };
      }
    }
    // avsc reads from a Buffer; a Buffer passes through without a copy.
    const bytes = Buffer.isBuffer(message) ? message : Buffer.from(message.buffer, message.byteOffset, message.length);
    let decoded: { value: unknown; offset: number };
    try {
      decoded = type.decode(bytes, FRAME_HEADER_BYTES, resolver);
    } catch (error) {
      throw undecodable(writer, bytes, error);
    }
    // -1: the value ran past the end; less than the length: bytes left over.
    if (decoded.offset !== bytes.length) throw undecodable(writer, bytes);
    return decoded.value as T;
  }

  private reader(schema: ReaderSchema): Reader {
    let reader = this.readers.get(schema);
    if (reader !== undefined) return reader;
    if (isParsedSchema(schema)) {
      reader = this.readersByFingerprint.get(schema.fingerprint);
      if (reader === undefined) {
        reader = { type: withExactLongs(schema.type), resolvers: new Map() };
        this.readersByFingerprint.set(schema.fingerprint, reader);
      }
    } else {
      reader = { type: schema, resolvers: new Map() };
    }
    this.readers.set(schema, reader);
    return reader;
  }

  private resolver(reader: Reader, writer: WriterSchema): Resolver {
    let resolver = reader.resolvers.get(writer.id);
    if (resolver === undefined) {
      try {
        // A fresh options object every call: avsc caches resolvers in it by record name.
        resolver = reader.type.createResolver(writer.type, { ignoreNamespaces: true });
      } catch (error) {
        resolver = unresolvable(writer, reader.type, error);
      }
      reader.resolvers.set(writer.id, resolver);
    }
    if (resolver instanceof TributaryError) throw resolver;
    return resolver;
  }
}

function isParsedSchema(schema: ReaderSchema): schema is ParsedSchema {
  return 'fingerprint' in schema && typeof schema.fingerprint === 'string' && 'canonical' in schema;
}
