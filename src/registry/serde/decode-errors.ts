/**
 * Explanations for the two ways a framed message can fail to decode once its writer schema is
 * known: the bytes are not a value of the writer schema, or the writer schema cannot be read as
 * the reader schema. Only failures come here, so these may be slow and thorough.
 */
import type { Type, types } from 'avsc';
import { TributaryError } from '../../common/errors.js';
import { readerWriterIncompatibilities } from '../compatibility.js';
import { FRAME_HEADER_BYTES } from './framing.js';
import type { WriterSchema } from './writer-schemas.js';

export function typeLabel(type: Type): string {
  return type.name ?? type.typeName;
}

/** Where in the message the writer schema stops matching the bytes, field by field. */
export function undecodable(writer: WriterSchema, message: Uint8Array, cause?: unknown): TributaryError {
  const bytes = Buffer.from(message.buffer, message.byteOffset, message.length);
  const problem = locate(writer.type, bytes);
  const avscMessage = cause instanceof Error ? cause.message : undefined;
  const reason = problem.reason ?? avscMessage ?? 'the bytes do not form a value of the schema';
  const field = problem.field === undefined ? '' : ` in field "${problem.field}"`;
  return new TributaryError({
    code: 'SERDE_DECODE_FAILED',
    message:
      `a ${message.length}-byte message framed with schema id ${writer.id} (${typeLabel(writer.type)}) does not decode as that schema: ` +
      `${reason}${field} at byte ${problem.offset}${avscMessage !== undefined && problem.reason !== undefined ? ` (avsc: ${avscMessage})` : ''}. ` +
      'The payload was written with a different schema than its id says, or it is corrupt; it cannot be read as it is.',
    cause,
    details: { schemaId: writer.id, offset: problem.offset, length: message.length, ...(problem.field === undefined ? {} : { field: problem.field }) },
  });
}

interface Problem {
  /** Byte of the message (header included) where the failing part starts. */
  readonly offset: number;
  readonly field?: string;
  /** Undefined when avsc threw: its message is the reason. */
  readonly reason?: string;
}

function locate(type: Type, bytes: Buffer): Problem {
  const parts: { name?: string; type: Type }[] =
    type.typeName === 'record' || type.typeName === 'error' ? (type as types.RecordType).fields.map((f) => ({ name: f.name, type: f.type })) : [{ type }];
  let position = FRAME_HEADER_BYTES;
  for (const part of parts) {
    const at = part.name === undefined ? {} : { field: part.name };
    let decoded: { offset: number };
    try {
      decoded = part.type.decode(bytes, position);
    } catch {
      return { offset: position, ...at };
    }
    if (decoded.offset < 0) {
      return { offset: position, ...at, reason: `the message ends before the value does (${bytes.length - position} bytes left)` };
    }
    position = decoded.offset;
  }
  if (position < bytes.length) {
    return { offset: position, reason: `${bytes.length - position} more bytes follow the end of the value` };
  }
  return { offset: FRAME_HEADER_BYTES };
}

/** The writer schema cannot be read as the reader schema: say every reason we can find. */
export function unresolvable(writer: WriterSchema, reader: Type, cause: unknown): TributaryError {
  let reasons: string[] = [];
  try {
    reasons = readerWriterIncompatibilities(reader, writer.type).map((i) => `${i.location}: ${i.message} (${i.type})`);
  } catch {
    // The checker is a second opinion; avsc's own message below still explains.
  }
  const avscMessage = cause instanceof Error ? cause.message : String(cause);
  return new TributaryError({
    code: 'SERDE_NOT_RESOLVABLE',
    message:
      `data written with schema id ${writer.id} (${typeLabel(writer.type)}) cannot be read as the reader schema ${typeLabel(reader)}: ` +
      `${reasons.length > 0 ? reasons.join('; ') : avscMessage}. ` +
      'Read it with a reader schema that can read this writer (give new reader fields defaults, keep field types promotable), or without a reader schema.',
    cause,
    details: { schemaId: writer.id, reader: typeLabel(reader), reasons: reasons.length > 0 ? reasons : [avscMessage] },
  });
}
