/**
 * A compacted topic read by a real client after the broker's cleaner ran: kcat (librdkafka) from
 * the beginning and from offsets inside removed ranges (they land on the next kept
 * record, as on Kafka), with every kept record at its original offset; a keyless record refused.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { kcat } from '../support/kcat.js';

let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1', 'log.flush.interval.ms': '0' });
});
afterAll(async () => {
  await broker?.stop();
});

interface Read {
  readonly offset: number;
  readonly key: string;
  readonly value: string;
}

async function consume(topic: string, offset: string): Promise<Read[]> {
  const result = await kcat(['-b', broker.bootstrap, '-C', '-t', topic, '-p', '0', '-o', offset, '-e', '-f', '%o\t%k\t%s\n']);
  expect(result.status, result.stderr).toBe(0);
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [at, key, value] = line.split('\t');
      return { offset: Number(at), key: key ?? '', value: value ?? '' };
    });
}

describe('a compacted topic after cleaning', () => {
  const topic = 'compacted-clients';
  const written: Read[] = [];

  it('is created with cleanup.policy=compact, takes keyed records in every codec, and refuses a keyless one', async () => {
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }, { name: 'segment.bytes', value: '600' }] }] })).toBe(true);
    await admin.disconnect();
    let offset = 0;
    for (const [round, codec] of ['none', 'gzip', 'snappy', 'lz4', 'zstd', 'none', 'gzip', 'lz4'].entries()) {
      const batch = Array.from({ length: 6 }, (_, index) => ({ key: `key-${(round * 6 + index) % 9}`, value: `v${round}-${index}` }));
      const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0', '-K', '\t', '-z', codec], batch.map((m) => `${m.key}\t${m.value}\n`).join(''));
      expect(result.status, result.stderr).toBe(0);
      for (const record of batch) written.push({ offset: offset++, ...record });
    }
    const keyless = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0'], 'no key here\n');
    expect(keyless.stderr).toMatch(/Broker failed to validate record/);
    expect(broker.broker.logManager.getLog(topic, 0)?.logEndOffset).toBe(written.length);
  });

  it('keeps the latest value of each key at its offset, and clients read over the gaps', async () => {
    const log = broker.broker.logManager.getLog(topic, 0);
    if (log === undefined) throw new Error('no log');
    await waitUntil(async () => log.highWatermark === written.length, { what: 'every record readable', timeoutMs: 30_000 });
    // The broker's own cleaner, now (its background loop would get there after log.cleaner.backoff.ms).
    for (let pass = 0; pass < 10 && (await broker.broker.logManager.cleaner.cleanLogNow(log)) !== undefined; pass += 1);
    const tail = log.cleanableView(Date.now()).firstUncleanable;
    expect(tail).toBeGreaterThan(0);

    const latest = new Map<string, Read>();
    for (const record of written.filter((r) => r.offset < tail)) latest.set(record.key, record);
    const expected = [...[...latest.values()], ...written.filter((r) => r.offset >= tail)].sort((a, b) => a.offset - b.offset);
    expect(expected.length).toBeLessThan(written.length);
    expect(await consume(topic, 'beginning')).toEqual(expected);

    // From an offset whose record was removed: the next kept record.
    const removed = written.find((record) => record.offset < tail && !expected.some((kept) => kept.offset === record.offset));
    if (removed === undefined) throw new Error('nothing was removed');
    expect(await consume(topic, String(removed.offset))).toEqual(expected.filter((record) => record.offset >= removed.offset));

  });
});
