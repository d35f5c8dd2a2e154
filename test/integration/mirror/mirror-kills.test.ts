/**
 * A mirror that neither loses nor duplicates, on real parts: two online clusters and one offline
 * cluster (a broker process each, each in its own ZooKeeper chroot), the schema registry, audited
 * producers on both online clusters, and the mirror as an OS process, SIGKILLed 10 times while
 * both online clusters take traffic, each time restarted at once.
 *
 * At the end the offline cluster holds every source record exactly once, in source offset order
 * per source partition (read from the mirror origin header of each offline record, checked
 * against the source record at that origin), and the audit report shows every window of the run
 * at 100% for the MIRROR tier, status OK: no DUPLICATES, no LOSS.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditedProducer } from '../../../src/audit/audited-producer.js';
import { windowStartOf } from '../../../src/audit/windows.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { createLogger } from '../../../src/common/logger.js';
import { mirrorOriginOf } from '../../../src/mirror/origin-header.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { openRun } from '../../services/run-dir.js';
import { runTributary } from '../../support/cli.js';
import { services } from '../services.js';
import { createTopic, readTopic, sleep, startCluster, startMirrorProcess, type MirrorProcess, type TestCluster } from './mirror-support.js';

const GROUP = 'offline-mirror-kills';
const TOPIC = 'events';
const PARTITIONS = 3;
const KILLS = 10;
const WINDOW_MS = 5_000;
const LATENESS_MS = 2_000;

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

const text = (buffer: Buffer | null): string => buffer?.toString('utf8') ?? '';

/** Records in the topic over all partitions (sum of the high watermarks). */
async function recordCount(consumer: SimpleConsumer): Promise<bigint> {
  let total = 0n;
  for (let partition = 0; partition < PARTITIONS; partition += 1) total += await consumer.listOffset(TOPIC, partition, 'latest');
  return total;
}

describe('the offline mirror SIGKILLed again and again', () => {
  it(`holds every record exactly once, in order, after ${KILLS} kills under traffic, and the audit shows 100% with no duplicates`, { timeout: 240_000 }, async () => {
    const run = openRun(services().runDir);
    const [dc1, dc2, offline] = await Promise.all([startCluster(run, 'dc1'), startCluster(run, 'dc2'), startCluster(run, 'offline')]);
    clusters.push(dc1, dc2, offline);
    registryDir = await mkdtemp(join(tmpdir(), 'tributary-mirror-kills-registry-'));
    registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: registryDir, logger: createLogger({ name: 'registry', level: 'silent' }) });
    const sources = { dc1, dc2 } as const;
    for (const cluster of Object.values(sources)) await createTopic(cluster, TOPIC, PARTITIONS);
    const senders: [string, AuditedProducer][] = [];
    for (const [name, cluster] of Object.entries(sources)) {
      const producer = await AuditedProducer.connect({
          bootstrap: [cluster.bootstrap],
          registry: new RegistryClient({ url: registry.url }),
          origin: `web-${name}`,
          audit: { windowMs: WINDOW_MS, publishIntervalMs: 500, cluster: name },
      });
      producers.push(producer);
      senders.push([name, producer]);
    }

    // Both online clusters take traffic the whole time: 10 keyed records per source every 50 ms.
    const traffic = { on: true, sent: 0 };
    const producing = (async () => {
      while (traffic.on) {
        const from = traffic.sent;
        traffic.sent += 10;
        await Promise.all(
          senders.map(([name, producer]) =>
            producer.send(
              TOPIC,
              Array.from({ length: 10 }, (_, i) => ({ key: Buffer.from(`user-${(from + i) % 17}`), value: Buffer.from(`${name}/${from + i}`), timestamp: Date.now() })),
            ),
          ),
        );
        await sleep(50);
      }
    })();

    const mirrorArgs = [
      '--source', `dc1=${dc1.zookeeper}`, '--source', `dc2=${dc2.zookeeper}`, '--target-zookeeper', offline.zookeeper,
      '--whitelist', TOPIC, '--group', GROUP, '--registry', registry.url,
      '--set', 'commitIntervalMs=1000', '--set', 'sessionTimeoutMs=4000', '--set', 'rebalanceBackoffMs=1000', '--set', 'rebalanceMaxRetries=30',
      '--set', `auditWindowMs=${WINDOW_MS}`, '--set', `auditLatenessMs=${LATENESS_MS}`,
    ];
    const offlineClient = await ClusterClient.connect({ bootstrap: [offline.bootstrap], allowAutoTopicCreation: false });
    const offlineReader = new SimpleConsumer(offlineClient);
    try {
      mirrors.push(await startMirrorProcess(run, mirrorArgs));
      for (let kill = 1; kill <= KILLS; kill += 1) {
        // Kill only a mirror that is writing: the offline topic has grown since this mirror started.
        const before = await recordCount(offlineReader).catch(() => 0n);
        await expect.poll(() => recordCount(offlineReader).catch(() => 0n), { timeout: 60_000, interval: 200 }).toBeGreaterThan(before);
        // At a different point of the commit interval (1 s) each time: before, during and after commits.
        await sleep(200 + ((kill * 337) % 1_500));
        const victim = mirrors.at(-1);
        victim?.daemon.signal('SIGKILL');
        await victim?.daemon.exited;
        mirrors.push(await startMirrorProcess(run, mirrorArgs));
      }
      await sleep(2_000);
      traffic.on = false;
      await producing;
      for (const producer of producers) await producer.close(); // publishes the last PRODUCER counts

      // Read back each source whole, then wait for the offline topic to hold as many records.
      const sourceRecords = new Map<string, KafkaRecord[][]>();
      let sourceTotal = 0;
      for (const [name, cluster] of Object.entries(sources)) {
        const partitions = await readTopic(cluster.bootstrap, TOPIC);
        sourceRecords.set(name, Array.from({ length: PARTITIONS }, (_, partition) => partitions.get(partition) ?? []));
        for (const records of partitions.values()) sourceTotal += records.length;
      }
      expect(sourceTotal).toBe(traffic.sent * 2);
      await expect.poll(() => recordCount(offlineReader), { timeout: 90_000, interval: 1_000 }).toBeGreaterThanOrEqual(BigInt(sourceTotal));
      await sleep(3_000); // anything past the total would be a duplicate: give it time to show
      const offlinePartitions = await readTopic(offline.bootstrap, TOPIC);

      // Exactly once, in order: per source partition, the offline origins are 0, 1, 2, … with no gap or repeat.
      const nextOffset = new Map<string, bigint>();
      let offlineTotal = 0;
      for (const [partition, records] of offlinePartitions) {
        for (const copy of records) {
          offlineTotal += 1;
          const origin = mirrorOriginOf(copy.headers);
          expect(origin, `offline ${TOPIC}-${partition}@${copy.offset} has a mirror origin`).toBeDefined();
          if (origin === undefined) continue;
          expect(origin.partition, `${text(copy.value)}: kept its partition`).toBe(partition);
          const stream = `${origin.source}/${origin.partition}`;
          expect(origin.offset, `offline ${TOPIC}-${partition}@${copy.offset}: next record of ${stream}`).toBe(nextOffset.get(stream) ?? 0n);
          nextOffset.set(stream, origin.offset + 1n);
          const original = sourceRecords.get(origin.source)?.[origin.partition]?.[Number(origin.offset)];
          expect(text(copy.value), `the record at ${stream}@${origin.offset}`).toBe(text(original?.value ?? null));
          expect(copy.timestamp).toBe(original?.timestamp);
        }
      }
      for (const [name, partitions] of sourceRecords) {
        for (const [partition, records] of partitions.entries()) expect(nextOffset.get(`${name}/${partition}`) ?? 0n, `${name}/${partition} mirrored whole`).toBe(BigInt(records.length));
      }
      expect(offlineTotal).toBe(sourceTotal);

      // The audit: every window of the run closed at exactly 100% for the MIRROR tier.
      const produced = new Map<number, number>();
      for (const partitions of sourceRecords.values()) {
        for (const record of partitions.flat()) produced.set(windowStartOf(record.timestamp, WINDOW_MS), (produced.get(windowStartOf(record.timestamp, WINDOW_MS)) ?? 0) + 1);
      }
      const firstWindow = Math.min(...produced.keys());
      const end = Math.max(...produced.keys()) + WINDOW_MS;
      await sleep(Math.max(0, end + LATENESS_MS - Date.now()) + 2_000);
      const report = await auditReport(offline.bootstrap, registry.url, firstWindow, end);
      expect(report.windows.map((window) => [Date.parse(window.start), window.produced]), 'produced per window').toEqual([...produced].sort(([a], [b]) => a - b));
      for (const window of report.windows) {
        const mirrored = window.tiers.find((tier) => tier.tier === 'MIRROR');
        expect(window.closed, `${window.start} closed`).toBe(true);
        expect(mirrored, `${window.start}: MIRROR tier`).toMatchObject({ received: window.produced, completenessPercent: 100, status: 'OK' });
      }
      // How far back the resume searches read (from the mirrors' logs): printed, not asserted.
      const resumes = mirrors.flatMap((mirror) =>
        readFileSync(mirror.daemon.logFile, 'utf8')
          .split('\n')
          .filter((line) => line.startsWith('{') && line.includes('resuming the source partition'))
          .map((line) => JSON.parse(line) as { scanned: number; committed?: string; resumeAt?: string }),
      );
      const beyondCommit = resumes.filter((resume) => resume.committed !== undefined && resume.resumeAt !== undefined && BigInt(resume.resumeAt) > BigInt(resume.committed));
      console.log(
        `mirror SIGKILLed ${KILLS} times: ${sourceTotal} source records, ${offlineTotal} offline, ${report.windows.length} audit windows at 100% (MIRROR); ` +
          `${resumes.length} resumes, ${beyondCommit.length} of them past the committed offset (by ${beyondCommit.reduce((sum, r) => sum + Number(BigInt(r.resumeAt ?? '0') - BigInt(r.committed ?? '0')), 0)} records in all), ` +
          `target records read per resume: max ${Math.max(0, ...resumes.map((r) => r.scanned))}, mean ${Math.round(resumes.reduce((sum, r) => sum + r.scanned, 0) / Math.max(1, resumes.length))}`,
      );
    } finally {
      traffic.on = false;
      await producing.catch(() => undefined);
      offlineClient.close();
    }
  });
});

interface JsonReport {
  windows: { start: string; closed: boolean; produced: number; tiers: { tier: string; received: number; completenessPercent: number | null; status: string }[] }[];
}

async function auditReport(bootstrap: string, registryUrl: string, from: number, to: number): Promise<JsonReport> {
  const result = await runTributary([
    'audit', 'report', '--bootstrap-server', bootstrap, '--registry', registryUrl, '--topic', TOPIC,
    '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString(), '--format', 'json', '--lateness-ms', String(LATENESS_MS),
  ]);
  expect(result.status, result.output).toBe(0);
  return JSON.parse(result.stdout) as JsonReport;
}
