/**
 * The schema-registry framing of one Avro datum (Confluent's wire format, version 0):
 *
 *   message   = magic schema-id avro-datum
 *   magic     = %x00                       ; 1 byte
 *   schema-id = 4 bytes, int32 big-endian  ; the registry's global id (positive)
 *   avro-datum = the Avro binary encoding of one value of the writer schema, to the end of the
 *                message (no container-file header, no single-object header)
 *
 * e.g. {name: "ann"} written with schema id 1 is 00 00000001 06 616e6e.
 * Confluent 8.x also knows a magic byte 1 followed by a 16-byte schema GUID; producers use 0 by
 * default and we neither write nor read 1.
 */
import { TributaryError } from '../../common/errors.js';

export const MAGIC_BYTE = 0x00;
/** Bytes before the Avro datum: the magic byte and the schema id. */
export const FRAME_HEADER_BYTES = 5;
const MAX_SCHEMA_ID = 2 ** 31 - 1;

/** Writes the 5-byte header at the start of `target`. */
export function writeFrameHeader(target: Buffer, schemaId: number): void {
  if (!Number.isSafeInteger(schemaId) || schemaId < 1 || schemaId > MAX_SCHEMA_ID) {
    throw new TributaryError({
      code: 'SERDE_BAD_SCHEMA_ID',
      message: `schema id ${String(schemaId)} cannot be framed: ids are integers from 1 to 2^31-1 given by the registry`,
      details: { schemaId },
    });
  }
  target[0] = MAGIC_BYTE;
  target.writeInt32BE(schemaId, 1);
}

/** header + datum in one new buffer. */
export function frame(schemaId: number, avroDatum: Uint8Array): Buffer {
  const message = Buffer.allocUnsafe(FRAME_HEADER_BYTES + avroDatum.length);
  writeFrameHeader(message, schemaId);
  message.set(avroDatum, FRAME_HEADER_BYTES);
  return message;
}

/**
 * The schema id a framed message names; throws SERDE_NOT_FRAMED or SERDE_FRAME_TOO_SHORT when
 * the bytes are not a framed message. Allocates nothing: it is on every decode.
 */
export function schemaIdOf(message: Uint8Array): number {
  if (message.length < FRAME_HEADER_BYTES) throw tooShort(message);
  if (message[0] !== MAGIC_BYTE) throw notFramed(message);
  // Big-endian int32, read without a DataView so a plain Uint8Array works too.
  const id = ((message[1]! << 24) | (message[2]! << 16) | (message[3]! << 8) | message[4]!) >>> 0;
  if (id === 0 || id > MAX_SCHEMA_ID) {
    throw new TributaryError({
      code: 'SERDE_BAD_SCHEMA_ID',
      message: `the message names schema id ${id > MAX_SCHEMA_ID ? id - 2 ** 32 : id}, which no registry gives out (ids are 1 to 2^31-1): the payload is corrupt or not schema-registry framed`,
      details: { schemaId: id, header: hex(message.subarray(0, FRAME_HEADER_BYTES)) },
    });
  }
  return id;
}

function tooShort(message: Uint8Array): TributaryError {
  return new TributaryError({
    code: 'SERDE_FRAME_TOO_SHORT',
    message:
      `the message is ${message.length} byte${message.length === 1 ? '' : 's'} long (${hex(message)}), shorter than the ` +
      `${FRAME_HEADER_BYTES}-byte schema-registry header (magic byte 0 + 4-byte schema id): it is empty, truncated or not framed`,
    details: { length: message.length },
  });
}

function notFramed(message: Uint8Array): TributaryError {
  const first = message[0]!;
  const hint =
    first === 0x01
      ? ' (magic byte 1 is Confluent 8.x GUID framing, which Tributary does not read; have the producer use schema ids)'
      : first === 0xc3 && message[1] === 0x01
        ? ' (C3 01 starts Avro single-object encoding, a different framing)'
        : first === 0x7b
          ? ' (it starts with "{": it looks like JSON)'
          : '';
  return new TributaryError({
    code: 'SERDE_NOT_FRAMED',
    message:
      `the message starts with byte 0x${first.toString(16).padStart(2, '0')}, not the magic byte 0x00: the payload is not ` +
      `schema-registry framed Avro${hint}. First bytes: ${hex(message.subarray(0, 16))}`,
    details: { magicByte: first, length: message.length },
  });
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('hex').replace(/(..)(?!$)/g, '$1 ');
}
