/**
 * The loader on a compacted source topic, cleaned by the broker's own cleaner between runs
 * (`tributary etl run` as a real process, an in-process broker so the test can clean to a fixed
 * point, a real registry, a local warehouse): every record the log kept when a run read it lands
 * exactly once, the ranges of the manifests follow each other over the gaps (records fewer than
 * offsets), nothing is reported lost to retention, and a replay of hours whose records compaction
 * removed after they were loaded is refused for that reason.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { cleanToFixedPoint, createCompactedTopic, keptAfterCleaning } from '../../support/compacted-topic.js';
import {
  FIRST_HOUR,
  HOUR,
  expectExactlyOnce,
  hashValue,
  hourKeyOf,
  loadFileText,
  makeWarehouse,
  messagesOf,
  PAGE_VIEW_V1,
  publishedManifests,
  readWarehouse,
  runEtl,
  silent,
  type LoaderEnvironment,
  type ProducedRecord,
} from './loader-support.js';

let broker: InProcessBroker;
let registry: RunningRegistry;
let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'tributary-loader-compacted-'));
  // Records carry fixed past event times: no retention. The test cleans itself, when it chooses.
  broker = await startInProcessBroker({ 'log.flush.interval.messages': '1', 'log.retention.ms': '-1', 'log.cleaner.enable': 'false' });
  registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: join(folder, 'registry'), logger: silent });
}, 60_000);

afterAll(async () => {
  await registry?.close();
  await broker?.stop();
  await rm(folder, { recursive: true, force: true });
});

interface Written extends ProducedRecord {
  readonly key: string;
}

/**
 * Page views in separate batches, `rounds` of them per partition from round `first` on: most
 * batches hold two keys of their own (kept) and end in a key every batch rewrites (removed at the
 * next cleaning); every third holds only rewritten keys (removed whole). Event times spread over 2 hours.
 */
async function writeRounds(topic: string, partitions: number, first: number, rounds: number): Promise<Written[]> {
  const client = new RegistryClient({ url: registry.url });
  const serializer = new AvroSerializer(client);
  const deserializer = new AvroDeserializer(client);
  const reader = parseAvroSchema(PAGE_VIEW_V1);
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, logger: silent });
  const written: Written[] = [];
  try {
    for (let round = first; round < first + rounds; round += 1) {
      for (let partition = 0; partition < partitions; partition += 1) {
        const keys = round % 3 === 2 ? ['hot-a', 'hot-b'] : [`own-${round}-0`, `own-${round}-1`, 'hot-a'];
        const records = [];
        for (const [index, key] of keys.entries()) {
          const time = FIRST_HOUR + ((round * 7 + index) % 12) * (HOUR / 6);
          const value = {
            header: { eventId: randomUUID(), time, server: `web-${index}`, service: 'frontend' },
            memberId: round,
            pageKey: key,
            url: `/p/${round}/${index}`,
            referrer: null,
            userAgent: 'test-agent',
          };
          records.push({ key, value, bytes: await serializer.encode(`${topic}-value`, value, PAGE_VIEW_V1), time });
        }
        const sent = await producer.send(topic, records.map((record) => ({ partition, key: Buffer.from(record.key), value: record.bytes, timestamp: record.time })));
        for (const [index, metadata] of sent.entries()) {
          const record = records[index]!;
          const decoded = await deserializer.decode(record.bytes, reader);
          written.push({ partition, offset: Number(metadata.offset), key: record.key, hash: hashValue(decoded), hour: hourKeyOf(record.time) });
        }
      }
    }
  } finally {
    await producer.close();
  }
  return written;
}

/** Cleans every partition to a fixed point; returns what a reader sees now of `written`. */
async function clean(topic: string, partitions: number, written: readonly Written[]): Promise<Written[]> {
  const kept: Written[] = [];
  for (let partition = 0; partition < partitions; partition += 1) {
    const ofPartition = written.filter((record) => record.partition === partition);
    const tail = await cleanToFixedPoint(broker.broker, topic, partition, ofPartition.length);
    kept.push(...keptAfterCleaning(ofPartition, tail));
  }
  return kept;
}

describe('loader on a compacted topic', () => {
  it('loads what the log kept exactly once over two cleanings, ranges following each other over the gaps, and a replay says compaction removed loaded records', async () => {
    const topic = 'compacted-views';
    const partitions = 2;
    await createCompactedTopic(broker.bootstrap, topic, partitions, { 'segment.bytes': '1500' });
    await new RegistryClient({ url: registry.url }).register(`${topic}-value`, PAGE_VIEW_V1);
    const warehouse = makeWarehouse('local folder', { folder } as LoaderEnvironment, 'compacted');
    const load = join(folder, 'compacted.yaml');
    // Slices of 5 offsets: many start or end inside removed ranges.
    await writeFile(load, `${loadFileText({ name: 'compacted', topic, warehouse, bootstrap: [broker.bootstrap], registryUrl: registry.url })}maxRecordsPerTask: 5\n`);

    const first = await writeRounds(topic, partitions, 0, 12);
    const keptFirst = await clean(topic, partitions, first);
    expect(keptFirst.length).toBeLessThan(first.length - 10);
    const run1 = await runEtl(['run', '--load', load]);
    expect(run1.status, messagesOf(run1)).toBe(0);
    expect(messagesOf(run1)).not.toMatch(/ETL_OFFSETS_LOST|deleted by retention/);
    expect(run1.stdout).toContain(`commit 1: ${keptFirst.length} records`);
    expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), keptFirst);

    // More rounds, rewriting keys loaded before; cleaned again: some loaded records are gone from the log now.
    const second = await writeRounds(topic, partitions, 12, 9);
    const keptNow = await clean(topic, partitions, [...first, ...second]);
    const loadedEnd = new Map(Array.from({ length: partitions }, (_, p) => [p, first.filter((r) => r.partition === p).length]));
    const keptSecond = keptNow.filter((record) => record.offset >= loadedEnd.get(record.partition)!);
    const run2 = await runEtl(['run', '--load', load]);
    expect(run2.status, messagesOf(run2)).toBe(0);
    expect(run2.stdout).toContain(`commit 2: ${keptSecond.length} records`);
    expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), [...keptFirst, ...keptSecond]);

    const [manifest1, manifest2] = await publishedManifests(warehouse.warehouse, warehouse.root, 'compacted');
    for (let partition = 0; partition < partitions; partition += 1) {
      const range1 = manifest1?.ranges.find((range) => range.partition === partition);
      const range2 = manifest2?.ranges.find((range) => range.partition === partition);
      expect([range1?.start, range1?.end, range1?.records]).toEqual([0, loadedEnd.get(partition), keptFirst.filter((r) => r.partition === partition).length]);
      expect([range2?.start, range2?.end, range2?.records]).toEqual([loadedEnd.get(partition), loadedEnd.get(partition)! + second.filter((r) => r.partition === partition).length, keptSecond.filter((r) => r.partition === partition).length]);
    }

    // Both hours: every range read again, and the ranges that lost records since show it.
    const replay = await runEtl(['replay', '--load', load, '--from', new Date(FIRST_HOUR).toISOString(), '--to', new Date(FIRST_HOUR + 2 * HOUR).toISOString()]);
    expect(replay.status).not.toBe(0);
    expect(messagesOf(replay)).toContain('compaction removed them since they were loaded');
    expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), [...keptFirst, ...keptSecond]);
  });
});
