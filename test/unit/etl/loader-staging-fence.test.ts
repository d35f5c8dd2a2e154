/**
 * A run whose staging folder the committing run removes while it still writes there (found by
 * `npm run chaos -- loader --scenario racing-workers`: two `etl run` started together without a
 * lease): on HDFS its create then fails with FileNotFoundException. The run was stale, and must
 * say so with ETL_COMMIT_FENCED, not fail with WAREHOUSE_NOT_FOUND ("check the path"), which a
 * job also takes for a permanent warehouse problem. Fails without src/etl/load/staging-fence.ts
 * (and the last test without the WAREHOUSE_NOT_FOUND case of src/etl/load/publish-claim.ts).
 */
import { describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { planPhase, taskPhase, type PlannedRun } from '../../../src/etl/load/phases.js';
import { publishClaim } from '../../../src/etl/load/publish-claim.js';
import { runLoad, type RunOptions } from '../../../src/etl/load/run.js';
import { warehouseError } from '../../../src/etl/warehouse/errors.js';
import type { WarehouseData } from '../../../src/etl/warehouse/warehouse.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { FakeSource, MemoryWarehouse, quietLogger } from './loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from './loader-world.js';

const TOPIC = 'views';
const T0 = Date.UTC(2026, 10, 29, 13, 0, 0);
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' } },
  ],
});

const registry = useLoaderRegistry(`${TOPIC}-value`, [SCHEMA]);

async function produce(source: FakeSource, count: number): Promise<void> {
  const serializer = new AvroSerializer(registry.client);
  for (let id = 0; id < count; id += 1) source.append(TOPIC, id % 2, await serializer.encode(`${TOPIC}-value`, { id, time: T0 + id }, SCHEMA), T0 + id);
}

function options(warehouse: MemoryWarehouse, source: FakeSource): RunOptions {
  return {
    load: memoryLoad(TOPIC, registry.url),
    warehouse,
    source,
    registry: registry.client,
    logger: quietLogger,
    acceptGap: false,
    // Each run its own coordination tree: no lease keeps them apart, only the commit claim.
    store: new MemoryCoordination().session(),
    numberRuns: false,
    now: () => new Date('2026-11-29T17:00:00Z'),
  };
}

/**
 * A view of `warehouse` whose creates under staging wait at the first one (`entered`) until
 * `removed()`, then fail as HDFS fails a create whose folder was deleted while it was written.
 */
function stagingRemovedWhileWriting(warehouse: MemoryWarehouse): { warehouse: MemoryWarehouse; entered: Promise<void>; removed: () => void } {
  let enter: () => void = () => {};
  let removed: () => void = () => {};
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const gone = new Promise<void>((resolve) => (removed = resolve));
  const view = Object.assign(Object.create(warehouse) as MemoryWarehouse, {
    create: async (path: string, data: WarehouseData) => {
      if (!path.includes('/staging/')) return warehouse.create(path, data);
      enter();
      await gone;
      throw warehouseError('WAREHOUSE_NOT_FOUND', {
        operation: 'create',
        path,
        location: `memory:/${path}`,
        reason: `HDFS said FileNotFoundException: File does not exist: ${path} (inode 16712) Holder DFSClient_1 does not have any open files.`,
      });
    },
  });
  return { warehouse: view, entered, removed };
}

describe('a run whose staging the committing run removed', () => {
  it('etl run: fails with ETL_COMMIT_FENCED, and the other run\'s commit stands', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 2);
    await produce(source, 20);
    const stale = stagingRemovedWhileWriting(warehouse);
    const staleRun = runLoad(options(stale.warehouse, source));
    await stale.entered;
    const winner = await runLoad(options(warehouse, source));
    expect(winner.manifest?.seq).toBe(1);
    stale.removed();
    await expect(staleRun).rejects.toMatchObject({ code: 'ETL_COMMIT_FENCED', cause: { code: 'WAREHOUSE_NOT_FOUND' } });
    const log = await readCommitLog(warehouse, 'wh', 'views');
    expect([log.lastClaimed, log.lastPublished, log.pending]).toEqual([1, 1, []]);
  });

  it('a task job of a stale run: fails with ETL_COMMIT_FENCED', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 2);
    await produce(source, 20);
    const services = options(warehouse, source);
    const planned = await planPhase(services, false, async (run: PlannedRun) => run);
    const stale = stagingRemovedWhileWriting(warehouse);
    const task = taskPhase({ ...services, warehouse: stale.warehouse }, planned.tasks[0]!);
    await stale.entered;
    expect((await runLoad(options(warehouse, source))).manifest?.seq).toBe(planned.plan.seq);
    stale.removed();
    await expect(task).rejects.toMatchObject({ code: 'ETL_COMMIT_FENCED' });
  });

  it('a staging failure while the seq is still free stays what it was', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 2);
    await produce(source, 20);
    const broken = stagingRemovedWhileWriting(warehouse);
    const run = runLoad(options(broken.warehouse, source));
    await broken.entered;
    broken.removed();
    await expect(run).rejects.toMatchObject({ code: 'WAREHOUSE_NOT_FOUND' });
  });

  it('a roll-forward whose publication copy was removed with the staging accepts the publication the other process made', async () => {
    const warehouse = new MemoryWarehouse();
    const bytes = Buffer.from('{"seq":1}');
    await warehouse.create('wh/_etl/views/commits/0000000001.json', bytes);
    const rolling = stagingRemovedWhileWriting(warehouse);
    rolling.removed();
    const publication = { warehouse: rolling.warehouse, load: 'views', seq: 1, claimBytes: bytes, claimPath: 'wh/_etl/views/commits/0000000001.pending', target: 'wh/_etl/views/commits/0000000001.json', stagingFolder: 'wh/_etl/views/staging/0000000001-abc', logName: 'commit log' };
    await expect(publishClaim(publication)).resolves.toBeUndefined();
  });
});
