import { describe, expect, it } from 'vitest';
import { ByteReader, varlongSize, writeVarlong } from '../../../src/protocol/varint.js';

/** The definition, on BigInt: zig-zag on 64 bits, then 7-bit groups, least significant first. */
function referenceVarlong(value: number): number[] {
  let zigzag = BigInt.asUintN(64, (BigInt(value) << 1n) ^ (BigInt(value) >> 63n));
  const bytes: number[] = [];
  while (zigzag >= 0x80n) {
    bytes.push(Number(zigzag & 0x7fn) | 0x80);
    zigzag >>= 7n;
  }
  bytes.push(Number(zigzag));
  return bytes;
}

describe('varlong', () => {
  const edges = [
    0, 1, -1, 63, -64, 64, -65, 2 ** 30 - 1, -(2 ** 30), 2 ** 30, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 31) - 1,
    2 ** 32, 1_764_000_000_000, -1_764_000_000_000, 2 ** 52 - 1, -(2 ** 52) + 1, 2 ** 52, -(2 ** 52), Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER,
  ];
  let seed = 12345;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const randoms = Array.from({ length: 2000 }, () => Math.round((random() - 0.5) * 2 ** Math.floor(random() * 54)) + 0);

  it('writes every value (int32 range, up to 2^52, beyond) exactly as the BigInt definition, and reads it back', () => {
    for (const value of [...edges, ...randoms]) {
      const expected = referenceVarlong(value);
      const buffer = Buffer.alloc(10);
      const end = writeVarlong(buffer, 0, value);
      expect([...buffer.subarray(0, end)], String(value)).toEqual(expected);
      expect(varlongSize(value), String(value)).toBe(expected.length);
      expect(new ByteReader(buffer, 0, end).varlong("value")).toBe(value);
    }
  });
});
