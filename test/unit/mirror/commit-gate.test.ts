/**
 * The mirror's commit rule in isolation: the gate admits an offset only once every pulled record
 * below it is acknowledged and the audit flush ran; the gated store holds the group's offset
 * writes (and only those) until then, over the in-process coordination store.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { offsetPath, offsetsPath, ownerPath } from '../../../src/coordination/paths.js';
import { CommitGate } from '../../../src/mirror/commit-gate.js';
import { GatedOffsetStore } from '../../../src/mirror/gated-offset-store.js';

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

function gate(waitMs = 10_000): { gate: CommitGate; steps: string[] } {
  const steps: string[] = [];
  return {
    steps,
    gate: new CommitGate({
      waitMs,
      beforeCommit: async () => {
        steps.push('flush');
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
    expect(steps).toEqual(['flush', 'flush']);
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
    expect(steps).toEqual(['flush']);
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
    const gated = new GatedOffsetStore(store, 'mirror', g);
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
    expect(steps).toEqual(['flush']);

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
