/**
 * Avro schema compatibility for the schema registry (stub; implementation follows).
 */
import type { Type } from 'avsc';

import { TributaryError } from '../common/errors.js';
import type { ParsedSchema } from './avro-schema.js';

export const COMPATIBILITY_LEVELS = [
  'NONE',
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
] as const;

export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number];

export function isCompatibilityLevel(value: unknown): value is CompatibilityLevel {
  return typeof value === 'string' && (COMPATIBILITY_LEVELS as readonly string[]).includes(value);
}

export interface Incompatibility {
  /** Java SchemaCompatibility name, e.g. READER_FIELD_MISSING_DEFAULT_VALUE, TYPE_MISMATCH. */
  readonly type: string;
  /** JSON pointer into the reader schema, e.g. /fields/1/type. */
  readonly location: string;
  readonly message: string;
  readonly direction?: 'new reads old' | 'old reads new';
  /** The existing version the candidate conflicts with. */
  readonly version?: number;
}

function notImplemented(what: string): never {
  throw new TributaryError({ code: 'NOT_IMPLEMENTED', message: `${what} is not implemented yet` });
}

export function readerWriterIncompatibilities(reader: Type, writer: Type): Incompatibility[] {
  void reader;
  void writer;
  return notImplemented('readerWriterIncompatibilities');
}

export function checkCompatibility(
  level: CompatibilityLevel,
  candidate: ParsedSchema,
  existing: readonly { readonly version: number; readonly schema: ParsedSchema }[],
): Incompatibility[] {
  void level;
  void candidate;
  void existing;
  return notImplemented('checkCompatibility');
}

export function describeIncompatibility(incompatibility: Incompatibility): string {
  void incompatibility;
  return notImplemented('describeIncompatibility');
}
