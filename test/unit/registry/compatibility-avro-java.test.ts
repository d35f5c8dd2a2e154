import type { Type } from 'avsc';
import { describe, expect, it } from 'vitest';

import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { readerWriterIncompatibilities } from '../../../src/registry/compatibility.js';
import {
  JAVA_MAIN_TABLE_CASES,
  JAVA_SCENARIO_CASES,
  type JavaCompatibilityCase,
} from './compatibility-avro-java-cases.js';

function parse(schema: unknown) {
  return parseAvroSchema(JSON.stringify(schema)).type;
}

/** avsc's resolver throws exactly when the writer's data cannot be read with the reader. */
function avscCanResolve(reader: Type, writer: Type): boolean {
  try {
    // A fresh options object each time: avsc caches resolvers in it by record name.
    reader.createResolver(writer, { ignoreNamespaces: true });
    return true;
  } catch {
    return false;
  }
}

function checkCase({ reader, writer, expected }: JavaCompatibilityCase): void {
  const readerType = parse(reader);
  const writerType = parse(writer);
  const found = readerWriterIncompatibilities(readerType, writerType).map(({ type, message, location }) => ({
    type,
    message,
    location,
  }));
  expect(found).toEqual(expected);
  expect(avscCanResolve(readerType, writerType)).toBe(expected.length === 0);
}

describe("Avro Java's compatibility tables, ported as data", () => {
  it('holds the 125 reader/writer pairs of the main tables: 66 compatible, 59 not', () => {
    expect(JAVA_MAIN_TABLE_CASES).toHaveLength(125);
    expect(JAVA_MAIN_TABLE_CASES.filter((testCase) => testCase.expected.length === 0)).toHaveLength(66);
  });

  it.each(JAVA_MAIN_TABLE_CASES.map((testCase) => [testCase.source, testCase] as const))(
    '%s: same verdict, types, messages and locations as Java, and avsc agrees',
    (_source, testCase) => {
      checkCase(testCase);
    },
  );
});

describe("Avro Java's single compatibility scenarios, ported as data", () => {
  it.each(JAVA_SCENARIO_CASES.map((testCase) => [testCase.source, testCase] as const))(
    '%s: same verdict, types, messages and locations as Java, and avsc agrees',
    (_source, testCase) => {
      checkCase(testCase);
    },
  );
});
