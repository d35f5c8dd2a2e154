/**
 * Three brokers on one real ZooKeeper, as child processes: a 6-partition topic is spread over
 * them; SIGKILL one and its partitions report LEADER_NOT_AVAILABLE while the others keep serving;
 * restart it and every flushed record is intact.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaConnection } from '../../../src/client/connection.js';
import { MetadataApi, type MetadataResponse } from '../../../src/protocol/apis/metadata.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { runTributary } from '../../support/cli.js';
import { kcat } from '../../support/kcat.js';
import { services, zookeeperAddress } from '../services.js';

const tributary = (...args: string[]): ReturnType<typeof runTributary> => runTributary(args);

const brokers: BrokerProcess[] = [];
afterAll(async () => {
  await Promise.all(brokers.map((broker) => broker.stop().catch(() => undefined)));
});

async function metadata(bootstrap: string, topic: string): Promise<MetadataResponse> {
  const [host = '', port = ''] = bootstrap.split(':');
  const connection = await KafkaConnection.open(host, Number(port));
  try {
    return await connection.request(MetadataApi, 8, {
      topics: [{ name: topic }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
  } finally {
    connection.close();
  }
}

async function consumeAll(bootstrap: string, topic: string, partition: number): Promise<string[]> {
  const result = await kcat(['-b', bootstrap, '-C', '-t', topic, '-p', String(partition), '-o', 'beginning', '-e', '-f', '%s\n']);
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.split('\n').filter((line) => line !== '');
}

describe('three brokers on one ZooKeeper', () => {
  it('spreads partitions, reports a dead broker’s partitions as LEADER_NOT_AVAILABLE, and keeps flushed data across a kill -9', async () => {
    const run = openRun(services().runDir);
    const zookeeper = `${zookeeperAddress().connectString}/cluster-${process.pid}-${Date.now()}`;
    const settings = { 'zookeeper.session.timeout.ms': '4000' };
    for (const id of [1, 2, 3]) brokers.push(await startBrokerProcess({ run, id, zookeeper, settings }));
    const [first, second, third] = brokers as [BrokerProcess, BrokerProcess, BrokerProcess];

    await expect.poll(async () => (await metadata(first.bootstrap, 'none')).brokers.length, { timeout: 30_000 }).toBe(3);
    const created = await tributary('topics', 'create', '--bootstrap-server', first.bootstrap, '--topic', 'spread', '--partitions', '6');
    expect(created.status, created.output).toBe(0);

    const initial = await metadata(second.bootstrap, 'spread');
    const leaders = new Map(initial.topics[0]!.partitions.map((p) => [p.partitionIndex, p.leaderId]));
    expect([...leaders.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(leaders.values())).toEqual(new Set([1, 2, 3]));

    // 100 records per partition, acknowledged after fsync (acks=-1), sent through one bootstrap.
    for (let partition = 0; partition < 6; partition += 1) {
      const lines = Array.from({ length: 100 }, (_, i) => `p${partition}-${i}\n`).join('');
      const produced = await kcat(['-b', third.bootstrap, '-P', '-t', 'spread', '-p', String(partition), '-X', 'acks=all'], lines);
      expect(produced.status, produced.stderr).toBe(0);
    }

    const victim = brokers.find((broker) => broker.id === leaders.get(0))!;
    const survivor = brokers.find((broker) => broker.id !== victim.id)!;
    const victimPartitions = [...leaders].filter(([, leader]) => leader === victim.id).map(([p]) => p);
    const livePartition = [...leaders].find(([, leader]) => leader !== victim.id)![0];
    await victim.kill();

    // Once its ZooKeeper session expires, its partitions have no leader; the rest are fine.
    await expect
      .poll(async () => {
        const partitions = (await metadata(survivor.bootstrap, 'spread')).topics[0]!.partitions;
        return partitions.filter((p) => p.errorCode === 5).map((p) => p.partitionIndex).sort();
      }, { timeout: 30_000, interval: 500 })
      .toEqual(victimPartitions.sort());
    const more = await kcat(['-b', survivor.bootstrap, '-P', '-t', 'spread', '-p', String(livePartition), '-X', 'acks=all'], 'after-kill\n');
    expect(more.status, more.stderr).toBe(0);
    expect((await consumeAll(survivor.bootstrap, 'spread', livePartition)).at(-1)).toBe('after-kill');

    await victim.restart();
    await expect
      .poll(async () => (await metadata(survivor.bootstrap, 'spread')).topics[0]!.partitions.every((p) => p.errorCode === 0), { timeout: 60_000, interval: 500 })
      .toBe(true);
    for (let partition = 0; partition < 6; partition += 1) {
      const expected = Array.from({ length: 100 }, (_, i) => `p${partition}-${i}`);
      if (partition === livePartition) expected.push('after-kill');
      expect(await consumeAll(survivor.bootstrap, 'spread', partition)).toEqual(expected);
    }
  });
});
