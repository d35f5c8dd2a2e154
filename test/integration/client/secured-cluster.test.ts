/**
 * Our own client against our secured broker (test/support/secure-broker.ts: PLAINTEXT,
 * SASL_PLAINTEXT, SASL_SSL and SSL with required client certificates, users made as `tributary
 * users add` makes them): the producer and the simple consumer over SASL_SSL with SCRAM-SHA-512,
 * SCRAM-SHA-256 and PLAIN, over SASL_PLAINTEXT with SCRAM, and over SSL with a client certificate;
 * the metadata they get names the listener they came in on, so every connection stays secured. A
 * refused login fails ClusterClient.connect at once with Kafka's code. Then the CLI with
 * `--command-config`: produce, consume, topics list.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { clientSasl, parseClientSecurity, type ClientSecurity, type SaslMechanismName } from '../../../src/client/security-config.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { TributaryError } from '../../../src/common/errors.js';
import { runTributary } from '../../support/cli.js';
import { startSecureBroker, type SecureBroker } from '../../support/secure-broker.js';

const USER = 'alice';
const PASSWORD = 'alice-secret-0';

let secure: SecureBroker;
let folder: string;

beforeAll(async () => {
  secure = await startSecureBroker({ users: { [USER]: PASSWORD } });
  folder = mkdtempSync(join(tmpdir(), 'tributary-secured-client-'));
  writeFileSync(join(folder, 'password'), `${PASSWORD}\n`);
}, 60_000);

afterAll(async () => {
  await secure?.stop();
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
});

function security(properties: Record<string, string>): ClientSecurity {
  return parseClientSecurity(properties, { source: 'test', env: {} });
}

const tls = (): Record<string, string> => ({ 'ssl.truststore.location': secure.certificates.ca });

/** Produces `count` records to `topic` and reads them back, both over `bootstrap` with `using`. */
async function roundTrip(bootstrap: string, using: ClientSecurity, topic: string, count: number): Promise<string[]> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], security: using, clientId: 'secured-test' });
  try {
    await producer.send(
      topic,
      Array.from({ length: count }, (_, index) => ({ key: null, value: Buffer.from(`${topic}-${index}`) })),
    );
    await producer.flush();
  } finally {
    await producer.close();
  }
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], security: using, allowAutoTopicCreation: false });
  try {
    // Every broker address the client learned is the listener it came in on.
    for (const broker of cluster.knownBrokers()) expect(`${broker.host}:${broker.port}`).toBe(bootstrap);
    const consumer = new SimpleConsumer(cluster);
    const result = await consumer.fetch(topic, 0, 0n, { maxWaitMs: 0, maxBytes: 1024 * 1024 });
    return result.records.map((record) => record.value?.toString() ?? '');
  } finally {
    cluster.close();
  }
}

describe('producer and consumer on a secured broker', () => {
  it.each<SaslMechanismName>(['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'])('SASL_SSL with %s', async (mechanism) => {
    const topic = `sasl-ssl-${mechanism.toLowerCase()}`;
    const values = await roundTrip(secure.saslSsl, { ...security({ 'security.protocol': 'SSL', ...tls() }), sasl: clientSasl(mechanism, USER, PASSWORD) }, topic, 5);
    expect(values).toEqual([0, 1, 2, 3, 4].map((index) => `${topic}-${index}`));
  });

  it('SASL_PLAINTEXT with SCRAM-SHA-512', async () => {
    const values = await roundTrip(secure.saslPlaintext, { sasl: clientSasl('SCRAM-SHA-512', USER, PASSWORD) }, 'sasl-plaintext', 3);
    expect(values).toEqual(['sasl-plaintext-0', 'sasl-plaintext-1', 'sasl-plaintext-2']);
  });

  it('SSL with a client certificate', async () => {
    const using = security({ 'security.protocol': 'SSL', ...tls(), 'ssl.keystore.location': secure.certificates.client });
    expect(await roundTrip(secure.ssl, using, 'ssl-client-cert', 2)).toEqual(['ssl-client-cert-0', 'ssl-client-cert-1']);
  });

  it('a wrong password fails ClusterClient.connect at once, with Kafka\'s code, not as an unreachable broker', async () => {
    const attempt = ClusterClient.connect({ bootstrap: [secure.saslSsl], security: { ...security({ 'security.protocol': 'SSL', ...tls() }), sasl: clientSasl('SCRAM-SHA-512', USER, 'wrong') } });
    const error = await attempt.then(
      (client) => {
        client.close();
        throw new Error('connected with a wrong password');
      },
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).code).toBe('SASL_AUTHENTICATION_FAILED');
    expect((error as TributaryError).retriable).toBe(false);
  });
});

describe('the CLI with --command-config', () => {
  it('produces, consumes and lists topics over SASL_SSL, the password from a file', async () => {
    const config = join(folder, 'client.properties');
    writeFileSync(
      config,
      ['client.id=cli-test', 'security.protocol=SASL_SSL', 'sasl.mechanism=SCRAM-SHA-512', `sasl.username=${USER}`, 'sasl.password.file=password', `ssl.truststore.location=${secure.certificates.ca}`].join('\n'),
    );
    const produced = await runTributary(['produce', '--bootstrap-server', secure.saslSsl, '--topic', 'cli-secured', '--command-config', config], 'one\ntwo\n');
    expect(produced.stderr).toContain('produced 2 records');
    expect(produced.status).toBe(0);
    const consumed = await runTributary(['consume', '--bootstrap-server', secure.saslSsl, '--topic', 'cli-secured', '--from-beginning', '--max-messages', '2', '--command-config', config]);
    expect(consumed.stdout).toBe('one\ntwo\n');
    const listed = await runTributary(['topics', 'list', '--bootstrap-server', secure.saslSsl, '--command-config', config]);
    expect(listed.stdout).toContain('cli-secured');
    // Without the config the SASL_SSL port does not serve the command.
    const refused = await runTributary(['topics', 'list', '--bootstrap-server', secure.saslSsl]);
    expect(refused.status).not.toBe(0);
    expect(refused.output).not.toContain(PASSWORD);
  });
});
