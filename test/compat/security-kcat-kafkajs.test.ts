/**
 * kcat (librdkafka 2.0.2) and kafkajs 2.2.4 against a broker with PLAINTEXT, SASL_PLAINTEXT,
 * SASL_SSL and SSL (client certificate required) listeners (issue #21 acceptance):
 *
 * - over SASL_SSL with SCRAM-SHA-512 and with PLAIN, and over SSL with the client certificate,
 *   each client produces, reads back (kcat -C; kafkajs through its group consumer) and consumes in
 *   a group whose offsets are committed (kcat -G);
 * - Metadata and FindCoordinator answer on each listener with that listener's port (the client
 *   stays on the listener it came in on: a group coordinated "elsewhere" is found on SASL_SSL);
 * - the broker counts the authentications per listener and mechanism.
 *
 * Secrets reach kcat in a config file (-F), never on its command line.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { METRIC_PREFIX, metricsRegistry } from '../../src/common/metrics.js';
import { openRun } from '../services/run-dir.js';
import { kcat } from '../support/kcat.js';
import { startLineProcess, type LineProcess } from '../support/line-process.js';
import { startSecureBroker, type SecureBroker } from '../support/secure-broker.js';

const { runDir } = inject('compat');
const run = openRun(runDir);

const USER = 'alice';
const PASSWORD = 'alice-secret-42';

let secure: SecureBroker;
let configDir: string;
const started: LineProcess[] = [];

beforeAll(async () => {
  secure = await startSecureBroker({
    users: { [USER]: PASSWORD },
    settings: { 'num.partitions': '2', 'group.initial.rebalance.delay.ms': '0', 'group.min.session.timeout.ms': '1000' },
  });
  configDir = mkdtempSync(join(tmpdir(), 'tributary-kcat-config-'));
});
afterAll(async () => {
  await Promise.all(started.map((member) => member.kill()));
  await secure?.stop();
  // No client made the broker log an error.
  expect(secure?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

interface Way {
  readonly name: string;
  readonly address: () => string;
  /** librdkafka properties. */
  readonly kcat: () => Record<string, string>;
  readonly kafkajs: () => Pick<KafkaConfig, 'ssl' | 'sasl'>;
}

const ca = (): string => secure.certificates.ca;
const WAYS: readonly Way[] = [
  {
    name: 'SASL_SSL SCRAM-SHA-512',
    address: () => secure.saslSsl,
    kcat: () => ({ 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': USER, 'sasl.password': PASSWORD, 'ssl.ca.location': ca() }),
    kafkajs: () => ({ ssl: { ca: [readFileSync(ca())] }, sasl: { mechanism: 'scram-sha-512', username: USER, password: PASSWORD } }),
  },
  {
    name: 'SASL_SSL PLAIN',
    address: () => secure.saslSsl,
    kcat: () => ({ 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'PLAIN', 'sasl.username': USER, 'sasl.password': PASSWORD, 'ssl.ca.location': ca() }),
    kafkajs: () => ({ ssl: { ca: [readFileSync(ca())] }, sasl: { mechanism: 'plain', username: USER, password: PASSWORD } }),
  },
  {
    name: 'SSL with a client certificate',
    address: () => secure.ssl,
    kcat: () => ({
      'security.protocol': 'SSL',
      'ssl.ca.location': ca(),
      'ssl.certificate.location': secure.certificates.clientCert,
      'ssl.key.location': secure.certificates.clientKey,
    }),
    kafkajs: () => ({ ssl: { ca: [readFileSync(ca())], cert: readFileSync(secure.certificates.clientCert), key: readFileSync(secure.certificates.clientKey) } }),
  },
];

let files = 0;
/** A librdkafka properties file (kcat -F) holding `properties`. */
function kcatConfig(properties: Record<string, string>): string {
  files += 1;
  const file = join(configDir, `kcat-${files}.properties`);
  writeFileSync(file, Object.entries(properties).map(([key, value]) => `${key}=${value}\n`).join(''), { mode: 0o600 });
  return file;
}

const lines = (text: string): string[] => text.split('\n').filter((line) => line !== '');

/** Metadata over `address` as kcat -L -J prints it. */
async function kcatMetadata(address: string, properties: Record<string, string>): Promise<{ brokers: { id: number; name: string }[] }> {
  const result = await kcat(['-F', kcatConfig(properties), '-b', address, '-L', '-J']);
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { brokers: { id: number; name: string }[] };
}

async function counted(metric: string, listener: string, mechanism: string): Promise<number> {
  const found = metricsRegistry().getSingleMetric(`${METRIC_PREFIX}${metric}`);
  if (found === undefined) return 0;
  const { values } = await found.get();
  return values.filter((entry) => entry.labels['listener'] === listener && entry.labels['mechanism'] === mechanism).reduce((sum, entry) => sum + entry.value, 0);
}

describe('Metadata per listener', () => {
  it('names every broker by the address of the listener the request came in on', async () => {
    for (const [address, properties] of [
      [secure.plaintext, {}],
      [secure.saslSsl, WAYS[0]!.kcat()],
      [secure.ssl, WAYS[2]!.kcat()],
    ] as const) {
      const metadata = await kcatMetadata(address, properties);
      expect(metadata.brokers).toEqual([{ id: 0, name: address }]);
    }
  });
});

describe.each(WAYS)('kcat over $name', (way) => {
  it('produces, reads back, and consumes in a group that commits', async () => {
    const topic = `kcat-${way.name.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`;
    const config = kcatConfig(way.kcat());
    const values = Array.from({ length: 200 }, (_, i) => `${topic}-${i}`);
    const produced = await kcat(['-F', config, '-b', way.address(), '-P', '-t', topic], `${values.join('\n')}\n`);
    expect(produced.status, produced.stderr).toBe(0);

    const read = await kcat(['-F', config, '-b', way.address(), '-C', '-t', topic, '-o', 'beginning', '-e', '-q']);
    expect(read.status, read.stderr).toBe(0);
    expect(lines(read.stdout).sort()).toEqual([...values].sort());

    const group = `${topic}-group`;
    const member = startLineProcess({
      run,
      name: `kcat-secure-${group}-${process.pid}`,
      command: 'kcat',
      args: ['-F', config, '-b', way.address(), '-u', '-q', '-X', 'auto.offset.reset=earliest', '-X', 'auto.commit.interval.ms=200', '-G', group, topic],
    });
    started.push(member);
    await member.waitFor(() => member.lines.filter((line) => line !== '').length >= values.length, `${values.length} records consumed in ${group}`, 60_000);
    expect(member.lines.filter((line) => line !== '').sort()).toEqual([...values].sort());
    // SIGTERM: kcat commits and leaves. The group's committed offsets then cover the topic.
    await member.stop(10_000);
    const admin = new Kafka({ clientId: 'secure-check', brokers: [secure.plaintext], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
      const ends = await admin.fetchTopicOffsets(topic);
      const total = (committed?.partitions ?? []).reduce((sum, partition) => sum + Math.max(0, Number(partition.offset)), 0);
      expect(total).toBe(ends.reduce((sum, partition) => sum + Number(partition.high), 0));
    } finally {
      await admin.disconnect();
    }
  });
});

describe.each(WAYS)('kafkajs over $name', (way) => {
  it('produces, and consumes in a group', async () => {
    const topic = `kafkajs-${way.name.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`;
    const kafka = new Kafka({ clientId: 'secure-kafkajs', brokers: [way.address()], logLevel: logLevel.NOTHING, ...way.kafkajs() });
    const producer = kafka.producer();
    const consumer = kafka.consumer({ groupId: `${topic}-group`, sessionTimeout: 6000, heartbeatInterval: 500 });
    try {
      await producer.connect();
      const values = Array.from({ length: 100 }, (_, i) => `${topic}-${i}`);
      for (let at = 0; at < values.length; at += 25) await producer.send({ topic, messages: values.slice(at, at + 25).map((value) => ({ value })) });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const received: string[] = [];
      let allReceived: () => void = () => {};
      const done = new Promise<void>((resolve) => {
        allReceived = resolve;
      });
      await consumer.run({
        eachMessage: async ({ message }) => {
          received.push(message.value?.toString('utf8') ?? '');
          if (received.length >= values.length) allReceived();
        },
      });
      await done;
      expect(received.sort()).toEqual([...values].sort());
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
  });
});

describe('authentication metrics', () => {
  it('count the successes per listener and mechanism', async () => {
    expect(await counted('broker_authentication_successes_total', 'SASL_SSL', 'SCRAM-SHA-512')).toBeGreaterThan(0);
    expect(await counted('broker_authentication_successes_total', 'SASL_SSL', 'PLAIN')).toBeGreaterThan(0);
    expect(await counted('broker_authentication_successes_total', 'SSL', 'SSL')).toBeGreaterThan(0);
    expect(await counted('broker_authentication_failures_total', 'SASL_SSL', 'SCRAM-SHA-512')).toBe(0);
  });
});
