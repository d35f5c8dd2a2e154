/**
 * Kafka Connect 3.9.1 in distributed mode (ConnectDistributed, as production runs it) on a
 * standalone Tributary broker (issue #34): the worker creates its config, offset and status topics
 * compacted, the FileStreamSource connector posted through the REST API copies a file into a
 * topic, and after a worker restart (SIGTERM, lines appended, started again) it goes on from the
 * source offset it stored in the compacted `connect-offsets`: every line arrives once, in order.
 */
import { appendFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KafkaConnection } from '../../src/client/connection.js';
import { CONFIG_RESOURCE_TYPE, CONFIG_SOURCE, DescribeConfigsApi } from '../../src/protocol/apis/describe-configs.js';
import { freePort, LOOPBACK } from '../services/network.js';
import { logTail, waitUntil, type Daemon } from '../services/process.js';
import { openRun } from '../services/run-dir.js';
import { ensureJars, KAFKA_CONNECT_JARS } from '../services/service-jars.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { startJavaService, warningsIn } from '../support/java.js';
import { kcat } from '../support/kcat.js';

const { runDir } = inject('compat');
const run = openRun(runDir);

const STORAGE_TOPICS = ['connect-configs', 'connect-offsets', 'connect-status'] as const;
const TOPIC = 'connect-file-lines';
const CONNECTOR = 'file-source';

/**
 * WARNs Connect logs against Apache Kafka too. A WorkerCoordinator closes with a zero timeout
 * (AbstractCoordinator.close()), so its LeaveGroup is always still pending when it gives up. A
 * worker starting on an existing config topic holds no config state yet (offset −1) when its first
 * assignment arrives, so it "catches up" by reading the topic to its end.
 */
const EXPECTED_WARNINGS = [
  /WARN .*Close timed out with 1 pending requests to coordinator, terminating client connections/,
  /WARN .*Catching up to assignment's config offset\./,
];

let broker: InProcessBroker;
let connectDir: string;
let restPort: number;
let workerProperties: string;
let sourceFile: string;
let starts = 0;
let worker: Daemon | undefined;
const logs: string[] = [];

beforeAll(async () => {
  connectDir = await ensureJars(KAFKA_CONNECT_JARS);
  // No wait before a new group's first rebalance: Connect's worker group forms at once.
  broker = await startInProcessBroker({ 'group.initial.rebalance.delay.ms': '0' });
  restPort = await freePort();
  sourceFile = join(run.dir, 'connect-source.txt');
  workerProperties = join(run.dir, 'connect-distributed.properties');
  writeFileSync(
    workerProperties,
    [
      `bootstrap.servers=${broker.bootstrap}`,
      'group.id=connect-cluster',
      'key.converter=org.apache.kafka.connect.storage.StringConverter',
      'value.converter=org.apache.kafka.connect.storage.StringConverter',
      'config.storage.topic=connect-configs',
      'offset.storage.topic=connect-offsets',
      'status.storage.topic=connect-status',
      'config.storage.replication.factor=1',
      'offset.storage.replication.factor=1',
      'status.storage.replication.factor=1',
      `listeners=http://${LOOPBACK}:${restPort}`,
      // Every plugin on the class path has a ServiceLoader manifest: skip the reflective scan (and its WARN).
      'plugin.discovery=service_load',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await worker?.stop(30_000);
  await broker?.stop();
  // Nothing Connect sent made the broker log an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

async function rest(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`http://${LOOPBACK}:${restPort}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
}

/** Starts a worker and waits until its REST API answers and it has joined the worker group. */
async function startWorker(): Promise<Daemon> {
  starts += 1;
  const daemon = startJavaService({
    run,
    name: `connect-worker-${process.pid}-${starts}`,
    jarDir: connectDir,
    mainClass: 'org.apache.kafka.connect.cli.ConnectDistributed',
    args: [workerProperties],
    heap: '384m',
    loggers: { 'org.reflections': 'ERROR' },
  });
  logs.push(daemon.logFile);
  // GET /connectors answers only once the herder has read the config topic and joined the group.
  await waitUntil(async () => (await rest('GET', '/connectors')).status === 200, { what: `Connect's REST API on port ${restPort}`, timeoutMs: 60_000, daemons: [daemon] });
  return daemon;
}

async function stopWorker(): Promise<void> {
  const daemon = worker;
  worker = undefined;
  if (daemon === undefined) return;
  await daemon.stop(30_000);
  expect(logTail(daemon.logFile, 200), 'the worker stopped cleanly').toContain('Kafka Connect stopped');
}

async function taskRunning(): Promise<boolean> {
  const { status, json } = await rest('GET', `/connectors/${CONNECTOR}/status`);
  const state = json as { connector?: { state?: string }; tasks?: { state?: string }[] };
  return status === 200 && state.connector?.state === 'RUNNING' && state.tasks?.[0]?.state === 'RUNNING';
}

/** The topic's values in offset order. */
async function copiedLines(): Promise<string[]> {
  const read = await kcat(['-b', broker.bootstrap, '-C', '-t', TOPIC, '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%s\n']);
  expect(read.status, read.stderr).toBe(0);
  return read.stdout.split('\n').slice(0, -1);
}

async function waitForCopied(count: number): Promise<void> {
  await waitUntil(async () => (broker.broker.logManager.getLog(TOPIC, 0)?.highWatermark ?? 0) >= count, {
    what: `${count} lines copied into ${TOPIC}`,
    timeoutMs: 60_000,
    ...(worker === undefined ? {} : { daemons: [worker] }),
  });
}

/** The latest source offset Connect stored for the file: `{"position": <bytes read>}`. */
async function storedPosition(): Promise<unknown> {
  const read = await kcat(['-b', broker.bootstrap, '-C', '-t', 'connect-offsets', '-o', 'beginning', '-e', '-q', '-f', '%k\t%s\n']);
  expect(read.status, read.stderr).toBe(0);
  const key = JSON.stringify([CONNECTOR, { filename: sourceFile }]);
  const values = read.stdout.split('\n').filter((line) => line.startsWith(`${key}\t`));
  const last = values.at(-1);
  return last === undefined ? undefined : (JSON.parse(last.slice(key.length + 1)) as unknown);
}

function lines(from: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `line ${String(from + i).padStart(4, '0')} of the source file`);
}

describe('Kafka Connect 3.9.1 distributed, FileStreamSource', () => {
  const first = lines(0, 40);
  const second = lines(40, 25);

  it('starts, creates its storage topics compacted, and copies every line of the file posted through REST', async () => {
    writeFileSync(sourceFile, `${first.join('\n')}\n`);
    worker = await startWorker();

    const connection = await KafkaConnection.open(LOOPBACK, broker.broker.port, { clientId: 'connect-test' });
    try {
      const response = await connection.request(DescribeConfigsApi, 3, {
        resources: STORAGE_TOPICS.map((topic) => ({ resourceType: CONFIG_RESOURCE_TYPE.TOPIC, resourceName: topic, configurationKeys: ['cleanup.policy'] })),
        includeSynonyms: false,
        includeDocumentation: false,
      });
      expect(
        response.results.map((result) => ({ topic: result.resourceName, errorCode: result.errorCode, configs: result.configs.map((c) => [c.name, c.value, c.configSource]) })),
      ).toEqual(STORAGE_TOPICS.map((topic) => ({ topic, errorCode: 0, configs: [['cleanup.policy', 'compact', CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG]] })));
    } finally {
      connection.close();
    }

    // The herder may still be settling its first rebalance: retry until the connector is accepted
    // (a retry after an answer that was lost or came late finds it already there).
    let created: { status: number; json: unknown } | undefined;
    await waitUntil(
      async () => {
        created = await rest('POST', '/connectors', {
          name: CONNECTOR,
          config: { 'connector.class': 'org.apache.kafka.connect.file.FileStreamSourceConnector', 'tasks.max': '1', file: sourceFile, topic: TOPIC },
        });
        return created.status === 201 || (created.status === 409 && JSON.stringify(created.json).includes('already exists'));
      },
      { what: `POST /connectors accepted (last answer: ${JSON.stringify(created)})`, timeoutMs: 30_000, daemons: [worker] },
    );
    await waitUntil(taskRunning, { what: `${CONNECTOR} and its task RUNNING`, timeoutMs: 30_000, daemons: [worker] });
    await waitForCopied(first.length);
    expect(await copiedLines()).toEqual(first);
  });

  it('after a worker restart goes on from its stored source offset: appended lines arrive, none twice', async () => {
    await stopWorker();
    // The task's final offset commit on stop: the whole first part of the file.
    expect(await storedPosition()).toEqual({ position: statSync(sourceFile).size });
    expect(await copiedLines()).toEqual(first);

    appendFileSync(sourceFile, `${second.join('\n')}\n`);
    worker = await startWorker();
    await waitUntil(taskRunning, { what: `${CONNECTOR} and its task RUNNING after the restart`, timeoutMs: 30_000, daemons: [worker] });
    await waitForCopied(first.length + second.length);
    // Stopped, the worker has flushed every record it read and committed its offset: nothing more can come.
    await stopWorker();
    expect(await storedPosition()).toEqual({ position: statSync(sourceFile).size });
    expect(await copiedLines()).toEqual([...first, ...second]);
  });

  it('logged no warning or error that Apache Kafka would not cause', () => {
    const unexpected = logs.flatMap((file) => warningsIn(file)).filter((line) => !EXPECTED_WARNINGS.some((pattern) => pattern.test(line)));
    expect(unexpected).toEqual([]);
  });
});
