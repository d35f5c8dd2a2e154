/**
 * The contract every CoordinationStore keeps — ZooKeeper's semantics — as one suite, run against
 * the in-process store (memory-store.test.ts) and against real ZooKeeper
 * (test/integration/coordination/zookeeper-store.test.ts).
 *
 * Ordering, not time: ZooKeeper delivers a watch event to a session before that session can read
 * the change it reports. So "the watch did not fire again" is asserted after the watching
 * session has read the newer data — by then any notification would have arrived.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import type { CoordinationStore, SessionEvent, WatchEvent, Watcher } from '../../../src/coordination/store.js';

export interface ExpirableStore {
  readonly store: CoordinationStore;
  /** Makes the store's session expire the way its backend really would, and returns once it has. */
  readonly expire: () => Promise<void>;
}

export interface ContractFixture {
  /** A new session, connected, on the same namespace as every other session of the fixture. */
  open(): Promise<CoordinationStore>;
  /** A new session that the fixture can make expire. */
  openExpirable(): Promise<ExpirableStore>;
  teardown?(): Promise<void>;
}

export interface ContractOptions {
  /** Limit for the polls that wait on another session or on expiry. */
  readonly pollTimeoutMs?: number;
}

/** The error a promise rejects with, checked to be a TributaryError with `code`. */
export async function failure(promise: Promise<unknown>, code: string): Promise<TributaryError> {
  const outcome = await promise.then(
    (value: unknown) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a ${code} failure, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(TributaryError);
  const error = outcome.error as TributaryError;
  expect({ code: error.code, message: error.message }).toMatchObject({ code });
  return error;
}

/** A watcher that records what it sees. */
export function recorder(): { readonly events: WatchEvent[]; readonly watcher: Watcher } {
  const events: WatchEvent[] = [];
  return { events, watcher: (event) => void events.push(event) };
}

export function coordinationStoreContract(name: string, makeFixture: () => Promise<ContractFixture>, options: ContractOptions = {}): void {
  const poll = { timeout: options.pollTimeoutMs ?? 20_000, interval: 50 };

  describe(`${name} — CoordinationStore contract`, () => {
    let fixture: ContractFixture;
    let opened: CoordinationStore[] = [];
    let counter = 0;
    let base = '';

    const open = async (): Promise<CoordinationStore> => {
      const store = await fixture.open();
      opened.push(store);
      return store;
    };

    beforeEach(async () => {
      fixture = await makeFixture();
      counter += 1;
      base = `/contract-${counter}`;
      const store = await open();
      await store.ensurePath(base);
    });

    afterEach(async () => {
      const stores = opened;
      opened = [];
      await Promise.all(stores.map((store) => store.close()));
      await fixture.teardown?.();
    });

    describe('nodes and versions', () => {
      it('creates a persistent node and reads its data at version 0', async () => {
        const store = await open();
        expect(await store.create(`${base}/a`, Buffer.from('hello'), 'persistent')).toBe(`${base}/a`);
        const node = await store.get(`${base}/a`);
        expect(node?.data.toString('utf8')).toBe('hello');
        expect(node?.version).toBe(0);
        expect(await store.exists(`${base}/a`)).toBe(true);
        expect(await store.get(`${base}/missing`)).toBeUndefined();
        expect(await store.exists(`${base}/missing`)).toBe(false);
      });

      it('keeps empty data empty, and copies data in and out', async () => {
        const store = await open();
        const data = Buffer.from('abc');
        await store.create(`${base}/empty`, Buffer.alloc(0), 'persistent');
        await store.create(`${base}/copied`, data, 'persistent');
        data.write('xyz');
        expect((await store.get(`${base}/empty`))?.data.length).toBe(0);
        const read = await store.get(`${base}/copied`);
        read?.data.write('zzz');
        expect((await store.get(`${base}/copied`))?.data.toString('utf8')).toBe('abc');
      });

      it('fails NODE_EXISTS on an existing node and NO_NODE under a missing parent; neither is retriable', async () => {
        const store = await open();
        await store.create(`${base}/a`, Buffer.from('1'), 'persistent');
        const exists = await failure(store.create(`${base}/a`, Buffer.from('2'), 'persistent'), 'NODE_EXISTS');
        expect(exists.retriable).toBe(false);
        expect(exists.message).toContain(`${base}/a`);
        const noParent = await failure(store.create(`${base}/missing/child`, Buffer.alloc(0), 'persistent'), 'NO_NODE');
        expect(noParent.retriable).toBe(false);
        expect((await store.get(`${base}/a`))?.data.toString('utf8')).toBe('1');
      });

      it('increments the version on every set and honours expected versions', async () => {
        const store = await open();
        await store.create(`${base}/v`, Buffer.from('0'), 'persistent');
        expect(await store.set(`${base}/v`, Buffer.from('1'))).toBe(1);
        expect(await store.set(`${base}/v`, Buffer.from('2'), 1)).toBe(2);
        await failure(store.set(`${base}/v`, Buffer.from('stale'), 1), 'BAD_VERSION');
        expect(await store.get(`${base}/v`)).toEqual({ data: Buffer.from('2'), version: 2 });
        await failure(store.set(`${base}/missing`, Buffer.from('x')), 'NO_NODE');
      });

      it('deletes with NO_NODE, NOT_EMPTY and BAD_VERSION failures', async () => {
        const store = await open();
        await store.create(`${base}/p`, Buffer.alloc(0), 'persistent');
        await store.create(`${base}/p/c`, Buffer.alloc(0), 'persistent');
        await failure(store.delete(`${base}/missing`), 'NO_NODE');
        await failure(store.delete(`${base}/p`), 'NOT_EMPTY');
        await store.set(`${base}/p/c`, Buffer.from('x'));
        await failure(store.delete(`${base}/p/c`, 0), 'BAD_VERSION');
        await store.delete(`${base}/p/c`, 1);
        await store.delete(`${base}/p`);
        expect(await store.exists(`${base}/p`)).toBe(false);
      });

      it('lists children sorted, and undefined for a missing node', async () => {
        const store = await open();
        for (const name of ['b', 'a', 'c10', 'c2']) await store.create(`${base}/${name}`, Buffer.alloc(0), 'persistent');
        expect(await store.children(base)).toEqual(['a', 'b', 'c10', 'c2']);
        expect(await store.children(`${base}/a`)).toEqual([]);
        expect(await store.children(`${base}/missing`)).toBeUndefined();
      });

      it('ensurePath creates every missing ancestor as an empty persistent node, idempotently', async () => {
        const store = await open();
        await store.ensurePath(`${base}/x/y/z`);
        await store.ensurePath(`${base}/x/y/z`);
        await store.ensurePath(`${base}/x/y`);
        expect(await store.children(`${base}/x`)).toEqual(['y']);
        expect(await store.get(`${base}/x/y/z`)).toEqual({ data: Buffer.alloc(0), version: 0 });
        await store.ensurePath('/');
      });

      it('deleteRecursive removes a subtree, and is a no-op for a missing node', async () => {
        const store = await open();
        await store.ensurePath(`${base}/tree/a/b`);
        await store.ensurePath(`${base}/tree/c`);
        await store.create(`${base}/tree/a/leaf`, Buffer.from('x'), 'persistent');
        await store.deleteRecursive(`${base}/tree`);
        expect(await store.exists(`${base}/tree`)).toBe(false);
        expect(await store.children(base)).toEqual([]);
        await store.deleteRecursive(`${base}/tree`);
      });

      it('refuses invalid paths, oversized data and the root with non-retriable errors', async () => {
        const store = await open();
        for (const path of ['', 'relative', `${base}/`, `${base}//x`, `${base}/./x`, `${base}/../x`, `${base}/a\u0000b`]) {
          await failure(store.create(path, Buffer.alloc(0), 'persistent'), 'INVALID_PATH');
          await failure(store.get(path), 'INVALID_PATH');
        }
        const tooLarge = await failure(store.create(`${base}/big`, Buffer.alloc(1_048_576), 'persistent'), 'DATA_TOO_LARGE');
        expect(tooLarge.retriable).toBe(false);
        await failure(store.delete('/'), 'BAD_ARGUMENTS');
        await failure(store.deleteRecursive('/'), 'BAD_ARGUMENTS');
        await failure(store.set(`${base}`, Buffer.alloc(0), -5), 'BAD_ARGUMENTS');
      });

      it('names sequential nodes with the count of children ever created, in ten digits, as ZooKeeper', async () => {
        const store = await open();
        await store.ensurePath(`${base}/q`);
        expect(await store.create(`${base}/q/job-`, Buffer.from('1'), 'persistent-sequential')).toBe(`${base}/q/job-0000000000`);
        expect(await store.create(`${base}/q/job-`, Buffer.from('2'), 'persistent-sequential')).toBe(`${base}/q/job-0000000001`);
        // Every child created counts, sequential or not; deletions do not (ZooKeeper 3.8, measured).
        await store.create(`${base}/q/plain`, Buffer.alloc(0), 'persistent');
        await store.delete(`${base}/q/plain`);
        await store.delete(`${base}/q/job-0000000000`);
        expect(await store.create(`${base}/q/job-`, Buffer.from('3'), 'ephemeral-sequential')).toBe(`${base}/q/job-0000000003`);
        expect(await store.children(`${base}/q`)).toEqual(['job-0000000001', 'job-0000000003']);
        expect((await store.get(`${base}/q/job-0000000001`))?.data.toString('utf8')).toBe('2');
      });

      it('gives each session its own 16-hex-digit id', async () => {
        const one = await open();
        const two = await open();
        expect(one.sessionId()).toMatch(/^[0-9a-f]{16}$/);
        expect(two.sessionId()).toMatch(/^[0-9a-f]{16}$/);
        expect(one.sessionId()).not.toBe(two.sessionId());
      });

      it('fails every operation after close with CLOSED', async () => {
        const store = await open();
        await store.close();
        await store.close();
        const closed = await failure(store.get(base), 'CLOSED');
        expect(closed.retriable).toBe(false);
        await failure(store.create(`${base}/late`, Buffer.alloc(0), 'persistent'), 'CLOSED');
      });
    });

    describe('ephemeral nodes', () => {
      it('belong to their session: visible to others, deleted when it closes, with watches fired', async () => {
        const owner = await open();
        const observer = await open();
        await owner.create(`${base}/e`, Buffer.from('alive'), 'ephemeral');
        const seq = await owner.create(`${base}/s-`, Buffer.alloc(0), 'ephemeral-sequential');
        const watch = recorder();
        expect(await observer.exists(`${base}/e`, watch.watcher)).toBe(true);
        expect((await observer.get(`${base}/e`))?.data.toString('utf8')).toBe('alive');
        await owner.close();
        await expect.poll(() => observer.exists(`${base}/e`), poll).toBe(false);
        expect(await observer.exists(seq)).toBe(false);
        await expect.poll(() => watch.events, poll).toEqual([{ type: 'deleted', path: `${base}/e` }]);
      });

      it('cannot have children', async () => {
        const store = await open();
        await store.create(`${base}/e`, Buffer.alloc(0), 'ephemeral');
        await failure(store.create(`${base}/e/child`, Buffer.alloc(0), 'persistent'), 'NO_CHILDREN_FOR_EPHEMERALS');
        await failure(store.ensurePath(`${base}/e/child/deeper`), 'NO_CHILDREN_FOR_EPHEMERALS');
      });
    });

    describe('one-shot watches', () => {
      it('a data watch fires once for a change, not again until re-armed, then for a delete', async () => {
        const writer = await open();
        const watcher = await open();
        const path = `${base}/w`;
        await writer.create(path, Buffer.from('v1'), 'persistent');
        const watch = recorder();
        expect((await watcher.get(path, watch.watcher))?.data.toString('utf8')).toBe('v1');
        await writer.set(path, Buffer.from('v2'));
        await expect.poll(() => watch.events.length, poll).toBe(1);
        expect(watch.events).toEqual([{ type: 'data-changed', path }]);

        await writer.set(path, Buffer.from('v3'));
        expect((await watcher.get(path))?.data.toString('utf8')).toBe('v3');
        expect(watch.events).toHaveLength(1);

        expect((await watcher.get(path, watch.watcher))?.version).toBe(2);
        await writer.delete(path);
        await expect.poll(() => watch.events.length, poll).toBe(2);
        expect(watch.events[1]).toEqual({ type: 'deleted', path });
      });

      it('an existence watch fires on creation of a missing node, and on change or delete of an existing one', async () => {
        const writer = await open();
        const watcher = await open();
        const path = `${base}/x`;
        const created = recorder();
        expect(await watcher.exists(path, created.watcher)).toBe(false);
        await writer.create(path, Buffer.from('1'), 'persistent');
        await expect.poll(() => created.events, poll).toEqual([{ type: 'created', path }]);

        const changed = recorder();
        expect(await watcher.exists(path, changed.watcher)).toBe(true);
        await writer.set(path, Buffer.from('2'));
        await expect.poll(() => changed.events, poll).toEqual([{ type: 'data-changed', path }]);

        const deleted = recorder();
        expect(await watcher.exists(path, deleted.watcher)).toBe(true);
        await writer.delete(path);
        await expect.poll(() => deleted.events, poll).toEqual([{ type: 'deleted', path }]);
        expect(await watcher.exists(path)).toBe(false);
        expect(created.events).toHaveLength(1);
        expect(changed.events).toHaveLength(1);
      });

      it('a children watch fires once for two additions, again once re-armed, and on the node’s deletion', async () => {
        const writer = await open();
        const watcher = await open();
        const parent = `${base}/kids`;
        await writer.create(parent, Buffer.alloc(0), 'persistent');
        const watch = recorder();
        expect(await watcher.children(parent, watch.watcher)).toEqual([]);
        await writer.create(`${parent}/one`, Buffer.alloc(0), 'persistent');
        await writer.create(`${parent}/two`, Buffer.alloc(0), 'persistent');
        expect(await watcher.children(parent)).toEqual(['one', 'two']);
        await expect.poll(() => watch.events, poll).toEqual([{ type: 'children-changed', path: parent }]);

        // A data change of the parent is not a children change.
        await writer.set(parent, Buffer.from('data'));
        expect(await watcher.children(parent, watch.watcher)).toEqual(['one', 'two']);
        await writer.delete(`${parent}/one`);
        await expect.poll(() => watch.events.length, poll).toBe(2);
        expect(watch.events[1]).toEqual({ type: 'children-changed', path: parent });

        expect(await watcher.children(parent, watch.watcher)).toEqual(['two']);
        await writer.delete(`${parent}/two`);
        await expect.poll(() => watch.events.length, poll).toBe(3);
        expect(await watcher.children(parent, watch.watcher)).toEqual([]);
        await writer.delete(parent);
        await expect.poll(() => watch.events.length, poll).toBe(4);
        expect(watch.events.slice(2)).toEqual([
          { type: 'children-changed', path: parent },
          { type: 'deleted', path: parent },
        ]);
      });

      it('sets no watch when get or children find no node', async () => {
        const writer = await open();
        const watcher = await open();
        const path = `${base}/later`;
        const watch = recorder();
        expect(await watcher.get(path, watch.watcher)).toBeUndefined();
        expect(await watcher.children(path, watch.watcher)).toBeUndefined();
        await writer.create(path, Buffer.from('now'), 'persistent');
        expect((await watcher.get(path))?.data.toString('utf8')).toBe('now');
        expect(watch.events).toEqual([]);
      });

      it('fires a watcher set twice on the same path once', async () => {
        const writer = await open();
        const watcher = await open();
        const path = `${base}/twice`;
        await writer.create(path, Buffer.from('1'), 'persistent');
        const watch = recorder();
        await watcher.get(path, watch.watcher);
        await watcher.get(path, watch.watcher);
        await writer.set(path, Buffer.from('2'));
        await expect.poll(() => watch.events.length, poll).toBe(1);
        await writer.set(path, Buffer.from('3'));
        expect((await watcher.get(path))?.data.toString('utf8')).toBe('3');
        expect(watch.events).toHaveLength(1);
      });

      it('survives a watcher that throws', async () => {
        const store = await open();
        const path = `${base}/throws`;
        await store.create(path, Buffer.from('1'), 'persistent');
        const watch = recorder();
        await store.get(path, () => {
          throw new Error('watcher bug');
        });
        await store.exists(path, watch.watcher);
        await store.set(path, Buffer.from('2'));
        await expect.poll(() => watch.events.length, poll).toBe(1);
        expect(await store.set(path, Buffer.from('3'))).toBe(2);
      });
    });

    describe('transactions', () => {
      it('applies create, set, delete and check together, with version 0 honoured', async () => {
        const store = await open();
        await store.create(`${base}/fresh`, Buffer.from('0'), 'persistent');
        await store.create(`${base}/old`, Buffer.alloc(0), 'persistent');
        await store.ensurePath(`${base}/q`);
        const results = await store.transaction([
          { op: 'check', path: `${base}/fresh`, expectedVersion: 0 },
          { op: 'create', path: `${base}/new`, data: Buffer.from('n') },
          { op: 'create', path: `${base}/q/item-`, mode: 'persistent-sequential' },
          { op: 'set', path: `${base}/fresh`, data: Buffer.from('1'), expectedVersion: 0 },
          { op: 'delete', path: `${base}/old`, expectedVersion: 0 },
        ]);
        expect(results).toEqual([
          { op: 'check', path: `${base}/fresh` },
          { op: 'create', path: `${base}/new` },
          { op: 'create', path: `${base}/q/item-0000000000` },
          { op: 'set', path: `${base}/fresh`, version: 1 },
          { op: 'delete', path: `${base}/old` },
        ]);
        expect(await store.children(base)).toEqual(['fresh', 'new', 'q']);
        expect(await store.get(`${base}/fresh`)).toEqual({ data: Buffer.from('1'), version: 1 });
        expect(await store.transaction([])).toEqual([]);
      });

      it('is all-or-nothing: a failing op undoes the ops before it and names itself', async () => {
        const store = await open();
        await store.create(`${base}/fresh`, Buffer.from('0'), 'persistent');
        await store.set(`${base}/fresh`, Buffer.from('1'));
        // Version 0 is stale now: the check must fail even though 0 is "falsy".
        const error = await failure(
          store.transaction([
            { op: 'create', path: `${base}/created` },
            { op: 'set', path: `${base}/fresh`, data: Buffer.from('2') },
            { op: 'check', path: `${base}/fresh`, expectedVersion: 0 },
            { op: 'delete', path: `${base}/missing` },
          ]),
          'BAD_VERSION',
        );
        expect(error.details).toMatchObject({ index: 2, op: 'check', path: `${base}/fresh` });
        expect(await store.exists(`${base}/created`)).toBe(false);
        expect(await store.get(`${base}/fresh`)).toEqual({ data: Buffer.from('1'), version: 1 });

        await failure(store.transaction([{ op: 'delete', path: `${base}/fresh` }, { op: 'check', path: `${base}/fresh` }]), 'NO_NODE');
        expect(await store.exists(`${base}/fresh`)).toBe(true);
        await failure(
          store.transaction([
            { op: 'create', path: `${base}/dup` },
            { op: 'create', path: `${base}/dup` },
          ]),
          'NODE_EXISTS',
        );
        expect(await store.exists(`${base}/dup`)).toBe(false);
      });

      it('creates ephemerals owned by the session and fires watches only when it commits', async () => {
        const store = await open();
        const observer = await open();
        const watch = recorder();
        expect(await observer.children(base, watch.watcher)).toEqual([]);
        await failure(
          store.transaction([
            { op: 'create', path: `${base}/e`, mode: 'ephemeral' },
            { op: 'check', path: `${base}/missing` },
          ]),
          'NO_NODE',
        );
        expect(await observer.children(base)).toEqual([]);
        expect(watch.events).toEqual([]);
        await store.transaction([{ op: 'create', path: `${base}/e`, data: Buffer.from('mine'), mode: 'ephemeral' }]);
        await expect.poll(() => watch.events, poll).toEqual([{ type: 'children-changed', path: base }]);
        await store.close();
        await expect.poll(() => observer.exists(`${base}/e`), poll).toBe(false);
      });
    });

    describe('session expiry', () => {
      it('loses the ephemerals and watches of the old session, then opens a new one and says so', async () => {
        const observer = await open();
        const { store, expire } = await fixture.openExpirable();
        opened.push(store);
        await store.create(`${base}/mine`, Buffer.from('old'), 'ephemeral');
        await store.create(`${base}/watched`, Buffer.from('1'), 'persistent');
        const oldWatch = recorder();
        await store.get(`${base}/watched`, oldWatch.watcher);
        const events: SessionEvent[] = [];
        store.onSessionEvent((event) => void events.push(event));
        const oldSession = store.sessionId();

        await expire();
        await expect.poll(() => events, poll).toContain('reconnected-new-session');
        expect(events.indexOf('expired')).toBeGreaterThanOrEqual(0);
        expect(events.indexOf('expired')).toBeLessThan(events.indexOf('reconnected-new-session'));
        expect(store.sessionId()).not.toBe(oldSession);
        expect(await observer.exists(`${base}/mine`)).toBe(false);

        // The new session works, and its ephemerals are visible to others.
        await store.create(`${base}/mine`, Buffer.from('new'), 'ephemeral');
        expect((await observer.get(`${base}/mine`))?.data.toString('utf8')).toBe('new');
        // The old session's watch died with it.
        await observer.set(`${base}/watched`, Buffer.from('2'));
        expect((await store.get(`${base}/watched`))?.data.toString('utf8')).toBe('2');
        expect(oldWatch.events).toEqual([]);
      });
    });
  });
}
