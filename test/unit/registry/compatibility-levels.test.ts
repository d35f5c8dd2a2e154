import { describe, expect, it } from 'vitest';

import { isTributaryError } from '../../../src/common/errors.js';
import { parseAvroSchema, type ParsedSchema } from '../../../src/registry/avro-schema.js';
import {
  checkCompatibility,
  COMPATIBILITY_LEVELS,
  describeIncompatibility,
  isCompatibilityLevel,
  type CompatibilityLevel,
} from '../../../src/registry/compatibility.js';

const record = (fields: readonly unknown[]): ParsedSchema =>
  parseAvroSchema(JSON.stringify({ type: 'record', name: 'myrecord', fields }));

// The schemas of Confluent's AvroCompatibilityTest (core/src/test/java/io/confluent/kafka/
// schemaregistry/avro/AvroCompatibilityTest.java), as data.
const s1 = record([{ type: 'string', name: 'f1' }]);
const s2 = record([
  { type: 'string', name: 'f1' },
  { type: 'string', name: 'f2', default: 'foo' },
]);
const s3 = record([
  { type: 'string', name: 'f1' },
  { type: 'string', name: 'f2' },
]);
const s4 = record([{ type: 'string', name: 'f1_new', aliases: ['f1'] }]);
const s6 = record([{ type: ['null', 'string'], name: 'f1', doc: 'doc of f1' }]);
const s7 = record([{ type: ['null', 'string', 'int'], name: 'f1', doc: 'doc of f1' }]);
const s8 = record([
  { type: 'string', name: 'f1' },
  { type: 'string', name: 'f2', default: 'foo' },
  { type: 'string', name: 'f3', default: 'bar' },
]);
const schemas = { s1, s2, s3, s4, s6, s7, s8 };
type SchemaName = keyof typeof schemas;

/** Level, candidate, live versions oldest first, expected verdict; the comment is Confluent's. */
const confluentMatrix: readonly (readonly [CompatibilityLevel, SchemaName, readonly SchemaName[], boolean, string])[] = [
  ['BACKWARD', 's2', ['s1'], true, 'adding a field with default is a backward compatible change'],
  ['BACKWARD', 's3', ['s1'], false, 'adding a field w/o default is not a backward compatible change'],
  ['BACKWARD', 's4', ['s1'], true, 'changing field name with alias is a backward compatible change'],
  ['BACKWARD', 's6', ['s1'], true, 'evolving a field type to a union is a backward compatible change'],
  ['BACKWARD', 's1', ['s6'], false, 'removing a type from a union is not a backward compatible change'],
  ['BACKWARD', 's7', ['s6'], true, 'adding a new type in union is a backward compatible change'],
  ['BACKWARD', 's6', ['s7'], false, 'removing a type from a union is not a backward compatible change'],
  ['BACKWARD', 's3', ['s1', 's2'], true, 'only the latest version (s2) is checked'],
  ['BACKWARD_TRANSITIVE', 's8', ['s1', 's2'], true, 'iteratively adding fields with defaults is a compatible change'],
  ['BACKWARD_TRANSITIVE', 's2', ['s1'], true, 'adding a field with default is a backward compatible change'],
  ['BACKWARD_TRANSITIVE', 's3', ['s2'], true, 'removing a default is a compatible change, but not transitively'],
  ['BACKWARD_TRANSITIVE', 's3', ['s2', 's1'], false, 'removing a default is not a transitively compatible change'],
  ['FORWARD', 's2', ['s1'], true, 'adding a field is a forward compatible change'],
  ['FORWARD', 's3', ['s1'], true, 'adding a field is a forward compatible change'],
  ['FORWARD', 's3', ['s2'], true, 'adding a field is a forward compatible change'],
  ['FORWARD', 's2', ['s3'], true, 'adding a field is a forward compatible change'],
  ['FORWARD', 's1', ['s3', 's2'], true, 'only the latest version (s2) is checked'],
  ['FORWARD_TRANSITIVE', 's1', ['s8', 's2'], true, 'iteratively removing fields with defaults is a compatible change'],
  ['FORWARD_TRANSITIVE', 's2', ['s3'], true, 'adding default to a field is a compatible change'],
  ['FORWARD_TRANSITIVE', 's1', ['s2'], true, 'removing a field with a default is a compatible change'],
  ['FORWARD_TRANSITIVE', 's1', ['s2', 's3'], false, 'removing a default is not a transitively compatible change'],
  ['FULL', 's2', ['s1'], true, 'adding a field with default is a backward and a forward compatible change'],
  ['FULL', 's3', ['s1', 's2'], true, 'only the latest version (s2) is checked'],
  ['FULL', 's1', ['s3', 's2'], true, 'only the latest version (s2) is checked'],
  ['FULL_TRANSITIVE', 's8', ['s1', 's2'], true, 'iteratively adding fields with defaults is a compatible change'],
  ['FULL_TRANSITIVE', 's1', ['s8', 's2'], true, 'iteratively removing fields with defaults is a compatible change'],
  ['FULL_TRANSITIVE', 's2', ['s3'], true, 'adding default to a field is a compatible change'],
  ['FULL_TRANSITIVE', 's1', ['s2'], true, 'removing a field with a default is a compatible change'],
  ['FULL_TRANSITIVE', 's2', ['s1'], true, 'adding a field with default is a compatible change'],
  ['FULL_TRANSITIVE', 's3', ['s2'], true, 'removing a default from a field compatible change'],
  ['FULL_TRANSITIVE', 's3', ['s2', 's1'], false, 'transitively adding a field without a default is not a compatible change'],
  ['FULL_TRANSITIVE', 's1', ['s2', 's3'], false, 'transitively removing a field without a default is not a compatible change'],
  ['NONE', 's3', ['s1'], true, 'NONE checks nothing'],
  ['NONE', 's6', ['s7'], true, 'NONE checks nothing'],
];

function versions(names: readonly SchemaName[]) {
  return names.map((name, index) => ({ version: index + 1, schema: schemas[name] }));
}

describe('checkCompatibility: Confluent AvroCompatibilityTest matrix', () => {
  it.each(confluentMatrix)('%s: %s after %j → compatible %s (%s)', (level, candidate, existing, compatible) => {
    const found = checkCompatibility(level, schemas[candidate], versions(existing));
    expect(found.length === 0).toBe(compatible);
  });

  it.each(COMPATIBILITY_LEVELS)('%s accepts any first version of a subject', (level) => {
    expect(checkCompatibility(level, s3, [])).toEqual([]);
  });
});

describe('checkCompatibility: transitive levels look at every live version', () => {
  // Three versions where the candidate fits the latest but not the first.
  const chains: readonly (readonly [CompatibilityLevel, CompatibilityLevel, SchemaName, SchemaName, SchemaName, string, string])[] = [
    ['BACKWARD', 'BACKWARD_TRANSITIVE', 's1', 's2', 's3', 'new reads old', 'f2'],
    ['FORWARD', 'FORWARD_TRANSITIVE', 's3', 's2', 's1', 'old reads new', 'f2'],
    ['FULL', 'FULL_TRANSITIVE', 's3', 's2', 's1', 'old reads new', 'f2'],
  ];

  it.each(chains)(
    '%s passes and %s fails for %s, %s then %s, naming version 1',
    (plain, transitive, first, second, candidate, direction, field) => {
      const existing = [
        { version: 1, schema: schemas[first] },
        { version: 2, schema: schemas[second] },
      ];
      expect(checkCompatibility(plain, schemas[candidate], existing)).toEqual([]);
      expect(checkCompatibility(transitive, schemas[candidate], existing)).toEqual([
        {
          type: 'READER_FIELD_MISSING_DEFAULT_VALUE',
          location: '/fields/1',
          message: field,
          direction,
          version: 1,
        },
      ]);
    },
  );

  it('reports only the newest failing version, with the caller\'s version numbers', () => {
    const existing = [
      { version: 3, schema: s1 },
      { version: 7, schema: s1 },
      { version: 9, schema: s2 },
    ];
    const found = checkCompatibility('BACKWARD_TRANSITIVE', s3, existing);
    expect(found.map(({ version }) => version)).toEqual([7]);
  });

  it('checks only the latest version at non-transitive levels, even when older ones would fail', () => {
    const existing = [
      { version: 1, schema: s1 },
      { version: 2, schema: s2 },
    ];
    for (const level of ['BACKWARD', 'FULL'] as const) {
      expect(checkCompatibility(level, s3, existing)).toEqual([]);
    }
  });
});

describe('checkCompatibility: directions', () => {
  const intField = record([{ name: 'f1', type: 'int' }]);
  const stringField = record([{ name: 'f1', type: 'string' }]);
  const latest = [{ version: 4, schema: intField }];
  const mismatch = (reader: string, writer: string) => ({
    type: 'TYPE_MISMATCH',
    location: '/fields/0/type',
    message: `reader type: ${reader} not compatible with writer type: ${writer}`,
  });

  it('BACKWARD has the new schema read the old one', () => {
    expect(checkCompatibility('BACKWARD', stringField, latest)).toEqual([
      { ...mismatch('STRING', 'INT'), direction: 'new reads old', version: 4 },
    ]);
  });

  it('FORWARD has the old schema read the new one', () => {
    expect(checkCompatibility('FORWARD', stringField, latest)).toEqual([
      { ...mismatch('INT', 'STRING'), direction: 'old reads new', version: 4 },
    ]);
  });

  it('FULL reports the violations of both directions', () => {
    expect(checkCompatibility('FULL', stringField, latest)).toEqual([
      { ...mismatch('STRING', 'INT'), direction: 'new reads old', version: 4 },
      { ...mismatch('INT', 'STRING'), direction: 'old reads new', version: 4 },
    ]);
  });

  it('a promotion is one-way: int → long passes BACKWARD, fails FORWARD and FULL', () => {
    const longField = record([{ name: 'f1', type: 'long' }]);
    expect(checkCompatibility('BACKWARD', longField, latest)).toEqual([]);
    expect(checkCompatibility('FORWARD', longField, latest)).toHaveLength(1);
    expect(checkCompatibility('FULL', longField, latest)).toHaveLength(1);
  });
});

describe('compatibility levels', () => {
  it('recognises exactly the seven upper-case level names', () => {
    for (const level of COMPATIBILITY_LEVELS) expect(isCompatibilityLevel(level)).toBe(true);
    for (const value of ['backward', 'Full', 'TRANSITIVE', '', 3, null, undefined, {}]) {
      expect(isCompatibilityLevel(value)).toBe(false);
    }
  });

  it('refuses an unknown level at run time with a precise error', () => {
    let caught: unknown;
    try {
      checkCompatibility('SIDEWAYS' as CompatibilityLevel, s1, versions(['s2']));
    } catch (error) {
      caught = error;
    }
    expect(isTributaryError(caught) && caught.code).toBe('COMPATIBILITY_LEVEL_INVALID');
    expect((caught as Error).message).toContain('"SIDEWAYS"');
    expect((caught as Error).message).toContain('BACKWARD_TRANSITIVE');
  });
});

describe('describeIncompatibility', () => {
  it('renders one Confluent-verbose-like line with location, version and direction', () => {
    const line = describeIncompatibility({
      type: 'READER_FIELD_MISSING_DEFAULT_VALUE',
      location: '/fields/1',
      message: 'f2',
      direction: 'new reads old',
      version: 3,
    });
    expect(line).toBe(
      "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'f2' at path '/fields/1' in the new " +
        "schema has no default value and is missing in the old schema', additionalInfo:'f2', location:'/fields/1', " +
        "oldSchemaVersion:3, direction:'new reads old'}",
    );
  });

  it('names the roles "old" and "new" by direction, and reader/writer without one', () => {
    const base = { type: 'MISSING_ENUM_SYMBOLS', location: '/symbols', message: '[C]' };
    expect(describeIncompatibility({ ...base, direction: 'old reads new' })).toContain(
      "The old schema is missing enum symbols '[C]' at path '/symbols' that the new schema has",
    );
    const plain = describeIncompatibility(base);
    expect(plain).toContain("The reader schema is missing enum symbols '[C]'");
    expect(plain).not.toContain('oldSchemaVersion');
    expect(plain.includes('\n')).toBe(false);
  });

  it('describes every violation the checker can report', () => {
    const types = [
      'NAME_MISMATCH',
      'FIXED_SIZE_MISMATCH',
      'MISSING_ENUM_SYMBOLS',
      'READER_FIELD_MISSING_DEFAULT_VALUE',
      'TYPE_MISMATCH',
      'MISSING_UNION_BRANCH',
      'READER_FIELD_MATCHES_MULTIPLE_WRITER_FIELDS',
    ];
    for (const type of types) {
      const line = describeIncompatibility({ type, location: '/fields/0', message: 'm', version: 1 });
      expect(line.startsWith(`{errorType:'${type}', description:'The `)).toBe(true);
      expect(line).toContain("path '/fields/0'");
    }
  });
});
