/**
 * GroupAdmin on an in-memory registry (no broker registered, so no log ends): the kind of each
 * group id, committed offsets of either form, and which groups it may delete or reset.
 */
import { describe, expect, it } from 'vitest';
import { GroupAdmin } from '../../../src/client/group-admin.js';
import { encodeCommittedOffset } from '../../../src/coordination/group-registry.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import type { CoordinationStore } from '../../../src/coordination/store.js';

async function put(store: CoordinationStore, path: string, data: string | Buffer, mode: 'persistent' | 'ephemeral' = 'persistent'): Promise<void> {
  await store.ensurePath(path.slice(0, path.lastIndexOf('/')));
  await store.create(path, Buffer.isBuffer(data) ? data : Buffer.from(data), mode);
}

async function registry(): Promise<CoordinationStore> {
  const store = new MemoryCoordination().session();
  await put(store, '/brokers/topics/events', JSON.stringify({ version: 1, partitions: { '0': [1], '1': [1] } }));
  // A paper group with a live member and a decimal offset.
  await put(store, '/consumers/paper/kind', '{"kind":"zookeeper"}');
  await put(store, '/consumers/paper/ids/paper-1', JSON.stringify({ subscription: { events: 1 } }), 'ephemeral');
  await put(store, '/consumers/paper/offsets/events/0', '7');
  // A paper group from before the kind node: known by its ids folder; idle.
  await store.ensurePath('/consumers/legacy/ids');
  // A broker group: JSON offsets as the coordinator writes them.
  await put(store, '/consumers/kafka/kind', JSON.stringify({ kind: 'broker', protocolType: 'consumer', emptySince: 1 }));
  await put(store, '/consumers/kafka/offsets/events/0', encodeCommittedOffset({ offset: 12n, leaderEpoch: 0, metadata: '', commitTimestamp: 1 }));
  await put(store, '/consumers/kafka/offsets/events/1', encodeCommittedOffset({ offset: 30n, leaderEpoch: 0, metadata: 'x', commitTimestamp: 2 }));
  // Offsets only (a reset of an unused id), and a corrupt kind node.
  await put(store, '/consumers/orphan/offsets/events/1', '3');
  await put(store, '/consumers/broken/kind', 'not json');
  return store;
}

describe('GroupAdmin', () => {
  it('lists every group id with its kind', async () => {
    const admin = new GroupAdmin(await registry());
    expect(await admin.listGroups()).toEqual(['broken', 'kafka', 'legacy', 'orphan', 'paper']);
    expect(await admin.listGroupKinds()).toEqual([
      { group: 'broken', kind: 'unreadable', liveMembers: [] },
      { group: 'kafka', kind: 'broker', liveMembers: [] },
      { group: 'legacy', kind: 'zookeeper', liveMembers: [] },
      { group: 'orphan', kind: 'none', liveMembers: [] },
      { group: 'paper', kind: 'zookeeper', liveMembers: ['paper-1'] },
    ]);
    expect(await admin.kindOf('missing')).toBeUndefined();
  });

  it('reads committed offsets of both forms: decimal text and the JSON of broker groups', async () => {
    const admin = new GroupAdmin(await registry());
    const kafka = await admin.describe('kafka');
    expect(kafka.partitions.map((p) => [p.partition, p.committed])).toEqual([
      [0, 12n],
      [1, 30n],
    ]);
    const paper = await admin.describe('paper');
    expect(paper.members).toEqual([{ id: 'paper-1', subscription: { events: 1 } }]);
    expect(paper.partitions.map((p) => [p.partition, p.committed, p.logEnd, p.lag])).toEqual([
      [0, 7n, undefined, undefined],
      [1, undefined, undefined, undefined],
    ]);
  });

  it('deletes an idle ZooKeeper group, and refuses a live one, a broker group and a missing one', async () => {
    const store = await registry();
    const admin = new GroupAdmin(store);
    await expect(admin.deleteGroup('paper')).rejects.toMatchObject({ code: 'GROUP_ACTIVE', message: expect.stringContaining('stop its members first') as unknown });
    await expect(admin.deleteGroup('kafka')).rejects.toMatchObject({ code: 'GROUP_KIND_CONFLICT', message: expect.stringContaining('--bootstrap-server') as unknown });
    await expect(admin.deleteGroup('missing')).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
    await admin.deleteGroup('legacy');
    await admin.deleteGroup('orphan');
    expect(await store.exists('/consumers/legacy')).toBe(false);
    expect(await store.exists('/consumers/orphan')).toBe(false);
    expect(await store.exists('/consumers/kafka/offsets/events/0')).toBe(true);
  });

  it('never resets a broker group through the registry', async () => {
    const store = await registry();
    await expect(new GroupAdmin(store).resetOffsets('kafka', 'events', { kind: 'earliest' })).rejects.toMatchObject({ code: 'GROUP_KIND_CONFLICT' });
    expect(JSON.parse((await store.get('/consumers/kafka/offsets/events/0'))?.data.toString() ?? '{}')).toMatchObject({ offset: '12' });
  });
});
