/**
 * The mirror on a compacted source topic, over three lives: the source is an in-process broker
 * registered in a ZooKeeper chroot (so the test can clean it to a fixed point with the broker's
 * own cleaner), the target an in-process standalone broker.
 *
 *   1. in-process mirror, stopped cleanly: it copies what the cleaned source kept, and its commit
 *      records the target position of the end of it;
 *   2. more records, cleaned again; `tributary mirror start` with no commits copies them and is
 *      SIGKILLed: the target holds copies the recorded position does not cover, whose source
 *      offsets jump over what compaction removed;
 *   3. in-process mirror again: its resume search reads those copies, follows them over the gaps
 *      (each copy's origin names the gap before it) and resumes after the last, then copies new records.
 *
 * The target ends with every record the source held when it was mirrored, once, in source order.
 */
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { Producer } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { parseMirrorSettings } from '../../../src/mirror/config.js';
import { Mirror } from '../../../src/mirror/mirror.js';
import { mirrorOriginOf } from '../../../src/mirror/origin-header.js';
import { positionPath, readPosition } from '../../../src/mirror/progress-nodes.js';
import { LOOPBACK } from '../../services/network.js';
import { openRun } from '../../services/run-dir.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { cleanToFixedPoint, createCompactedTopic, keptAfterCleaning, topicConfigs } from '../../support/compacted-topic.js';
import { services } from '../services.js';
import { chroot, readTopic, sleep, startMirrorProcess, type MirrorProcess } from './mirror-support.js';

const TOPIC = 'compacted-events';
const PARTITIONS = 2;
const GROUP = 'compacted-mirror';
const logger = createLogger({ name: 'mirror-compacted', level: 'silent' });

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
});

interface Written {
  readonly partition: number;
  readonly offset: number;
  readonly key: string;
  readonly value: string;
}

/** A broker in this process whose coordination is the ZooKeeper chroot `zookeeper` (a source cluster of one). */
async function startSourceBroker(zookeeper: string): Promise<{ broker: Broker; bootstrap: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tributary-compacted-source-'));
  const store = await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs: 10_000 });
  const broker = await Broker.start({
    id: 1,
    listen: { host: LOOPBACK, port: 0 },
    dataDir,
    config: parseBrokerConfig({ 'log.flush.interval.messages': '1', 'log.cleaner.enable': 'false', 'zookeeper.session.timeout.ms': '10000' }, 'test settings'),
    store,
    logger,
  });
  stops.push(async () => {
    await broker.stop();
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { broker, bootstrap: `${LOOPBACK}:${broker.port}` };
}

/** Rounds of one batch per partition: two keys of its own (kept) ending in a key every batch rewrites (removed); every third only rewritten keys. */
async function writeRounds(bootstrap: string, first: number, rounds: number): Promise<Written[]> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1, logger });
  const written: Written[] = [];
  try {
    for (let round = first; round < first + rounds; round += 1) {
      for (let partition = 0; partition < PARTITIONS; partition += 1) {
        const keys = round % 3 === 2 ? ['hot-a', 'hot-b'] : [`own-${round}-0`, `own-${round}-1`, 'hot-a'];
        const records = keys.map((key, index) => ({ key, value: `p${partition}-r${round}-${index}` }));
        const sent = await producer.send(TOPIC, records.map((record) => ({ partition, key: Buffer.from(record.key), value: Buffer.from(record.value) })));
        sent.forEach((metadata, index) => written.push({ partition, offset: Number(metadata.offset), ...records[index]! }));
      }
    }
  } finally {
    await producer.close();
  }
  return written;
}

async function clean(broker: Broker, written: readonly Written[]): Promise<Written[]> {
  const kept: Written[] = [];
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const ofPartition = written.filter((record) => record.partition === partition);
    kept.push(...keptAfterCleaning(ofPartition, await cleanToFixedPoint(broker, TOPIC, partition, ofPartition.length)));
  }
  return kept;
}

/** The target's copies as `partition/source offset → value`, failing on a copy of the same source record twice or out of source order. */
async function copiesIn(target: InProcessBroker): Promise<Map<string, string>> {
  const copies = new Map<string, string>();
  for (const [partition, records] of await readTopic(target.bootstrap, TOPIC).catch(() => new Map<number, never[]>())) {
    let last = -1n;
    for (const record of records) {
      const origin = mirrorOriginOf(record.headers);
      if (origin === undefined) throw new Error(`target ${TOPIC}-${partition}@${record.offset} has no mirror origin`);
      expect(origin.partition).toBe(partition);
      expect(origin.offset, `${partition}/${origin.offset}: copied once, in source order`).toBeGreaterThan(last);
      last = origin.offset;
      copies.set(`${partition}/${origin.offset}`, record.value?.toString() ?? '');
    }
  }
  return copies;
}

const expected = (records: readonly Written[]): Map<string, string> => new Map(records.map((record) => [`${record.partition}/${record.offset}`, record.value]));

describe('the mirror on a compacted source', () => {
  it('copies what the source kept once, and a mirror killed after copying over gaps resumes after its last copy', { timeout: 120_000 }, async () => {
    const sourceZookeeper = chroot('compacted-source');
    const source = await startSourceBroker(sourceZookeeper);
    const target = await startInProcessBroker({ 'log.flush.interval.messages': '1' });
    stops.push(() => target.stop());
    await createCompactedTopic(source.bootstrap, TOPIC, PARTITIONS);
    const settings = {
      sources: [{ name: 'dc1', zookeeper: sourceZookeeper }],
      whitelist: TOPIC,
      group: GROUP,
      sessionTimeoutMs: 4000,
      rebalanceBackoffMs: 500,
      rebalanceMaxRetries: 40,
    };

    // Life 1: what the cleaned source kept, copied and committed.
    const first = await writeRounds(source.bootstrap, 0, 12);
    const keptFirst = await clean(source.broker, first);
    expect(keptFirst.length).toBeLessThan(first.length - 10);
    const life1 = await Mirror.start({ settings: parseMirrorSettings({ ...settings, commitIntervalMs: 200 }, 'life 1'), target: { bootstrap: [target.bootstrap] }, logger });
    stops.push(() => life1.stop());
    await expect.poll(async () => (await copiesIn(target)).size, { timeout: 30_000, interval: 200 }).toBe(keptFirst.length);
    await life1.stop();
    // The offline copy was created compacted, as the source is (a copy deleting by age would lose keys); segment size is the offline cluster's own.
    const copyConfigs = await topicConfigs(target.bootstrap, TOPIC);
    expect(copyConfigs.get('cleanup.policy')).toBe('compact');
    expect(copyConfigs.get('min.cleanable.dirty.ratio')).toBe('0.01');
    expect(copyConfigs.get('segment.bytes')).not.toBe('1000');
    const store = await ZooKeeperStore.connect(sourceZookeeper, { sessionTimeoutMs: 10_000 });
    stops.push(() => store.close());
    const written = (partition: number, records: readonly Written[]): number => records.filter((record) => record.partition === partition).length;
    for (let partition = 0; partition < PARTITIONS; partition += 1) {
      expect((await readPosition(store, positionPath(GROUP, TOPIC, partition)))?.sourceEnd).toBe(BigInt(written(partition, first)));
    }

    // Life 2: more records, cleaned again; copied with no commit, then killed.
    const second = await writeRounds(source.bootstrap, 12, 9);
    const keptNow = await clean(source.broker, [...first, ...second]);
    const keptSecond = keptNow.filter((record) => record.offset >= written(record.partition, first));
    const run = openRun(services().runDir);
    const life2: MirrorProcess = await startMirrorProcess(run, [
      '--source', `dc1=${sourceZookeeper}`, '--target-bootstrap', target.bootstrap, '--whitelist', TOPIC, '--group', GROUP,
      '--set', 'commitIntervalMs=3600000', '--set', 'lagIntervalMs=3600000', '--set', 'sessionTimeoutMs=4000',
      '--set', 'rebalanceBackoffMs=500', '--set', 'rebalanceMaxRetries=40',
    ]);
    stops.push(() => life2.daemon.stop(10_000));
    await expect.poll(async () => (await copiesIn(target)).size, { timeout: 30_000, interval: 200 }).toBe(keptFirst.length + keptSecond.length);
    life2.daemon.signal('SIGKILL');
    await life2.daemon.exited;
    for (let partition = 0; partition < PARTITIONS; partition += 1) {
      expect((await readPosition(store, positionPath(GROUP, TOPIC, partition)))?.sourceEnd, 'the kill left copies past the recorded position').toBe(BigInt(written(partition, first)));
    }

    // Life 3: resumes after life 2's last copy (once its ownership expired), then copies new records.
    const third = await writeRounds(source.bootstrap, 21, 2);
    const life3 = await Mirror.start({ settings: parseMirrorSettings({ ...settings, commitIntervalMs: 200 }, 'life 3'), target: { bootstrap: [target.bootstrap] }, logger });
    stops.push(() => life3.stop());
    const all = expected([...keptFirst, ...keptSecond, ...third]);
    await expect.poll(async () => (await copiesIn(target)).size, { timeout: 45_000, interval: 300 }).toBeGreaterThanOrEqual(all.size);
    await sleep(1_000); // a copy sent again would show by now
    await life3.stop();
    expect(await copiesIn(target)).toEqual(all);
    const targetRecords = [...(await readTopic(target.bootstrap, TOPIC)).values()].reduce((sum, records) => sum + records.length, 0);
    expect(targetRecords, 'target records: one per source record mirrored').toBe(all.size);
  });
});
