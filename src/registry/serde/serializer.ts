/**
 * Encodes values as schema-registry framed Avro (see framing.ts). The writer schema's id is
 * learned once per (subject, schema) — by registering it, or by looking it up when registration
 * is off — and kept: an id never changes meaning, so later encodes need no request.
 */
import type { Type } from 'avsc';
import { TributaryError } from '../../common/errors.js';
import { parseAvroSchema, type ParsedSchema } from '../avro-schema.js';
import type { RegistryClient } from '../client.js';
import { typeLabel } from './decode-errors.js';
import { FRAME_HEADER_BYTES, writeFrameHeader } from './framing.js';

export interface AvroSerializerOptions {
  /**
   * Register a schema the subject does not have yet (default true). With false the schema must
   * be registered already (a producer that may not change the registry) and is only looked up.
   */
  readonly autoRegister?: boolean;
}

/** Schema text (an .avsc file's content) or a schema parsed with parseAvroSchema. */
export type WriterSchemaInput = string | ParsedSchema;

interface Writer {
  readonly id: number;
  readonly type: Type;
}

/** Key of "the latest version of the subject" among a subject's writers. */
const LATEST = '\u0000latest';

export class AvroSerializer {
  private readonly autoRegister: boolean;
  /** subject → schema fingerprint (or LATEST) → writer, once known. */
  private readonly writers = new Map<string, Map<string, Writer>>();
  private readonly pending = new Map<string, Map<string, Promise<Writer>>>();
  private readonly parsedTexts = new Map<string, ParsedSchema>();
  /** Grows to the largest value encoded; each encode copies its bytes out once. */
  private scratch = Buffer.allocUnsafe(4096);

  constructor(
    private readonly client: RegistryClient,
    options: AvroSerializerOptions = {},
  ) {
    this.autoRegister = options.autoRegister ?? true;
  }

  /**
   * Frames `value` written with `schema` under `subject`. Without a schema, the subject's latest
   * version at the first call is used (and kept for this serializer's life).
   */
  async encode(subject: string, value: unknown, schema?: WriterSchemaInput): Promise<Buffer> {
    const parsed = schema === undefined ? undefined : this.parse(schema);
    const key = parsed === undefined ? LATEST : parsed.fingerprint;
    // No await when the id is known: the bytes are ready in the same tick.
    const writer = this.writers.get(subject)?.get(key) ?? (await this.writer(subject, key, parsed));
    return this.write(writer, subject, value);
  }

  private parse(schema: WriterSchemaInput): ParsedSchema {
    if (typeof schema !== 'string') return schema;
    let parsed = this.parsedTexts.get(schema);
    if (parsed === undefined) {
      parsed = parseAvroSchema(schema);
      this.parsedTexts.set(schema, parsed);
    }
    return parsed;
  }

  private writer(subject: string, key: string, schema: ParsedSchema | undefined): Promise<Writer> {
    let bySchema = this.pending.get(subject);
    if (bySchema === undefined) this.pending.set(subject, (bySchema = new Map<string, Promise<Writer>>()));
    let promise = bySchema.get(key);
    if (promise === undefined) {
      const pendingHere = bySchema;
      promise = this.learnId(subject, schema).then(
        (writer) => {
          let known = this.writers.get(subject);
          if (known === undefined) this.writers.set(subject, (known = new Map<string, Writer>()));
          known.set(key, writer);
          pendingHere.delete(key);
          return writer;
        },
        (error: unknown) => {
          pendingHere.delete(key);
          throw error;
        },
      );
      bySchema.set(key, promise);
    }
    return promise;
  }

  private async learnId(subject: string, schema: ParsedSchema | undefined): Promise<Writer> {
    if (schema === undefined) {
      const latest = await this.client.version(subject, 'latest');
      if (latest.schemaType !== undefined && latest.schemaType.toUpperCase() !== 'AVRO') {
        throw new TributaryError({
          code: 'SERDE_UNSUPPORTED_SCHEMA_TYPE',
          message: `the latest version of subject "${subject}" is a ${latest.schemaType} schema; this serializer writes Avro only`,
          details: { subject, schemaType: latest.schemaType },
        });
      }
      return { id: latest.id, type: parseAvroSchema(latest.schema).type };
    }
    if (this.autoRegister) {
      const { id } = await this.client.register(subject, schema.text);
      return { id, type: schema.type };
    }
    const found = await this.client.lookup(subject, schema.text);
    return { id: found.id, type: schema.type };
  }

  private write(writer: Writer, subject: string, value: unknown): Buffer {
    let end: number;
    try {
      end = writer.type.encode(value, this.scratch, FRAME_HEADER_BYTES);
      if (end < 0) {
        // avsc answers the number of bytes missing, negated.
        this.scratch = Buffer.allocUnsafe(Math.max(2 * this.scratch.length, this.scratch.length - end));
        end = writer.type.encode(value, this.scratch, FRAME_HEADER_BYTES);
      }
    } catch (error) {
      throw invalidValue(writer, subject, value, error);
    }
    writeFrameHeader(this.scratch, writer.id);
    const message = Buffer.allocUnsafe(end);
    this.scratch.copy(message, 0, 0, end);
    return message;
  }
}

function invalidValue(writer: Writer, subject: string, value: unknown, cause: unknown): TributaryError {
  const problems: string[] = [];
  writer.type.isValid(value, {
    errorHook: (path: string[], found: unknown, type: Type) => {
      if (problems.length < 10) problems.push(`${path.length === 0 ? '(the value)' : path.join('.')}: ${describe(found)} is not a valid ${typeLabel(type)}`);
    },
  });
  const reason = problems.length > 0 ? problems.join('; ') : cause instanceof Error ? cause.message : String(cause);
  return new TributaryError({
    code: 'SERDE_INVALID_VALUE',
    message: `the value does not fit schema id ${writer.id} (${typeLabel(writer.type)}) of subject "${subject}": ${reason}. Fix the value or encode it with a schema it fits.`,
    cause,
    details: { subject, schemaId: writer.id, problems },
  });
}

function describe(value: unknown): string {
  if (value === undefined) return 'a missing value';
  if (value === null) return 'null';
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  const text =
    typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' ? String(value) : `a ${typeof value}`;
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
