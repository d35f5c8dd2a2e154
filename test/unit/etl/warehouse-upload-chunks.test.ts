/**
 * How a streamed CREATE body is cut for the DataNode (src/etl/warehouse/webhdfs-datanode.ts):
 * small pieces are joined up to the minimum, large ones pass as they are, nothing is lost,
 * reordered or left behind at the end.
 */
import { describe, expect, it } from 'vitest';
import { coalesced } from '../../../src/etl/warehouse/webhdfs-datanode.js';

async function* piecesOf(sizes: readonly number[]): AsyncGenerator<Buffer> {
  let next = 0;
  for (const size of sizes) {
    yield Buffer.from(Array.from({ length: size }, () => next++ % 251));
  }
}

async function collect(sizes: readonly number[], minimum: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const chunk of coalesced(piecesOf(sizes), minimum)) out.push(chunk);
  return out;
}

describe('upload chunks', () => {
  it('joins small pieces up to the minimum and sends the rest at the end', async () => {
    const out = await collect([3, 3, 3, 3, 3], 5);
    expect(out.map((chunk) => chunk.length)).toEqual([6, 6, 3]);
    expect(Buffer.concat(out)).toEqual(Buffer.concat(await collect([15], 1)));
  });

  it('passes a piece of the minimum or more as it is, after what was pending', async () => {
    const out = await collect([2, 10, 10, 1], 5);
    expect(out.map((chunk) => chunk.length)).toEqual([12, 10, 1]);
  });

  it('keeps every byte in order and drops empty pieces', async () => {
    const sizes = [0, 7, 1, 0, 30, 2, 2, 2, 0];
    const out = await collect(sizes, 8);
    expect(out.every((chunk) => chunk.length > 0)).toBe(true);
    const expected = Buffer.from(Array.from({ length: 44 }, (_, index) => index % 251));
    expect(Buffer.concat(out)).toEqual(expected);
  });

  it('sends nothing for an empty body', async () => {
    expect(await collect([], 8)).toEqual([]);
    expect(await collect([0, 0], 8)).toEqual([]);
  });
});
