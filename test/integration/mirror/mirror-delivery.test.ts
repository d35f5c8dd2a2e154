/**
 * The offline mirror end to end, on real parts: two online clusters and one offline cluster (one
 * broker process each, each in its own ZooKeeper chroot), the schema registry, our audited
 * producers (origin header + PRODUCER-tier counts) on both online clusters, and the mirror as an
 * OS process (`tributary mirror start`).
 *
 * 1. A backlog produced before the mirror starts, then live traffic, arrive in the offline
 *    cluster with key, value, headers, timestamp and partition preserved, in order per source
 *    partition; the two sources' `events` merge into one offline topic; `orders` (only on one
 *    source) is created offline with the source's partition count.
 * 2. Produce→offline latency is measured (p50/p99 printed, not asserted).
 * 3. The mirror is SIGKILLed mid-run, between two commits, and restarted: nothing is lost and
 *    nothing is delivered twice (the restarted mirror resumes after the last record of each source
 *    partition in the offline cluster, found by the mirror origin header), and the audit report
 *    shows every closed window at exactly 100%, OK.
 * 4. Lag is exported per source partition; a clean stop (SIGTERM) commits everything acknowledged.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditedProducer } from '../../../src/audit/audited-producer.js';
import { ORIGIN_HEADER } from '../../../src/audit/origin.js';
import { windowStartOf } from '../../../src/audit/windows.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { createLogger } from '../../../src/common/logger.js';
import { offsetPath } from '../../../src/coordination/paths.js';
import { MIRROR_ORIGIN_HEADER, mirrorOriginOf } from '../../../src/mirror/origin-header.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { openRun } from '../../services/run-dir.js';
import { runTributary } from '../../support/cli.js';
import { services } from '../services.js';
import {
  createTopic,
  header,
  percentile,
  readTopic,
  scrapeMetric,
  sleep,
  startCluster,
  startMirrorProcess,
  type MirrorProcess,
  type TestCluster,
} from './mirror-support.js';

const GROUP = 'offline-mirror';
const WINDOW_MS = 5_000;
const LATENESS_MS = 2_000;
const TOPICS = { events: 4, orders: 2 } as const;

const clusters: TestCluster[] = [];
const mirrors: MirrorProcess[] = [];
const producers: AuditedProducer[] = [];
let registry: RunningRegistry | undefined;
let registryDir: string | undefined;

afterAll(async () => {
  await Promise.all(mirrors.map((mirror) => mirror.daemon.stop(10_000).catch(() => undefined)));
  await Promise.all(producers.map((producer) => producer.close().catch(() => undefined)));
  await Promise.all(clusters.map((cluster) => cluster.stop()));
  await registry?.close();
  if (registryDir !== undefined) await rm(registryDir, { recursive: true, force: true });
});

/** Record identity: `<source>/<topic>/<phase>-<seq>` is the value. */
function record(source: string, topic: string, id: string): { key: Buffer; value: Buffer; headers: { key: string; value: Buffer }[]; timestamp: number } {
  return {
    key: Buffer.from(`user-${id.length % 7}-${id}`),
    value: Buffer.from(`${source}/${topic}/${id}`),
    headers: [{ key: 'trace', value: Buffer.from(`trace-${id}`) }],
    timestamp: Date.now(),
  };
}

const text = (buffer: Buffer | null): string => buffer?.toString('utf8') ?? '';
const flat = (partitions: Map<number, KafkaRecord[]>): { partition: number; record: KafkaRecord }[] =>
  [...partitions].flatMap(([partition, records]) => records.map((r) => ({ partition, record: r })));

describe('the offline mirror as a process, two online clusters into one offline cluster', () => {
  it('keeps every record with its fields, partition and order, survives SIGKILL without loss or duplicates, and reconciles in the audit', { timeout: 170_000 }, async () => {
    const run = openRun(services().runDir);
    const [dc1, dc2, offline] = await Promise.all([startCluster(run, 'dc1'), startCluster(run, 'dc2'), startCluster(run, 'offline')]);
    clusters.push(dc1, dc2, offline);
    registryDir = await mkdtemp(join(tmpdir(), 'tributary-mirror-registry-'));
    registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: registryDir, logger: createLogger({ name: 'registry', level: 'silent' }) });
    const registryUrl = registry.url;

    await createTopic(dc1, 'events', TOPICS.events);
    await createTopic(dc2, 'events', TOPICS.events);
    await createTopic(dc2, 'orders', TOPICS.orders);
    const sources = { dc1, dc2 };
    const producerOf = new Map<string, AuditedProducer>();
    for (const [name, cluster] of Object.entries(sources)) {
      const producer = await AuditedProducer.connect({
        bootstrap: [cluster.bootstrap],
        registry: new RegistryClient({ url: registryUrl }),
        origin: `web-${name}`,
        audit: { windowMs: WINDOW_MS, publishIntervalMs: 500, cluster: name },
      });
      producers.push(producer);
      producerOf.set(name, producer);
    }
    const send = async (source: 'dc1' | 'dc2', topic: string, ids: readonly string[]): Promise<void> => {
      await producerOf.get(source)?.send(topic, ids.map((id) => record(source, topic, id)));
    };
    const topicsOf = (source: 'dc1' | 'dc2'): string[] => (source === 'dc1' ? ['events'] : ['events', 'orders']);
    const ids = (phase: string, from: number, count: number): string[] => Array.from({ length: count }, (_, i) => `${phase}-${from + i}`);

    // (1) A backlog before the mirror starts.
    for (const source of ['dc1', 'dc2'] as const) for (const topic of topicsOf(source)) await send(source, topic, ids('backlog', 0, 300));

    const mirrorArgs = [
      '--source', `dc1=${dc1.zookeeper}`, '--source', `dc2=${dc2.zookeeper}`, '--target-zookeeper', offline.zookeeper,
      '--whitelist', 'events|orders', '--group', GROUP, '--registry', registryUrl,
      // Commits every 2 s: a kill between two commits leaves records in the offline cluster beyond the committed offsets.
      '--set', 'commitIntervalMs=2000', '--set', 'sessionTimeoutMs=4000', '--set', 'lagIntervalMs=1000',
      '--set', `auditWindowMs=${WINDOW_MS}`, '--set', `auditLatenessMs=${LATENESS_MS}`,
    ];
    const first = await startMirrorProcess(run, mirrorArgs);
    mirrors.push(first);

    const allMirrored = async (): Promise<boolean> => {
      for (const topic of Object.keys(TOPICS)) {
        const offlineValues = new Set(flat(await readTopic(offline.bootstrap, topic).catch(() => new Map<number, KafkaRecord[]>())).map(({ record: r }) => text(r.value)));
        for (const source of [dc1, dc2]) {
          if (source === dc1 && topic === 'orders') continue;
          for (const { record: r } of flat(await readTopic(source.bootstrap, topic))) if (!offlineValues.has(text(r.value))) return false;
        }
      }
      return true;
    };
    await expect.poll(allMirrored, { timeout: 60_000, interval: 1_000 }).toBe(true);

    // (2) Live traffic, one record per source every 50 ms; an offline reader notes when each arrives.
    const arrivals = new Map<string, number>();
    const reading = { on: true };
    // One connection per partition: a broker serves a connection's requests one at a time, and the
    // reader's own long polls must not delay what it measures.
    const readLoops = Array.from({ length: TOPICS.events }, async (_, partition) => {
      const reader = await ClusterClient.connect({ bootstrap: [offline.bootstrap], allowAutoTopicCreation: false });
      const offlineConsumer = new SimpleConsumer(reader);
      let offset = await offlineConsumer.listOffset('events', partition, 'latest');
      while (reading.on) {
        const fetched = await offlineConsumer.fetch('events', partition, offset, { maxWaitMs: 200 });
        const now = Date.now();
        for (const r of fetched.records) if (!arrivals.has(text(r.value))) arrivals.set(text(r.value), now - r.timestamp);
        offset = fetched.nextOffset;
      }
      reader.close();
    });
    for (let i = 0; i < 120; i += 1) {
      await Promise.all([send('dc1', 'events', [`live-${i}`]), send('dc2', 'events', [`live-${i}`])]);
      await sleep(50);
    }
    await expect.poll(() => [...arrivals.keys()].filter((value) => value.includes('/live-')).length, { timeout: 30_000 }).toBe(240);
    reading.on = false;
    await Promise.all(readLoops);
    const latencies = [...arrivals].filter(([value]) => value.includes('/live-')).map(([, ms]) => ms);
    console.log(`mirror latency produce→offline (acks=-1 both sides, default settings): p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${Math.max(...latencies)} ms over ${latencies.length} records`);

    // (3) Steady traffic; SIGKILL the mirror a second after one of its commits, restart it.
    const traffic = { on: true, sent: 0 };
    const producing = (async () => {
      while (traffic.on) {
        const batch = ids('steady', traffic.sent, 5);
        traffic.sent += 5;
        await Promise.all([send('dc1', 'events', batch), send('dc2', 'events', batch), send('dc2', 'orders', batch)]);
        await sleep(100);
      }
    })();
    const committed = offsetPath(GROUP, 'events', 0);
    const versionBefore = (await dc1.store.get(committed))?.version ?? -1;
    await expect.poll(async () => (await dc1.store.get(committed))?.version ?? -1, { timeout: 20_000, interval: 50 }).toBeGreaterThan(versionBefore);
    await sleep(1_000);
    first.daemon.signal('SIGKILL');
    await first.daemon.exited;
    await sleep(2_000);
    const second = await startMirrorProcess(run, mirrorArgs);
    mirrors.push(second);
    await sleep(4_000);
    traffic.on = false;
    await producing;
    for (const producer of producers) await producer.close(); // publishes the last PRODUCER counts
    await expect.poll(allMirrored, { timeout: 90_000, interval: 1_000 }).toBe(true);

    // Every source record is offline once or more, with its fields and partition; order per source partition kept.
    const duplicates: Record<string, number> = {};
    const producedPerWindow = new Map<string, Map<number, number>>();
    for (const topic of Object.keys(TOPICS)) {
      const offlinePartitions = await readTopic(offline.bootstrap, topic);
      expect(offlinePartitions.size, `offline ${topic} partitions`).toBe(TOPICS[topic as keyof typeof TOPICS]);
      const offlineRecords = flat(offlinePartitions);
      const sourceRecords = new Map<string, { partition: number; record: KafkaRecord; source: string }>();
      for (const [name, cluster] of Object.entries(sources)) {
        if (name === 'dc1' && topic === 'orders') continue;
        for (const { partition, record: r } of flat(await readTopic(cluster.bootstrap, topic))) sourceRecords.set(text(r.value), { partition, record: r, source: name });
      }
      const windows = new Map<number, number>();
      for (const { record: r } of sourceRecords.values()) windows.set(windowStartOf(r.timestamp, WINDOW_MS), (windows.get(windowStartOf(r.timestamp, WINDOW_MS)) ?? 0) + 1);
      producedPerWindow.set(topic, windows);

      const seen = new Set<string>();
      const lastOffset = new Map<string, bigint>();
      for (const { partition, record: copy } of offlineRecords) {
        const value = text(copy.value);
        const original = sourceRecords.get(value);
        expect(original, `offline ${topic} holds ${value}, which no source has`).toBeDefined();
        if (original === undefined) continue;
        expect(partition, `${value}: partition`).toBe(original.partition);
        expect(text(copy.key), `${value}: key`).toBe(text(original.record.key));
        expect(copy.timestamp, `${value}: timestamp`).toBe(original.record.timestamp);
        expect(copy.headers.filter((h) => h.key !== MIRROR_ORIGIN_HEADER).map((h) => [h.key, text(h.value)]), `${value}: headers`).toEqual(original.record.headers.map((h) => [h.key, text(h.value)]));
        expect(mirrorOriginOf(copy.headers), `${value}: mirror origin`).toEqual({ source: original.source, partition: original.partition, offset: original.record.offset });
        expect(header(copy, ORIGIN_HEADER)).toBe(`web-${original.source}`);
        expect(seen.has(value), `${value} is offline once`).toBe(false);
        seen.add(value);
        // Copies of one source partition come in source offset order, without gaps.
        const stream = `${original.source}/${original.partition}`;
        const previous = lastOffset.get(stream);
        expect(original.record.offset, `${value} follows offset ${String(previous)} of ${stream}`).toBe(previous === undefined ? 0n : previous + 1n);
        lastOffset.set(stream, original.record.offset);
      }
      expect(seen.size, `${topic}: every source record is offline`).toBe(sourceRecords.size);
      duplicates[topic] = offlineRecords.length - seen.size;
    }
    expect(duplicates, 'records offline more than once').toEqual({ events: 0, orders: 0 });

    // (4) Lag reaches 0 on every owned source partition; records are counted in the metrics.
    await expect.poll(() => scrapeMetric(second.metrics, 'tributary_mirror_lag_records', { source: 'dc2', topic: 'orders', partition: '1' }), { timeout: 20_000 }).toBe(0);
    for (let partition = 0; partition < TOPICS.events; partition += 1) {
      await expect.poll(() => scrapeMetric(second.metrics, 'tributary_mirror_lag_records', { source: 'dc1', topic: 'events', partition: String(partition) }), { timeout: 20_000 }).toBe(0);
    }
    expect(await scrapeMetric(second.metrics, 'tributary_mirror_records_total', { source: 'dc1', topic: 'events' })).toBeGreaterThan(0);

    // The audit: wait for the last window to close (the mirror publishes its counts with each commit).
    const lastTimestamp = Math.max(...[...producedPerWindow.values()].flatMap((windows) => [...windows.keys()])) + WINDOW_MS;
    const firstWindow = Math.min(...[...producedPerWindow.values()].flatMap((windows) => [...windows.keys()]));
    await sleep(Math.max(0, lastTimestamp + LATENESS_MS - Date.now()) + 3_000);
    let reportedDuplicates = 0;
    for (const [topic, windows] of producedPerWindow) {
      const report = await auditReport(offline.bootstrap, registryUrl, topic, firstWindow, lastTimestamp);
      expect(report.windows.map((w) => [Date.parse(w.start), w.produced]), `${topic}: produced per window`).toEqual([...windows].sort(([a], [b]) => a - b));
      for (const window of report.windows) {
        expect(window.closed, `${topic} ${window.start} closed`).toBe(true);
        const mirrored = window.tiers.find((tier) => tier.tier === 'MIRROR');
        expect(mirrored, `${topic} ${window.start}: MIRROR tier`).toMatchObject({ received: window.produced, completenessPercent: 100, status: 'OK' });
        reportedDuplicates += (mirrored?.received ?? 0) - window.produced;
      }
      const mirrorLatency = report.latency.find((tier) => tier.tier === 'MIRROR');
      console.log(`audit report ${topic}: ${report.windows.length} closed windows, MIRROR-tier latency p50 ≤ ${mirrorLatency?.p50Ms} ms, p99 ≤ ${mirrorLatency?.p99Ms} ms (creation → offline ack, including the backlog made before the mirror started; records recounted after the kill count as seen at the recount)`);
    }
    expect(reportedDuplicates, 'duplicates in the audit').toBe(0);

    // A clean stop commits everything acknowledged: the group's offsets reach every log end.
    second.daemon.signal('SIGTERM');
    expect(await second.daemon.exited).toBe(0);
    for (const [name, cluster] of Object.entries(sources)) {
      for (const topic of name === 'dc1' ? ['events'] : ['events', 'orders']) {
        for (const [partition, records] of await readTopic(cluster.bootstrap, topic)) {
          const stored = (await cluster.store.get(offsetPath(GROUP, topic, partition)))?.data.toString('utf8');
          expect(stored, `${name} ${topic}-${partition} committed offset`).toBe(String(records.length));
        }
      }
    }
  });
});

interface JsonReport {
  windows: { start: string; closed: boolean; produced: number; tiers: { tier: string; received: number; completenessPercent: number | null; status: string }[] }[];
  latency: { tier: string; p50Ms: number; p99Ms: number }[];
}

async function auditReport(bootstrap: string, registryUrl: string, topic: string, from: number, to: number): Promise<JsonReport> {
  const result = await runTributary([
    'audit', 'report', '--bootstrap-server', bootstrap, '--registry', registryUrl, '--topic', topic,
    '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString(), '--format', 'json', '--lateness-ms', String(LATENESS_MS),
  ]);
  expect(result.status, result.output).toBe(0);
  return JSON.parse(result.stdout) as JsonReport;
}
