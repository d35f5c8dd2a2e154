import type { Type } from 'avsc';
import { beforeAll, describe, expect, it } from 'vitest';

import { parseAvroSchema, type ParsedSchema } from '../../../src/registry/avro-schema.js';
import { readerWriterIncompatibilities } from '../../../src/registry/compatibility.js';
import { randomSchemaPairs } from './random-avro-schema-pairs.js';

/** avsc's resolver throws exactly when the writer's data cannot be read with the reader. */
function avscCanResolve(reader: Type, writer: Type): boolean {
  try {
    // A fresh options object per call: avsc caches resolvers in it by record name.
    reader.createResolver(writer, { ignoreNamespaces: true });
    return true;
  } catch {
    return false;
  }
}

function tryParse(schema: unknown): ParsedSchema | undefined {
  try {
    return parseAvroSchema(JSON.stringify(schema));
  } catch {
    return undefined;
  }
}

describe("the checker against avsc's resolver on seeded random schema pairs", () => {
  const SEED = 20_110_622;
  const PAIRS = 2_500;
  // avsc compiles code for every record it parses, so parse each schema once for all tests.
  const CPU_BOUND_TIMEOUT_MS = 300_000;
  let parsed: { writer: ParsedSchema | undefined; reader: ParsedSchema | undefined }[] = [];

  beforeAll(() => {
    parsed = randomSchemaPairs(SEED, PAIRS).map(({ writer, reader }) => ({ writer: tryParse(writer), reader: tryParse(reader) }));
  }, CPU_BOUND_TIMEOUT_MS);

  it('generates valid writer schemas and mostly valid readers', () => {
    expect(parsed).toHaveLength(PAIRS);
    expect(parsed.filter(({ writer }) => writer === undefined)).toHaveLength(0);
    expect(parsed.filter(({ reader }) => reader !== undefined).length).toBeGreaterThan(PAIRS * 0.9);
  });

  it(
    'agrees in both directions of every valid pair, on a healthy mix of verdicts',
    () => {
      let checked = 0;
      let compatible = 0;
      const typesSeen = new Set<string>();
      const disagreements: { reader: string; writer: string; checker: string[]; avsc: boolean }[] = [];
      for (const { writer, reader } of parsed) {
        if (writer === undefined || reader === undefined) continue;
        for (const [from, to] of [
          [reader, writer],
          [writer, reader],
        ] as const) {
          checked += 1;
          const found = readerWriterIncompatibilities(from.type, to.type);
          const avsc = avscCanResolve(from.type, to.type);
          if (found.length === 0) compatible += 1;
          for (const { type } of found) typesSeen.add(type);
          if ((found.length === 0) !== avsc) {
            disagreements.push({
              reader: from.text,
              writer: to.text,
              checker: found.map(({ type, location }) => `${type} at ${location}`),
              avsc,
            });
          }
        }
      }
      expect(disagreements.slice(0, 3)).toEqual([]);
      expect(disagreements).toHaveLength(0);
      expect(checked).toBeGreaterThan(PAIRS * 1.8);
      // Both verdicts must be well represented for the agreement to mean much.
      console.log(
        `differential: ${checked} directed pairs, ${compatible} compatible (${((100 * compatible) / checked).toFixed(1)}%)`,
      );
      expect(compatible / checked).toBeGreaterThan(0.2);
      expect(compatible / checked).toBeLessThan(0.8);
      expect([...typesSeen].sort()).toEqual([
        'FIXED_SIZE_MISMATCH',
        'MISSING_ENUM_SYMBOLS',
        'MISSING_UNION_BRANCH',
        'NAME_MISMATCH',
        'READER_FIELD_MISSING_DEFAULT_VALUE',
        'TYPE_MISMATCH',
      ]);
    },
    CPU_BOUND_TIMEOUT_MS,
  );
});
