import { describe, expect, it } from 'vitest';
import { ReadBufferPool } from '../../../src/broker/read-buffer-pool.js';

describe('ReadBufferPool', () => {
  it('hands out views of exactly the length asked, on slabs it reuses once given back', () => {
    const pool = new ReadBufferPool(1024, 2);
    const first = pool.take(100);
    expect(first.bytes.length).toBe(100);
    expect(first.slab?.length).toBe(1024);
    if (first.slab === undefined) throw new Error('expected a pooled slab');
    pool.give(first.slab);
    expect(pool.idle).toBe(1);
    const second = pool.take(1024);
    expect(second.slab).toBe(first.slab);
    expect(second.bytes.buffer).toBe(first.bytes.buffer);
    expect(pool.idle).toBe(0);
  });

  it('never hands the same slab out twice while it is taken', () => {
    const pool = new ReadBufferPool(64, 4);
    const taken = [pool.take(10), pool.take(64), pool.take(1)];
    expect(new Set(taken.map((t) => t.slab)).size).toBe(3);
  });

  it('gives a request longer than a slab its own buffer, which it does not keep', () => {
    const pool = new ReadBufferPool(64, 4);
    const big = pool.take(65);
    expect(big.bytes.length).toBe(65);
    expect(big.slab).toBeUndefined();
    pool.give(big.bytes);
    expect(pool.idle).toBe(0);
  });

  it('keeps at most maxFree idle slabs', () => {
    const pool = new ReadBufferPool(64, 2);
    const slabs = [pool.take(1), pool.take(1), pool.take(1)].map((t) => t.slab);
    for (const slab of slabs) if (slab !== undefined) pool.give(slab);
    expect(pool.idle).toBe(2);
  });
});
