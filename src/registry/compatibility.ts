/**
 * Schema compatibility for the registry: the seven Confluent levels, decided by Avro's
 * reader/writer rules (compatibility/reader-writer.ts), with every violation reported.
 *
 * | level               | reader ← writer                    | against                         |
 * |---------------------|------------------------------------|---------------------------------|
 * | NONE                | –                                  | –                               |
 * | BACKWARD            | new reads old                      | the latest version              |
 * | FORWARD             | old reads new                      | the latest version              |
 * | FULL                | both                               | the latest version              |
 * | *_TRANSITIVE        | as above                           | every live version, newest first |
 *
 * As Confluent does, a transitive check stops at the newest version that fails and reports that
 * version's violations (all of them, in both directions for FULL).
 */
import type { Type } from 'avsc';

import { TributaryError } from '../common/errors.js';
import type { ParsedSchema } from './avro-schema.js';
import { ROOT_POINTER, childPointer } from './avro-schema/pointer.js';
import type { CompatibilityDirection, Incompatibility } from './compatibility/incompatibility.js';
import { ReaderWriterChecker } from './compatibility/reader-writer.js';

export type { CompatibilityDirection, Incompatibility, IncompatibilityType } from './compatibility/incompatibility.js';
export { INCOMPATIBILITY_TYPES } from './compatibility/incompatibility.js';

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

/** Every reason `reader` cannot read data written with `writer`; [] when it always can. */
export function readerWriterIncompatibilities(reader: Type, writer: Type): Incompatibility[] {
  return new ReaderWriterChecker().check(reader, writer).map((found) => ({
    type: found.type,
    location: found.path.reduce(childPointer, ROOT_POINTER),
    message: found.message,
  }));
}

/**
 * Whether `candidate` may become the next version of a subject whose live versions are
 * `existing` (oldest first): [] when it may, else the violations, each with the direction and the
 * existing version it conflicts with.
 */
export function checkCompatibility(
  level: CompatibilityLevel,
  candidate: ParsedSchema,
  existing: readonly { readonly version: number; readonly schema: ParsedSchema }[],
): Incompatibility[] {
  if (!isCompatibilityLevel(level)) {
    throw new TributaryError({
      code: 'COMPATIBILITY_LEVEL_INVALID',
      message: `Invalid compatibility level ${JSON.stringify(level)}; use one of ${COMPATIBILITY_LEVELS.join(', ')}`,
      details: { level },
    });
  }
  if (level === 'NONE') return [];
  const directions: readonly CompatibilityDirection[] = level.startsWith('BACKWARD')
    ? ['new reads old']
    : level.startsWith('FORWARD')
      ? ['old reads new']
      : ['new reads old', 'old reads new'];
  const newestFirst = [...existing].reverse();
  const against = level.endsWith('_TRANSITIVE') ? newestFirst : newestFirst.slice(0, 1);
  for (const { version, schema } of against) {
    const found = directions.flatMap((direction) => {
      const [reader, writer] =
        direction === 'new reads old' ? [candidate.type, schema.type] : [schema.type, candidate.type];
      return readerWriterIncompatibilities(reader, writer).map((incompatibility) => ({
        ...incompatibility,
        direction,
        version,
      }));
    });
    if (found.length > 0) return found;
  }
  return [];
}

/** How each type of violation reads; `reader`/`writer` are "new"/"old" as the direction says. */
const DESCRIPTIONS: Readonly<Record<string, (where: string, message: string, reader: string, writer: string) => string>> = {
  READER_FIELD_MISSING_DEFAULT_VALUE: (where, message, reader, writer) =>
    `The field '${message}' at path '${where}' in the ${reader} schema has no default value and is missing in the ${writer} schema`,
  TYPE_MISMATCH: (where, _message, reader, writer) =>
    `The type at path '${where}' in the ${reader} schema cannot read the type the ${writer} schema has there`,
  NAME_MISMATCH: (where, _message, reader, writer) =>
    `The name at path '${where}' in the ${reader} schema differs from the ${writer} schema's and is not one of its aliases`,
  FIXED_SIZE_MISMATCH: (where, _message, reader, writer) =>
    `The size of the fixed type at path '${where}' in the ${reader} schema differs from the ${writer} schema's`,
  MISSING_ENUM_SYMBOLS: (where, message, reader, writer) =>
    `The ${reader} schema is missing enum symbols '${message}' at path '${where}' that the ${writer} schema has`,
  MISSING_UNION_BRANCH: (where, _message, reader, writer) =>
    `The ${reader} schema has no union branch at path '${where}' that can read the ${writer} schema's type`,
  READER_FIELD_MATCHES_MULTIPLE_WRITER_FIELDS: (where, _message, reader, writer) =>
    `The field at path '${where}' in the ${reader} schema matches several fields of the ${writer} schema by name and aliases`,
};

/**
 * One line in the shape of Confluent's verbose compatibility messages, e.g.
 * {errorType:'TYPE_MISMATCH', description:'…', additionalInfo:'reader type: INT not compatible with
 * writer type: LONG', location:'/fields/0/type', oldSchemaVersion:2, direction:'new reads old'}
 */
export function describeIncompatibility(incompatibility: Incompatibility): string {
  const { type, location, message, direction, version } = incompatibility;
  const [reader, writer] =
    direction === 'new reads old' ? ['new', 'old'] : direction === 'old reads new' ? ['old', 'new'] : ['reader', 'writer'];
  const describe = DESCRIPTIONS[type];
  const description = describe === undefined ? `Incompatible at path '${location}'` : describe(location, message, reader, writer);
  const parts = [
    `errorType:'${type}'`,
    `description:'${description}'`,
    `additionalInfo:'${message}'`,
    `location:'${location}'`,
  ];
  if (version !== undefined) parts.push(`oldSchemaVersion:${version}`);
  if (direction !== undefined) parts.push(`direction:'${direction}'`);
  return `{${parts.join(', ')}}`;
}
