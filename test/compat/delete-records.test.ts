/**
 * DeleteRecords from real clients against a standalone Tributary broker: Apache Kafka 3.9.1's
 * kafka-delete-records.sh (org.apache.kafka.tools.DeleteRecordsCommand, --offset-json-file), the
 * Java Admin client's deleteRecords of Kafka 4.1.1 (as Kafka Streams purges its repartition
 * topics), and kafkajs 2.2.4's admin.deleteTopicRecords. Each must move the partition's log start
 * (read back with kcat from the beginning and from the log itself), and an offset past the high
 * watermark must come back as Kafka's OffsetOutOfRange error, moving nothing.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { ensureJars, KAFKA_CLIENTS_4_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { kcat, readPartition } from '../support/kcat.js';

const { runDir, kafkaToolsDir } = inject('compat');
const ADMIN_DELETE_RECORDS = join(dirname(fileURLToPath(import.meta.url)), 'delete-records', 'AdminDeleteRecords.java');

let broker: InProcessBroker;
let kafkaClients4Dir: string;
let admin: Admin;

beforeAll(async () => {
  kafkaClients4Dir = await ensureJars(KAFKA_CLIENTS_4_JARS);
  broker = await startInProcessBroker({ 'num.partitions': '2', 'log.flush.interval.messages': '1' });
  admin = new Kafka({ clientId: 'tributary-compat', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
});
afterAll(async () => {
  await admin?.disconnect();
  await broker?.stop();
  // Nothing the clients sent made the broker log an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

/** Writes 10 records to each of the topic's two partitions with kcat and waits until they are readable. */
async function fill(topic: string): Promise<void> {
  for (const partition of [0, 1]) {
    const input = Array.from({ length: 10 }, (_, i) => `${topic}-${partition}-${i}\n`).join('');
    const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', String(partition)], input);
    expect(result.status, result.stderr).toBe(0);
    await waitUntil(async () => broker.broker.logManager.getLog(topic, partition)?.highWatermark === 10, { what: `10 records in ${topic}/${partition}`, timeoutMs: 30_000 });
  }
}

function logStarts(topic: string): number[] {
  return [0, 1].map((partition) => broker.broker.logManager.getLog(topic, partition)?.logStartOffset ?? -1);
}

/** The offsets kcat reads from the beginning of a partition. */
async function readableOffsets(topic: string, partition: number): Promise<number[]> {
  return (await readPartition(broker.bootstrap, topic, partition)).map((record) => Number(record.offset));
}

/** The one ERROR the Java admin logs for a partition refused with OFFSET_OUT_OF_RANGE (it does against Kafka too). */
const REFUSED_OFFSET_LOG = /DeleteRecords request for topic partition \S+ failed due to an unexpected error OFFSET_OUT_OF_RANGE/;

async function java(mainClassOrSource: string, args: readonly string[], jarDir: string, expectRefusal = false): Promise<JavaToolResult> {
  const result = await runKafkaTool(mainClassOrSource, args, { kafkaToolsDir: jarDir, runDir, timeoutMs: 100_000 });
  expect(result.status, describeRun(result)).toBe(0);
  // The Java client logs protocol trouble (bad responses, disconnects, retries) as WARN or ERROR.
  const logged = result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line));
  expect(logged.filter((line) => !(expectRefusal && REFUSED_OFFSET_LOG.test(line))), describeRun(result)).toEqual([]);
  if (expectRefusal) expect(logged.length, describeRun(result)).toBe(1);
  return result;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

describe('DeleteRecords from real clients', () => {
  it('kafka-delete-records.sh (Kafka 3.9.1) with --offset-json-file: one offset, and -1 for the high watermark', async () => {
    const topic = 'java-tool-trim';
    await fill(topic);
    const file = join(runDir, 'delete-records.json');
    writeFileSync(file, JSON.stringify({ partitions: [{ topic, partition: 0, offset: 4 }, { topic, partition: 1, offset: -1 }], version: 1 }));
    const result = await java('org.apache.kafka.tools.DeleteRecordsCommand', ['--bootstrap-server', broker.bootstrap, '--offset-json-file', file], kafkaToolsDir);
    expect(result.stdout, describeRun(result)).toContain(`partition: ${topic}-0\tlow_watermark: 4`);
    expect(result.stdout, describeRun(result)).toContain(`partition: ${topic}-1\tlow_watermark: 10`);
    expect(logStarts(topic)).toEqual([4, 10]);
    expect(await readableOffsets(topic, 0)).toEqual(range(4, 10));
    expect(await readableOffsets(topic, 1)).toEqual([]);

    writeFileSync(file, JSON.stringify({ partitions: [{ topic, partition: 0, offset: 11 }], version: 1 }));
    const refused = await java('org.apache.kafka.tools.DeleteRecordsCommand', ['--bootstrap-server', broker.bootstrap, '--offset-json-file', file], kafkaToolsDir, true);
    expect(refused.stdout, describeRun(refused)).toMatch(new RegExp(`partition: ${topic}-0\\terror: .*OffsetOutOfRangeException`));
    expect(logStarts(topic)).toEqual([4, 10]);
  });

  it('Admin.deleteRecords of the Kafka 4.1.1 Java client', async () => {
    const topic = 'java-admin-trim';
    await fill(topic);
    // Partition 0 past its high watermark, partition 1 below offset 2, in one request.
    const result = await java(ADMIN_DELETE_RECORDS, [broker.bootstrap, `${topic}:0:99`, `${topic}:1:2`], kafkaClients4Dir, true);
    expect(result.stdout.trim().split('\n'), describeRun(result)).toEqual([`${topic}-0 error OffsetOutOfRangeException`, `${topic}-1 low_watermark 2`]);
    expect(logStarts(topic)).toEqual([0, 2]);
    const moved = await java(ADMIN_DELETE_RECORDS, [broker.bootstrap, `${topic}:0:7`], kafkaClients4Dir);
    expect(moved.stdout.trim()).toBe(`${topic}-0 low_watermark 7`);
    expect(logStarts(topic)).toEqual([7, 2]);
    expect(await readableOffsets(topic, 0)).toEqual(range(7, 10));
  });

  it('kafkajs admin.deleteTopicRecords', async () => {
    const topic = 'kafkajs-trim';
    await fill(topic);
    // kafkajs finds leaders only among topics it already asked metadata for.
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '6' }, { partition: 1, offset: '-1' }] });
    expect(logStarts(topic)).toEqual([6, 10]);
    const offsets = await admin.fetchTopicOffsets(topic);
    expect(offsets.map(({ partition, low, high }) => ({ partition, low, high })).sort((a, b) => a.partition - b.partition)).toEqual([
      { partition: 0, low: '6', high: '10' },
      { partition: 1, low: '10', high: '10' },
    ]);
    expect(await readableOffsets(topic, 0)).toEqual(range(6, 10));
    // kafkajs's retry wraps the (non-retriable) per-partition error as its cause.
    await expect(admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '11' }] })).rejects.toMatchObject({
      name: 'KafkaJSNonRetriableError',
      cause: {
        name: 'KafkaJSDeleteTopicRecordsError',
        partitions: [expect.objectContaining({ partition: 0, error: expect.objectContaining({ type: 'OFFSET_OUT_OF_RANGE' }) as unknown })],
      },
    });
    expect(logStarts(topic)).toEqual([6, 10]);
  });
});
