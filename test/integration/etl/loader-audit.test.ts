/**
 * The loader's audit tier and hour markers end to end (issue #9): `tributary etl` as a real
 * process, a real broker process holding the topic and `_audit`, a real registry server, and each
 * warehouse (a local folder, and real HDFS through WebHDFS). Page views over 3 past hours are
 * produced through an AuditedProducer (PRODUCER counts, origin header = header.server).
 *
 * - A run killed (SIGKILL) after its LOADER counts were acknowledged and before it recorded them
 *   leaves commit 1 published and unaudited; the next run recounts it under the same keys: the
 *   LOADER tier is then exactly 100% of PRODUCER in every window, not 200%, not missing.
 * - That run finds the 3 hours closed (all partitions read to their high watermark long after the
 *   hours + the 2h horizon) and matching the audit: `_COMPLETE` in each with the counts.
 * - Late records into a completed hour land as a new file and the marker is rewritten with the new count.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditedProducer } from '../../../src/audit/audited-producer.js';
import { ORIGIN_HEADER } from '../../../src/audit/origin.js';
import { readAuditTopic } from '../../../src/audit/read-audit-topic.js';
import { reconcile } from '../../../src/audit/reconcile.js';
import { DEFAULT_LATENESS_MS } from '../../../src/audit/windows.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { parseMarker, type HourMarker } from '../../../src/etl/completeness/hour-completeness.js';
import { auditedPath, completeMarkerPath, hourOf, topicHourDir } from '../../../src/etl/layout.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import {
  FIRST_HOUR,
  HOUR,
  PAGE_VIEW_V1,
  createTopic,
  makeWarehouse,
  manifestsPerHour,
  messagesOf,
  registerPageViews,
  removeHdfsBase,
  runEtl,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const SLOW = 240_000;
let env: LoaderEnvironment;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await env?.close();
}, 60_000);

/** Page views created at `times` (event time = record timestamp = header.time), counted at the PRODUCER tier. */
async function produceAudited(topic: string, times: readonly number[], partitions: number): Promise<void> {
  const serializer = new AvroSerializer(env.registryClient);
  const producer = await AuditedProducer.connect({ bootstrap: [env.broker.bootstrap], registry: env.registryClient, acks: -1, audit: { publishIntervalMs: 0 } });
  try {
    const records = [];
    for (const [index, time] of times.entries()) {
      const server = `web-${index % 3}`;
      const value = { header: { eventId: randomUUID(), time, server, service: 'frontend' }, memberId: index, pageKey: `page-${index % 7}`, url: `/p/${randomBytes(3).toString('hex')}`, referrer: null, userAgent: null };
      records.push({ value: await serializer.encode(`${topic}-value`, value, PAGE_VIEW_V1), timestamp: time, partition: index % partitions, headers: [{ key: ORIGIN_HEADER, value: Buffer.from(server) }] });
    }
    await producer.send(topic, records);
    await producer.flush();
  } finally {
    await producer.close();
  }
}

async function auditReport(topic: string) {
  const cluster = await ClusterClient.connect({ bootstrap: [env.broker.bootstrap], allowAutoTopicCreation: false });
  try {
    const contents = await readAuditTopic({ cluster, deserializer: new AvroDeserializer(env.registryClient), topic });
    return reconcile(contents.events, { topic, from: FIRST_HOUR, to: FIRST_HOUR + 3 * HOUR, now: Date.now(), latenessMs: DEFAULT_LATENESS_MS });
  } finally {
    cluster.close();
  }
}

/** Every window closed and the LOADER tier exactly at the PRODUCER count. */
function expectLoaderComplete(report: Awaited<ReturnType<typeof auditReport>>, produced: number): void {
  expect(report.windows.reduce((sum, window) => sum + window.produced, 0)).toBe(produced);
  const off = report.windows.filter((window) => window.tiers.find((tier) => tier.tier === 'LOADER')?.status !== 'OK');
  expect(off.map((window) => [new Date(window.windowStart).toISOString(), window.produced, window.tiers])).toEqual([]);
  expect(report.events.conflicts).toBe(0);
}

async function markerAt(warehouse: TestWarehouse, topic: string, hour: number): Promise<HourMarker | null | undefined> {
  const path = completeMarkerPath(warehouse.root, topic, hour, 'hourly');
  if ((await warehouse.warehouse.stat(path)) === undefined) return undefined;
  return parseMarker(await warehouse.warehouse.open(path));
}

let names = 0;
describe.each<WarehouseKind>(['local folder', 'HDFS'])('the loader audit tier into %s', (kind) => {
  it(
    'publishes LOADER counts exactly once across a crash after the flush, writes _COMPLETE in closed matching hours, and rewrites it for late records',
    async () => {
      names += 1;
      const name = `audit-${kind === 'HDFS' ? 'hdfs' : 'local'}-${names}`;
      const topic = `t-${name}`;
      const warehouse = makeWarehouse(kind, env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 4);
      await registerPageViews(env.registryClient, topic);
      const times = Array.from({ length: 600 }, (_, index) => FIRST_HOUR + ((index * 2_654_435) % (3 * HOUR)));
      await produceAudited(topic, times, 4);
      const file = await writeLoadFile(env, { name, topic, warehouse });
      await appendFile(file, 'audit: { topic: _audit }\n');

      // Killed after the LOADER counts of commit 1 were acknowledged, before audited/1 was written.
      const crashed = await runEtl(['run', '--load', file], { TRIBUTARY_ETL_FAILPOINT: 'after-audit-flush' });
      expect(crashed.signal, messagesOf(crashed)).toBe('SIGKILL');
      expect([...(await readCommitLog(warehouse.warehouse, warehouse.root, name)).published]).toEqual([1]);
      expect(await warehouse.warehouse.stat(auditedPath(warehouse.root, name, 1))).toBeUndefined();
      const statusBefore = await runEtl(['status', '--load', file]);
      expect(statusBefore.stdout).toContain('commits not yet audited (LOADER counts unpublished; the next run publishes them): 1');
      expectLoaderComplete(await auditReport(topic), 600);

      // The next run recounts commit 1 under the same keys, and marks the three closed hours.
      const second = await runEtl(['run', '--load', file]);
      expect(second.status, messagesOf(second)).toBe(0);
      expect(second.stdout).toContain(`audit: commit 1 (left unaudited by an earlier run): 600 records counted at the LOADER tier (etl/${name}/1)`);
      expect(await warehouse.warehouse.stat(auditedPath(warehouse.root, name, 1))).toBeDefined();
      const afterRecount = await auditReport(topic);
      expectLoaderComplete(afterRecount, 600);
      expect(afterRecount.events.duplicates).toBeGreaterThan(0); // the recount's events, deduplicated by key
      const perHour = await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic);
      expect(Object.keys(perHour)).toHaveLength(3);
      for (let hour = hourOf(FIRST_HOUR); hour < hourOf(FIRST_HOUR) + 3; hour += 1) {
        const key = new Date(hour * HOUR).toISOString().slice(0, 13);
        expect(await markerAt(warehouse, topic, hour)).toMatchObject({ topic, hour: key, records: perHour[key], produced: perHour[key], seq: 1 });
      }

      // Late records of the first hour: a new file there, the marker rewritten with the new count.
      const firstHour = hourOf(FIRST_HOUR);
      const filesBefore = (await warehouse.warehouse.list(topicHourDir(warehouse.root, topic, firstHour, 'hourly'))).map((entry) => entry.name);
      await produceAudited(topic, [FIRST_HOUR + 1_000, FIRST_HOUR + 700_000, FIRST_HOUR + 1_400_000, FIRST_HOUR + 3_000_000, FIRST_HOUR + 3_500_000], 4);
      const third = await runEtl(['run', '--load', file]);
      expect(third.status, messagesOf(third)).toBe(0);
      expect(third.stdout).toContain(`hour complete: ${topic} ${new Date(FIRST_HOUR).toISOString().slice(0, 13)} (_COMPLETE written)`);
      const filesAfter = (await warehouse.warehouse.list(topicHourDir(warehouse.root, topic, firstHour, 'hourly'))).map((entry) => entry.name);
      expect(filesAfter.filter((entry) => !filesBefore.includes(entry) && !entry.startsWith('_')).length).toBeGreaterThan(0);
      expect(filesAfter.filter((entry) => entry.startsWith('_'))).toEqual(['_COMPLETE', '_SUCCESS']); // and no temp left
      const late = await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic);
      const firstKey = new Date(FIRST_HOUR).toISOString().slice(0, 13);
      expect(late[firstKey]).toBe((perHour[firstKey] ?? 0) + 5);
      expect(await markerAt(warehouse, topic, firstHour)).toMatchObject({ records: late[firstKey], produced: late[firstKey], seq: 2 });
      expectLoaderComplete(await auditReport(topic), 605);

      const status = await runEtl(['status', '--load', file]);
      expect(status.status, messagesOf(status)).toBe(0);
      expect(status.stdout).toContain(`${topic} ${firstKey}  ${late[firstKey]}  COMPLETE (marker: ${late[firstKey]} records = ${late[firstKey]} produced, commit 2)`);
      expect(status.stdout).toContain('LOADER audit counts: every published commit audited');
    },
    SLOW,
  );
});
