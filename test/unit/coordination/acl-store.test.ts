/**
 * ACLs in the coordination store: Kafka's paths and JSON, conditional read-modify-writes that
 * keep concurrent additions, the node removed with its last entry, and a node that does not parse.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { AclCache, decodeAcls, encodeAcls, readAllAcls, updateResourceAcls, type StoredAclEntry, type StoredAclResource } from '../../../src/coordination/acl-store.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';

const ORDERS: StoredAclResource = { patternType: 'LITERAL', resourceType: 'Topic', name: 'orders' };
const LOGS: StoredAclResource = { patternType: 'PREFIXED', resourceType: 'Topic', name: 'logs-' };

function entry(principal: string, operation = 'Read', permissionType = 'Allow'): StoredAclEntry {
  return { principal, permissionType, operation, host: '*' };
}

describe('acl-store', () => {
  it("writes Kafka's JSON under /kafka-acl (literal) and /kafka-acl-extended/prefixed (prefixed)", async () => {
    const store = new MemoryCoordination().session();
    await updateResourceAcls(store, ORDERS, (current) => [...current, entry('User:alice')]);
    await updateResourceAcls(store, LOGS, (current) => [...current, entry('User:etl', 'Write')]);
    expect(JSON.parse((await store.get('/kafka-acl/Topic/orders'))!.data.toString())).toEqual({
      version: 1,
      acls: [{ principal: 'User:alice', permissionType: 'Allow', operation: 'Read', host: '*' }],
    });
    expect(decodeAcls((await store.get('/kafka-acl-extended/prefixed/Topic/logs-'))!.data, 'logs')).toEqual([entry('User:etl', 'Write')]);
    expect(await readAllAcls(store)).toEqual([
      { resource: ORDERS, entries: [entry('User:alice')] },
      { resource: LOGS, entries: [entry('User:etl', 'Write')] },
    ]);
  });

  it('keeps every entry when sessions add to one resource at once (conditional writes retried)', async () => {
    const coordination = new MemoryCoordination();
    const principals = Array.from({ length: 12 }, (_, i) => `User:u${i}`);
    await Promise.all(principals.map((principal) => updateResourceAcls(coordination.session(), ORDERS, (current) => [...current, entry(principal)])));
    const stored = decodeAcls((await coordination.session().get('/kafka-acl/Topic/orders'))!.data, 'orders');
    expect(stored.map((e) => e.principal).sort()).toEqual([...principals].sort());
  });

  it('stores a set (no repeats), leaves an unchanged node alone, and deletes the node with its last entry', async () => {
    const store = new MemoryCoordination().session();
    await updateResourceAcls(store, ORDERS, () => [entry('User:a'), entry('User:a')]);
    const version = (await store.get('/kafka-acl/Topic/orders'))!.version;
    const { after } = await updateResourceAcls(store, ORDERS, (current) => [...current, entry('User:a')]);
    expect(after).toEqual([entry('User:a')]);
    expect((await store.get('/kafka-acl/Topic/orders'))!.version).toBe(version);
    await updateResourceAcls(store, ORDERS, () => []);
    expect(await store.get('/kafka-acl/Topic/orders')).toBeUndefined();
  });

  it('re-reads everything and re-arms its watches after its session expires (changes made meanwhile are seen)', async () => {
    const coordination = new MemoryCoordination();
    const session = coordination.session();
    const cache = new AclCache(session, createLogger({ name: 'acl-cache-test', level: 'silent' }));
    await cache.start();
    const admin = coordination.session();
    const until = async (condition: () => boolean): Promise<void> => {
      for (let i = 0; i < 200 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(condition()).toBe(true);
    };
    try {
      await updateResourceAcls(admin, ORDERS, () => [entry('User:a')]);
      await until(() => [...cache.all()].length === 1);
      await session.expireSession(); // the old session's watches are gone, unfired
      await updateResourceAcls(admin, ORDERS, (current) => [...current, entry('User:b')]);
      await until(() => [...cache.all()][0]?.entries.length === 2);
      // The watches armed on the new session fire too.
      await updateResourceAcls(admin, LOGS, () => [entry('User:c', 'Write')]);
      await until(() => [...cache.all()].length === 2);
    } finally {
      cache.stop();
    }
  });

  it('refuses to rewrite a node that is not ACL JSON; the cache skips it and keeps the others', async () => {
    const coordination = new MemoryCoordination();
    const store = coordination.session();
    await store.ensurePath('/kafka-acl/Topic');
    await store.create('/kafka-acl/Topic/broken', Buffer.from('{"version":2}'), 'persistent');
    await expect(updateResourceAcls(store, { ...ORDERS, name: 'broken' }, (current) => current)).rejects.toMatchObject({ code: 'ACL_NODE_INVALID' });
    await store.create('/kafka-acl/Topic/orders', encodeAcls([entry('User:alice')]), 'persistent');
    const cache = new AclCache(coordination.session(), createLogger({ name: 'acl-cache-test', level: 'silent' }));
    await cache.start();
    try {
      expect([...cache.all()]).toEqual([{ resource: ORDERS, entries: [entry('User:alice')] }]);
    } finally {
      cache.stop();
    }
  });
});
