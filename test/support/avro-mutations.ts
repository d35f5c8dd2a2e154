/**
 * Framed Avro payloads (magic byte 0, schema id, datum) for the payload fuzz run, valid and
 * broken, from one seeded generator: bit flips, truncation, bytes appended, unknown schema ids,
 * wrong magic bytes, and length prefixes that lie (strings, bytes, array and map block counts,
 * up to 2^31 and beyond), each with the name of what was done.
 */
import type { Type } from 'avsc';
import { frame } from '../../src/registry/serde/framing.js';

export const MUTATIONS = ['bit-flips', 'truncated', 'appended', 'unknown-id', 'wrong-magic', 'length-lie', 'huge-count', 'short-frame'] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** Avro's zigzag varint of a long. */
export function avroLong(value: number): Buffer {
  let zigzag = value >= 0 ? BigInt(value) * 2n : -BigInt(value) * 2n - 1n;
  const bytes: number[] = [];
  while (zigzag > 0x7fn) {
    bytes.push(Number(zigzag & 0x7fn) | 0x80);
    zigzag >>= 7n;
  }
  bytes.push(Number(zigzag));
  return Buffer.from(bytes);
}

/** A payload broken by `mutation` from a valid framed one. */
export function mutate(random: () => number, valid: Buffer, mutation: Mutation, unknownId: number): Buffer {
  const int = (below: number): number => Math.floor(random() * below);
  const bytes = Buffer.from(valid);
  switch (mutation) {
    case 'bit-flips': {
      for (let flips = 0; flips < 1 + int(4); flips += 1) {
        const at = 5 + int(Math.max(bytes.length - 5, 1));
        if (at < bytes.length) bytes[at] = bytes[at]! ^ (1 << int(8));
      }
      return bytes;
    }
    case 'truncated':
      return bytes.subarray(0, 5 + int(Math.max(bytes.length - 5, 1)));
    case 'appended':
      return Buffer.concat([bytes, Buffer.from(Array.from({ length: 1 + int(8) }, () => int(256)))]);
    case 'unknown-id':
      bytes.writeInt32BE(unknownId + int(1000), 1);
      return bytes;
    case 'wrong-magic':
      bytes[0] = 1 + int(255);
      return bytes;
    case 'short-frame':
      return bytes.subarray(0, int(5));
    case 'length-lie':
    case 'huge-count': {
      // A varint somewhere in the datum replaced by a lie: a string/bytes length or a block count.
      const lie = mutation === 'huge-count' ? [2 ** 31, 2 ** 31 - 1, 2 ** 40, -(2 ** 31), 2 ** 53 - 1][int(5)]! : [bytes.length, bytes.length * 2, 1000, -1, -1000][int(5)]!;
      const at = 5 + int(Math.max(bytes.length - 5, 1));
      return Buffer.concat([bytes.subarray(0, at), avroLong(lie), bytes.subarray(Math.min(at + 1, bytes.length))]);
    }
  }
}

/** A valid framed payload of a random value of `type`, and that value as written (floats rounded to 32 bits). */
export function validPayload(type: Type, schemaId: number): { value: unknown; payload: Buffer } {
  const datum = type.toBuffer(type.random());
  return { value: type.fromBuffer(datum), payload: frame(schemaId, datum) };
}

/** Counts of what `drawPayload` drew. */
export interface PayloadTally {
  valid: number;
  broken: number;
  readonly byMutation: Record<Mutation, number>;
}

export function newPayloadTally(): PayloadTally {
  return { valid: 0, broken: 0, byMutation: Object.fromEntries(MUTATIONS.map((mutation) => [mutation, 0])) as Record<Mutation, number> };
}

/**
 * One payload of the fuzz runs: a random value of a random writer, broken by a random mutation
 * with probability `brokenShare`; counted in `tally`.
 */
export function drawPayload<Writer extends { readonly id: number; readonly type: Type }>(
  random: () => number,
  writers: readonly Writer[],
  options: { readonly brokenShare: number; readonly unknownId: number; readonly tally: PayloadTally },
): { readonly writer: Writer; readonly value: unknown; readonly bytes: Buffer; readonly mutation: Mutation | undefined } {
  const int = (below: number): number => Math.floor(random() * below);
  const writer = writers[int(writers.length)]!;
  const { value, payload } = validPayload(writer.type, writer.id);
  const mutation = random() < options.brokenShare ? MUTATIONS[int(MUTATIONS.length)]! : undefined;
  const bytes = mutation === undefined ? payload : mutate(random, payload, mutation, options.unknownId);
  if (mutation === undefined) options.tally.valid += 1;
  else {
    options.tally.broken += 1;
    options.tally.byMutation[mutation] += 1;
  }
  return { writer, value, bytes, mutation };
}
