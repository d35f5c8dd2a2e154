/**
 * The audit end to end on real parts: a broker in this process, the registry REST server, our
 * producer with its PRODUCER-tier counter, a consumer-side MIRROR-tier counter, kcat as a foreign
 * client, and `tributary audit report` run as a user would.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AUDIT_TOPIC } from '../../../src/audit/audit-count.js';
import { AuditedProducer } from '../../../src/audit/audited-producer.js';
import { AuditCounter } from '../../../src/audit/counter.js';
import { ORIGIN_HEADER } from '../../../src/audit/origin.js';
import { readAuditTopic } from '../../../src/audit/read-audit-topic.js';
import { windowStartOf } from '../../../src/audit/windows.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { createLogger } from '../../../src/common/logger.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { runTributary } from '../../support/cli.js';
import { cleanToFixedPoint, createCompactedTopic } from '../../support/compacted-topic.js';
import { kcat } from '../../support/kcat.js';

const WINDOW = 10 * 60 * 1000;
const T0 = Date.parse('2024-05-01T10:00:00Z');

let broker: InProcessBroker;
let registry: RunningRegistry;
let registryDir: string;
let cluster: ClusterClient;

beforeAll(async () => {
  broker = await startInProcessBroker();
  registryDir = await mkdtemp(join(tmpdir(), 'tributary-audit-registry-'));
  registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: registryDir, logger: createLogger({ name: 'registry', level: 'silent' }) });
  cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
});

afterAll(async () => {
  cluster?.close();
  await registry?.close();
  await broker?.stop();
  if (registryDir !== undefined) await rm(registryDir, { recursive: true, force: true });
});

const registryClient = () => new RegistryClient({ url: registry.url });

/** A MIRROR-tier counter publishing to this cluster's audit topic, as the mirror's would. */
function mirrorCounter(windowMs = WINDOW): AuditCounter {
  return new AuditCounter({ tier: 'MIRROR', cluster: 'offline', publisher: new Producer(cluster, { acks: -1 }), encoder: new AvroSerializer(registryClient()), windowMs, publishIntervalMs: 0 });
}

async function readAll(topic: string): Promise<KafkaRecord[]> {
  const consumer = new SimpleConsumer(cluster);
  const records: KafkaRecord[] = [];
  for (const partition of await cluster.partitionsFor(topic)) {
    const end = await consumer.listOffset(topic, partition, 'latest');
    for (let offset = 0n; offset < end; ) {
      const fetched = await consumer.fetch(topic, partition, offset);
      records.push(...fetched.records);
      offset = fetched.nextOffset;
    }
  }
  return records;
}

async function produceAudited(topic: string, records: readonly { value: string; timestamp: number; key?: string }[], windowMs = WINDOW): Promise<void> {
  const producer = await AuditedProducer.connect({ bootstrap: [broker.bootstrap], registry: registryClient(), origin: 'web-1', audit: { windowMs, publishIntervalMs: 0 } });
  await producer.send(topic, records.map(({ value, timestamp, key }) => ({ value: Buffer.from(value), timestamp, ...(key === undefined ? {} : { key: Buffer.from(key) }) })));
  await producer.close();
}

interface JsonReport {
  windows: { start: string; produced: number; closed: boolean; tiers: { tier: string; received: number; unaudited: number; completenessPercent: number | null; status: string }[] }[];
  latency: { tier: string; samples: number; p50Ms: number; p99Ms: number }[];
  auditEvents: { read: number; distinct: number; duplicates: number; conflicts: number; undecodable: number };
}

async function report(topic: string, from: number, to: number, format: 'table' | 'json', extra: string[] = []) {
  const result = await runTributary([
    'audit', 'report', '--bootstrap-server', broker.bootstrap, '--registry', registry.url,
    '--topic', topic, '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString(), '--format', format, ...extra,
  ]);
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout;
}

describe('tributary audit report', () => {
  it('shows 100% for a window counted fully, LOSS for one counted in part and DUPLICATES for one counted twice, as JSON and as a table', async () => {
    const topic = 'page-views';
    const sent = [0, 1, 2].flatMap((window) => Array.from({ length: 10 }, (_, index) => ({ value: `view-${window}-${index}`, timestamp: T0 + window * WINDOW + index * 1000 })));
    await produceAudited(topic, sent);

    const stored = await readAll(topic);
    expect(stored).toHaveLength(30);
    for (const record of stored) expect(record.headers).toContainEqual({ key: ORIGIN_HEADER, value: Buffer.from('web-1') });

    const inWindow = (window: number) => stored.filter((record) => windowStartOf(record.timestamp, WINDOW) === T0 + window * WINDOW);
    const counter = mirrorCounter();
    counter.countRecords(topic, inWindow(0));
    counter.countRecords(topic, inWindow(1).slice(0, 7));
    counter.countRecords(topic, inWindow(2));
    counter.countRecords(topic, inWindow(2).slice(8)); // re-delivered after a crash before commit
    await counter.close();

    const json = JSON.parse(await report(topic, T0, T0 + 3 * WINDOW, 'json')) as JsonReport;
    expect(json.windows.map((window) => [window.start, window.produced, window.closed, window.tiers.map((tier) => [tier.tier, tier.received, tier.completenessPercent, tier.status])])).toEqual([
      ['2024-05-01T10:00:00.000Z', 10, true, [['MIRROR', 10, 100, 'OK']]],
      ['2024-05-01T10:10:00.000Z', 10, true, [['MIRROR', 7, 70, 'LOSS']]],
      ['2024-05-01T10:20:00.000Z', 10, true, [['MIRROR', 12, 120, 'DUPLICATES']]],
    ]);
    expect(json.latency.map((tier) => [tier.tier, tier.samples])).toEqual([
      ['PRODUCER', 30],
      ['MIRROR', 29],
    ]);
    expect(json.auditEvents).toMatchObject({ duplicates: 0, conflicts: 0, undecodable: 0 });

    const table = await report(topic, T0, T0 + 3 * WINDOW, 'table');
    expect(table).toMatch(/^2024-05-01T10:00:00\.000Z\s+2024-05-01T10:10:00\.000Z\s+10\s+MIRROR\s+10\s+0\s+100\.00%\s+OK$/m);
    expect(table).toMatch(/^2024-05-01T10:10:00\.000Z\s+2024-05-01T10:20:00\.000Z\s+10\s+MIRROR\s+7\s+0\s+70\.00%\s+LOSS$/m);
    expect(table).toMatch(/^2024-05-01T10:20:00\.000Z\s+2024-05-01T10:30:00\.000Z\s+10\s+MIRROR\s+12\s+0\s+120\.00%\s+DUPLICATES$/m);
    expect(table).toMatch(/^MIRROR\s+29\s+\d+ ms\s+\d+ ms$/m);

    const firstWindowOnly = JSON.parse(await report(topic, T0, T0 + WINDOW, 'json')) as JsonReport;
    expect(firstWindowOnly.windows.map((window) => window.start)).toEqual(['2024-05-01T10:00:00.000Z']);
  });

  it('on a compacted topic reports the windows a reader got fewer records of, after cleaning, as COMPACTED instead of LOSS', async () => {
    const topic = 'latest-prices';
    await createCompactedTopic(broker.bootstrap, topic, 1);
    // Window 0: every key written twice (the cleaner keeps the second); window 1: keys written once;
    // then a batch larger than a segment, which rolls the log so windows 0 and 1 can be cleaned.
    const batches = [
      Array.from({ length: 10 }, (_, index) => ({ key: `item-${index % 5}`, value: `old-${index}`, timestamp: T0 + index * 1000 })),
      Array.from({ length: 10 }, (_, index) => ({ key: `other-${index}`, value: `once-${index}`, timestamp: T0 + WINDOW + index * 1000 })),
      Array.from({ length: 40 }, (_, index) => ({ key: `tail-${index}`, value: 'x'.repeat(50), timestamp: T0 + 2 * WINDOW + index * 1000 })),
    ];
    for (const records of batches) await produceAudited(topic, records);
    await cleanToFixedPoint(broker.broker, topic, 0, batches.flat().length);

    // A mirror that reads the topic now counts what the cleaner kept.
    const stored = await readAll(topic);
    const inWindow = (window: number) => stored.filter((record) => windowStartOf(record.timestamp, WINDOW) === T0 + window * WINDOW);
    expect(inWindow(0).map((record) => record.value?.toString())).toEqual(['old-5', 'old-6', 'old-7', 'old-8', 'old-9']);
    expect(inWindow(1)).toHaveLength(10);
    const counter = mirrorCounter();
    counter.countRecords(topic, stored);
    counter.countRecords(topic, inWindow(1).slice(0, 1)); // one counted twice: still DUPLICATES
    await counter.close();

    const json = JSON.parse(await report(topic, T0, T0 + 2 * WINDOW, 'json')) as JsonReport & { compacted: boolean };
    expect(json.compacted).toBe(true);
    expect(json.windows.map((window) => [window.produced, window.tiers.map((tier) => [tier.tier, tier.received, tier.status])])).toEqual([
      [10, [['MIRROR', 5, 'COMPACTED']]],
      [10, [['MIRROR', 11, 'DUPLICATES']]],
    ]);
    const table = await report(topic, T0, T0 + WINDOW, 'table');
    expect(table).toMatch(/the topic is compacted/);
    expect(table).toMatch(/^2024-05-01T10:00:00\.000Z\s+2024-05-01T10:10:00\.000Z\s+10\s+MIRROR\s+5\s+0\s+50\.00%\s+COMPACTED$/m);
  });

  it('does not count AuditCount events twice when they are published again under the same keys (a restarted mirror copying _audit again)', async () => {
    const topic = 'republished';
    await produceAudited(topic, Array.from({ length: 5 }, (_, index) => ({ value: `r-${index}`, timestamp: T0 + index })));
    const counter = mirrorCounter();
    counter.countRecords(topic, await readAll(topic));
    await counter.close();
    const before = JSON.parse(await report(topic, T0, T0 + WINDOW, 'json')) as JsonReport;
    expect(before.windows[0]?.tiers[0]).toMatchObject({ received: 5, status: 'OK' });

    const events = (await readAll(AUDIT_TOPIC)).filter((record) => record.key?.toString() === topic);
    expect(events).toHaveLength(2);
    const copier = new Producer(cluster, { acks: -1 });
    await copier.send(AUDIT_TOPIC, events.map(({ key, value, timestamp }) => ({ key, value, timestamp })));
    await copier.close();

    const after = JSON.parse(await report(topic, T0, T0 + WINDOW, 'json')) as JsonReport;
    expect(after.windows).toEqual(before.windows);
    expect(after.auditEvents).toMatchObject({ read: 4, distinct: 2, duplicates: 2, conflicts: 0 });
  });

  it('counts a record from kcat (no origin header) under the unknown origin, outside completeness', async () => {
    const topic = 'from-kcat';
    const windowMs = 1000;
    const produced = await kcat(['-P', '-b', broker.bootstrap, '-t', topic], 'no-header\n');
    expect(produced.status).toBe(0);
    const [foreign] = await readAll(topic);
    if (foreign === undefined) throw new Error('kcat stored nothing');
    expect(foreign.headers).toEqual([]);
    await produceAudited(topic, [{ value: 'ours', timestamp: foreign.timestamp }], windowMs);

    const counter = mirrorCounter(windowMs);
    counter.countRecords(topic, await readAll(topic));
    await counter.close();
    const published = await readAuditTopic({ cluster, deserializer: new AvroDeserializer(registryClient()), topic });
    expect(published.events.filter((event) => event.tier === 'MIRROR').map((event) => [event.origin, event.count])).toEqual(
      expect.arrayContaining([
        ['unknown', 1],
        ['web-1', 1],
      ]),
    );

    const windowStart = windowStartOf(foreign.timestamp, windowMs);
    // Wait for the one-second window to end, so it is closed with --lateness-ms 0.
    await vi.waitUntil(() => Date.now() >= windowStart + windowMs, { timeout: 5_000, interval: 50 });
    const json = JSON.parse(await report(topic, windowStart, windowStart + windowMs, 'json', ['--lateness-ms', '0'])) as JsonReport;
    expect(json.windows).toEqual([
      { start: new Date(windowStart).toISOString(), end: new Date(windowStart + windowMs).toISOString(), closed: true, produced: 1, tiers: [{ tier: 'MIRROR', received: 1, unaudited: 1, completenessPercent: 100, status: 'OK' }] },
    ]);
  });

  it('refuses a bad range or format before connecting, and says what is wrong', async () => {
    const badDate = await runTributary(['audit', 'report', '--bootstrap-server', broker.bootstrap, '--registry', registry.url, '--topic', 't', '--from', '2024-05-01', '--to', '2024-05-02T00:00:00Z']);
    expect(badDate.status).toBe(1);
    expect(badDate.stderr).toContain('--from must be an ISO-8601 date and time with a zone');
    const reversed = await runTributary(['audit', 'report', '--bootstrap-server', broker.bootstrap, '--registry', registry.url, '--topic', 't', '--from', '2024-05-02T00:00:00Z', '--to', '2024-05-01T00:00:00Z']);
    expect(reversed.stderr).toContain('must be before --to');
    const format = await runTributary(['audit', 'report', '--bootstrap-server', broker.bootstrap, '--registry', registry.url, '--topic', 't', '--from', '2024-05-01T00:00:00Z', '--to', '2024-05-02T00:00:00Z', '--format', 'xml']);
    expect(format.stderr).toContain('--format must be table or json, not xml');
  });
});
