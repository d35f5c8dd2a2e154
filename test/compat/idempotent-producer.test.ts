/**
 * Java producers at their defaults (idempotence on, acks=all, five requests in flight; issue #17)
 * against a standalone Tributary broker: Kafka 3.9.1's kafka-console-producer.sh
 * (kafka.tools.ConsoleProducer) and ProducerPerformance with no settings but the bootstrap, and a
 * small program on the 4.1.1 client (idempotent-producer/DefaultProducer.java). Each must store
 * every record exactly once, in order, as idempotent batches (producer id set), and the client
 * must log no warning.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { ensureJars, KAFKA_CLIENTS_4_JARS, KAFKA_SERVER_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir, kafkaToolsDir } = inject('compat');
const DEFAULT_PRODUCER = join(dirname(fileURLToPath(import.meta.url)), 'idempotent-producer', 'DefaultProducer.java');

let broker: InProcessBroker;
let kafkaServerDir: string;
let kafkaClients4Dir: string;
beforeAll(async () => {
  // Both are fetched by `npm run fetch-service-jars` (.ci/run); here they come from the cache.
  kafkaServerDir = await ensureJars(KAFKA_SERVER_JARS);
  kafkaClients4Dir = await ensureJars(KAFKA_CLIENTS_4_JARS);
  broker = await startInProcessBroker({ 'num.partitions': '1' });
});
afterAll(async () => {
  await broker?.stop();
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

async function java(mainClassOrSource: string, args: readonly string[], jarDir: string, input?: string): Promise<JavaToolResult> {
  const result = await runKafkaTool(mainClassOrSource, args, { kafkaToolsDir: jarDir, runDir, timeoutMs: 150_000, ...(input === undefined ? {} : { input }) });
  expect(result.status, describeRun(result)).toBe(0);
  // The Java client logs protocol trouble (bad responses, OutOfOrderSequence, epoch bumps) as WARN or ERROR.
  expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
  return result;
}

/** Producer ids of every batch stored in partition 0 of `topic`, read from its segment files. */
function storedProducerIds(topic: string): bigint[] {
  const folder = join(broker.dataDir, `${topic}-0`);
  const ids: bigint[] = [];
  for (const name of readdirSync(folder).filter((file) => file.endsWith('.log')).sort()) {
    const fd = openSync(join(folder, name), 'r');
    try {
      const header = Buffer.alloc(61);
      for (let position = 0; readSync(fd, header, 0, header.length, position) === header.length; ) {
        // RecordBatch v2: BatchLength at 8, ProducerId at 43.
        ids.push(header.readBigInt64BE(43));
        position += 12 + header.readInt32BE(8);
      }
    } finally {
      closeSync(fd);
    }
  }
  return ids;
}

/** Waits until `count` records are readable, then reads them all back with kcat as `%o %k %s`. */
async function readBack(topic: string, count: number): Promise<string[]> {
  await waitUntil(async () => broker.broker.logManager.getLog(topic, 0)?.highWatermark === count, { what: `high watermark ${count} in ${topic}/0`, timeoutMs: 60_000 });
  const offsets = await kcat(['-b', broker.bootstrap, '-Q', '-t', `${topic}:0:-1`]);
  expect(offsets.stdout, offsets.stderr).toContain(`${topic} [0] offset ${count}`);
  const read = await kcat(['-b', broker.bootstrap, '-C', '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-f', '%o %k %s\n']);
  expect(read.status, read.stderr).toBe(0);
  return read.stdout.split('\n').filter((line) => line !== '');
}

function expectIdempotentBatches(topic: string): void {
  const ids = storedProducerIds(topic);
  expect(ids.length).toBeGreaterThan(0);
  expect(ids.filter((id) => id < 0n)).toEqual([]);
}

describe('Java producers with default settings', () => {
  it('kafka-console-producer.sh (3.9.1) with no extra settings stores every line once, in order', async () => {
    const topic = 'console-idempotent';
    const lines = Array.from({ length: 2_000 }, (_, i) => `line-${i}`);
    await java('kafka.tools.ConsoleProducer', ['--bootstrap-server', broker.bootstrap, '--topic', topic], kafkaServerDir, `${lines.join('\n')}\n`);
    const stored = await readBack(topic, lines.length);
    expect(stored).toEqual(lines.map((line, i) => `${i}  ${line}`));
    expectIdempotentBatches(topic);
  });

  it('ProducerPerformance (3.9.1) with default producer settings stores every record', async () => {
    const topic = 'perf-idempotent';
    const count = 50_000;
    const result = await java(
      'org.apache.kafka.tools.ProducerPerformance',
      ['--topic', topic, '--num-records', String(count), '--record-size', '100', '--throughput', '-1', '--producer-props', `bootstrap.servers=${broker.bootstrap}`],
      kafkaToolsDir,
    );
    expect(result.stdout, describeRun(result)).toMatch(new RegExp(`^${count} records sent`, 'm'));
    const stored = await readBack(topic, count);
    expect(stored).toHaveLength(count);
    expect(stored.filter((line, i) => !line.startsWith(`${i} `)).slice(0, 5)).toEqual([]);
    expectIdempotentBatches(topic);
  });

  it('a program on the 4.1.1 client with default settings stores every record once, in order', async () => {
    const topic = 'clients4-idempotent';
    const count = 20_000;
    const result = await java(DEFAULT_PRODUCER, [broker.bootstrap, topic, String(count)], kafkaClients4Dir);
    expect(result.stdout, describeRun(result)).toContain(`sent ${count} records, 0 failed`);
    const stored = await readBack(topic, count);
    expect(stored).toEqual(Array.from({ length: count }, (_, i) => `${i} key-${i} value-${i}`));
    expectIdempotentBatches(topic);
  });
});
