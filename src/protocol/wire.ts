/**
 * Kafka's primitive types (big-endian), read and written with bounds checks.
 *
 *   INT8 INT16 INT32 INT64 UINT32   fixed width, two's complement
 *   BOOLEAN                          INT8, 0 or 1
 *   STRING / NULLABLE_STRING         INT16 length (−1 = null) + UTF-8 bytes
 *   BYTES / NULLABLE_BYTES           INT32 length (−1 = null) + bytes
 *   RECORDS                          NULLABLE_BYTES holding record batches
 *   ARRAY / NULLABLE_ARRAY           INT32 count (−1 = null) + elements
 *
 * and the ones flexible versions use instead (KIP-482):
 *
 *   UNSIGNED_VARINT                  base-128, least significant group first, at most 5 bytes (32 bits)
 *   COMPACT_(NULLABLE_)STRING        UNSIGNED_VARINT length + 1 (0 = null) + UTF-8 bytes (≤ 32767)
 *   COMPACT_(NULLABLE_)BYTES         UNSIGNED_VARINT length + 1 (0 = null) + bytes; COMPACT_RECORDS alike
 *   COMPACT_(NULLABLE_)ARRAY         UNSIGNED_VARINT count + 1 (0 = null) + elements
 *   TAG_BUFFER                       UNSIGNED_VARINT count, then per field: UNSIGNED_VARINT tag,
 *                                    UNSIGNED_VARINT size, size bytes
 *
 * The reader never reads past its end and checks every length and count against the bytes that
 * remain before allocating anything; a violation is a MalformedMessageError. The writer builds a
 * response as a list of parts: its own buffers plus external parts (file ranges of records) that
 * the network layer streams without copying them into the heap.
 */
import { TributaryError } from '../common/errors.js';

/** A request or response whose bytes do not follow the grammar. The connection should close. */
export class MalformedMessageError extends TributaryError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super({ code: 'MALFORMED_MESSAGE', message, details });
    this.name = 'MalformedMessageError';
  }
}

export class WireReader {
  position: number;

  constructor(
    readonly bytes: Buffer,
    start = 0,
    readonly end = bytes.length,
  ) {
    this.position = start;
  }

  remaining(): number {
    return this.end - this.position;
  }

  private take(count: number, what: string): number {
    if (count > this.end - this.position) {
      throw new MalformedMessageError(`${what} needs ${count} bytes but only ${this.end - this.position} remain`);
    }
    const at = this.position;
    this.position += count;
    return at;
  }

  int8(what = 'INT8'): number {
    return this.bytes.readInt8(this.take(1, what));
  }

  int16(what = 'INT16'): number {
    return this.bytes.readInt16BE(this.take(2, what));
  }

  int32(what = 'INT32'): number {
    return this.bytes.readInt32BE(this.take(4, what));
  }

  uint32(what = 'UINT32'): number {
    return this.bytes.readUInt32BE(this.take(4, what));
  }

  int64(what = 'INT64'): bigint {
    return this.bytes.readBigInt64BE(this.take(8, what));
  }

  float64(what = 'FLOAT64'): number {
    return this.bytes.readDoubleBE(this.take(8, what));
  }

  bool(what = 'BOOLEAN'): boolean {
    return this.int8(what) !== 0;
  }

  nullableString(what = 'STRING'): string | null {
    const length = this.int16(`${what} length`);
    if (length === -1) return null;
    if (length < -1) throw new MalformedMessageError(`${what} has negative length ${length}`);
    const at = this.take(length, what);
    return this.bytes.toString('utf8', at, at + length);
  }

  string(what = 'STRING'): string {
    const value = this.nullableString(what);
    if (value === null) throw new MalformedMessageError(`${what} is null where a string is required`);
    return value;
  }

  /** A view into the message bytes (no copy), or null. */
  nullableBytes(what = 'BYTES'): Buffer | null {
    const length = this.int32(`${what} length`);
    if (length === -1) return null;
    if (length < -1) throw new MalformedMessageError(`${what} has negative length ${length}`);
    const at = this.take(length, what);
    return this.bytes.subarray(at, at + length);
  }

  bytesValue(what = 'BYTES'): Buffer {
    const value = this.nullableBytes(what);
    if (value === null) throw new MalformedMessageError(`${what} is null where bytes are required`);
    return value;
  }

  /**
   * An array count, checked against the bytes left given the smallest possible element, so a
   * hostile count cannot make the decoder loop or allocate beyond the message. Null → −1.
   */
  arrayCount(minElementBytes: number, what = 'ARRAY'): number {
    const count = this.int32(`${what} count`);
    if (count < -1) throw new MalformedMessageError(`${what} has negative count ${count}`);
    if (count > 0 && count * Math.max(minElementBytes, 1) > this.remaining()) {
      throw new MalformedMessageError(`${what} declares ${count} elements but only ${this.remaining()} bytes remain`);
    }
    return count;
  }

  /** An UNSIGNED_VARINT of at most 5 bytes whose value fits 32 bits. */
  unsignedVarint(what = 'UNSIGNED_VARINT'): number {
    let value = 0;
    for (let index = 0; index < 5; index += 1) {
      const byte = this.bytes[this.take(1, what)] ?? 0;
      value += (byte & 0x7f) * 2 ** (7 * index);
      if ((byte & 0x80) === 0) {
        if (value > 0xffffffff) throw new MalformedMessageError(`${what} does not fit 32 bits`);
        return value;
      }
    }
    throw new MalformedMessageError(`${what} is longer than 5 bytes`);
  }

  /** A compact length or count: the varint minus one, −1 for null. */
  private compactLength(what: string): number {
    return this.unsignedVarint(what) - 1;
  }

  compactNullableString(what = 'COMPACT_STRING'): string | null {
    const length = this.compactLength(`${what} length`);
    if (length === -1) return null;
    if (length > 0x7fff) throw new MalformedMessageError(`${what} has length ${length}, more than a string may have (32767)`);
    const at = this.take(length, what);
    return this.bytes.toString('utf8', at, at + length);
  }

  compactString(what = 'COMPACT_STRING'): string {
    const value = this.compactNullableString(what);
    if (value === null) throw new MalformedMessageError(`${what} is null where a string is required`);
    return value;
  }

  /** A view into the message bytes (no copy), or null. */
  compactNullableBytes(what = 'COMPACT_BYTES'): Buffer | null {
    const length = this.compactLength(`${what} length`);
    if (length === -1) return null;
    const at = this.take(length, what);
    return this.bytes.subarray(at, at + length);
  }

  compactBytes(what = 'COMPACT_BYTES'): Buffer {
    const value = this.compactNullableBytes(what);
    if (value === null) throw new MalformedMessageError(`${what} is null where bytes are required`);
    return value;
  }

  /** A compact array count, bounded as arrayCount's. Null → −1. */
  compactArrayCount(minElementBytes: number, what = 'COMPACT_ARRAY'): number {
    const count = this.compactLength(`${what} count`);
    if (count > 0 && count * Math.max(minElementBytes, 1) > this.remaining()) {
      throw new MalformedMessageError(`${what} declares ${count} elements but only ${this.remaining()} bytes remain`);
    }
    return count;
  }

  /**
   * A TAG_BUFFER, skipped: Tributary's schemas declare no tagged field, so every tag is unknown
   * (as to Kafka's generated readers, which keep unknown tags aside). Each field takes at least
   * two bytes (tag and size), which bounds the count by what remains.
   */
  skipTaggedFields(what = 'TAG_BUFFER'): void {
    const count = this.unsignedVarint(`${what} count`);
    if (count * 2 > this.remaining()) throw new MalformedMessageError(`${what} declares ${count} tagged fields but only ${this.remaining()} bytes remain`);
    for (let index = 0; index < count; index += 1) {
      this.unsignedVarint(`${what} tag`);
      const size = this.unsignedVarint(`${what} field size`);
      this.take(size, `${what} field`);
    }
  }
}

/** Bytes the network layer supplies itself (a file range of record batches). */
export interface ExternalPart {
  readonly kind: 'external';
  readonly length: number;
  readonly source: unknown;
}

export type MessagePart = Buffer | ExternalPart;

export function isExternalPart(part: unknown): part is ExternalPart {
  return typeof part === 'object' && part !== null && (part as { kind?: unknown }).kind === 'external';
}

/** Byte strings this long are referenced by a WireWriter, not copied into it. */
export const ZERO_COPY_BYTES = 4096;

export class WireWriter {
  private readonly parts: MessagePart[] = [];
  private chunk: Buffer;
  private used = 0;
  private total = 0;

  constructor(initialSize = 256) {
    this.chunk = Buffer.allocUnsafe(initialSize);
  }

  /** Reserves `count` bytes and returns where they start; may replace `this.chunk`, so read it after. */
  private room(count: number): number {
    if (this.used + count > this.chunk.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.chunk.length * 2, this.used + count));
      this.chunk.copy(grown, 0, 0, this.used);
      this.chunk = grown;
    }
    const at = this.used;
    this.used += count;
    this.total += count;
    return at;
  }

  int8(value: number): this {
    const at = this.room(1);
    this.chunk.writeInt8(value, at);
    return this;
  }

  int16(value: number): this {
    const at = this.room(2);
    this.chunk.writeInt16BE(value, at);
    return this;
  }

  int32(value: number): this {
    const at = this.room(4);
    this.chunk.writeInt32BE(value, at);
    return this;
  }

  uint32(value: number): this {
    const at = this.room(4);
    this.chunk.writeUInt32BE(value, at);
    return this;
  }

  int64(value: bigint): this {
    const at = this.room(8);
    this.chunk.writeBigInt64BE(value, at);
    return this;
  }

  float64(value: number): this {
    const at = this.room(8);
    this.chunk.writeDoubleBE(value, at);
    return this;
  }

  bool(value: boolean): this {
    return this.int8(value ? 1 : 0);
  }

  nullableString(value: string | null): this {
    if (value === null) return this.int16(-1);
    const length = Buffer.byteLength(value, 'utf8');
    if (length > 0x7fff) throw new RangeError(`string of ${length} bytes does not fit an INT16 length`);
    this.int16(length);
    const at = this.room(length);
    this.chunk.write(value, at, length, 'utf8');
    return this;
  }

  unsignedVarint(value: number): this {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new RangeError(`${value} is not an unsigned 32-bit varint`);
    let rest = value;
    while (rest >= 0x80) {
      this.int8Unsigned((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    return this.int8Unsigned(rest);
  }

  private int8Unsigned(value: number): this {
    const at = this.room(1); // room may replace this.chunk: read it after
    this.chunk[at] = value;
    return this;
  }

  /** COMPACT_NULLABLE_STRING: length + 1 as an unsigned varint (0 = null), then UTF-8. */
  compactNullableString(value: string | null): this {
    if (value === null) return this.unsignedVarint(0);
    const length = Buffer.byteLength(value, 'utf8');
    if (length > 0x7fff) throw new RangeError(`string of ${length} bytes is longer than a string may be (32767)`);
    this.unsignedVarint(length + 1);
    const at = this.room(length);
    this.chunk.write(value, at, length, 'utf8');
    return this;
  }

  /** A compact array's count + 1 (0 = null). */
  compactArrayCount(count: number | null): this {
    return this.unsignedVarint(count === null ? 0 : count + 1);
  }

  /** An empty TAG_BUFFER: Tributary writes no tagged field. */
  emptyTaggedFields(): this {
    return this.int8(0);
  }

  /**
   * Bytes of at least ZERO_COPY_BYTES are not copied: the message keeps a reference to `value`
   * as a part of its own (a 512 KiB record batch goes to the socket as is), so the caller must
   * not change `value` until the message is written.
   */
  nullableBytes(value: Buffer | null): this {
    if (value === null) return this.int32(-1);
    this.int32(value.length);
    return this.byteString(value);
  }

  /** COMPACT_NULLABLE_BYTES (length + 1, 0 = null); long values are referenced as by nullableBytes. */
  compactNullableBytes(value: Buffer | null): this {
    if (value === null) return this.unsignedVarint(0);
    this.unsignedVarint(value.length + 1);
    return this.byteString(value);
  }

  private byteString(value: Buffer): this {
    if (value.length >= ZERO_COPY_BYTES) {
      this.cut();
      this.parts.push(value);
      this.total += value.length;
      return this;
    }
    const at = this.room(value.length);
    value.copy(this.chunk, at);
    return this;
  }

  /** RECORDS whose bytes the network layer will supply: a length, then a hole of that size. */
  external(part: ExternalPart): this {
    this.int32(part.length);
    return this.hole(part);
  }

  /** COMPACT_RECORDS whose bytes the network layer will supply. */
  compactExternal(part: ExternalPart): this {
    this.unsignedVarint(part.length + 1);
    return this.hole(part);
  }

  private hole(part: ExternalPart): this {
    this.cut();
    this.parts.push(part);
    this.total += part.length;
    return this;
  }

  /** Total bytes written, external parts included. */
  get length(): number {
    return this.total;
  }

  /** The message as parts in order; a message without external parts is a single Buffer. */
  finish(): MessagePart[] {
    this.cut();
    return this.parts;
  }

  /** The message as one Buffer; only for messages without external parts. */
  toBuffer(): Buffer {
    const parts = this.finish();
    if (parts.some(isExternalPart)) throw new Error('message has external parts; stream them instead');
    return Buffer.concat(parts as Buffer[]);
  }

  private cut(): void {
    if (this.used > 0) {
      this.parts.push(this.chunk.subarray(0, this.used));
      this.chunk = this.chunk.subarray(this.used);
      this.used = 0;
      if (this.chunk.length < 64) this.chunk = Buffer.allocUnsafe(256);
    }
  }
}
