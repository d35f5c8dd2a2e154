/**
 * The loader's memory budget: spill buffers take their in-memory bytes from it; past its limit the
 * buffers holding the most go to disk first, their bytes unchanged; row-group encodings run one
 * at a time with their estimate reserved.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { effectiveRowGroupBytes, MemoryBudget } from '../../../src/etl/load/memory-budget.js';
import { SpillBuffer } from '../../../src/etl/load/spill.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'tributary-budget-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function contents(buffer: SpillBuffer): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of buffer.chunks()) parts.push(chunk);
  return Buffer.concat(parts);
}

describe('MemoryBudget', () => {
  it('spills the largest buffers when a write would pass the limit, and every buffer keeps its bytes', async () => {
    const budget = new MemoryBudget(300_000);
    const small = new SpillBuffer(directory, budget);
    const large = new SpillBuffer(directory, budget);
    const written = { small: [] as Buffer[], large: [] as Buffer[] };
    for (let index = 0; index < 5; index += 1) {
      const chunk = Buffer.alloc(40_000, index);
      large.write(chunk);
      written.large.push(chunk);
    }
    small.write(Buffer.alloc(30_000, 7));
    written.small.push(Buffer.alloc(30_000, 7));
    expect(budget.usedBytes).toBe(230_000);
    expect(budget.spills).toBe(0);
    // 100,000 more would pass 300,000: the large buffer (200,000 in memory) goes to disk, not the small one.
    const third = Buffer.alloc(100_000, 9);
    small.write(third);
    written.small.push(third);
    expect(large.memoryBytes).toBe(0);
    expect(small.memoryBytes).toBe(130_000);
    expect(budget.spills).toBe(1);
    // The large buffer's bytes count until they are written; draining waits for that.
    expect(budget.usedBytes).toBe(330_000);
    await budget.drain();
    expect(budget.usedBytes).toBe(130_000);
    expect((await readdir(directory)).filter((name) => name.endsWith('.spill'))).toHaveLength(1);
    expect((await contents(large)).equals(Buffer.concat(written.large))).toBe(true);
    expect((await contents(small)).equals(Buffer.concat(written.small))).toBe(true);
    await small.dispose();
    await large.dispose();
    expect(budget.usedBytes).toBe(0);
  });

  it('runs exclusive work one at a time, with its estimate reserved while it runs', async () => {
    const budget = new MemoryBudget(1_000_000);
    const order: string[] = [];
    let release!: () => void;
    const first = budget.exclusive(400_000, async () => {
      order.push('first starts');
      expect(budget.usedBytes).toBe(400_000);
      await new Promise<void>((resolve) => (release = resolve));
      order.push('first ends');
    });
    const second = budget.exclusive(100_000, () => {
      order.push('second runs');
      expect(budget.usedBytes).toBe(100_000);
      return Promise.resolve();
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first starts']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first starts', 'first ends', 'second runs']);
    expect(budget.usedBytes).toBe(0);
  });

  it('a failed exclusive work gives its reservation back and does not stop the next', async () => {
    const budget = new MemoryBudget(1_000_000);
    await expect(budget.exclusive(500_000, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(budget.exclusive(10, () => Promise.resolve('next'))).resolves.toBe('next');
    expect(budget.usedBytes).toBe(0);
  });

  it('caps a row group at an eighth of the budget', () => {
    expect(effectiveRowGroupBytes(128 * 1024 * 1024, new MemoryBudget(128 * 1024 * 1024))).toBe(16 * 1024 * 1024);
    expect(effectiveRowGroupBytes(1024 * 1024, new MemoryBudget(128 * 1024 * 1024))).toBe(1024 * 1024);
  });
});
