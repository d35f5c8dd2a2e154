/**
 * Zig-zag base-128 varints, as records use them (Kafka's ByteUtils): value v is written as
 * (v << 1) ^ (v >> 31) in 7-bit groups, least significant first, high bit = more follows.
 * Varlongs use the same scheme on 64 bits; JS numbers carry them exactly up to 2^53.
 */
import { KafkaProtocolError } from './kafka-errors.js';

export function varintSize(value: number): number {
  let zigzag = ((value << 1) ^ (value >> 31)) >>> 0;
  let size = 1;
  while (zigzag >= 0x80) {
    zigzag >>>= 7;
    size += 1;
  }
  return size;
}

export function writeVarint(bytes: Buffer, position: number, value: number): number {
  let zigzag = ((value << 1) ^ (value >> 31)) >>> 0;
  while (zigzag >= 0x80) {
    bytes[position++] = (zigzag & 0x7f) | 0x80;
    zigzag >>>= 7;
  }
  bytes[position++] = zigzag;
  return position;
}

/** Zig-zag of a safe integer as a non-negative number (exact below 2^52 in magnitude). */
function zigzagNumber(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

/** Below this magnitude a varlong is computed without BigInt (the zig-zag stays under 2^53). */
const NUMBER_SAFE_VARLONG = 2 ** 52;

export function varlongSize(value: number): number {
  // The common case (timestamp and offset deltas) fits 32 bits, where varlong = varint.
  if (value >= -0x80000000 && value <= 0x7fffffff) return varintSize(value);
  if (Math.abs(value) < NUMBER_SAFE_VARLONG) {
    let zigzag = zigzagNumber(value);
    let size = 1;
    while (zigzag >= 0x80) {
      zigzag = Math.floor(zigzag / 0x80);
      size += 1;
    }
    return size;
  }
  let zigzag = (BigInt(value) << 1n) ^ (BigInt(value) >> 63n);
  let size = 1;
  while (zigzag >= 0x80n) {
    zigzag >>= 7n;
    size += 1;
  }
  return size;
}

export function writeVarlong(bytes: Buffer, position: number, value: number): number {
  if (value >= -0x80000000 && value <= 0x7fffffff) return writeVarint(bytes, position, value);
  if (Math.abs(value) < NUMBER_SAFE_VARLONG) {
    let zigzag = zigzagNumber(value);
    while (zigzag >= 0x80) {
      bytes[position++] = (zigzag % 0x80) | 0x80;
      zigzag = Math.floor(zigzag / 0x80);
    }
    bytes[position++] = zigzag;
    return position;
  }
  let zigzag = BigInt.asUintN(64, (BigInt(value) << 1n) ^ (BigInt(value) >> 63n));
  while (zigzag >= 0x80n) {
    bytes[position++] = Number(zigzag & 0x7fn) | 0x80;
    zigzag >>= 7n;
  }
  bytes[position++] = Number(zigzag);
  return position;
}

/** A cursor over bytes that refuses to read past `end`. */
export class ByteReader {
  constructor(
    readonly bytes: Buffer,
    public position: number,
    readonly end: number,
  ) {}

  remaining(): number {
    return this.end - this.position;
  }

  private need(count: number, what: string): void {
    if (count > this.end - this.position) {
      throw new KafkaProtocolError('CORRUPT_MESSAGE', `truncated ${what}: needs ${count} bytes, ${this.end - this.position} remain`);
    }
  }

  int8(what: string): number {
    this.need(1, what);
    return this.bytes.readInt8(this.position++);
  }

  varint(what: string): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      this.need(1, what);
      const byte = this.bytes[this.position++] ?? 0;
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
      shift += 7;
      if (shift > 28) throw new KafkaProtocolError('CORRUPT_MESSAGE', `${what}: varint longer than 5 bytes`);
    }
    return (result >>> 1) ^ -(result & 1);
  }

  varlong(what: string): number {
    // Fast path: up to 4 bytes (28 bits) decode like a varint; record deltas almost always fit.
    const start = this.position;
    let small = 0;
    for (let shift = 0; shift < 28 && start + shift / 7 < this.end; shift += 7) {
      const byte = this.bytes[start + shift / 7] ?? 0;
      small |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        this.position = start + shift / 7 + 1;
        return (small >>> 1) ^ -(small & 1);
      }
    }
    let result = 0n;
    let shift = 0n;
    for (;;) {
      this.need(1, what);
      const byte = BigInt(this.bytes[this.position++] ?? 0);
      result |= (byte & 0x7fn) << shift;
      if ((byte & 0x80n) === 0n) break;
      shift += 7n;
      if (shift > 63n) throw new KafkaProtocolError('CORRUPT_MESSAGE', `${what}: varlong longer than 10 bytes`);
    }
    return Number((result >> 1n) ^ -(result & 1n));
  }

  /** `length` bytes as a view (no copy), or null for length −1. */
  bytesOrNull(length: number, what: string): Buffer | null {
    if (length === -1) return null;
    if (length < -1) throw new KafkaProtocolError('CORRUPT_MESSAGE', `${what}: negative length ${length}`);
    this.need(length, what);
    const view = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return view;
  }
}
