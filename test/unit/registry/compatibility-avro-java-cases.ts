/**
 * Reader/writer compatibility scenarios of Apache Avro's own Java tests, ported as data (inputs
 * and expected outcomes only; apache/avro @ 87212a6d, lang/java/avro/src/test/java/org/apache/avro/):
 *
 * - TestSchemas.java: the schemas, re-expressed below as JSON under their Java names;
 * - TestSchemaCompatibility.java: COMPATIBLE_READER_WRITER_TEST_CASES (73 pairs) and the single
 *   scenario tests (validateSchema*, unionReaderWriterSubsetIncompatibility,
 *   unionWriterSimpleReaderIncompatibility);
 * - TestSchemaCompatibility{TypeMismatch, MissingUnionBranch, MissingEnumSymbols, NameMismatch,
 *   FixedSizeMismatch, ReaderFieldMissingDefaultValue}.java: 59 incompatible pairs with their
 *   expected type, message and location;
 * - TestSchemaCompatibilityMultiple.java: one pair with nine incompatibilities;
 * - TestSchemaCompatibilityEnumDefaults.java: decoding scenarios, kept as the verdicts Java's
 *   checker gives for their schema pairs.
 *
 * Left out: the seven compatible pairs involving EMPTY_UNION_SCHEMA (`[]`), which avsc cannot
 * represent and the registry therefore refuses as invalid. That leaves 66 + 59 = 125 cases from
 * the two main tables (duplicates within Java's tables kept), plus 16 from the other tests.
 * Java's anonymous WRITER_SCHEMA (validateSchema*) is named "Record" here: the registry refuses
 * anonymous records, and both sides carry the same name so the verdicts are unchanged.
 */

export interface ExpectedIncompatibility {
  readonly type: string;
  readonly message: string;
  readonly location: string;
}

export interface JavaCompatibilityCase {
  /** The Java test the scenario comes from, and its position there. */
  readonly source: string;
  readonly reader: unknown;
  readonly writer: unknown;
  /** Empty when the reader can read everything the writer writes. */
  readonly expected: readonly ExpectedIncompatibility[];
}

type Json = unknown;

const record = (name: string, fields: readonly Json[], extra: Record<string, Json> = {}): Json => ({
  type: 'record',
  name,
  ...extra,
  fields,
});
const field = (name: string, type: Json, extra: Record<string, Json> = {}): Json => ({ name, type, ...extra });
const enumeration = (name: string, symbols: readonly string[], extra: Record<string, Json> = {}): Json => ({
  type: 'enum',
  name,
  ...extra,
  symbols,
});
const array = (items: Json): Json => ({ type: 'array', items });
const map = (values: Json): Json => ({ type: 'map', values });
const fixed = (name: string, size: number): Json => ({ type: 'fixed', name, size });

// TestSchemas.java
const NULL_SCHEMA = 'null';
const BOOLEAN_SCHEMA = 'boolean';
const INT_SCHEMA = 'int';
const LONG_SCHEMA = 'long';
const FLOAT_SCHEMA = 'float';
const DOUBLE_SCHEMA = 'double';
const STRING_SCHEMA = 'string';
const BYTES_SCHEMA = 'bytes';
const INT_ARRAY_SCHEMA = array('int');
const LONG_ARRAY_SCHEMA = array('long');
const STRING_ARRAY_SCHEMA = array('string');
const INT_MAP_SCHEMA = map('int');
const LONG_MAP_SCHEMA = map('long');
const ENUM1_AB_SCHEMA = enumeration('Enum1', ['A', 'B']);
const ENUM1_AB_SCHEMA_DEFAULT = enumeration('Enum1', ['A', 'B'], { default: 'A' });
const ENUM1_AB_SCHEMA_NAMESPACE_1 = enumeration('Enum1', ['A', 'B'], { namespace: 'namespace1' });
const ENUM1_AB_SCHEMA_NAMESPACE_2 = enumeration('Enum1', ['A', 'B'], { namespace: 'namespace2' });
const ENUM1_ABC_SCHEMA = enumeration('Enum1', ['A', 'B', 'C']);
const ENUM1_BC_SCHEMA = enumeration('Enum1', ['B', 'C']);
const ENUM2_AB_SCHEMA = enumeration('Enum2', ['A', 'B']);
const ENUM_ABC_ENUM_DEFAULT_A_SCHEMA = enumeration('Enum', ['A', 'B', 'C'], { default: 'A' });
const ENUM_AB_ENUM_DEFAULT_A_SCHEMA = enumeration('Enum', ['A', 'B'], { default: 'A' });
const ENUM_ABC_ENUM_DEFAULT_A_RECORD = record('Record', [
  field('Field', enumeration('Schema', ['A', 'B', 'C'], { default: 'A' })),
]);
const ENUM_AB_ENUM_DEFAULT_A_RECORD = record('Record', [field('Field', enumeration('Schema', ['A', 'B'], { default: 'A' }))]);
const ENUM_ABC_FIELD_DEFAULT_B_ENUM_DEFAULT_A_RECORD = record('Record', [
  field('Field', enumeration('Schema', ['A', 'B', 'C'], { default: 'A' }), { default: 'B' }),
]);
const ENUM_AB_FIELD_DEFAULT_A_ENUM_DEFAULT_B_RECORD = record('Record', [
  field('Field', enumeration('Schema', ['A', 'B'], { default: 'B' }), { default: 'A' }),
]);
const INT_UNION_SCHEMA = ['int'];
const LONG_UNION_SCHEMA = ['long'];
const FLOAT_UNION_SCHEMA = ['float'];
const DOUBLE_UNION_SCHEMA = ['double'];
const STRING_UNION_SCHEMA = ['string'];
const BYTES_UNION_SCHEMA = ['bytes'];
const INT_STRING_UNION_SCHEMA = ['int', 'string'];
const STRING_INT_UNION_SCHEMA = ['string', 'int'];
const INT_FLOAT_UNION_SCHEMA = ['int', 'float'];
const INT_LONG_UNION_SCHEMA = ['int', 'long'];
const INT_LONG_FLOAT_DOUBLE_UNION_SCHEMA = ['int', 'long', 'float', 'double'];
const EMPTY_RECORD1 = record('Record1', []);
const EMPTY_RECORD2 = record('Record2', []);
const A_INT_RECORD1 = record('Record1', [field('a', 'int')]);
const A_LONG_RECORD1 = record('Record1', [field('a', 'long')]);
const A_INT_B_INT_RECORD1 = record('Record1', [field('a', 'int'), field('b', 'int')]);
const A_DINT_RECORD1 = record('Record1', [field('a', 'int', { default: 0 })]);
const A_INT_B_DINT_RECORD1 = record('Record1', [field('a', 'int'), field('b', 'int', { default: 0 })]);
const A_DINT_B_DINT_RECORD1 = record('Record1', [field('a', 'int', { default: 0 }), field('b', 'int', { default: 0 })]);
const FIXED_4_BYTES = fixed('Fixed', 4);
const FIXED_8_BYTES = fixed('Fixed', 8);
const A_DINT_B_DFIXED_4_BYTES_RECORD1 = record('Record1', [field('a', 'int', { default: 0 }), field('b', FIXED_4_BYTES)]);
const A_DINT_B_DFIXED_8_BYTES_RECORD1 = record('Record1', [field('a', 'int', { default: 0 }), field('b', FIXED_8_BYTES)]);
const A_DINT_B_DINT_STRING_UNION_RECORD1 = record('Record1', [
  field('a', 'int', { default: 0 }),
  field('b', INT_STRING_UNION_SCHEMA, { default: 0 }),
]);
const A_DINT_B_DINT_UNION_RECORD1 = record('Record1', [
  field('a', 'int', { default: 0 }),
  field('b', INT_UNION_SCHEMA, { default: 0 }),
]);
const A_DINT_B_DENUM_1_RECORD1 = record('Record1', [field('a', 'int', { default: 0 }), field('b', ENUM1_AB_SCHEMA)]);
const A_DINT_B_DENUM_2_RECORD1 = record('Record1', [field('a', 'int', { default: 0 }), field('b', ENUM2_AB_SCHEMA)]);
const NS_RECORD1 = record('Record1', [
  field('f1', ['null', array(record('InnerRecord1', [field('a', 'int')], { namespace: 'ns1' }))]),
]);
const NS_RECORD2 = record('Record1', [
  field('f1', ['null', array(record('InnerRecord1', [field('a', 'int')], { namespace: 'ns2' }))]),
]);
const WITHOUT_NS = record('Record', [field('f1', 'int')]);
const WITH_NS = record('ns.Record', [field('f1', 'int')]);
const INT_LIST_RECORD = record('List', [field('head', 'int'), field('tail', 'List')]);
const LONG_LIST_RECORD = record('List', [field('head', 'long'), field('tail', 'List')]);

const compatible = (source: string, reader: Json, writer: Json): JavaCompatibilityCase => ({
  source,
  reader,
  writer,
  expected: [],
});
const incompatible = (
  source: string,
  reader: Json,
  writer: Json,
  ...expected: readonly (readonly [type: string, message: string, location: string])[]
): JavaCompatibilityCase => ({
  source,
  reader,
  writer,
  expected: expected.map(([type, message, location]) => ({ type, message, location })),
});

const compatibleTable: readonly (readonly [Json, Json])[] = [
  [BOOLEAN_SCHEMA, BOOLEAN_SCHEMA],
  [INT_SCHEMA, INT_SCHEMA],
  [LONG_SCHEMA, INT_SCHEMA],
  [LONG_SCHEMA, LONG_SCHEMA],
  [FLOAT_SCHEMA, INT_SCHEMA],
  [FLOAT_SCHEMA, LONG_SCHEMA],
  [DOUBLE_SCHEMA, LONG_SCHEMA],
  [DOUBLE_SCHEMA, INT_SCHEMA],
  [DOUBLE_SCHEMA, FLOAT_SCHEMA],
  [STRING_SCHEMA, STRING_SCHEMA],
  [BYTES_SCHEMA, BYTES_SCHEMA],
  [INT_ARRAY_SCHEMA, INT_ARRAY_SCHEMA],
  [LONG_ARRAY_SCHEMA, INT_ARRAY_SCHEMA],
  [INT_MAP_SCHEMA, INT_MAP_SCHEMA],
  [LONG_MAP_SCHEMA, INT_MAP_SCHEMA],
  [ENUM1_AB_SCHEMA, ENUM1_AB_SCHEMA],
  [ENUM1_ABC_SCHEMA, ENUM1_AB_SCHEMA],
  [ENUM1_AB_SCHEMA_DEFAULT, ENUM1_ABC_SCHEMA],
  [ENUM1_AB_SCHEMA, ENUM1_AB_SCHEMA_NAMESPACE_1],
  [ENUM1_AB_SCHEMA_NAMESPACE_1, ENUM1_AB_SCHEMA],
  [ENUM1_AB_SCHEMA_NAMESPACE_1, ENUM1_AB_SCHEMA_NAMESPACE_2],
  [STRING_SCHEMA, BYTES_SCHEMA],
  [BYTES_SCHEMA, STRING_SCHEMA],
  // Java's table continues with unions; the EMPTY_UNION_SCHEMA pairs are left out (see above).
  [FLOAT_UNION_SCHEMA, INT_UNION_SCHEMA],
  [FLOAT_UNION_SCHEMA, LONG_UNION_SCHEMA],
  [FLOAT_UNION_SCHEMA, INT_LONG_UNION_SCHEMA],
  [INT_UNION_SCHEMA, INT_UNION_SCHEMA],
  [INT_STRING_UNION_SCHEMA, STRING_INT_UNION_SCHEMA],
  [LONG_UNION_SCHEMA, INT_UNION_SCHEMA],
  [FLOAT_UNION_SCHEMA, INT_UNION_SCHEMA],
  [DOUBLE_UNION_SCHEMA, INT_UNION_SCHEMA],
  [FLOAT_UNION_SCHEMA, LONG_UNION_SCHEMA],
  [DOUBLE_UNION_SCHEMA, LONG_UNION_SCHEMA],
  [DOUBLE_UNION_SCHEMA, FLOAT_UNION_SCHEMA],
  [STRING_UNION_SCHEMA, BYTES_UNION_SCHEMA],
  [BYTES_UNION_SCHEMA, STRING_UNION_SCHEMA],
  [DOUBLE_UNION_SCHEMA, INT_FLOAT_UNION_SCHEMA],
  [FLOAT_SCHEMA, INT_FLOAT_UNION_SCHEMA],
  [LONG_SCHEMA, INT_LONG_UNION_SCHEMA],
  [DOUBLE_SCHEMA, INT_FLOAT_UNION_SCHEMA],
  [DOUBLE_SCHEMA, INT_LONG_FLOAT_DOUBLE_UNION_SCHEMA],
  [FLOAT_SCHEMA, FLOAT_UNION_SCHEMA],
  [INT_UNION_SCHEMA, INT_SCHEMA],
  [INT_SCHEMA, INT_UNION_SCHEMA],
  [FIXED_4_BYTES, FIXED_4_BYTES],
  [EMPTY_RECORD1, EMPTY_RECORD1],
  [EMPTY_RECORD1, A_INT_RECORD1],
  [A_INT_RECORD1, A_INT_RECORD1],
  [A_DINT_RECORD1, A_INT_RECORD1],
  [A_DINT_RECORD1, A_DINT_RECORD1],
  [A_INT_RECORD1, A_DINT_RECORD1],
  [A_LONG_RECORD1, A_INT_RECORD1],
  [A_INT_RECORD1, A_INT_B_INT_RECORD1],
  [A_DINT_RECORD1, A_INT_B_INT_RECORD1],
  [A_INT_B_DINT_RECORD1, A_INT_RECORD1],
  [A_DINT_B_DINT_RECORD1, EMPTY_RECORD1],
  [A_DINT_B_DINT_RECORD1, A_INT_RECORD1],
  [A_INT_B_INT_RECORD1, A_DINT_B_DINT_RECORD1],
  [INT_LIST_RECORD, INT_LIST_RECORD],
  [LONG_LIST_RECORD, LONG_LIST_RECORD],
  [LONG_LIST_RECORD, INT_LIST_RECORD],
  [NULL_SCHEMA, NULL_SCHEMA],
  [ENUM_AB_ENUM_DEFAULT_A_RECORD, ENUM_ABC_ENUM_DEFAULT_A_RECORD],
  [ENUM_AB_FIELD_DEFAULT_A_ENUM_DEFAULT_B_RECORD, ENUM_ABC_FIELD_DEFAULT_B_ENUM_DEFAULT_A_RECORD],
  [NS_RECORD1, NS_RECORD2],
  [WITHOUT_NS, WITH_NS],
];

const mismatch = (reader: string, writer: string): string => `reader type: ${reader} not compatible with writer type: ${writer}`;

// TestSchemaCompatibilityTypeMismatch.java: reader, writer, message, location.
const typeMismatchTable: readonly (readonly [Json, Json, string, string])[] = [
  [NULL_SCHEMA, INT_SCHEMA, mismatch('NULL', 'INT'), '/'],
  [NULL_SCHEMA, LONG_SCHEMA, mismatch('NULL', 'LONG'), '/'],
  [BOOLEAN_SCHEMA, INT_SCHEMA, mismatch('BOOLEAN', 'INT'), '/'],
  [INT_SCHEMA, NULL_SCHEMA, mismatch('INT', 'NULL'), '/'],
  [INT_SCHEMA, BOOLEAN_SCHEMA, mismatch('INT', 'BOOLEAN'), '/'],
  [INT_SCHEMA, LONG_SCHEMA, mismatch('INT', 'LONG'), '/'],
  [INT_SCHEMA, FLOAT_SCHEMA, mismatch('INT', 'FLOAT'), '/'],
  [INT_SCHEMA, DOUBLE_SCHEMA, mismatch('INT', 'DOUBLE'), '/'],
  [LONG_SCHEMA, FLOAT_SCHEMA, mismatch('LONG', 'FLOAT'), '/'],
  [LONG_SCHEMA, DOUBLE_SCHEMA, mismatch('LONG', 'DOUBLE'), '/'],
  [FLOAT_SCHEMA, DOUBLE_SCHEMA, mismatch('FLOAT', 'DOUBLE'), '/'],
  [DOUBLE_SCHEMA, STRING_SCHEMA, mismatch('DOUBLE', 'STRING'), '/'],
  [FIXED_4_BYTES, STRING_SCHEMA, mismatch('FIXED', 'STRING'), '/'],
  [STRING_SCHEMA, BOOLEAN_SCHEMA, mismatch('STRING', 'BOOLEAN'), '/'],
  [STRING_SCHEMA, INT_SCHEMA, mismatch('STRING', 'INT'), '/'],
  [BYTES_SCHEMA, NULL_SCHEMA, mismatch('BYTES', 'NULL'), '/'],
  [BYTES_SCHEMA, INT_SCHEMA, mismatch('BYTES', 'INT'), '/'],
  [A_INT_RECORD1, INT_SCHEMA, mismatch('RECORD', 'INT'), '/'],
  [INT_ARRAY_SCHEMA, LONG_ARRAY_SCHEMA, mismatch('INT', 'LONG'), '/items'],
  [INT_MAP_SCHEMA, INT_ARRAY_SCHEMA, mismatch('MAP', 'ARRAY'), '/'],
  [INT_ARRAY_SCHEMA, INT_MAP_SCHEMA, mismatch('ARRAY', 'MAP'), '/'],
  [INT_MAP_SCHEMA, LONG_MAP_SCHEMA, mismatch('INT', 'LONG'), '/values'],
  [INT_SCHEMA, ENUM2_AB_SCHEMA, mismatch('INT', 'ENUM'), '/'],
  [ENUM2_AB_SCHEMA, INT_SCHEMA, mismatch('ENUM', 'INT'), '/'],
  [FLOAT_SCHEMA, INT_LONG_FLOAT_DOUBLE_UNION_SCHEMA, mismatch('FLOAT', 'DOUBLE'), '/3'],
  [LONG_SCHEMA, INT_FLOAT_UNION_SCHEMA, mismatch('LONG', 'FLOAT'), '/1'],
  [INT_SCHEMA, INT_FLOAT_UNION_SCHEMA, mismatch('INT', 'FLOAT'), '/1'],
  [INT_LIST_RECORD, LONG_LIST_RECORD, mismatch('INT', 'LONG'), '/fields/0/type'],
  [NULL_SCHEMA, INT_SCHEMA, mismatch('NULL', 'INT'), '/'],
];

// TestSchemaCompatibilityMissingUnionBranch.java
const RECORD1_WITH_INT = record('Record1', [field('field1', 'int')]);
const RECORD2_WITH_INT = record('Record2', [field('field1', 'int')]);
const UNION_INT_RECORD1 = ['int', RECORD1_WITH_INT];
const UNION_INT_RECORD2 = ['int', RECORD2_WITH_INT];
const UNION_INT_ENUM1_AB = ['int', ENUM1_AB_SCHEMA];
const UNION_INT_FIXED_4_BYTES = ['int', FIXED_4_BYTES];
const UNION_INT_BOOLEAN = ['int', 'boolean'];
const UNION_INT_ARRAY_INT = ['int', INT_ARRAY_SCHEMA];
const UNION_INT_MAP_INT = ['int', INT_MAP_SCHEMA];
const UNION_INT_NULL = ['int', 'null'];
const lacking = (type: string): string => `reader union lacking writer type: ${type}`;

const missingUnionBranchTable: readonly (readonly [Json, Json, readonly (readonly [string, string])[]])[] = [
  [INT_UNION_SCHEMA, INT_STRING_UNION_SCHEMA, [[lacking('STRING'), '/1']]],
  [STRING_UNION_SCHEMA, INT_STRING_UNION_SCHEMA, [[lacking('INT'), '/0']]],
  [INT_UNION_SCHEMA, UNION_INT_RECORD1, [[lacking('RECORD'), '/1']]],
  [INT_UNION_SCHEMA, UNION_INT_RECORD2, [[lacking('RECORD'), '/1']]],
  [UNION_INT_RECORD1, UNION_INT_RECORD2, [[lacking('RECORD'), '/1']]],
  [INT_UNION_SCHEMA, UNION_INT_ENUM1_AB, [[lacking('ENUM'), '/1']]],
  [INT_UNION_SCHEMA, UNION_INT_FIXED_4_BYTES, [[lacking('FIXED'), '/1']]],
  [INT_UNION_SCHEMA, UNION_INT_BOOLEAN, [[lacking('BOOLEAN'), '/1']]],
  [INT_UNION_SCHEMA, LONG_UNION_SCHEMA, [[lacking('LONG'), '/0']]],
  [INT_UNION_SCHEMA, FLOAT_UNION_SCHEMA, [[lacking('FLOAT'), '/0']]],
  [INT_UNION_SCHEMA, DOUBLE_UNION_SCHEMA, [[lacking('DOUBLE'), '/0']]],
  [INT_UNION_SCHEMA, BYTES_UNION_SCHEMA, [[lacking('BYTES'), '/0']]],
  [INT_UNION_SCHEMA, UNION_INT_ARRAY_INT, [[lacking('ARRAY'), '/1']]],
  [INT_UNION_SCHEMA, UNION_INT_MAP_INT, [[lacking('MAP'), '/1']]],
  [INT_UNION_SCHEMA, UNION_INT_NULL, [[lacking('NULL'), '/1']]],
  [
    INT_UNION_SCHEMA,
    INT_LONG_FLOAT_DOUBLE_UNION_SCHEMA,
    [
      [lacking('LONG'), '/1'],
      [lacking('FLOAT'), '/2'],
      [lacking('DOUBLE'), '/3'],
    ],
  ],
  [A_DINT_B_DINT_UNION_RECORD1, A_DINT_B_DINT_STRING_UNION_RECORD1, [[lacking('STRING'), '/fields/1/type/1']]],
];

// TestSchemaCompatibilityMissingEnumSymbols.java
const RECORD1_WITH_ENUM_AB = record('Record1', [field('field1', ENUM1_AB_SCHEMA)]);
const RECORD1_WITH_ENUM_ABC = record('Record1', [field('field1', ENUM1_ABC_SCHEMA)]);
const missingEnumSymbolsTable: readonly (readonly [Json, Json, string, string])[] = [
  [ENUM1_AB_SCHEMA, ENUM1_ABC_SCHEMA, '[C]', '/symbols'],
  [ENUM1_BC_SCHEMA, ENUM1_ABC_SCHEMA, '[A]', '/symbols'],
  [RECORD1_WITH_ENUM_AB, RECORD1_WITH_ENUM_ABC, '[C]', '/fields/0/type/symbols'],
];

// TestSchemaCompatibilityNameMismatch.java
const FIXED_4_ANOTHER_NAME = fixed('AnotherName', 4);
const nameMismatchTable: readonly (readonly [Json, Json, string, string])[] = [
  [ENUM1_AB_SCHEMA, ENUM2_AB_SCHEMA, 'expected: Enum2', '/name'],
  [EMPTY_RECORD2, EMPTY_RECORD1, 'expected: Record1', '/name'],
  [FIXED_4_BYTES, FIXED_4_ANOTHER_NAME, 'expected: AnotherName', '/name'],
  [A_DINT_B_DENUM_1_RECORD1, A_DINT_B_DENUM_2_RECORD1, 'expected: Enum2', '/fields/1/type/name'],
];

// TestSchemaCompatibilityFixedSizeMismatch.java
const fixedSizeMismatchTable: readonly (readonly [Json, Json, string, string])[] = [
  [FIXED_4_BYTES, FIXED_8_BYTES, 'expected: 8, found: 4', '/size'],
  [FIXED_8_BYTES, FIXED_4_BYTES, 'expected: 4, found: 8', '/size'],
  [A_DINT_B_DFIXED_8_BYTES_RECORD1, A_DINT_B_DFIXED_4_BYTES_RECORD1, 'expected: 4, found: 8', '/fields/1/type/size'],
  [A_DINT_B_DFIXED_4_BYTES_RECORD1, A_DINT_B_DFIXED_8_BYTES_RECORD1, 'expected: 8, found: 4', '/fields/1/type/size'],
];

// TestSchemaCompatibilityReaderFieldMissingDefaultValue.java
const readerFieldMissingDefaultValueTable: readonly (readonly [Json, Json, string, string])[] = [
  [A_INT_RECORD1, EMPTY_RECORD1, 'a', '/fields/0'],
  [A_INT_B_DINT_RECORD1, EMPTY_RECORD1, 'a', '/fields/0'],
];

// TestSchemaCompatibility.java, single scenarios. WRITER_SCHEMA is anonymous in Java.
const WRITER_SCHEMA = record('Record', [field('oldfield1', 'int'), field('oldfield2', 'string')]);
const ACCOUNT_MANDATORY_AGE = record('Account', [field('age', 'int')]);
const ACCOUNT_OPTIONAL_AGE = record('Account', [field('age', ['null', 'int'], { default: null })]);

const singleScenarios: readonly JavaCompatibilityCase[] = [
  compatible('validateSchemaPairMissingField', record('Record', [field('oldfield1', 'int')]), WRITER_SCHEMA),
  compatible('validateSchemaPairMissingSecondField', record('Record', [field('oldfield2', 'string')]), WRITER_SCHEMA),
  compatible(
    'validateSchemaPairAllFields',
    record('Record', [field('oldfield1', 'int'), field('oldfield2', 'string')]),
    WRITER_SCHEMA,
  ),
  compatible(
    'validateSchemaNewFieldWithDefault',
    record('Record', [field('oldfield1', 'int'), field('newfield1', 'int', { default: 42 })]),
    WRITER_SCHEMA,
  ),
  incompatible(
    'validateSchemaNewField',
    record('Record', [field('oldfield1', 'int'), field('newfield1', 'int')]),
    WRITER_SCHEMA,
    ['READER_FIELD_MISSING_DEFAULT_VALUE', 'newfield1', '/fields/1'],
  ),
  compatible('validateArrayWriterSchema (valid reader)', array('string'), STRING_ARRAY_SCHEMA),
  incompatible('validateArrayWriterSchema (invalid reader)', map('string'), STRING_ARRAY_SCHEMA, [
    'TYPE_MISMATCH',
    mismatch('MAP', 'ARRAY'),
    '/',
  ]),
  compatible('validatePrimitiveWriterSchema (valid reader)', 'string', STRING_SCHEMA),
  incompatible('validatePrimitiveWriterSchema (invalid reader)', INT_SCHEMA, STRING_SCHEMA, [
    'TYPE_MISMATCH',
    mismatch('INT', 'STRING'),
    '/',
  ]),
  incompatible('unionReaderWriterSubsetIncompatibility', ['int', 'string'], ['int', 'string', 'long'], [
    'MISSING_UNION_BRANCH',
    lacking('LONG'),
    '/2',
  ]),
  incompatible('unionWriterSimpleReaderIncompatibility', ACCOUNT_MANDATORY_AGE, ACCOUNT_OPTIONAL_AGE, [
    'TYPE_MISMATCH',
    mismatch('INT', 'NULL'),
    '/fields/0/type/0',
  ]),
];

// TestSchemaCompatibilityMultiple.java
const MULTIPLE_READER = record('base', [
  field('check_enum_symbols_field', enumeration('check_enum_symbols_type', ['A', 'C'])),
  field('check_enum_name_field', enumeration('check_enum_name_type', ['A', 'B', 'C', 'D'])),
  field('type_mismatch_field', 'string'),
  field(
    'sub_record',
    record('sub_record_type', [
      field('identical_1_field', 'long', { default: 42 }),
      field('extra_no_default_field', 'long'),
      field('fixed_length_mismatch_field', fixed('fixed_length_mismatch_type', 4)),
      field('union_missing_branches_field', ['boolean']),
      field('reader_union_does_not_support_type_field', ['boolean']),
      field(
        'record_fqn_mismatch_field',
        record(
          'recordA',
          [field('A_field_0', 'boolean', { default: true }), field('array_type_mismatch_field', array('string'))],
          { namespace: 'not_nsA' },
        ),
      ),
    ]),
  ),
]);
const MULTIPLE_WRITER = record('base', [
  field('check_enum_symbols_field', enumeration('check_enum_symbols_type', ['A', 'B', 'C', 'D'])),
  field('check_enum_name_field', enumeration('check_enum_name_type_ERR', ['A', 'B', 'C', 'D'])),
  field('type_mismatch_field', 'long'),
  field(
    'sub_record',
    record('sub_record_type', [
      field('identical_1_field', 'long', { default: 42 }),
      field('fixed_length_mismatch_field', fixed('fixed_length_mismatch_type', 8)),
      field('union_missing_branches_field', ['boolean', 'double', 'string']),
      field('reader_union_does_not_support_type_field', 'long'),
      field(
        'record_fqn_mismatch_field',
        record(
          'recordA',
          [field('A_field_0', 'boolean', { default: true }), field('array_type_mismatch_field', array('boolean'))],
          { namespace: 'nsA' },
        ),
      ),
    ]),
  ),
]);

const multipleScenario = incompatible(
  'TestSchemaCompatibilityMultiple.multipleIncompatibilities',
  MULTIPLE_READER,
  MULTIPLE_WRITER,
  ['MISSING_ENUM_SYMBOLS', '[B, D]', '/fields/0/type/symbols'],
  ['NAME_MISMATCH', 'expected: check_enum_name_type_ERR', '/fields/1/type/name'],
  ['TYPE_MISMATCH', mismatch('STRING', 'LONG'), '/fields/2/type'],
  ['READER_FIELD_MISSING_DEFAULT_VALUE', 'extra_no_default_field', '/fields/3/type/fields/1'],
  ['FIXED_SIZE_MISMATCH', 'expected: 8, found: 4', '/fields/3/type/fields/2/type/size'],
  ['MISSING_UNION_BRANCH', lacking('DOUBLE'), '/fields/3/type/fields/3/type/1'],
  ['MISSING_UNION_BRANCH', lacking('STRING'), '/fields/3/type/fields/3/type/2'],
  ['MISSING_UNION_BRANCH', lacking('LONG'), '/fields/3/type/fields/4/type'],
  ['TYPE_MISMATCH', mismatch('STRING', 'BOOLEAN'), '/fields/3/type/fields/5/type/fields/1/type/items'],
);

// TestSchemaCompatibilityEnumDefaults.java: Java decodes these pairs; the verdicts are what its
// checker says of the same pairs (a decoding failure there is an incompatibility here).
const enumDefaultScenarios: readonly JavaCompatibilityCase[] = [
  incompatible(
    'enumDefaultNotAppliedWhenWriterFieldMissing',
    record('Record1', [field('field1', ENUM_AB_ENUM_DEFAULT_A_SCHEMA)]),
    record('Record1', [field('field2', ENUM2_AB_SCHEMA)]),
    ['TYPE_MISMATCH', mismatch('ENUM', 'RECORD'), '/fields/0/type'],
  ),
  compatible(
    'enumDefaultAppliedWhenNoFieldDefaultDefined',
    record('Record1', [field('field1', ENUM_AB_ENUM_DEFAULT_A_SCHEMA)]),
    record('Record1', [field('field1', ENUM_ABC_ENUM_DEFAULT_A_SCHEMA)]),
  ),
  compatible(
    'enumDefaultAppliedWhenFieldDefaultDefined',
    record('Record1', [field('field1', ENUM_AB_ENUM_DEFAULT_A_SCHEMA, { default: 'B' })]),
    record('Record1', [field('field1', ENUM_ABC_ENUM_DEFAULT_A_SCHEMA)]),
  ),
  incompatible(
    'fieldDefaultNotAppliedForUnknownSymbol',
    record('Record1', [field('field1', ENUM1_AB_SCHEMA, { default: 'A' })]),
    record('Record1', [field('field1', ENUM1_ABC_SCHEMA)]),
    ['MISSING_ENUM_SYMBOLS', '[C]', '/fields/0/type/symbols'],
  ),
];

function fromTable(
  name: string,
  type: string,
  table: readonly (readonly [Json, Json, string, string])[],
): JavaCompatibilityCase[] {
  return table.map(([reader, writer, message, location], index) =>
    incompatible(`${name} #${index + 1}`, reader, writer, [type, message, location]),
  );
}

/** COMPATIBLE_READER_WRITER_TEST_CASES without the empty-union pairs, then the six error tables. */
export const JAVA_MAIN_TABLE_CASES: readonly JavaCompatibilityCase[] = [
  ...compatibleTable.map(([reader, writer], index) =>
    compatible(`COMPATIBLE_READER_WRITER_TEST_CASES #${index + 1}`, reader, writer),
  ),
  ...fromTable('TestSchemaCompatibilityTypeMismatch', 'TYPE_MISMATCH', typeMismatchTable),
  ...missingUnionBranchTable.map(([reader, writer, expected], index) =>
    incompatible(
      `TestSchemaCompatibilityMissingUnionBranch #${index + 1}`,
      reader,
      writer,
      ...expected.map(([message, location]) => ['MISSING_UNION_BRANCH', message, location] as const),
    ),
  ),
  ...fromTable('TestSchemaCompatibilityMissingEnumSymbols', 'MISSING_ENUM_SYMBOLS', missingEnumSymbolsTable),
  ...fromTable('TestSchemaCompatibilityNameMismatch', 'NAME_MISMATCH', nameMismatchTable),
  ...fromTable('TestSchemaCompatibilityFixedSizeMismatch', 'FIXED_SIZE_MISMATCH', fixedSizeMismatchTable),
  ...fromTable(
    'TestSchemaCompatibilityReaderFieldMissingDefaultValue',
    'READER_FIELD_MISSING_DEFAULT_VALUE',
    readerFieldMissingDefaultValueTable,
  ),
];

/** The scenarios outside the two main tables. */
export const JAVA_SCENARIO_CASES: readonly JavaCompatibilityCase[] = [
  ...singleScenarios,
  multipleScenario,
  ...enumDefaultScenarios,
];
