/**
 * Apache Kafka 3.9.1's own Java tools against a standalone Tributary broker: ProducerPerformance
 * (the Java producer: Metadata v8, Produce v8 with acks=1) and the console consumer in assign mode
 * (no group: Metadata, ListOffsets, Fetch v11). What the tools wrote is checked with kcat and the
 * partition log; what they read is checked against what kcat produced.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir, kafkaToolsDir } = inject('compat');

let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1' });
});
afterAll(async () => {
  await broker?.stop();
  // Nothing the tools sent made the broker log an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

async function tool(mainClass: string, args: readonly string[]): Promise<JavaToolResult> {
  const result = await runKafkaTool(mainClass, args, { kafkaToolsDir, runDir, timeoutMs: 100_000 });
  // The Java client logs protocol trouble (bad responses, disconnects, retries) as WARN or ERROR.
  expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
  return result;
}

describe('Kafka 3.9.1 Java tools', () => {
  it('ProducerPerformance sends 20000 records of 200 bytes with acks=1, all stored', async () => {
    const topic = 'java-perf';
    const count = 20_000;
    const result = await tool('org.apache.kafka.tools.ProducerPerformance', [
      '--topic', topic, '--num-records', String(count), '--record-size', '200', '--throughput', '-1',
      '--producer-props', `bootstrap.servers=${broker.bootstrap}`, 'acks=1', 'enable.idempotence=false',
    ]);
    expect(result.status, describeRun(result)).toBe(0);
    expect(result.stdout, describeRun(result)).toMatch(new RegExp(`^${count} records sent`, 'm'));

    await waitUntil(async () => broker.broker.logManager.getLog(topic, 0)?.highWatermark === count, {
      what: `high watermark ${count} in ${topic}/0`,
      timeoutMs: 30_000,
    });
    const offsets = await kcat(['-b', broker.bootstrap, '-Q', '-t', `${topic}:0:-1`]);
    expect(offsets.status, offsets.stderr).toBe(0);
    expect(offsets.stdout).toContain(`${topic} [0] offset ${count}`);

    const read = await kcat(['-b', broker.bootstrap, '-C', '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-f', '%o %K %S\n']);
    expect(read.status, read.stderr).toBe(0);
    const lines = read.stdout.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(count);
    // Offsets 0..19999, no key, 200-byte values.
    const unexpected = lines.filter((line, i) => line !== `${i} -1 200`);
    expect(unexpected.slice(0, 5)).toEqual([]);
  });

  describe('console consumer in assign mode', () => {
    const topic = 'java-console';
    const sent = Array.from({ length: 30 }, (_, i) => ({ key: `key-${i}`, value: `value-${i}-${randomBytes(9).toString('base64url')}` }));

    beforeAll(async () => {
      const input = sent.map((m) => `${m.key}:${m.value}\n`).join('');
      const result = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0', '-K', ':'], input);
      expect(result.status, result.stderr).toBe(0);
      await waitUntil(async () => broker.broker.logManager.getLog(topic, 0)?.highWatermark === sent.length, {
        what: `high watermark ${sent.length} in ${topic}/0`,
        timeoutMs: 30_000,
      });
    });

    function consoleConsumer(offset: string, maxMessages: number): Promise<JavaToolResult> {
      return tool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
        '--bootstrap-server', broker.bootstrap, '--topic', topic, '--partition', '0', '--offset', offset,
        '--max-messages', String(maxMessages), '--timeout-ms', '60000',
        '--property', 'print.offset=true', '--property', 'print.key=true',
      ]);
    }

    function expectedLines(from: number, count: number): string[] {
      return sent.slice(from, from + count).map((m, i) => `Offset:${from + i}\t${m.key}\t${m.value}`);
    }

    it('prints exactly offsets 5..14 with their keys and values from --offset 5 --max-messages 10', async () => {
      const result = await consoleConsumer('5', 10);
      expect(result.status, describeRun(result)).toBe(0);
      expect(result.stdout.split('\n').filter((line) => line !== ''), describeRun(result)).toEqual(expectedLines(5, 10));
      expect(result.stderr).toContain('Processed a total of 10 messages');
    });

    it('prints every record from --offset earliest', async () => {
      const result = await consoleConsumer('earliest', sent.length);
      expect(result.status, describeRun(result)).toBe(0);
      expect(result.stdout.split('\n').filter((line) => line !== ''), describeRun(result)).toEqual(expectedLines(0, sent.length));
      expect(result.stderr).toContain(`Processed a total of ${sent.length} messages`);
    });
  });
});
