/**
 * Kafka Streams 3.9.1 running its WordCountDemo on a standalone Tributary broker (issue #34). The
 * demo counts the words of `streams-plaintext-input` in a RocksDB store whose changelog it creates
 * compacted, through a repartition topic, into `streams-wordcount-output` (String keys, Long
 * values; the demo turns the store's cache off, so every update is written).
 *
 * The first run has the demo's settings plus the broker address, a state folder and a 6 s
 * session timeout: Streams' consumers never leave the group on close, so without it the restarted
 * application would wait out the stopped one's 45 s session, against Apache Kafka too. The second
 * run starts on an empty state folder, so its store can only come back from the changelog: the
 * counts go on (every word's counts 1, 2, … n, never restarting at 1). It commits every 500 ms and
 * purges the repartition topic as often (default 30 s each), which Streams does with DeleteRecords.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KafkaConnection } from '../../src/client/connection.js';
import { ApiVersionsApi } from '../../src/protocol/apis/api-versions.js';
import { CONFIG_RESOURCE_TYPE, DescribeConfigsApi } from '../../src/protocol/apis/describe-configs.js';
import { LOOPBACK } from '../services/network.js';
import { logTail, waitUntil, type Daemon } from '../services/process.js';
import { openRun } from '../services/run-dir.js';
import { ensureJars, KAFKA_STREAMS_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { startJavaService, warningsIn } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir } = inject('compat');
const run = openRun(runDir);

const INPUT = 'streams-plaintext-input';
const OUTPUT = 'streams-wordcount-output';
/** The demo's `count()` is unnamed: its store, changelog and repartition topic get generated names. */
const STORE = 'KSTREAM-AGGREGATE-STATE-STORE-0000000003';
const CHANGELOG = `streams-wordcount-${STORE}-changelog`;
const REPARTITION = `streams-wordcount-${STORE}-repartition`;

/** DeleteRecords' API key. */
const DELETE_RECORDS = 21;

const FIRST_LINES = ['hello world', 'hello kafka streams', 'the quick brown fox jumps over the lazy dog', 'all streams lead to kafka'];
const SECOND_LINES = ['hello again', 'hello world', 'kafka streams restored from the changelog'];

/**
 * WARNs the demo logs against Apache Kafka too: its state folder is under the OS temp folder (the
 * test's run folder), and at the first start the consumer subscribes to the repartition topic
 * before the group leader's assignor has created it.
 */
const EXPECTED_WARNINGS = [
  /WARN Using an OS temp directory in the state\.dir property/,
  new RegExp(`WARN .*reported a recoverable issue with correlation id \\d+ : \\{${REPARTITION}=UNKNOWN_TOPIC_OR_PARTITION\\}`),
];

let broker: InProcessBroker;
let streamsDir: string;
let starts = 0;
let app: Daemon | undefined;
const logs: string[] = [];

beforeAll(async () => {
  streamsDir = await ensureJars(KAFKA_STREAMS_JARS);
  broker = await startInProcessBroker({ 'group.initial.rebalance.delay.ms': '0' });
});

afterAll(async () => {
  await app?.stop(30_000);
  await broker?.stop();
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

/** Words as the demo splits them: lower case, split on runs of non-word characters. */
function words(lines: readonly string[]): string[] {
  return lines.flatMap((line) => line.toLowerCase().split(/\W+/).filter((word) => word !== ''));
}

function counts(lines: readonly string[]): Map<string, number> {
  const result = new Map<string, number>();
  for (const word of words(lines)) result.set(word, (result.get(word) ?? 0) + 1);
  return result;
}

async function produce(lines: readonly string[]): Promise<void> {
  const result = await kcat(['-b', broker.bootstrap, '-P', '-t', INPUT, '-p', '0'], `${lines.join('\n')}\n`);
  expect(result.status, result.stderr).toBe(0);
}

/** Starts WordCountDemo with a properties file of `settings` (its one argument). */
async function startDemo(settings: Record<string, string>): Promise<Daemon> {
  starts += 1;
  const properties = join(run.dir, `wordcount-${process.pid}-${starts}.properties`);
  writeFileSync(properties, `${Object.entries(settings).map(([key, value]) => `${key}=${value}`).join('\n')}\n`);
  const daemon = startJavaService({ run, name: `streams-wordcount-${process.pid}-${starts}`, jarDir: streamsDir, mainClass: 'org.apache.kafka.streams.examples.wordcount.WordCountDemo', args: [properties] });
  logs.push(daemon.logFile);
  return daemon;
}

async function stopDemo(): Promise<void> {
  const daemon = app;
  app = undefined;
  if (daemon === undefined) return;
  await daemon.stop(30_000);
  expect(logTail(daemon.logFile, 100), 'the application closed cleanly').toContain('Streams client stopped completely');
}

/** Every (word, count) the demo wrote, in offset order. */
async function output(): Promise<[string, number][]> {
  const read = await kcat(['-b', broker.bootstrap, '-C', '-t', OUTPUT, '-p', '0', '-o', 'beginning', '-e', '-q', '-s', 'value=q', '-f', '%k %s\n']);
  expect(read.status, read.stderr).toBe(0);
  return read.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [word = '', count = ''] = line.split(' ');
      return [word, Number(count)];
    });
}

function latest(records: readonly [string, number][]): Map<string, number> {
  return new Map(records);
}

async function waitForCounts(expected: Map<string, number>, what: string): Promise<void> {
  await waitUntil(async () => {
    if (broker.broker.logManager.getLog(OUTPUT, 0) === undefined) return false;
    const now = latest(await output());
    return [...expected].every(([word, count]) => now.get(word) === count);
  }, { what, timeoutMs: 60_000, ...(app === undefined ? {} : { daemons: [app] }) });
}

async function topicConfigs(topic: string, keys: string[]): Promise<Record<string, string | null>> {
  const connection = await KafkaConnection.open(LOOPBACK, broker.broker.port, { clientId: 'streams-test' });
  try {
    const response = await connection.request(DescribeConfigsApi, 3, {
      resources: [{ resourceType: CONFIG_RESOURCE_TYPE.TOPIC, resourceName: topic, configurationKeys: keys }],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    const result = response.results[0];
    expect(result?.errorCode, result?.errorMessage ?? '').toBe(0);
    return Object.fromEntries((result?.configs ?? []).map((entry) => [entry.name, entry.value]));
  } finally {
    connection.close();
  }
}

describe('Kafka Streams 3.9.1 WordCountDemo', () => {
  it('counts every word, with its changelog compacted and its repartition topic kept without time limit', async () => {
    // The demo needs its input topic to exist (kcat's produce creates it).
    await produce(FIRST_LINES);
    app = await startDemo({ 'bootstrap.servers': broker.bootstrap, 'state.dir': join(run.dir, 'wordcount-state-1'), 'session.timeout.ms': '6000' });
    await waitForCounts(counts(FIRST_LINES), 'the counts of the first lines');
    const written = await output();
    expect(latest(written)).toEqual(counts(FIRST_LINES));
    // Each word's counts went 1, 2, … in order.
    for (const [word, total] of counts(FIRST_LINES)) {
      expect(written.filter(([w]) => w === word).map(([, count]) => count), word).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    }

    expect(await topicConfigs(CHANGELOG, ['cleanup.policy'])).toEqual({ 'cleanup.policy': 'compact' });
    expect(await topicConfigs(REPARTITION, ['cleanup.policy', 'retention.ms'])).toEqual({ 'cleanup.policy': 'delete', 'retention.ms': '-1' });
  });

  it('after a restart on an empty state folder restores its store from the changelog and goes on counting', async () => {
    await stopDemo();
    await produce(SECOND_LINES);
    const stateDir = join(run.dir, 'wordcount-state-2');
    mkdirSync(stateDir, { recursive: true });
    app = await startDemo({
      'bootstrap.servers': broker.bootstrap,
      'state.dir': stateDir,
      'session.timeout.ms': '6000',
      'commit.interval.ms': '500',
      'repartition.purge.interval.ms': '500',
    });
    const total = counts([...FIRST_LINES, ...SECOND_LINES]);
    await waitForCounts(total, 'the counts of all lines');
    const written = await output();
    expect(latest(written)).toEqual(total);
    // Restored, not recounted: every word's counts are 1, 2, … n once, across both runs.
    for (const [word, n] of total) {
      expect(written.filter(([w]) => w === word).map(([, count]) => count), word).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    }
    // The store came back from the changelog: one record per update of the first run, or fewer once compacted.
    const restored = new RegExp(`Finished restoring changelog ${CHANGELOG}-0 to store ${STORE} with a total number of (\\d+) records`).exec(readFileSync(app.logFile, 'utf8'));
    expect(restored, logTail(app.logFile)).not.toBeNull();
    const records = Number(restored?.[1]);
    expect(records).toBeGreaterThanOrEqual(counts(FIRST_LINES).size);
    expect(records).toBeLessThanOrEqual(words(FIRST_LINES).length);
  });

  it('purges its repartition topic up to what it has committed (DeleteRecords)', async () => {
    // Streams logs a failed purge only at DEBUG: say plainly when the broker cannot serve one.
    const connection = await KafkaConnection.open(LOOPBACK, broker.broker.port, { clientId: 'streams-test' });
    try {
      const versions = await connection.request(ApiVersionsApi, 2, {});
      expect(versions.apiKeys.map((range) => range.apiKey), 'the broker serves DeleteRecords (API 21), which Streams purges with').toContain(DELETE_RECORDS);
    } finally {
      connection.close();
    }
    await waitUntil(async () => (broker.broker.logManager.getLog(REPARTITION, 0)?.logStartOffset ?? 0) > 0, {
      what: `the log start offset of ${REPARTITION}/0 to move above 0 (Streams' purge, every 500 ms here)`,
      timeoutMs: 20_000,
      ...(app === undefined ? {} : { daemons: [app] }),
    });
    const log = broker.broker.logManager.getLog(REPARTITION, 0);
    // Purged up to the committed position: never past what was written.
    expect(log?.logStartOffset).toBeLessThanOrEqual(log?.highWatermark ?? 0);
  });

  it('logged no warning or error that Apache Kafka would not cause', async () => {
    await stopDemo();
    const unexpected = logs.flatMap((file) => warningsIn(file)).filter((line) => !EXPECTED_WARNINGS.some((pattern) => pattern.test(line)));
    expect(unexpected).toEqual([]);
  });
});
