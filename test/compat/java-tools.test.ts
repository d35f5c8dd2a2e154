/**
 * Apache Kafka 3.9.1's own Java tools against a standalone Tributary broker: ProducerPerformance
 * (the Java producer: Metadata v8, Produce v8 with acks=1) and the console consumer in assign mode
 * (no group: Metadata, ListOffsets, Fetch v11). What the tools wrote is checked with kcat and the
 * partition log; what they read is checked against what kcat produced. Then the admin tools:
 * kafka-topics.sh --describe and kafka-configs.sh (DescribeConfigs v3, IncrementalAlterConfigs v0),
 * checked against what the running log does.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitUntil } from '../services/process.js';
import { ensureJars, KAFKA_SERVER_JARS } from '../services/service-jars.js';
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

  describe('topic configs: kafka-topics.sh --describe and kafka-configs.sh', () => {
    const topic = 'java-configs';
    /** kafka-configs.sh is kafka.admin.ConfigCommand, which 3.9 still ships in the broker's jar (core). */
    let kafkaServerDir: string;

    beforeAll(async () => {
      kafkaServerDir = await ensureJars(KAFKA_SERVER_JARS);
      const created = await tool('org.apache.kafka.tools.TopicCommand', [
        '--bootstrap-server', broker.bootstrap, '--create', '--topic', topic, '--partitions', '1', '--config', 'segment.bytes=1024',
      ]);
      expect(created.status, describeRun(created)).toBe(0);
    });

    function configs(args: readonly string[]): Promise<JavaToolResult> {
      return runKafkaTool('kafka.admin.ConfigCommand', ['--bootstrap-server', broker.bootstrap, ...args], { kafkaToolsDir: kafkaServerDir, runDir, timeoutMs: 100_000 });
    }

    function describeTopicConfigs(): Promise<JavaToolResult> {
      return configs(['--describe', '--entity-type', 'topics', '--entity-name', topic]);
    }

    it('kafka-topics.sh --describe shows the topic with its overridden configs', async () => {
      const result = await tool('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', broker.bootstrap, '--describe', '--topic', topic]);
      expect(result.status, describeRun(result)).toBe(0);
      // Only configs that are not defaults are listed (ConfigEntry.isDefault: source DEFAULT_CONFIG).
      expect(result.stdout, describeRun(result)).toMatch(new RegExp(`^Topic: ${topic}\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: segment\\.bytes=1024$`, 'm'));
      expect(result.stdout).toMatch(new RegExp(`^\tTopic: ${topic}\tPartition: 0\tLeader: 0\t`, 'm'));
    });

    it('kafka-configs.sh --describe prints the dynamic configs with their synonyms, and the broker\'s with --all', async () => {
      const topicResult = await describeTopicConfigs();
      expect(topicResult.status, describeRun(topicResult)).toBe(0);
      expect(topicResult.stdout.split('\n').filter((line) => line !== '')).toEqual([
        `Dynamic configs for topic ${topic} are:`,
        '  segment.bytes=1024 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=1024, DEFAULT_CONFIG:log.segment.bytes=1073741824}',
      ]);
      const brokerResult = await configs(['--describe', '--entity-type', 'brokers', '--entity-name', '0', '--all']);
      expect(brokerResult.status, describeRun(brokerResult)).toBe(0);
      expect(brokerResult.stdout).toContain('All configs for broker 0 are:');
      // The test broker sets num.partitions=1, which is also the built-in default.
      expect(brokerResult.stdout).toContain('  log.retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.ms=604800000}');
      expect(brokerResult.stdout).toContain('  num.partitions=1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}');
    });

    it('--alter --add-config retention.ms changes what describe shows and what the running log retains', async () => {
      // Four runs of kcat, four batches of over 1 KiB: with segment.bytes=1024 each starts a segment.
      for (let run = 0; run < 4; run += 1) {
        const input = Array.from({ length: 10 }, (_, i) => `record-${run}-${i}-${'x'.repeat(100)}\n`).join('');
        const produced = await kcat(['-b', broker.bootstrap, '-P', '-t', topic, '-p', '0'], input);
        expect(produced.status, produced.stderr).toBe(0);
      }
      const log = (): NonNullable<ReturnType<typeof broker.broker.logManager.getLog>> => {
        const found = broker.broker.logManager.getLog(topic, 0);
        if (found === undefined) throw new Error(`no log of ${topic}-0`);
        return found;
      };
      await waitUntil(async () => log().highWatermark === 40, { what: `high watermark 40 in ${topic}/0`, timeoutMs: 30_000 });
      // A week of retention keeps everything.
      expect(broker.broker.logManager.applyRetention()).toBe(0);
      expect(log().logStartOffset).toBe(0);

      const altered = await configs(['--alter', '--entity-type', 'topics', '--entity-name', topic, '--add-config', 'retention.ms=1']);
      expect(altered.status, describeRun(altered)).toBe(0);
      expect(altered.stdout).toContain(`Completed updating config for topic ${topic}.`);
      // No restart: the watch on /config/topics/<topic> hands the running log its new config.
      await waitUntil(async () => log().config.retentionMs === 1, { what: `retention.ms=1 applied to ${topic}-0`, timeoutMs: 30_000 });
      expect(log().config.segmentBytes).toBe(1024);
      await waitUntil(async () => broker.broker.logManager.applyRetention() > 0, { what: `retention deleting segments of ${topic}-0`, timeoutMs: 30_000 });
      expect(log().logStartOffset).toBeGreaterThan(0);

      const described = await describeTopicConfigs();
      expect(described.status, describeRun(described)).toBe(0);
      expect(described.stdout).toContain('  retention.ms=1 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1, DEFAULT_CONFIG:log.retention.ms=604800000}');
      expect(described.stdout).toContain('  segment.bytes=1024 ');

      const deleted = await configs(['--alter', '--entity-type', 'topics', '--entity-name', topic, '--delete-config', 'retention.ms']);
      expect(deleted.status, describeRun(deleted)).toBe(0);
      await waitUntil(async () => log().config.retentionMs === 604_800_000, { what: `retention.ms back to the default on ${topic}-0`, timeoutMs: 30_000 });
    });

    it('--alter --add-config with an unknown name or a bad value fails with INVALID_CONFIG and changes nothing', async () => {
      const before = await describeTopicConfigs();
      for (const [config, message] of [
        ['retention.mss=1000', 'unknown topic config retention.mss; the topic configs Tributary honours are'],
        ['segment.bytes=abc', 'invalid value "abc" for topic config segment.bytes: expected an integer from 14 to 2147483647'],
        // One good and one bad: the good one is not applied either.
        ['retention.ms=5000,cleanup.policy=shred', 'invalid value "shred" for topic config cleanup.policy'],
      ] as const) {
        const result = await configs(['--alter', '--entity-type', 'topics', '--entity-name', topic, '--add-config', config]);
        expect(result.status, describeRun(result)).not.toBe(0);
        expect(result.stderr, describeRun(result)).toContain(`org.apache.kafka.common.errors.InvalidConfigurationException: ${message}`);
      }
      const after = await describeTopicConfigs();
      expect(after.stdout).toBe(before.stdout);
      expect(broker.broker.logManager.getLog(topic, 0)?.config).toMatchObject({ retentionMs: 604_800_000, segmentBytes: 1024 });
    });

    it('--alter on a broker is refused: broker configs are static', async () => {
      const result = await configs(['--alter', '--entity-type', 'brokers', '--entity-name', '0', '--add-config', 'log.retention.ms=1000']);
      expect(result.status, describeRun(result)).not.toBe(0);
      expect(result.stderr).toContain('PolicyViolationException: broker configs are static in Tributary');
    });
  });
});
