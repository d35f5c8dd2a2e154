/** Failpoints (src/etl/load/failpoints.ts): the spec format, and firing on exactly the n-th pass. */
import { describe, expect, it } from 'vitest';
import { failpointHook, parseFailpoint } from '../../../src/etl/load/failpoints.js';

describe('failpoints', () => {
  it('parse <name>[:<n>]', () => {
    expect(parseFailpoint('after-rename:2')).toEqual({ name: 'after-rename', hit: 2 });
    expect(parseFailpoint('after-claim')).toEqual({ name: 'after-claim', hit: 1 });
  });

  it('refuse unknown names and counts below 1, listing the names', () => {
    for (const spec of ['after-lunch', 'after-rename:0', 'after-rename:x', '']) {
      expect(() => parseFailpoint(spec)).toThrow(/is not <name>\[:<n>\] with n ≥ 1 and a name among after-stage, after-claim, after-rename, after-table-commit, before-publish, after-publish/);
    }
  });

  it('fire on the n-th pass of their own point only', () => {
    const fired: number[] = [];
    let pass = 0;
    const hook = failpointHook({ name: 'after-rename', hit: 3 }, () => fired.push(pass));
    for (pass = 1; pass <= 5; pass += 1) {
      hook('after-claim');
      hook('after-rename');
    }
    expect(fired).toEqual([3]);
  });
});
