/**
 * The mirror embedded in an offline broker, as the paper deploys it: `tributary broker start …
 * --mirror-config FILE` pulls from an online cluster into the broker's own cluster; a clean stop
 * commits what the broker acknowledged; a bad config file fails before the broker starts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { consumerIdsPath, offsetPath } from '../../../src/coordination/paths.js';
import { MIRROR_ORIGIN_HEADER, mirrorOriginOf } from '../../../src/mirror/origin-header.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { openRun } from '../../services/run-dir.js';
import { runTributary } from '../../support/cli.js';
import { services } from '../services.js';
import { chroot, createTopic, readTopic, startBrokerWithMirror, startCluster, type EmbeddingBroker, type TestCluster } from './mirror-support.js';

const GROUP = 'embedded-mirror';

const clusters: TestCluster[] = [];
let offline: EmbeddingBroker | undefined;
let producer: Producer | undefined;

afterAll(async () => {
  await offline?.daemon.stop(10_000).catch(() => undefined);
  await producer?.close().catch(() => undefined);
  await Promise.all(clusters.map((cluster) => cluster.stop()));
});

describe('the mirror embedded in an offline broker', () => {
  it('mirrors into its own broker from --mirror-config and commits on a clean stop', { timeout: 120_000 }, async () => {
    const run = openRun(services().runDir);
    const source = await startCluster(run, 'online');
    clusters.push(source);
    await createTopic(source, 'events', 3);
    producer = await Producer.connect({ bootstrap: [source.bootstrap], acks: -1 });
    const send = (from: number, count: number): Promise<unknown> =>
      (producer as Producer).send('events', Array.from({ length: count }, (_, i) => ({ key: Buffer.from(`user-${(from + i) % 5}`), value: Buffer.from(`event-${from + i}`), headers: [{ key: 'h', value: Buffer.from(String(i)) }] })));
    await send(0, 200);

    const folder = join(run.dir, `mirror-config-${process.pid}-${Date.now()}`);
    mkdirSync(folder, { recursive: true });
    const config = join(folder, 'mirror.yaml');
    writeFileSync(config, ['sources:', `  - name: online`, `    zookeeper: ${source.zookeeper}`, 'whitelist: events', `group: ${GROUP}`, 'sessionTimeoutMs: 4000', ''].join('\n'));
    offline = await startBrokerWithMirror(run, { id: 1, zookeeper: chroot('offline'), mirrorConfig: config });
    const target = offline.bootstrap;

    await send(200, 200);
    const everything = async (): Promise<Map<number, KafkaRecord[]>> => readTopic(target, 'events').catch(() => new Map<number, KafkaRecord[]>());
    await expect.poll(async () => new Set([...(await everything()).values()].flat().map((r) => r.value?.toString('utf8'))).size, { timeout: 60_000, interval: 1_000 }).toBe(400);

    // Partitions, keys, headers and order as at the source.
    const sourceRecords = await readTopic(source.bootstrap, 'events');
    const mirrored = await everything();
    expect(mirrored.size).toBe(3);
    // The mirror adds one header, its origin (source, partition, offset); the source's headers come first, as they were.
    for (const [partition, records] of sourceRecords) {
      const copies = (mirrored.get(partition) ?? []).map((r) => [r.key?.toString('utf8'), r.value?.toString('utf8'), r.headers.filter((h) => h.key !== MIRROR_ORIGIN_HEADER).map((h) => h.value?.toString('utf8')), r.timestamp, mirrorOriginOf(r.headers)]);
      expect(copies, `partition ${partition}`).toEqual(records.map((r) => [r.key?.toString('utf8'), r.value?.toString('utf8'), r.headers.map((h) => h.value?.toString('utf8')), r.timestamp, { source: 'online', partition, offset: r.offset }]));
    }
    expect(((await source.store.children(consumerIdsPath(GROUP))) ?? []).length).toBe(1);

    // A clean stop: the mirror commits every acknowledged offset, then the broker stops.
    offline.daemon.signal('SIGTERM');
    expect(await offline.daemon.exited).toBe(0);
    for (const [partition, records] of sourceRecords) {
      expect((await source.store.get(offsetPath(GROUP, 'events', partition)))?.data.toString('utf8'), `committed offset of events-${partition}`).toBe(String(records.length));
    }
    expect((await source.store.children(consumerIdsPath(GROUP))) ?? []).toEqual([]);
  });

  it('refuses a bad --mirror-config before starting the broker', async () => {
    const run = openRun(services().runDir);
    const folder = join(run.dir, `bad-mirror-config-${process.pid}-${Date.now()}`);
    mkdirSync(folder, { recursive: true });
    const config = join(folder, 'mirror.yaml');
    writeFileSync(config, 'sources: []\nwhitelist: "("\ngroup: g\n');
    const result = await runTributary(['broker', 'start', '--id', '1', '--listen', '127.0.0.1:0', '--data-dir', join(folder, 'data'), '--mirror-config', config]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('CONFIG_INVALID');
    expect(result.stderr).toContain('sources: name at least one source cluster');
    expect(result.stderr).toContain('whitelist: not a valid regular expression');
  });
});
