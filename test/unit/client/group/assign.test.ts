import { describe, expect, it } from 'vitest';
import { assignAll, assignRange } from '../../../../src/client/group/assign.js';

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('assignRange (Algorithm 1, range assignment)', () => {
  it('gives contiguous ranges of sorted partitions to sorted threads', () => {
    const threads = ['c-0', 'a-0', 'b-0'];
    expect(assignRange(range(12), threads, 'a-0')).toEqual([0, 1, 2, 3]);
    expect(assignRange(range(12), threads, 'b-0')).toEqual([4, 5, 6, 7]);
    expect(assignRange(range(12), threads, 'c-0')).toEqual([8, 9, 10, 11]);
  });

  it('sorts unsorted partitions and does not modify its inputs', () => {
    const partitions = [5, 3, 1, 0, 4, 2];
    const threads = ['b-0', 'a-0'];
    expect(assignRange(partitions, threads, 'a-0')).toEqual([0, 1, 2]);
    expect(assignRange(partitions, threads, 'b-0')).toEqual([3, 4, 5]);
    expect(partitions).toEqual([5, 3, 1, 0, 4, 2]);
    expect(threads).toEqual(['b-0', 'a-0']);
  });

  it('gives the remainder to the first threads, one each', () => {
    const threads = ['t-0', 't-1', 't-2', 't-3'];
    const all = assignAll(range(10), threads);
    expect(all.get('t-0')).toEqual([0, 1, 2]);
    expect(all.get('t-1')).toEqual([3, 4, 5]);
    expect(all.get('t-2')).toEqual([6, 7]);
    expect(all.get('t-3')).toEqual([8, 9]);
  });

  it('leaves the extra threads without partitions when there are more threads than partitions', () => {
    const threads = ['a-0', 'a-1', 'b-0', 'b-1', 'c-0'];
    expect(assignRange([0, 1, 2], threads, 'a-0')).toEqual([0]);
    expect(assignRange([0, 1, 2], threads, 'b-0')).toEqual([2]);
    expect(assignRange([0, 1, 2], threads, 'b-1')).toEqual([]);
    expect(assignRange([0, 1, 2], threads, 'c-0')).toEqual([]);
  });

  it('returns nothing for a thread not in the list, no threads or no partitions', () => {
    expect(assignRange(range(4), ['a-0'], 'z-0')).toEqual([]);
    expect(assignRange(range(4), [], 'a-0')).toEqual([]);
    expect(assignRange([], ['a-0'], 'a-0')).toEqual([]);
  });

  it('sorts thread ids by code unit, the same on every member', () => {
    // 'a-10' < 'a-2' by code unit: all members agree on this order.
    expect(assignRange(range(3), ['a-2', 'a-10', 'a-1'], 'a-1')).toEqual([0]);
    expect(assignRange(range(3), ['a-2', 'a-10', 'a-1'], 'a-10')).toEqual([1]);
    expect(assignRange(range(3), ['a-2', 'a-10', 'a-1'], 'a-2')).toEqual([2]);
  });

  it('assigns every partition exactly once across all threads, whatever the order each member sees', () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 200; round += 1) {
      const partitions = range(random(40));
      const threads = range(1 + random(15)).map((i) => `consumer-${random(5)}-${i}`);
      const unique = [...new Set(threads)];
      const shuffled = [...unique].sort(() => random(3) - 1);
      const seen: number[] = [];
      for (const thread of unique) seen.push(...assignRange([...partitions].reverse(), shuffled, thread));
      expect(seen.sort((a, b) => a - b)).toEqual(partitions);
      const sizes = unique.map((thread) => assignRange(partitions, unique, thread).length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });
});
