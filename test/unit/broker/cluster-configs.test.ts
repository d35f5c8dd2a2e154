/** Cluster.alterTopicConfigs against races: a concurrent change is not overwritten, a deleted topic keeps no overrides. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../../src/broker/cluster.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination, type MemoryCoordinationStore } from '../../../src/coordination/memory-store.js';
import { topicConfigPath, topicPath } from '../../../src/coordination/paths.js';

let coordination: MemoryCoordination;
let other: MemoryCoordinationStore;
let cluster: Cluster;

beforeEach(async () => {
  coordination = new MemoryCoordination();
  other = coordination.session();
  cluster = new Cluster(coordination.session(), { id: 1, host: '127.0.0.1', port: 9092 }, { topicsChanged: () => {} }, createLogger({ name: 'cluster', level: 'silent' }));
  await cluster.start();
  await cluster.createTopic('t', 1, { 'retention.ms': '1000' });
});

afterEach(async () => {
  await cluster.stop();
});

async function stored(): Promise<unknown> {
  const node = await other.get(topicConfigPath('t'));
  return node === undefined ? undefined : JSON.parse(node.data.toString('utf8'));
}

describe('Cluster.alterTopicConfigs', () => {
  it('applies the change again on the newer set when another writer got in between', async () => {
    let calls = 0;
    const written = await cluster.alterTopicConfigs(
      't',
      (current) => {
        calls += 1;
        // Another broker writes between this read and the conditional write (once).
        if (calls === 1) void other.set(topicConfigPath('t'), Buffer.from(JSON.stringify({ config: { ...current, 'flush.ms': '5' } })));
        return { ...current, 'segment.bytes': '2048' };
      },
      { validateOnly: false },
    );
    expect(calls).toBe(2);
    expect(written).toEqual({ 'retention.ms': '1000', 'flush.ms': '5', 'segment.bytes': '2048' });
    expect(await stored()).toEqual({ config: written });
    expect(cluster.topic('t')?.configs).toEqual(written);
  });

  it('reports a topic deleted meanwhile as unknown and leaves no overrides behind for a later topic of its name', async () => {
    await cluster.createTopic('bare', 1);
    await expect(
      cluster.alterTopicConfigs(
        'bare',
        (current) => {
          // Deleted by another broker after the read; it had no overrides node to delete.
          void other.delete(topicPath('bare'));
          return { ...current, 'segment.bytes': '2048' };
        },
        { validateOnly: false },
      ),
    ).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(await other.exists(topicConfigPath('bare'))).toBe(false);
  });

  it('writes nothing when validating only or when the change refuses', async () => {
    expect(await cluster.alterTopicConfigs('t', () => ({}), { validateOnly: true })).toEqual({});
    await expect(cluster.alterTopicConfigs('t', () => { throw new Error('refused'); }, { validateOnly: false })).rejects.toThrow('refused');
    expect(await stored()).toEqual({ config: { 'retention.ms': '1000' } });
  });
});
