/**
 * Apache Kafka's Java client, 3.9.1 and 4.1.1, against a broker with SASL_SSL and SSL listeners
 * (issue #21 acceptance): over SASL_SSL with SCRAM-SHA-512 and with PLAIN (JAAS ScramLoginModule /
 * PlainLoginModule), and over SSL with a client certificate (PEM keystore, key unencrypted), a
 * producer at its defaults (idempotent, acks=all) sends records and a group consumer reads every
 * one back and commits (security-java/SecureClient.java; one JVM per client version). The
 * truststore is the test CA in PEM; hostname verification stays on (the broker certificate names
 * 127.0.0.1). The clients must log no warning or error.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureJars, KAFKA_4_VERSION, KAFKA_CLIENTS_4_JARS, KAFKA_VERSION } from '../services/service-jars.js';
import { describeRun, runKafkaTool } from '../support/java.js';
import { startSecureBroker, type SecureBroker } from '../support/secure-broker.js';

const { runDir, kafkaToolsDir } = inject('compat');
const SECURE_CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'security-java', 'SecureClient.java');
const USER = 'java-user';
const PASSWORD = 'java-user-secret-7';
const COUNT = 50;

let secure: SecureBroker;
let kafkaClients4Dir: string;
let configDir: string;

beforeAll(async () => {
  kafkaClients4Dir = await ensureJars(KAFKA_CLIENTS_4_JARS);
  secure = await startSecureBroker({
    users: { [USER]: PASSWORD },
    settings: { 'num.partitions': '2', 'group.initial.rebalance.delay.ms': '0' },
  });
  configDir = mkdtempSync(join(tmpdir(), 'tributary-java-security-'));
});
afterAll(async () => {
  await secure?.stop();
  expect(secure?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

function propertiesFile(name: string, properties: Record<string, string>): string {
  const file = join(configDir, `${name}.properties`);
  // Java properties: a backslash escapes, so JAAS strings are written as they are (no backslashes in them).
  writeFileSync(file, Object.entries(properties).map(([key, value]) => `${key}=${value}\n`).join(''), { mode: 0o600 });
  return file;
}

interface Way {
  readonly name: string;
  readonly bootstrap: () => string;
  readonly properties: () => Record<string, string>;
}

const trust = (): Record<string, string> => ({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': secure.certificates.ca });
const WAYS: readonly Way[] = [
  {
    name: 'scram',
    bootstrap: () => secure.saslSsl,
    properties: () => ({
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="${USER}" password="${PASSWORD}";`,
      ...trust(),
    }),
  },
  {
    name: 'plain',
    bootstrap: () => secure.saslSsl,
    properties: () => ({
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required username="${USER}" password="${PASSWORD}";`,
      ...trust(),
    }),
  },
  {
    name: 'ssl',
    bootstrap: () => secure.ssl,
    properties: () => ({ 'security.protocol': 'SSL', 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': secure.certificates.client, ...trust() }),
  },
];

describe.each([
  { version: KAFKA_VERSION, jars: () => kafkaToolsDir },
  { version: KAFKA_4_VERSION, jars: () => kafkaClients4Dir },
])('Java client $version', ({ version, jars }) => {
  it('produces and group-consumes over SASL_SSL (SCRAM-SHA-512, PLAIN) and SSL with a client certificate', async () => {
    const tag = version.replace(/\./g, '');
    const args = [String(COUNT)];
    for (const way of WAYS) args.push(way.bootstrap(), `java-${tag}-${way.name}`, `java-${tag}-${way.name}-group`, propertiesFile(`${tag}-${way.name}`, way.properties()));
    const result = await runKafkaTool(SECURE_CLIENT, args, { kafkaToolsDir: jars(), runDir, timeoutMs: 85_000 });
    expect(result.status, describeRun(result)).toBe(0);
    for (const way of WAYS) expect(result.stdout).toContain(`java-${tag}-${way.name}: produced ${COUNT} consumed ${COUNT} committed ${COUNT}`);
    expect(result.stderr.split('\n').filter((line) => / (WARN|ERROR) /.test(line)), describeRun(result)).toEqual([]);
  });
});
