/**
 * JSON for Iceberg's metadata files, whose snapshot ids are 63-bit: JSON.parse would round them
 * (tables written by Java carry ids beyond 2^53) and JSON.stringify refuses BigInt. Integers that
 * are not safe JavaScript numbers parse as BigInt (lossless-json); BigInt values print as bare
 * integers (lossless-json both ways).
 */
import { isSafeNumber, parse, stringify } from 'lossless-json';

/** Parses JSON text, integers beyond ±(2^53 − 1) as BigInt. */
export function parseIcebergJson(text: string): unknown {
  return parse(text, undefined, (value: string) => {
    if (/^-?\d+$/.test(value) && !isSafeNumber(value)) return BigInt(value);
    return Number(value);
  });
}

/** JSON text, 2-space indented, BigInt values as bare integers. */
export function stringifyIcebergJson(value: unknown): string {
  return stringify(value, undefined, 2) ?? 'null';
}

/** A snapshot id or similar as read: a number or a BigInt, as BigInt. */
export function asBigInt(value: unknown, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  throw new Error(`${what} is ${JSON.stringify(value)}, not an integer`);
}
