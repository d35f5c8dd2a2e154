/**
 * Compacted topics read by real clients after the broker's cleaner ran: kcat (librdkafka), the
 * Java console consumer (Kafka 3.9.1) and kafkajs from the beginning, and kcat and Java from an
 * offset inside a removed range (they land on the next kept record, as on Kafka), with every kept record at its original offset; a keyless record is
 * refused. kcat's topic holds every codec (the cleaner recompresses what it rewrites); kafkajs's
 * holds the codecs kafkajs decodes without plugins (none, gzip).
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeRun, runKafkaTool } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir, kafkaToolsDir } = inject('compat');

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

/**
 * Creates a compacted topic of small segments and writes 8 batches of 6 keyed records over 9 keys,
 * then every key once more and batches of keys of their own (so the earlier batches lie wholly below
 * later values, and cleaning empties them however kcat split them); returns what was written.
 */
async function compactedTopic(topic: string, codecs: readonly string[]): Promise<Read[]> {
  const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  expect(await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }, { name: 'segment.bytes', value: '600' }] }] })).toBe(true);
  await admin.disconnect();
  const written: Read[] = [];
  for (let round = 0; round < 12; round += 1) {
    const batch =
      round < 8
        ? Array.from({ length: 6 }, (_, index) => ({ key: `key-${(round * 6 + index) % 9}`, value: `v${round}-${index}` }))
        : round === 8
          ? Array.from({ length: 9 }, (_, index) => ({ key: `key-${index}`, value: `final-${index}` }))
          : Array.from({ length: 6 }, (_, index) => ({ key: `own-${round}-${index}`, value: `v${round}-${index}` }));
    const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0', '-K', '\t', '-z', codecs[round % codecs.length] ?? 'none'], batch.map((m) => `${m.key}\t${m.value}\n`).join(''));
    expect(result.status, result.stderr).toBe(0);
    for (const record of batch) written.push({ offset: written.length, ...record });
  }
  return written;
}

/** Cleans the topic's partition to a fixed point; returns what a reader must see (the latest per key below the tail, all above). */
async function clean(topic: string, written: readonly Read[]): Promise<Read[]> {
  const log = broker.broker.logManager.getLog(topic, 0);
  if (log === undefined) throw new Error('no log');
  await waitUntil(async () => log.highWatermark === written.length, { what: 'every record readable', timeoutMs: 30_000 });
  // The broker's own cleaner, now (its background loop would get there after log.cleaner.backoff.ms).
  for (let pass = 0; pass < 10 && (await broker.broker.logManager.cleaner.cleanLogNow(log)) !== undefined; pass += 1);
  const tail = log.cleanableView(Date.now()).firstUncleanable;
  expect(tail).toBeGreaterThan(0);
  const latest = new Map<string, Read>();
  for (const record of written.filter((r) => r.offset < tail)) latest.set(record.key, record);
  const expected = [...latest.values(), ...written.filter((r) => r.offset >= tail)].sort((a, b) => a.offset - b.offset);
  expect(expected.length).toBeLessThan(written.length);
  return expected;
}

/** How many batches without records the partition's log holds (as a follower reads it). */
async function recordlessHeaders(topic: string): Promise<number> {
  const log = broker.broker.logManager.getLog(topic, 0);
  if (log === undefined) throw new Error('no log');
  let headers = 0;
  for (let offset = log.logStartOffset; offset < log.logEndOffset; ) {
    const { slice } = await log.read(offset, 1 << 20, { upTo: 'written' });
    if (slice === undefined) break;
    const bytes = await slice.readBytes();
    slice.release();
    for (let position = 0; position + 61 <= bytes.length; ) {
      const size = bytes.readInt32BE(position + 8) + 12;
      if (bytes.readInt32BE(position + 57) === 0) headers += 1;
      offset = Number(bytes.readBigInt64BE(position)) + bytes.readInt32BE(position + 23) + 1;
      position += size;
    }
  }
  return headers;
}

describe('a compacted topic after cleaning', () => {
  it('refuses a keyless record, and kcat and the Java consumer read the latest value of each key at its offset, over the gaps, in every codec', async () => {
    const topic = 'compacted-kcat';
    const written = await compactedTopic(topic, ['none', 'gzip', 'snappy', 'lz4', 'zstd']);
    const keyless = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0'], 'no key here\n');
    expect(keyless.stderr).toMatch(/Broker failed to validate record/);
    expect(broker.broker.logManager.getLog(topic, 0)?.logEndOffset).toBe(written.length);

    const expected = await clean(topic, written);
    expect(await consume(topic, 'beginning')).toEqual(expected);
    // From an offset whose record was removed: the next kept record.
    const removed = written.find((record) => record.offset < (expected.at(-1)?.offset ?? 0) && !expected.some((kept) => kept.offset === record.offset));
    if (removed === undefined) throw new Error('nothing was removed');
    expect(await consume(topic, String(removed.offset))).toEqual(expected.filter((record) => record.offset >= removed.offset));

    // The Java consumer (assign mode), from the beginning and from the removed offset.
    for (const [offset, wanted] of [['earliest', expected], [String(removed.offset), expected.filter((record) => record.offset >= removed.offset)]] as const) {
      const result = await runKafkaTool(
        'org.apache.kafka.tools.consumer.ConsoleConsumer',
        ['--bootstrap-server', broker.bootstrap, '--topic', topic, '--partition', '0', '--offset', offset, '--max-messages', String(wanted.length), '--timeout-ms', '60000', '--property', 'print.offset=true', '--property', 'print.key=true'],
        { kafkaToolsDir, runDir, timeoutMs: 100_000 },
      );
      expect(result.status, describeRun(result)).toBe(0);
      const lines = result.stdout.split('\n').filter((line) => line.startsWith('Offset:'));
      expect(lines, describeRun(result)).toEqual(wanted.map((record) => `Offset:${record.offset}\t${record.key}\t${record.value}`));
    }
  }, 240_000);

  it('kafkajs reads it from the beginning in a group, stepping over the gaps', async () => {
    const topic = 'compacted-kafkajs';
    const expected = await clean(topic, await compactedTopic(topic, ['none', 'gzip']));
    // The cleaner kept emptied batches as record-less headers (a cleaned segment's last batch): kafkajs
    // cannot step over a fetch holding only such headers, so the broker must never answer with them alone.
    expect(await recordlessHeaders(topic)).toBeGreaterThan(0);
    const consumer = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).consumer({ groupId: 'compacted-reader' });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen: Read[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push({ offset: Number(message.offset), key: message.key?.toString() ?? '', value: message.value?.toString() ?? '' });
      },
    });
    await waitUntil(async () => seen.length >= expected.length, { what: `kafkajs read the ${expected.length} kept records (so far ${seen.length})`, timeoutMs: 60_000 });
    await consumer.disconnect();
    expect(seen).toEqual(expected);
  });
});
