/**
 * Producer-id blocks claimed through real ZooKeeper: two brokers' allocators, each on its own
 * session, claiming at once never hand out the same id, and a later allocator continues above
 * everything claimed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { latestProducerIdBlockPath } from '../../../src/coordination/paths.js';
import { ProducerIdAllocator } from '../../../src/coordination/producer-ids.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { zookeeperAddress } from '../services.js';

const chroot = `/producer-ids-${process.pid}-${randomBytes(4).toString('hex')}`;
const silent = createLogger({ name: 'producer-ids-test', level: 'silent' });
const stores: ZooKeeperStore[] = [];

async function connect(): Promise<ZooKeeperStore> {
  const store = await ZooKeeperStore.connect(`${zookeeperAddress().connectString}${chroot}`, { logger: silent });
  stores.push(store);
  return store;
}

afterAll(async () => {
  for (const store of stores.splice(0)) await store.close().catch(() => undefined);
  const root = await ZooKeeperStore.connect(zookeeperAddress().connectString, { logger: silent });
  try {
    await root.deleteRecursive(chroot);
  } finally {
    await root.close();
  }
});

describe('ProducerIdAllocator on ZooKeeper', () => {
  it('gives two brokers claiming at once disjoint ids, and a later one ids above both', async () => {
    const [one, two] = [new ProducerIdAllocator({ store: await connect(), brokerId: 1, blockSize: 10 }), new ProducerIdAllocator({ store: await connect(), brokerId: 2, blockSize: 10 })];
    const ids = await Promise.all([one, two].flatMap((allocator) => Array.from({ length: 45 }, () => allocator.nextProducerId())));
    expect(new Set(ids).size).toBe(90);

    const node = await (await connect()).get(latestProducerIdBlockPath());
    const claimed = JSON.parse(node?.data.toString('utf8') ?? '{}') as { block_end: string };
    const later = new ProducerIdAllocator({ store: await connect(), brokerId: 3, blockSize: 10 });
    const next = await later.nextProducerId();
    expect(next).toBe(BigInt(claimed.block_end) + 1n);
    for (const id of ids) expect(id).toBeLessThan(next);
  });
});
