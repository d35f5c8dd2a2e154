import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../../src/common/buffer-pool.js';

describe('BufferPool', () => {
  it('hands out exactly the length asked, and reuses a buffer once it is given back', () => {
    const pool = new BufferPool(1024, 1 << 20, 2);
    const first = pool.take(3000);
    expect(first.length).toBe(3000);
    expect(first.buffer.byteLength).toBe(4096);
    pool.give(first);
    expect(pool.idle).toBe(1);
    const second = pool.take(4096);
    expect(second.buffer).toBe(first.buffer);
    expect(pool.idle).toBe(0);
  });

  it('never lends the same memory twice while it is out', () => {
    const pool = new BufferPool(1024, 1 << 20, 4);
    const taken = [pool.take(2000), pool.take(2048), pool.take(1500)];
    expect(new Set(taken.map((t) => t.buffer)).size).toBe(3);
  });

  it('ignores a second give of the same buffer and buffers it did not lend', () => {
    const pool = new BufferPool(1024, 1 << 20, 4);
    const lent = pool.take(2000);
    pool.give(lent);
    pool.give(lent);
    pool.give(Buffer.alloc(2048));
    expect(pool.idle).toBe(1);
    const again = [pool.take(2000), pool.take(2000)];
    expect(again[0]?.buffer).not.toBe(again[1]?.buffer);
  });

  it('does not pool requests below minBytes or above maxBytes', () => {
    const pool = new BufferPool(1024, 4096, 4);
    const small = pool.take(100);
    const big = pool.take(4097);
    expect(small.length).toBe(100);
    expect(big.length).toBe(4097);
    pool.give(small);
    pool.give(big);
    expect(pool.idle).toBe(0);
  });

  it('keeps at most maxIdlePerClass idle buffers of a size', () => {
    const pool = new BufferPool(1024, 1 << 20, 2);
    const taken = [pool.take(5000), pool.take(5000), pool.take(5000)];
    for (const bytes of taken) pool.give(bytes);
    expect(pool.idle).toBe(2);
  });
});
