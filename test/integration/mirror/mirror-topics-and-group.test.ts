/**
 * Topic selection and work sharing of the mirror, with real broker processes and two
 * `tributary mirror start` processes in one group:
 * 1. the two processes share a topic's partitions through the ZooKeeper group (each partition
 *    owned by exactly one of them, both mirroring);
 * 2. topics created on the source after the start are picked up when the whitelist matches, and
 *    not when the blacklist or no whitelist entry does;
 * 3. when one process stops, the other takes its partitions over and the records keep coming.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { consumerIdsPath, ownerPath } from '../../../src/coordination/paths.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { openRun } from '../../services/run-dir.js';
import { services } from '../services.js';
import { createTopic, readTopic, scrapeMetric, startCluster, startMirrorProcess, topicExists, type MirrorProcess, type TestCluster } from './mirror-support.js';

const GROUP = 'shared-mirror';
const CLICKS = 'app.clicks';
const CLICKS_PARTITIONS = 6;

const clusters: TestCluster[] = [];
const mirrors: MirrorProcess[] = [];
let producer: Producer | undefined;

afterAll(async () => {
  await Promise.all(mirrors.map((mirror) => mirror.daemon.stop(10_000).catch(() => undefined)));
  await producer?.close().catch(() => undefined);
  await Promise.all(clusters.map((cluster) => cluster.stop()));
});

const values = (partitions: Map<number, KafkaRecord[]>): Set<string> =>
  new Set([...partitions.values()].flatMap((records) => records.map((r) => r.value?.toString('utf8') ?? '')));

describe('mirror topics and group', () => {
  it('shares partitions between two processes, picks up new whitelisted topics only, and fails over', { timeout: 170_000 }, async () => {
    const run = openRun(services().runDir);
    const [source, offline] = await Promise.all([startCluster(run, 'online'), startCluster(run, 'offline')]);
    clusters.push(source, offline);
    await createTopic(source, CLICKS, CLICKS_PARTITIONS);
    producer = await Producer.connect({ bootstrap: [source.bootstrap], acks: -1 });
    const live = producer;
    const produce = async (topic: string, from: number, count: number): Promise<void> => {
      await live.send(topic, Array.from({ length: count }, (_, i) => ({ key: Buffer.from(`k${(from + i) % 11}`), value: Buffer.from(`${topic}-${from + i}`) })));
    };
    await produce(CLICKS, 0, 300);

    const args = [
      '--source', `online=${source.zookeeper}`, '--target-bootstrap', offline.bootstrap,
      '--whitelist', 'app\\..*', '--blacklist', 'app\\.secret\\..*', '--group', GROUP, '--set', 'sessionTimeoutMs=4000',
    ];
    const [one, two] = [await startMirrorProcess(run, args), await startMirrorProcess(run, args)];
    mirrors.push(one, two);

    // (1) Every partition owned, by the consumers of two processes (one consumer per topic each).
    const owners = async (): Promise<string[]> => {
      const result: string[] = [];
      for (let partition = 0; partition < CLICKS_PARTITIONS; partition += 1) {
        const node = await source.store.get(ownerPath(GROUP, CLICKS, partition));
        if (node !== undefined) result.push(node.data.toString('utf8'));
      }
      return result;
    };
    const sharedEvenly = async (): Promise<boolean> => {
      const owned = await owners();
      const members = ((await source.store.children(consumerIdsPath(GROUP))) ?? []).length;
      const threads = new Set(owned);
      return owned.length === CLICKS_PARTITIONS && threads.size === 2 && members >= 2 && [...threads].every((t) => owned.filter((o) => o === t).length === CLICKS_PARTITIONS / 2);
    };
    await expect.poll(sharedEvenly, { timeout: 90_000, interval: 500 }).toBe(true);
    await produce(CLICKS, 300, 300);
    const allClicks = Array.from({ length: 600 }, (_, i) => `${CLICKS}-${i}`);
    await expect.poll(async () => { const have = values(await readTopic(offline.bootstrap, CLICKS).catch(() => new Map<number, KafkaRecord[]>())); return allClicks.filter((v) => !have.has(v)).length; }, { timeout: 60_000, interval: 1_000 }).toBe(0);
    // Both processes did part of the work.
    for (const mirror of [one, two]) {
      expect(await scrapeMetric(mirror.metrics, 'tributary_mirror_records_total', { source: 'online', topic: CLICKS }), `records mirrored by ${mirror.daemon.name}`).toBeGreaterThan(0);
    }
    const clickPartitions = await readTopic(offline.bootstrap, CLICKS);
    expect(clickPartitions.size).toBe(CLICKS_PARTITIONS);

    // (2) Topics created after the start: the blacklisted and the unlisted one first, then a whitelisted one.
    await createTopic(source, 'app.secret.keys', 2);
    await createTopic(source, 'billing', 2);
    await createTopic(source, 'app.views', 3);
    await produce('app.secret.keys', 0, 20);
    await produce('billing', 0, 20);
    await produce('app.views', 0, 150);
    const allViews = Array.from({ length: 150 }, (_, i) => `app.views-${i}`);
    await expect.poll(async () => { const have = values(await readTopic(offline.bootstrap, 'app.views').catch(() => new Map<number, KafkaRecord[]>())); return allViews.filter((v) => !have.has(v)).length; }, { timeout: 60_000, interval: 1_000 }).toBe(0);
    expect((await readTopic(offline.bootstrap, 'app.views')).size, 'app.views created offline with the source partition count').toBe(3);
    // The mirror has seen the registry change that brought all three (app.views came last): the others were left out.
    expect(await topicExists(offline.bootstrap, 'app.secret.keys')).toBe(false);
    expect(await topicExists(offline.bootstrap, 'billing')).toBe(false);

    // (3) One process stops cleanly; the other takes every partition over.
    one.daemon.signal('SIGTERM');
    expect(await one.daemon.exited).toBe(0);
    await expect.poll(async () => new Set(await owners()).size === 1 && (await owners()).length === CLICKS_PARTITIONS, { timeout: 60_000, interval: 500 }).toBe(true);
    await produce(CLICKS, 600, 300);
    await produce('app.views', 150, 150);
    const later = [...Array.from({ length: 900 }, (_, i) => `${CLICKS}-${i}`)];
    await expect.poll(async () => { const have = values(await readTopic(offline.bootstrap, CLICKS)); return later.filter((v) => !have.has(v)).length; }, { timeout: 60_000, interval: 1_000 }).toBe(0);
    const views = Array.from({ length: 300 }, (_, i) => `app.views-${i}`);
    await expect.poll(async () => { const have = values(await readTopic(offline.bootstrap, 'app.views')); return views.filter((v) => !have.has(v)).length; }, { timeout: 60_000, interval: 1_000 }).toBe(0);
    expect(two.daemon.hasExited()).toBe(false);
  });
});
