/**
 * One reason a reader schema cannot read what a writer schema wrote, named as Avro Java's
 * `SchemaCompatibility.SchemaIncompatibilityType` names it (Confluent's verbose messages and
 * clients use those names).
 */

export const INCOMPATIBILITY_TYPES = [
  'NAME_MISMATCH',
  'FIXED_SIZE_MISMATCH',
  'MISSING_ENUM_SYMBOLS',
  'READER_FIELD_MISSING_DEFAULT_VALUE',
  'TYPE_MISMATCH',
  'MISSING_UNION_BRANCH',
  // Not in Java, which throws instead: a reader field whose name and aliases match several writer
  // fields cannot be resolved (avsc: "ambiguous aliasing").
  'READER_FIELD_MATCHES_MULTIPLE_WRITER_FIELDS',
] as const;

export type IncompatibilityType = (typeof INCOMPATIBILITY_TYPES)[number];

export type CompatibilityDirection = 'new reads old' | 'old reads new';

export interface Incompatibility {
  /** One of INCOMPATIBILITY_TYPES. */
  readonly type: string;
  /** JSON pointer into the reader schema, e.g. /fields/1/type ("/" is the root). */
  readonly location: string;
  /** Java's message: the field name, "[B, D]", "expected: 8, found: 4", "reader type: …". */
  readonly message: string;
  /** Set by checkCompatibility: which of the two schemas was the reader. */
  readonly direction?: CompatibilityDirection;
  /** Set by checkCompatibility: the existing version the candidate conflicts with. */
  readonly version?: number;
}
