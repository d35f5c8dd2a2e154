import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { ProducerIdAllocator } from '../../../src/coordination/producer-ids.js';
import { latestProducerIdBlockPath } from '../../../src/coordination/paths.js';
import { coordinationError, type CoordinationStore } from '../../../src/coordination/store.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function stateFile(): string {
  const directory = mkdtempSync(join(tmpdir(), 'producer-ids-'));
  directories.push(directory);
  return join(directory, 'coordination.json');
}

async function take(allocator: ProducerIdAllocator, count: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < count; i += 1) ids.push(await allocator.nextProducerId());
  return ids;
}

/**
 * A real memory store whose writes to the producer-id node fail with CONNECTION_LOSS as scripted:
 * 'applied' performs the write and then reports the loss (the answer was lost), 'dropped' reports
 * it without writing.
 */
function lossyStore(store: CoordinationStore, script: ('applied' | 'dropped')[], code: 'CONNECTION_LOSS' | 'TIMEOUT' | 'SESSION_EXPIRED' = 'CONNECTION_LOSS'): CoordinationStore {
  const lose = async (write: () => Promise<unknown>): Promise<never> => {
    const next = script.shift();
    if (next === 'applied') await write();
    throw coordinationError(code, { operation: `write ${latestProducerIdBlockPath()}` });
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'set') {
        return (path: string, data: Buffer, version?: number) => (script.length > 0 ? lose(() => target.set(path, data, version)) : target.set(path, data, version));
      }
      if (property === 'create') {
        return (path: string, data: Buffer, mode: Parameters<CoordinationStore['create']>[2]) =>
          script.length > 0 ? lose(() => target.create(path, data, mode)) : target.create(path, data, mode);
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('ProducerIdAllocator', () => {
  it('hands out consecutive ids from 0, claiming a new block when one is spent', async () => {
    const store = new MemoryCoordination().session();
    const allocator = new ProducerIdAllocator({ store, brokerId: 3, blockSize: 4 });
    expect(await take(allocator, 6)).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    const node = await store.get(latestProducerIdBlockPath());
    expect(JSON.parse(node?.data.toString() ?? '{}')).toMatchObject({ version: 1, broker: 3, block_start: '4', block_end: '7' });
  });

  it('persists the block before any of its ids is handed out', async () => {
    const store = new MemoryCoordination().session();
    const allocator = new ProducerIdAllocator({ store, brokerId: 1, blockSize: 10 });
    await allocator.nextProducerId();
    const node = await store.get(latestProducerIdBlockPath());
    expect(JSON.parse(node?.data.toString() ?? '{}')).toMatchObject({ block_start: '0', block_end: '9' });
  });

  it('never gives the same id to two allocators sharing a store, however their calls interleave', async () => {
    const tree = new MemoryCoordination();
    const allocators = [0, 1, 2].map((brokerId) => new ProducerIdAllocator({ store: tree.session(), brokerId, blockSize: 7 }));
    const ids = await Promise.all(allocators.flatMap((allocator) => Array.from({ length: 50 }, () => allocator.nextProducerId())));
    expect(ids).toHaveLength(150);
    expect(new Set(ids).size).toBe(150);
  });

  it('continues above every id handed out before a restart (persisted store file)', async () => {
    const file = stateFile();
    const first = new MemoryCoordination({ file }).session();
    const before = await take(new ProducerIdAllocator({ store: first, brokerId: 0, blockSize: 5 }), 7);
    await first.close();

    const second = new MemoryCoordination({ file }).session();
    const after = await take(new ProducerIdAllocator({ store: second, brokerId: 0, blockSize: 5 }), 3);
    expect(after[0]).toBeGreaterThan(before.at(-1) ?? -1n);
    // The rest of the block in use at the stop is abandoned, never reissued.
    expect(after).toEqual([10n, 11n, 12n]);
  });

  for (const code of ['CONNECTION_LOSS', 'TIMEOUT', 'SESSION_EXPIRED'] as const) {
    it(`after a ${code} answer to a write that happened, uses the block it wrote`, async () => {
      const store = new MemoryCoordination().session();
      await new ProducerIdAllocator({ store, brokerId: 0, blockSize: 10 }).nextProducerId();
      const allocator = new ProducerIdAllocator({ store: lossyStore(store, ['applied'], code), brokerId: 1, blockSize: 10 });
      expect(await allocator.nextProducerId()).toBe(10n);
      const node = await store.get(latestProducerIdBlockPath());
      expect(JSON.parse(node?.data.toString() ?? '{}')).toMatchObject({ broker: 1, block_start: '10', block_end: '19' });
    });
  }

  it('after a lost answer to a write that did not happen, claims again and hands out nothing unclaimed', async () => {
    const tree = new MemoryCoordination();
    const store = tree.session();
    const allocator = new ProducerIdAllocator({ store: lossyStore(store, ['dropped', 'dropped']), brokerId: 1, blockSize: 10 });
    expect(await allocator.nextProducerId()).toBe(0n);
    const other = new ProducerIdAllocator({ store: tree.session(), brokerId: 2, blockSize: 10 });
    expect(await other.nextProducerId()).toBe(10n);
  });

  it('abandons a block whose write happened but was claimed over before it could tell', async () => {
    const tree = new MemoryCoordination();
    const rival = new ProducerIdAllocator({ store: tree.session(), brokerId: 2, blockSize: 10 });
    const base = tree.session();
    // The lost write lands (block 0–9); the rival claims 10–19 on top before the re-read.
    const store = new Proxy(base, {
      get(target, property, receiver) {
        if (property === 'create') {
          return async (path: string, data: Buffer, mode: Parameters<CoordinationStore['create']>[2]) => {
            await target.create(path, data, mode);
            await rival.nextProducerId();
            throw coordinationError('CONNECTION_LOSS', { operation: `create ${path}` });
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const allocator = new ProducerIdAllocator({ store, brokerId: 1, blockSize: 10 });
    expect(await allocator.nextProducerId()).toBe(20n);
    expect(await rival.nextProducerId()).toBe(11n);
  });

  it('refuses a node it cannot read rather than guessing where ids stopped', async () => {
    const store = new MemoryCoordination().session();
    await store.create(latestProducerIdBlockPath(), Buffer.from('{"block_start":"x"}'), 'persistent');
    await expect(new ProducerIdAllocator({ store, brokerId: 0 }).nextProducerId()).rejects.toMatchObject({ code: 'PRODUCER_ID_BLOCK_INVALID' });
  });

  it('reads ids above 2^53 without rounding', async () => {
    const store = new MemoryCoordination().session();
    await store.create(latestProducerIdBlockPath(), Buffer.from(JSON.stringify({ version: 1, broker: 0, block_start: '9007199254740000', block_end: '9007199254740999' })), 'persistent');
    expect(await new ProducerIdAllocator({ store, brokerId: 0 }).nextProducerId()).toBe(9007199254741000n);
  });
});
