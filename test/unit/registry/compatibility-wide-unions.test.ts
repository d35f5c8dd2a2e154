/**
 * A union reader against a union writer compares each writer branch with the reader branches
 * that could read it (same kind or a promotion, same name or alias for named types), not with
 * every branch: 30,000 fixed branches against 5,000 cost 150 million comparisons and held the
 * registry for minutes (found by test/chaos/registry-fuzz.ts). Counted, not timed: without the
 * fix `check` runs n·m times. The verdicts are those of the full scan.
 */
import avro from 'avsc';
import { describe, expect, it, vi } from 'vitest';
import { ReaderWriterChecker } from '../../../src/registry/compatibility/reader-writer.js';

const fixedUnion = (count: number, size = (index: number) => index % 7): avro.Type =>
  avro.Type.forSchema(Array.from({ length: count }, (_, index) => ({ type: 'fixed', name: `F${index}`, size: size(index) })) as unknown as avro.Schema, { registry: {} });

describe('wide unions', () => {
  it('compares a branch with the reader branches of its name only', () => {
    const checker = new ReaderWriterChecker();
    const check = vi.spyOn(checker, 'check');
    expect(checker.check(fixedUnion(1500), fixedUnion(1000))).toEqual([]);
    // One call per writer branch against the union, one against its namesake: not 1500 × 1000.
    expect(check.mock.calls.length).toBeLessThan(5_000);
  });

  it('gives the verdicts of a full scan: names, aliases, promotions, missing branches', () => {
    const type = (schema: unknown): avro.Type => avro.Type.forSchema(schema as avro.Schema, { registry: {} });
    const verdict = (reader: unknown, writer: unknown): string[] => new ReaderWriterChecker().check(type(reader), type(writer)).map((finding) => `${finding.type} ${finding.path.join('/')}`);
    expect(verdict(['null', 'long', 'string'], ['int', 'bytes'])).toEqual([]);
    expect(verdict(['null', 'int'], ['long'])).toEqual(['MISSING_UNION_BRANCH 0']);
    expect(verdict([{ type: 'fixed', name: 'a.F', size: 2 }], [{ type: 'fixed', name: 'b.F', size: 2 }])).toEqual([]);
    expect(verdict([{ type: 'fixed', name: 'G', aliases: ['old.F'], size: 2 }], [{ type: 'fixed', name: 'old.F', size: 2 }])).toEqual([]);
    expect(verdict([{ type: 'fixed', name: 'F', size: 3 }, 'null'], ['null', { type: 'fixed', name: 'F', size: 2 }])).toEqual(['MISSING_UNION_BRANCH 1']);
    expect(verdict([{ type: 'enum', name: 'E', symbols: ['A', 'B'] }], [{ type: 'enum', name: 'E', symbols: ['A'] }, 'string'])).toEqual(['MISSING_UNION_BRANCH 1']);
    expect(verdict(['double', { type: 'record', name: 'R', fields: [] }], [{ type: 'record', name: 'R', fields: [] }, 'float'])).toEqual([]);
  });
});
