/**
 * Our codecs against librdkafka's (kcat 1.7.1, librdkafka 2.0.2) and the Java client's (Kafka
 * 3.9.1: snappy-java's xerial framing, KafkaLZ4BlockOutputStream, zstd-jni), both ways, through an
 * in-process broker:
 *   - kcat produces with -z gzip|snappy|lz4|zstd (and the Java producer with compression.type);
 *     the batches as stored are decoded with decodeRecords, and every record equals what was sent;
 *   - batches built by encodeRecordBatch(records, { compression }) are appended straight to the
 *     log and consumed with kcat (CRCs checked) and the Java console consumer, and every record
 *     equals what we built.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import type { CompressionName } from '../../src/protocol/record-batch.js';
import { COMPRESSION_MASK, Compression, readBatchHeader } from '../../src/protocol/record-batch.js';
import { decodeRecords, encodeRecordBatch, type Record as KafkaRecord, type RecordInput } from '../../src/protocol/records.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { kcat } from '../support/kcat.js';

const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const satisfies readonly CompressionName[];

let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1' });
});
afterAll(async () => {
  await broker.stop();
});

interface Message {
  readonly key: string;
  readonly value: string;
}

/** Compressible messages (so that librdkafka really compresses), a few with values over 64 KiB. */
function messages(count: number, tag: string): Message[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `${tag}-key-${i % 13}`,
    value:
      i % 400 === 7
        ? `${tag}-big-${i}-${'0123456789abcdef'.repeat(6000)}-${randomBytes(16).toString('hex')}`
        : `${tag}-value-${i}-${'lorem ipsum '.repeat(i % 20)}${randomBytes(6).toString('base64url')}`,
  }));
}

async function storedBatches(topic: string): Promise<{ bytes: Buffer; positions: number[] }> {
  const log = broker.broker.logManager.getLog(topic, 0);
  expect(log, `log of ${topic}`).toBeDefined();
  const { slice } = await log!.read(0, 64 << 20);
  expect(slice).toBeDefined();
  const bytes = await slice!.readBytes();
  slice!.release();
  const positions: number[] = [];
  for (let position = 0; position + 12 <= bytes.length; position += bytes.readInt32BE(position + 8) + 12) {
    expect(position + bytes.readInt32BE(position + 8) + 12, 'whole batches').toBeLessThanOrEqual(bytes.length);
    positions.push(position);
  }
  return { bytes, positions };
}

describe('librdkafka → Tributary: kcat compresses, decodeRecords decompresses', () => {
  for (const codec of CODECS) {
    it(`${codec}: every record kcat sent comes out of the stored batches byte-identical`, async () => {
      const topic = `kcat-to-us-${codec}`;
      const sent = messages(2500, codec);
      const input = sent.map((m) => `${m.key}\t${m.value}\n`).join('');
      const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0', '-K', '\t', '-z', codec, '-X', 'linger.ms=50'], input);
      expect(result.status, result.stderr).toBe(0);

      const { bytes, positions } = await storedBatches(topic);
      const codecs = positions.map((position) => readBatchHeader(bytes, position).attributes & COMPRESSION_MASK);
      // librdkafka sends a batch uncompressed when compressing would not shrink it; ours shrink.
      expect(codecs.filter((c) => c === Compression[codec]).length, `stored codecs ${codecs.join(',')}`).toBeGreaterThan(0);
      const received: KafkaRecord[] = positions.flatMap((position) => decodeRecords(bytes, position));
      expect(received).toHaveLength(sent.length);
      received.forEach((record, i) => {
        expect(record.offset).toBe(BigInt(i));
        expect(record.key?.toString('utf8')).toBe(sent[i]?.key);
        expect(record.value?.toString('utf8')).toBe(sent[i]?.value);
      });
    });
  }
});

describe('Tributary → librdkafka: encodeRecordBatch compresses, kcat decompresses', () => {
  function records(count: number, tag: string): RecordInput[] {
    return messages(count, tag).map((m, i) => ({
      key: i % 9 === 4 ? null : Buffer.from(m.key),
      value: Buffer.from(m.value),
      headers: i % 5 === 0 ? [{ key: 'n', value: Buffer.from(String(i)) }] : [],
      timestamp: 1_700_000_000_000 + i,
    }));
  }

  for (const codec of CODECS) {
    it(`${codec}: kcat reads back every record of our batches, CRCs checked`, async () => {
      const topic = `us-to-kcat-${codec}`;
      // Creates the topic (and its partition) the way a client would: by producing to it.
      const seed = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0', '-K', '\t'], 'seed-key\tseed-value\n');
      expect(seed.status, seed.stderr).toBe(0);
      const log = await broker.broker.logManager.getOrCreateLog(topic, 0);

      const batches = [records(1, `${codec}-one`), records(700, `${codec}-mid`), records(3000, `${codec}-big`)];
      for (const batch of batches) {
        const encoded = encodeRecordBatch(batch, { compression: codec });
        expect(readBatchHeader(encoded).attributes & COMPRESSION_MASK).toBe(Compression[codec]);
        await log.append(encoded);
      }

      const result = await kcat([
        '-b', broker.bootstrap, '-C', '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-X', 'check.crcs=true',
        '-f', '%o\t%k\t%s\t%h\n',
      ]);
      expect(result.status, result.stderr).toBe(0);
      const lines = result.stdout.split('\n').filter((line) => line !== '');
      const expected = [
        '0\tseed-key\tseed-value\t',
        ...batches.flat().map((record, i) => {
          const headers = (record.headers ?? []).map((h) => `${h.key}=${h.value?.toString('utf8') ?? ''}`).join(',');
          return `${i + 1}\t${record.key?.toString('utf8') ?? ''}\t${record.value?.toString('utf8') ?? ''}\t${headers}`;
        }),
      ];
      expect(lines).toHaveLength(expected.length);
      // Compare line by line: one huge diff of 3,700 lines helps nobody.
      const firstDifference = lines.findIndex((line, i) => line !== expected[i]);
      expect(firstDifference, `line ${firstDifference}: ${lines[firstDifference]?.slice(0, 200)} ≠ ${expected[firstDifference]?.slice(0, 200)}`).toBe(-1);
    });
  }
});

describe('Kafka 3.9.1 Java client ↔ Tributary codecs', () => {
  const { runDir, kafkaToolsDir } = inject('compat');

  async function tool(mainClass: string, args: readonly string[]): Promise<JavaToolResult> {
    const result = await runKafkaTool(mainClass, args, { kafkaToolsDir, runDir, timeoutMs: 100_000 });
    expect(result.status, describeRun(result)).toBe(0);
    expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
    return result;
  }

  for (const codec of CODECS) {
    it(`${codec}: the Java producer's batches decode to its payloads`, async () => {
      const topic = `java-to-us-${codec}`;
      const count = 3000;
      const payloads = messages(300, `java-${codec}`).map((m) => m.value);
      const payloadFile = join(runDir, `payloads-${codec}.txt`);
      writeFileSync(payloadFile, payloads.join('\n'));
      await tool('org.apache.kafka.tools.ProducerPerformance', [
        '--topic', topic, '--num-records', String(count), '--payload-file', payloadFile, '--throughput', '-1',
        '--producer-props', `bootstrap.servers=${broker.bootstrap}`, 'acks=1', 'enable.idempotence=false',
        `compression.type=${codec}`, 'linger.ms=20',
      ]);
      await waitUntil(async () => broker.broker.logManager.getLog(topic, 0)?.highWatermark === count, {
        what: `high watermark ${count} in ${topic}/0`,
        timeoutMs: 30_000,
      });
      const { bytes, positions } = await storedBatches(topic);
      const codecs = positions.map((position) => readBatchHeader(bytes, position).attributes & COMPRESSION_MASK);
      expect(new Set(codecs), `stored codecs ${codecs.join(',')}`).toEqual(new Set([Compression[codec]]));
      if (codec === 'snappy') {
        // The Java client writes snappy-java's framing, which librdkafka does not.
        const first = positions[0] ?? 0;
        expect(bytes.subarray(first + 61, first + 69).toString('hex')).toBe('82534e4150505900');
      }
      const received = positions.flatMap((position) => decodeRecords(bytes, position));
      expect(received).toHaveLength(count);
      const known = new Set(payloads);
      const unknown = received.filter((record, i) => record.offset !== BigInt(i) || record.key !== null || !known.has(record.value?.toString('utf8') ?? ''));
      expect(unknown.slice(0, 3)).toEqual([]);
    });

    it(`${codec}: the Java console consumer reads back every record of our batches`, async () => {
      const topic = `us-to-java-${codec}`;
      const seed = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0', '-K', '\t'], 'seed-key\tseed-value\n');
      expect(seed.status, seed.stderr).toBe(0);
      const log = await broker.broker.logManager.getOrCreateLog(topic, 0);
      const batches = [1, 700, 3000].map((size, n) =>
        messages(size, `java-${codec}-${n}`).map((m, i) => ({ key: i % 9 === 4 ? null : Buffer.from(m.key), value: Buffer.from(m.value) })),
      );
      for (const batch of batches) await log.append(encodeRecordBatch(batch, { compression: codec }));
      const total = 1 + batches.flat().length;
      const result = await tool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
        '--bootstrap-server', broker.bootstrap, '--topic', topic, '--partition', '0', '--offset', 'earliest',
        '--max-messages', String(total), '--timeout-ms', '60000',
        '--property', 'print.offset=true', '--property', 'print.key=true', '--consumer-property', 'check.crcs=true',
      ]);
      const lines = result.stdout.split('\n').filter((line) => line !== '');
      const expected = [
        'Offset:0\tseed-key\tseed-value',
        ...batches.flat().map((record, i) => `Offset:${i + 1}\t${record.key?.toString('utf8') ?? 'null'}\t${record.value.toString('utf8')}`),
      ];
      expect(lines).toHaveLength(expected.length);
      const firstDifference = lines.findIndex((line, i) => line !== expected[i]);
      expect(firstDifference, `line ${firstDifference}: ${lines[firstDifference]?.slice(0, 200)} ≠ ${expected[firstDifference]?.slice(0, 200)}`).toBe(-1);
    });
  }
});
