/**
 * A subject's life on a real registry, on each store: registration and dedupe across subjects,
 * soft then permanent deletes with Confluent's codes, config shapes, and ids that survive a
 * restart and are never reused, not even after a permanent delete.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUp, dataDirectory, http, recordSchema, startRegistry, zookeeperChroot, type Storage } from './registry-support.js';

afterEach(cleanUp);

const user = recordSchema('User', ['name']);
const userV2 = recordSchema('User', ['name', { name: 'age', type: 'int', default: 0 }]);
const order = recordSchema('Order', ['id']);

describe.each<[string, () => Storage]>([
  ['the file store', () => ({ dataDir: dataDirectory() })],
  ['the ZooKeeper store', () => ({ zookeeper: zookeeperChroot() })],
])('on %s', (_name, storageFor) => {
  it('dedupes, deletes softly then permanently, and keeps ids across a restart', async () => {
    const storage = storageFor();
    const first = await startRegistry(storage);
    const call = (method: string, path: string, body?: unknown) => http(first.url, method, path, body);

    expect((await call('POST', '/subjects/users-value/versions', { schema: user })).json).toEqual({ id: 1 });
    expect((await call('POST', '/subjects/users-value/versions', { schema: user })).json).toEqual({ id: 1 });
    expect((await call('POST', '/subjects/users-copy/versions', { schema: user })).json).toEqual({ id: 1 });
    expect((await call('POST', '/subjects/users-value/versions', { schema: userV2 })).json).toEqual({ id: 2 });
    expect((await call('POST', '/subjects/orders-value/versions', { schema: order })).json).toEqual({ id: 3 });
    expect((await call('GET', '/subjects/users-value/versions')).json).toEqual([1, 2]);
    expect((await call('GET', '/schemas/ids/1/subjects')).json).toEqual(['users-copy', 'users-value']);

    // Soft, then permanent; the wrong order is refused with Confluent's codes.
    expect((await call('DELETE', '/subjects/orders-value?permanent=true')).json).toMatchObject({ error_code: 40405 });
    expect((await call('DELETE', '/subjects/orders-value')).json).toEqual([1]);
    expect((await call('DELETE', '/subjects/orders-value')).json).toMatchObject({ error_code: 40404 });
    expect((await call('DELETE', '/subjects/orders-value?permanent=true')).json).toEqual([1]);
    expect((await call('DELETE', '/subjects/users-value/versions/2?permanent=true')).json).toMatchObject({ error_code: 40407 });
    expect((await call('DELETE', '/subjects/users-value/versions/2')).json).toBe(2);
    expect((await call('DELETE', '/subjects/users-value/versions/2')).json).toMatchObject({ error_code: 40406 });
    expect((await call('GET', '/subjects')).json).toEqual(['users-copy', 'users-value']);
    expect((await call('GET', '/subjects/users-value/versions')).json).toEqual([1]);
    expect((await call('GET', '/subjects/users-value/versions?deleted=true')).json).toEqual([1, 2]);

    // Config: PUT echoes "compatibility", GET answers "compatibilityLevel"; 40408 when unset.
    expect((await call('GET', '/config/users-value')).json).toMatchObject({ error_code: 40408 });
    expect((await call('GET', '/config/users-value?defaultToGlobal=true')).json).toEqual({ compatibilityLevel: 'BACKWARD' });
    expect((await call('PUT', '/config/users-value', { compatibility: 'FULL' })).json).toEqual({ compatibility: 'FULL' });
    expect((await call('GET', '/config/users-value')).json).toEqual({ compatibilityLevel: 'FULL' });
    expect((await call('PUT', '/config', { compatibility: 'NONE' })).json).toEqual({ compatibility: 'NONE' });
    expect((await call('GET', '/config')).json).toEqual({ compatibilityLevel: 'NONE' });

    await first.close();
    const second = await startRegistry(storage);
    const again = (method: string, path: string, body?: unknown) => http(second.url, method, path, body);

    // Everything read back after the restart; the permanently deleted schema is still readable by id.
    expect((await again('GET', '/schemas/ids/3')).json).toEqual({ schema: order });
    expect((await again('GET', '/subjects/users-value/versions/latest')).json).toEqual({ subject: 'users-value', version: 1, id: 1, schema: user });
    expect((await again('GET', '/config/users-value')).json).toEqual({ compatibilityLevel: 'FULL' });
    expect((await again('GET', '/config')).json).toEqual({ compatibilityLevel: 'NONE' });
    // A new schema gets a new id, never one already handed out; a returning one keeps its id.
    expect((await again('POST', '/subjects/new-value/versions', { schema: recordSchema('New', ['x']) })).json).toEqual({ id: 4 });
    expect((await again('POST', '/subjects/orders-value/versions', { schema: order })).json).toEqual({ id: 3 });
    // Numbering restarts after a permanent delete of the whole subject, continues after a soft one.
    expect((await again('GET', '/subjects/orders-value/versions')).json).toEqual([1]);
    expect((await again('POST', '/subjects/users-value/versions', { schema: userV2 })).json).toEqual({ id: 2 });
    expect((await again('GET', '/subjects/users-value/versions')).json).toEqual([1, 3]);
  });
});
