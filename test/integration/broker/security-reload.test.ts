/**
 * Certificates on a running broker (issue #21), through `tributary broker start` as operators run
 * it (a child process; PLAINTEXT, SSL with client certificates required, and SASL_SSL listeners):
 *
 * - serving an expired certificate, it is refused by its clients (Node's TLS, kcat, kafkajs) and
 *   serves nothing;
 * - once the keystore file is replaced and the process gets SIGHUP, new connections on every TLS
 *   listener get the new certificate and are served, without a restart;
 * - a SIGHUP while the keystore does not read keeps the running certificates (logged);
 * - SIGTERM still stops it cleanly.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetadataApi } from '../../../src/protocol/apis/metadata.js';
import { waitUntil } from '../../services/process.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { testCertificates } from '../../support/certificates.js';
import { Conversation } from '../../support/conversation.js';
import { kcat } from '../../support/kcat.js';
import { METADATA_ALL, handshake } from '../../support/sasl-conversation.js';
import { services } from '../services.js';

const certificates = testCertificates();
let broker: BrokerProcess;
let sslPort: number;
let saslSslPort: number;
let keystore: string;

beforeAll(async () => {
  const run = openRun(services().runDir);
  sslPort = await freePort();
  saslSslPort = await freePort();
  keystore = join(run.dir, `reload-keystore-${process.pid}.pem`);
  copyFileSync(certificates.brokerExpired, keystore);
  broker = await startBrokerProcess({
    run,
    id: 31,
    settings: (port) => ({
      listeners: `PLAINTEXT://${LOOPBACK}:${port},SSL://${LOOPBACK}:${sslPort},SASL_SSL://${LOOPBACK}:${saslSslPort}`,
      'ssl.keystore.location': keystore,
      'ssl.truststore.location': certificates.ca,
      'ssl.client.auth': 'required',
    }),
  });
});
afterAll(async () => {
  if (broker !== undefined) expect(await broker.stop()).toBe(0);
});

function logLines(): Record<string, unknown>[] {
  return readFileSync(broker.logFile, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function clientTls(): { ca: Buffer; servername: string; key: Buffer; cert: Buffer } {
  const client = readFileSync(certificates.client);
  return { ca: readFileSync(certificates.ca), servername: 'localhost', key: client, cert: client };
}

async function metadataOverSsl(): Promise<number[]> {
  const conversation = await Conversation.openTls(sslPort, clientTls());
  try {
    return (await conversation.request(MetadataApi, 1, METADATA_ALL)).brokers.map((entry) => entry.port);
  } finally {
    conversation.close();
  }
}

function kcatSsl(): Promise<{ status: number | null; stderr: string }> {
  return kcat([
    '-b', `${LOOPBACK}:${sslPort}`, '-L',
    '-X', 'security.protocol=SSL', '-X', `ssl.ca.location=${certificates.ca}`,
    '-X', `ssl.certificate.location=${certificates.clientCert}`, '-X', `ssl.key.location=${certificates.clientKey}`,
    '-m', '5',
  ]);
}

async function reloadWithSighup(outcome: 'TLS certificates reloaded' | 'TLS certificates not reloaded; the listener keeps its current ones'): Promise<void> {
  const before = logLines().filter((line) => line['msg'] === outcome).length;
  broker.daemon.signal('SIGHUP');
  // One line per TLS listener.
  await waitUntil(async () => logLines().filter((line) => line['msg'] === outcome).length >= before + 2, { what: `"${outcome}" logged for both TLS listeners`, timeoutMs: 20_000 });
}

describe('an expired broker certificate', () => {
  it('is refused by Node TLS, kcat and kafkajs', async () => {
    await expect(Conversation.openTls(sslPort, clientTls())).rejects.toMatchObject({ code: 'CERT_HAS_EXPIRED' });
    await expect(Conversation.openTls(saslSslPort, { ca: readFileSync(certificates.ca), servername: 'localhost' })).rejects.toMatchObject({ code: 'CERT_HAS_EXPIRED' });
    const listed = await kcatSsl();
    expect(listed.status).not.toBe(0);
    expect(listed.stderr).toMatch(/certificate has expired|certificate verify failed/);
    const admin = new Kafka({
      brokers: [`${LOOPBACK}:${saslSslPort}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      ssl: { ca: [readFileSync(certificates.ca)] },
      sasl: { mechanism: 'scram-sha-512', username: 'nobody', password: 'unused' },
    }).admin();
    await expect(admin.connect()).rejects.toThrow(/certificate has expired/);
    await admin.disconnect();
  });
});

describe('SIGHUP', () => {
  it('serves the new certificate to new connections, on every TLS listener, without a restart', async () => {
    copyFileSync(certificates.broker, keystore);
    await reloadWithSighup('TLS certificates reloaded');
    expect(await metadataOverSsl()).toEqual([sslPort]);
    const listed = await kcatSsl();
    expect(listed.status, listed.stderr).toBe(0);
    const conversation = await Conversation.openTls(saslSslPort, { ca: readFileSync(certificates.ca), servername: 'localhost' });
    try {
      expect((await handshake(conversation, 'SCRAM-SHA-512')).errorCode).toBe(0);
    } finally {
      conversation.close();
    }
  });

  it('keeps the running certificates when the new keystore does not read', async () => {
    writeFileSync(keystore, '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n');
    await reloadWithSighup('TLS certificates not reloaded; the listener keeps its current ones');
    expect(await metadataOverSsl()).toEqual([sslPort]);
  });
});
