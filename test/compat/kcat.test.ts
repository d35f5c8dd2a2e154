/**
 * kcat (librdkafka 2.0.2) against a standalone Tributary broker: metadata, produce with keys and
 * each compression codec, consume from beginning, end and an offset inside a compressed batch.
 * Every message must come back byte-identical and in order within its partition.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBatchHeader } from '../../src/protocol/record-batch.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { kcat } from '../support/kcat.js';

let broker: InProcessBroker;
beforeAll(async () => {
  // Visible on append keeps the test independent of flush timing; flushing has its own tests.
  broker = await startInProcessBroker({ 'num.partitions': '3' });
});
afterAll(async () => {
  await broker.stop();
});

function batchPositions(bytes: Buffer): number[] {
  const positions: number[] = [];
  for (let position = 0; position + 12 <= bytes.length; position += bytes.readInt32BE(position + 8) + 12) positions.push(position);
  return positions;
}

function messages(count: number, tag: string): { key: string; value: string }[] {
  return Array.from({ length: count }, (_, i) => ({ key: `${tag}-key-${i % 7}`, value: `${tag}-${i}-${randomBytes(12).toString('base64url')}` }));
}

async function produce(topic: string, partition: number, batch: { key: string; value: string }[], extra: string[] = []): Promise<void> {
  const input = batch.map((m) => `${m.key}\t${m.value}\n`).join('');
  const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', String(partition), '-K', '\t', ...extra], input);
  expect(result.status, result.stderr).toBe(0);
}

async function consume(topic: string, partition: number, offset: string): Promise<{ offset: number; key: string; value: string }[]> {
  const result = await kcat(['-b', broker.bootstrap, '-C', '-t', topic, '-p', String(partition), '-o', offset, '-e', '-f', '%o\t%k\t%s\n']);
  expect(result.status, result.stderr).toBe(0);
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [at, key, value] = line.split('\t');
      return { offset: Number(at), key: key ?? '', value: value ?? '' };
    });
}

describe('kcat', () => {
  it('lists the broker and topics with -L', async () => {
    await produce('listed', 0, messages(1, 'l'));
    const result = await kcat(['-b', broker.bootstrap, '-L']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain(`broker 0 at ${broker.bootstrap}`);
    expect(result.stdout).toMatch(/topic "listed" with 3 partitions/);
  });

  for (const codec of ['none', 'gzip', 'snappy', 'lz4'] as const) {
    it(`produces keyed messages with ${codec} compression and reads them back byte-identical, in order`, async () => {
      const topic = `codec-${codec}`;
      const sent = messages(500, codec);
      await produce(topic, 1, sent.slice(0, 250), ['-z', codec]);
      await produce(topic, 1, sent.slice(250), ['-z', codec]);
      const received = await consume(topic, 1, 'beginning');
      expect(received.map((m) => ({ key: m.key, value: m.value }))).toEqual(sent);
      expect(received.map((m) => m.offset)).toEqual(sent.map((_, i) => i));

      // The batches are stored as the producer compressed them (librdkafka sends a batch
      // uncompressed when compressing would not shrink it, so look at all of them).
      const log = broker.broker.logManager.getLog(topic, 1);
      const { slice } = await log!.read(0, 1 << 20);
      const stored = await slice!.readBytes();
      slice!.release();
      const codecs = { none: 0, gzip: 1, snappy: 2, lz4: 3 };
      const storedCodecs = new Set(batchPositions(stored).map((position) => readBatchHeader(stored, position).attributes & 0x07));
      expect(storedCodecs.has(codecs[codec])).toBe(true);
    });
  }

  it('starts inside a compressed batch at the requested offset, and at the end reads nothing', async () => {
    const sent = messages(100, 'mid');
    await produce('offsets', 2, sent, ['-z', 'gzip']);
    const fromMiddle = await consume('offsets', 2, '37');
    expect(fromMiddle[0]?.offset).toBe(37);
    expect(fromMiddle.map((m) => m.value)).toEqual(sent.slice(37).map((m) => m.value));
    expect(await consume('offsets', 2, 'end')).toEqual([]);
  });

  it('spreads keyed messages over partitions and keeps each partition in order', async () => {
    const sent = messages(300, 'spread');
    const input = sent.map((m) => `${m.key}\t${m.value}\n`).join('');
    const result = await kcat(['-b', broker.bootstrap, '-P', '-t', 'spread', '-K', '\t'], input);
    expect(result.status, result.stderr).toBe(0);
    const byPartition = await Promise.all([0, 1, 2].map((p) => consume('spread', p, 'beginning')));
    expect(byPartition.flat()).toHaveLength(300);
    for (const received of byPartition) {
      // Same key → same partition, and the partition keeps the order they were sent in.
      const expected = sent.filter((m) => received.some((r) => r.key === m.key));
      expect(received.map((m) => m.value)).toEqual(expected.map((m) => m.value));
    }
  });

  it('finds offsets by timestamp (ListOffsets) with -Q', async () => {
    await produce('times', 0, messages(10, 't'));
    const result = await kcat(['-b', broker.bootstrap, '-Q', '-t', 'times:0:0']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('times [0] offset 0');
  });
});
