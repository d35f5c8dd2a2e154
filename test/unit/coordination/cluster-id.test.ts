import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadClusterId } from '../../../src/coordination/cluster-id.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { clusterIdPath } from '../../../src/coordination/paths.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('loadClusterId', () => {
  it('creates one id in Kafka format and returns it again after a restart of the standalone store', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'cluster-id-'));
    directories.push(directory);
    const file = join(directory, 'coordination.json');
    const first = new MemoryCoordination({ file }).session();
    const id = await loadClusterId(first);
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const node = await first.get(clusterIdPath());
    expect(JSON.parse(node?.data.toString('utf8') ?? '{}')).toEqual({ version: '1', id });
    await first.close();

    const restarted = new MemoryCoordination({ file }).session();
    expect(await loadClusterId(restarted)).toBe(id);
    await restarted.close();
  });

  it('gives brokers starting together the same id', async () => {
    const coordination = new MemoryCoordination();
    const ids = await Promise.all([1, 2, 3, 4].map(() => loadClusterId(coordination.session())));
    expect(new Set(ids).size).toBe(1);
  });

  it('refuses a node it cannot read, naming the node and what to do', async () => {
    const store = new MemoryCoordination().session();
    await store.ensurePath(clusterIdPath());
    await store.set(clusterIdPath(), Buffer.from('not json'));
    const refusal = await loadClusterId(store).then(() => undefined, (error: unknown) => error as { code: string; message: string });
    expect(refusal?.code).toBe('CLUSTER_ID_INVALID');
    expect(refusal?.message).toContain('/cluster/id');
  });
});
