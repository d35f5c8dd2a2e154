/**
 * A standalone broker in the test process with four listeners on free ports — PLAINTEXT,
 * SASL_PLAINTEXT, SASL_SSL and SSL (client certificates required) — the test certificates
 * (certificates.ts), and SASL users created the way `tributary users add` does (SCRAM-SHA-256 and
 * -512 credentials in the coordination store; PLAIN checks against them) before it starts, so its
 * credential cache holds them from the first connection.
 */
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Broker } from '../../src/broker/broker.js';
import { parseBrokerConfig } from '../../src/broker/config.js';
import { createLogger } from '../../src/common/logger.js';
import { MemoryCoordination } from '../../src/coordination/memory-store.js';
import type { CoordinationStore } from '../../src/coordination/store.js';
import { putUserCredential } from '../../src/coordination/user-credentials.js';
import { scramCredential, type ScramMechanism } from '../../src/protocol/sasl/scram.js';
import { LOOPBACK } from '../services/network.js';
import { testCertificates, type TestCertificates } from './certificates.js';

export interface SecureBroker {
  readonly broker: Broker;
  readonly certificates: TestCertificates;
  /** The keystore the broker reads (a copy, so a test may replace it and reload). */
  readonly keystore: string;
  /** `127.0.0.1:port` per listener. */
  readonly plaintext: string;
  readonly saslPlaintext: string;
  readonly saslSsl: string;
  readonly ssl: string;
  readonly dataDir: string;
  /** Log lines the broker wrote (parsed JSON). */
  readonly logLines: Record<string, unknown>[];
  stop(): Promise<void>;
}

const MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512'];

export interface SecureBrokerOptions {
  /** User name → password. */
  readonly users?: Readonly<Record<string, string>>;
  /** PEM key + chain to serve instead of the valid broker certificate. */
  readonly keystore?: string;
  readonly settings?: Readonly<Record<string, string>>;
}

export async function startSecureBroker(options: SecureBrokerOptions = {}): Promise<SecureBroker> {
  const certificates = testCertificates();
  const dataDir = mkdtempSync(join(tmpdir(), 'tributary-secure-broker-'));
  const keystore = join(dataDir, 'keystore.pem');
  copyFileSync(options.keystore ?? certificates.broker, keystore);
  const logLines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').trim().split('\n')) if (line !== '') logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const coordination = new MemoryCoordination({ file: join(dataDir, 'standalone-coordination.json') });
  const admin: CoordinationStore = coordination.session();
  const logger = createLogger({ name: 'secure-broker', level: 'info', destination });
  for (const [name, password] of Object.entries(options.users ?? {})) {
    for (const mechanism of MECHANISMS) await putUserCredential(admin, name, mechanism, scramCredential(mechanism, password));
  }
  const broker = await Broker.start({
    id: 0,
    dataDir,
    config: parseBrokerConfig(
      {
        listeners: `PLAINTEXT://${LOOPBACK}:0,SASL_PLAINTEXT://${LOOPBACK}:0,SASL_SSL://${LOOPBACK}:0,SSL://${LOOPBACK}:0`,
        'ssl.keystore.location': keystore,
        'ssl.truststore.location': certificates.ca,
        'ssl.client.auth': 'required',
        ...options.settings,
      },
      'secure test broker settings',
    ),
    store: coordination.session(),
    logger,
  });
  const address = (name: string): string => `${LOOPBACK}:${broker.listenerPort(name) ?? -1}`;
  return {
    broker,
    certificates,
    keystore,
    plaintext: address('PLAINTEXT'),
    saslPlaintext: address('SASL_PLAINTEXT'),
    saslSsl: address('SASL_SSL'),
    ssl: address('SSL'),
    dataDir,
    logLines,
    async stop() {
      await broker.stop();
      await admin.close();
    },
  };
}
