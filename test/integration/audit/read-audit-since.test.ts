/**
 * Reading the audit topic from a time (issue #19) on real parts: a broker in this process, the
 * registry REST server, and PRODUCER counters whose clocks say when each count is published.
 * `readAuditTopic({ since })` starts every partition at the first record stamped at or after
 * `since` (ListOffsets by timestamp): older counts are not read, and a count appended later with
 * an older stamp is still read when it lies after that offset, as a late mirror copy would.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditCounter } from '../../../src/audit/counter.js';
import { readAuditTopic } from '../../../src/audit/read-audit-topic.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { ManualClock } from '../../../src/common/clock.js';
import { createLogger } from '../../../src/common/logger.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';

const MINUTE = 60_000;
const AUDIT = '_audit-since';
/** Recent enough that retention keeps every segment. */
const T0 = Math.floor(Date.now() / (60 * MINUTE)) * 60 * MINUTE - 6 * 60 * MINUTE;

let broker: InProcessBroker;
let registry: RunningRegistry;
let registryDir: string;
let cluster: ClusterClient;

beforeAll(async () => {
  broker = await startInProcessBroker();
  registryDir = await mkdtemp(join(tmpdir(), 'tributary-audit-since-registry-'));
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

/** One PRODUCER count of `records` records created at `createdAt`, published at `publishedAt`. */
async function publishCount(topic: string, createdAt: number, records: number, publishedAt: number): Promise<void> {
  const counter = new AuditCounter({
    tier: 'PRODUCER',
    publisher: new Producer(cluster, { acks: -1 }),
    encoder: new AvroSerializer(registryClient()),
    auditTopic: AUDIT,
    publishIntervalMs: 0,
    clock: new ManualClock(publishedAt),
  });
  counter.count(topic, createdAt, 'web-1', publishedAt, records);
  await counter.close();
}

async function read(topic: string, since?: number) {
  return readAuditTopic({ cluster, deserializer: new AvroDeserializer(registryClient()), topic, auditTopic: AUDIT, ...(since === undefined ? {} : { since }) });
}

describe('reading the audit topic from a time', () => {
  it('skips counts stamped before it, reads those after it however late they were appended, and reads nothing past the last', async () => {
    const topic = 'views-since';
    await publishCount(topic, T0 + MINUTE, 1, T0 + 11 * MINUTE); // hour 0, on time
    await publishCount(topic, T0 + 60 * MINUTE + MINUTE, 2, T0 + 71 * MINUTE); // hour 1, on time
    // Appended now, stamped before the previous one: a copy the mirror delivered late.
    await publishCount(topic, T0 + 60 * MINUTE + 20 * MINUTE, 4, T0 + 65 * MINUTE);
    await publishCount(topic, T0 + 60 * MINUTE + 30 * MINUTE, 8, T0 + 5 * 60 * MINUTE); // hour 1, published 4 hours late

    const all = await read(topic);
    expect(all.events.map((event) => event.count)).toEqual([1, 2, 4, 8]);

    const fromHour1 = await read(topic, T0 + 60 * MINUTE);
    expect(fromHour1.events.map((event) => event.count)).toEqual([2, 4, 8]);
    expect(fromHour1.recordsRead).toBe(3);
    // Every event stamped from T0 + 60 min on is read, whatever its window.
    expect(fromHour1.events.map((event) => event.publishedAt)).toEqual([T0 + 71 * MINUTE, T0 + 65 * MINUTE, T0 + 5 * 60 * MINUTE]);

    const late = await read(topic, T0 + 4 * 60 * MINUTE);
    expect(late.events.map((event) => event.count)).toEqual([8]);
    const none = await read(topic, T0 + 6 * 60 * MINUTE);
    expect(none).toMatchObject({ events: [], recordsRead: 0 });
  }, 60_000);
});
