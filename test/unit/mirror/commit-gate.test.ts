/**
 * The mirror's commit rule in isolation: the gate admits an offset only once every pulled record
 * below it is acknowledged and the audit flush ran; the gated store holds the group's offset
 * writes (and only those) until then, writes the commit's target position with them, and answers
 * the consumer's offset reads with the resume point, over the in-process coordination store.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { offsetPath, offsetsPath, ownerPath } from '../../../src/coordination/paths.js';
import { CommitGate } from '../../../src/mirror/commit-gate.js';
import { GatedOffsetStore } from '../../../src/mirror/gated-offset-store.js';
import { positionPath, readPosition } from '../../../src/mirror/progress-nodes.js';

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

function gate(waitMs = 10_000): { gate: CommitGate; steps: string[] } {
  const steps: string[] = [];
  return {
    steps,
    gate: new CommitGate({
      waitMs,
      beforeCommit: async (topic, partition, offset) => {
        steps.push(`flush ${topic}-${partition}@${offset}`);
      },
    }),
  };
}

describe('CommitGate', () => {
  it('admits at once when nothing pulled below the offset is pending, flushing first', async () => {
    const { gate: g, steps } = gate();
    g.pulled('t', 0, 10n);
    await g.admit('t', 0, 10n); // offset 10 itself is not below the committed position 10
    await g.admit('t', 1, 99n); // another partition
    expect(steps).toEqual(['flush t-0@10', 'flush t-1@99']);
  });

  it('waits until every pulled record below the offset is acknowledged, in any order', async () => {
    const { gate: g, steps } = gate();
    for (const offset of [5n, 6n, 7n]) g.pulled('t', 0, offset);
    let admitted = false;
    const admission = g.admit('t', 0, 8n).then(() => (admitted = true));
    g.acknowledged('t', 0, 7n);
    g.acknowledged('t', 0, 5n);
    await settle();
    expect(admitted).toBe(false);
    expect(steps).toEqual([]);
    g.acknowledged('t', 0, 6n);
    await admission;
    expect(steps).toEqual(['flush t-0@8']);
    expect(g.acknowledgedEnd('t', 0)).toBe(8n);
    expect(g.unacknowledged).toBe(0);
  });

  it('counts a record pulled twice (a replay) until both copies are acknowledged', async () => {
    const { gate: g } = gate();
    g.pulled('t', 0, 3n);
    g.pulled('t', 0, 3n);
    g.acknowledged('t', 0, 3n);
    let admitted = false;
    const admission = g.admit('t', 0, 4n).then(() => (admitted = true));
    await settle();
    expect(admitted).toBe(false);
    g.acknowledged('t', 0, 3n);
    await admission;
  });

  it('refuses with a retriable MIRROR_COMMIT_WAIT_TIMEOUT when acknowledgements do not come in time', async () => {
    const { gate: g, steps } = gate(30);
    g.pulled('t', 2, 0n);
    const error = await g.admit('t', 2, 1n).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).code).toBe('MIRROR_COMMIT_WAIT_TIMEOUT');
    expect((error as TributaryError).retriable).toBe(true);
    expect((error as TributaryError).details).toEqual({ topic: 't', partition: 2, offset: '1' });
    expect(steps).toEqual([]);
  });

  it('refuses every commit, waiting or later, once failed', async () => {
    const { gate: g } = gate();
    g.pulled('t', 0, 0n);
    const waiting = g.admit('t', 0, 1n);
    const failure = new TributaryError({ code: 'MIRROR_SEND_FAILED', message: 'refused for good' });
    g.fail(failure);
    await expect(waiting).rejects.toBe(failure);
    await expect(g.admit('t', 1, 0n)).rejects.toBe(failure);
  });
});

describe('GatedOffsetStore', () => {
  it("holds the group's offset writes until the gate admits them, and passes other writes through", async () => {
    const store = new MemoryCoordination().session();
    const { gate: g, steps } = gate();
    const gated = new GatedOffsetStore(store, 'mirror', g, (_topic, _partition, committed) => Promise.resolve(committed));
    await gated.ensurePath(offsetsPath('mirror', 'events'));
    await gated.ensurePath('/consumers/mirror/owners/events');
    await gated.create(ownerPath('mirror', 'events', 0), Buffer.from('me-0'), 'ephemeral');
    g.pulled('events', 0, 41n);
    // Not this group's offsets: written at once although a record of events-0 is pending.
    await gated.create('/elsewhere', Buffer.from('1'), 'persistent');
    await gated.ensurePath(offsetsPath('other-group', 'events'));
    await gated.create(offsetPath('other-group', 'events', 0), Buffer.from('42'), 'persistent');
    expect(steps).toEqual([]);

    const path = offsetPath('mirror', 'events', 0);
    const write = gated.transaction([
      { op: 'check', path: ownerPath('mirror', 'events', 0) },
      { op: 'create', path, data: Buffer.from('42'), mode: 'persistent' },
    ]);
    await settle();
    expect(await store.get(path)).toBeUndefined();
    g.acknowledged('events', 0, 41n);
    await write;
    expect((await store.get(path))?.data.toString('utf8')).toBe('42');
    expect(steps).toEqual(['flush events-0@42']);

    g.pulled('events', 0, 42n);
    const set = gated.set(path, Buffer.from('43'));
    await settle();
    expect((await store.get(path))?.data.toString('utf8')).toBe('42');
    g.acknowledged('events', 0, 42n);
    await set;
    expect((await store.get(path))?.data.toString('utf8')).toBe('43');
    await store.close();
  });
});

describe('GatedOffsetStore, resume and positions', () => {
  it("answers a read of the group's offset with the resume point, and other reads as stored", async () => {
    const store = new MemoryCoordination().session();
    const { gate: g } = gate();
    const asked: string[] = [];
    const gated = new GatedOffsetStore(store, 'mirror', g, (topic, partition, committed) => {
      asked.push(`${topic}-${partition}:${String(committed)}`);
      return Promise.resolve(partition === 0 ? 57n : undefined);
    });
    await store.ensurePath(offsetsPath('mirror', 'events'));
    await store.create(offsetPath('mirror', 'events', 0), Buffer.from('40'), 'persistent');
    expect((await gated.get(offsetPath('mirror', 'events', 0)))?.data.toString('utf8')).toBe('57');
    expect((await gated.get(offsetPath('mirror', 'events', 1)))).toBeUndefined();
    expect(asked).toEqual(['events-0:40', 'events-1:undefined']);
    await store.create('/elsewhere', Buffer.from('3'), 'persistent');
    expect((await gated.get('/elsewhere'))?.data.toString('utf8')).toBe('3');
    expect(asked).toHaveLength(2);
    await store.close();
  });

  it('records the resume point as the offset of a partition never committed, while this consumer owns it', async () => {
    const store = new MemoryCoordination().session();
    const { gate: g } = gate();
    const gated = new GatedOffsetStore(store, 'mirror', g, () => Promise.resolve(12n));
    await store.ensurePath('/consumers/mirror/owners/events');
    await store.create(ownerPath('mirror', 'events', 0), Buffer.from('me-0'), 'ephemeral');
    expect((await gated.get(offsetPath('mirror', 'events', 0)))?.data.toString('utf8')).toBe('12');
    expect((await store.get(offsetPath('mirror', 'events', 0)))?.data.toString('utf8')).toBe('12');
    // Not owned: answered, not written.
    expect((await gated.get(offsetPath('mirror', 'events', 1)))?.data.toString('utf8')).toBe('12');
    expect(await store.get(offsetPath('mirror', 'events', 1))).toBeUndefined();
    await store.close();
  });

  it('writes where the target stored the highest acknowledged record in the transaction of the commit', async () => {
    const store = new MemoryCoordination().session();
    const { gate: g } = gate();
    const gated = new GatedOffsetStore(store, 'mirror', g, (_topic, _partition, committed) => Promise.resolve(committed));
    await store.ensurePath(offsetsPath('mirror', 'events'));
    g.pulled('events', 2, 10n);
    g.pulled('events', 2, 11n);
    g.acknowledged('events', 2, 10n, { partition: 2, offset: 500n });
    g.acknowledged('events', 2, 11n, { partition: 2, offset: 503n });
    await gated.transaction([{ op: 'create', path: offsetPath('mirror', 'events', 2), data: Buffer.from('12'), mode: 'persistent' }]);
    expect(await readPosition(store, positionPath('mirror', 'events', 2))).toEqual({ sourceEnd: 12n, targetPartition: 2, targetOffset: 503n });
    g.pulled('events', 2, 12n);
    g.acknowledged('events', 2, 12n, { partition: 2, offset: 510n });
    await gated.transaction([{ op: 'set', path: offsetPath('mirror', 'events', 2), data: Buffer.from('13') }]);
    expect(await readPosition(store, positionPath('mirror', 'events', 2))).toEqual({ sourceEnd: 13n, targetPartition: 2, targetOffset: 510n });
    await store.close();
  });
});

describe('CommitGate.settle', () => {
  it("waits until every pulled record of the partition is acknowledged, and only that partition's", async () => {
    const { gate: g } = gate();
    g.pulled('t', 0, 5n);
    g.pulled('t', 1, 9n);
    let settled = false;
    const waiting = g.settle('t', 0).then(() => {
      settled = true;
    });
    await settle();
    expect(settled).toBe(false);
    g.acknowledged('t', 0, 5n);
    await waiting;
    expect(settled).toBe(true);
  });

  it('fails retriably when the records are not acknowledged in time', async () => {
    const { gate: g } = gate(30);
    g.pulled('t', 0, 5n);
    await expect(g.settle('t', 0)).rejects.toMatchObject({ code: 'MIRROR_COMMIT_WAIT_TIMEOUT', retriable: true });
  });
});
