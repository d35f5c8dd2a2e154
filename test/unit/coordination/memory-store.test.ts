import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
/**
 * The in-process coordination store of standalone mode: the shared contract, plus what only the
 * memory store has (a tree shared by sessions, the expiry test hook).
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import type { SessionEvent } from '../../../src/coordination/store.js';
import { coordinationStoreContract, recorder } from './store-contract.js';

const silent = createLogger({ name: 'coordination-test', level: 'silent' });

coordinationStoreContract('MemoryCoordination', async () => {
  const coordination = new MemoryCoordination({ logger: silent });
  return {
    open: async () => coordination.session(),
    openExpirable: async () => {
      const store = coordination.session();
      return { store, expire: () => store.expireSession() };
    },
  };
});

describe('MemoryCoordination', () => {
  it('shares one tree between its sessions, and keeps trees apart', async () => {
    const one = new MemoryCoordination({ logger: silent });
    const other = new MemoryCoordination({ logger: silent });
    await one.session().create('/shared', Buffer.from('x'), 'persistent');
    expect(await one.session().exists('/shared')).toBe(true);
    expect(await other.session().exists('/shared')).toBe(false);
  });

  it('expireSession reports disconnected, expired, reconnected-new-session in order, then works on', async () => {
    const coordination = new MemoryCoordination({ logger: silent });
    const store = coordination.session();
    const observer = coordination.session();
    await store.create('/e', Buffer.alloc(0), 'ephemeral');
    const events: SessionEvent[] = [];
    const unsubscribe = store.onSessionEvent((event) => void events.push(event));
    const before = store.sessionId();
    await store.expireSession();
    expect(events).toEqual(['disconnected', 'expired', 'reconnected-new-session']);
    expect(store.sessionId()).not.toBe(before);
    expect(await observer.exists('/e')).toBe(false);
    await store.create('/e', Buffer.alloc(0), 'ephemeral');
    unsubscribe();
    await store.expireSession();
    expect(events).toHaveLength(3);
  });

  it('fires an ephemeral’s watches on expiry for other sessions only, before anyone reads the change', async () => {
    const coordination = new MemoryCoordination({ logger: silent });
    const store = coordination.session();
    const observer = coordination.session();
    await store.create('/e', Buffer.alloc(0), 'ephemeral');
    const own = recorder();
    const theirs = recorder();
    await store.exists('/e', own.watcher);
    await observer.exists('/e', theirs.watcher);
    await store.expireSession();
    expect(await observer.exists('/e')).toBe(false);
    expect(theirs.events).toEqual([{ type: 'deleted', path: '/e' }]);
    expect(own.events).toEqual([]);
  });

  it('logs a watcher or session listener that throws, and goes on', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').trim().split('\n'));
        done();
      },
    });
    const coordination = new MemoryCoordination({ logger: createLogger({ name: 'coordination-test', level: 'warn', destination }) });
    const store = coordination.session();
    await store.create('/n', Buffer.alloc(0), 'persistent');
    await store.get('/n', () => {
      throw new Error('watcher bug');
    });
    store.onSessionEvent(() => {
      throw new Error('listener bug');
    });
    await store.set('/n', Buffer.from('1'));
    await store.expireSession();
    expect(await store.set('/n', Buffer.from('2'))).toBe(2);
    await expect.poll(() => lines.length).toBe(4);
    expect(lines.join('\n')).toContain('watcher bug');
    expect(lines.join('\n')).toContain('listener bug');
  });

  it('expireSession after close fails with CLOSED', async () => {
    const store = new MemoryCoordination({ logger: silent }).session();
    await store.close();
    await expect(store.expireSession()).rejects.toMatchObject({ code: 'CLOSED' });
  });
});

describe('MemoryCoordination persistence', () => {
  it('keeps persistent nodes across instances through its file, and never ephemerals', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tributary-memory-store-'));
    try {
      const file = join(directory, 'state.json');
      const first = new MemoryCoordination({ file }).session();
      await first.ensurePath('/brokers/topics');
      await first.create('/brokers/topics/clicks', Buffer.from('{"partitions":{"0":1}}'), 'persistent');
      await first.set('/brokers/topics/clicks', Buffer.from('{"partitions":{"0":2}}'));
      await first.create('/brokers/topics/clicks-owner', Buffer.from('me'), 'ephemeral');
      const second = new MemoryCoordination({ file }).session();
      const node = await second.get('/brokers/topics/clicks');
      expect(node?.data.toString()).toBe('{"partitions":{"0":2}}');
      expect(node?.version).toBe(1);
      expect(await second.children('/brokers/topics')).toEqual(['clicks']);
      await first.close();
      await second.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refuses and undoes a change it cannot write to its file, firing no watch', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'tributary-memory-store-'));
    try {
      const file = join(directory, 'state.json');
      const store = new MemoryCoordination({ file }).session();
      await store.create('/kept', Buffer.from('v0'), 'persistent');
      const fired: string[] = [];
      await store.get('/kept', (event) => fired.push(event.type));
      // The temporary file's name taken by a folder: the write fails as a full disk would.
      mkdirSync(`${file}.tmp`);
      await expect(store.create('/lost', Buffer.from('x'), 'persistent')).rejects.toMatchObject({ code: 'PERSISTENCE_FAILED' });
      await expect(store.set('/kept', Buffer.from('v1'))).rejects.toMatchObject({ code: 'PERSISTENCE_FAILED' });
      expect(await store.exists('/lost')).toBe(false);
      expect((await store.get('/kept'))?.data.toString()).toBe('v0');
      expect(fired).toEqual([]);
      rmdirSync(`${file}.tmp`);
      await store.set('/kept', Buffer.from('v1'));
      expect(fired).toEqual(['data-changed']);
      expect((await new MemoryCoordination({ file }).session().get('/kept'))?.data.toString()).toBe('v1');
      await store.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
