/**
 * Test certificates made by `scripts/make-certificates.sh` (the openssl CLI), once per test process,
 * in a temporary folder removed when the process exits. Every file is PEM.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface TestCertificates {
  readonly dir: string;
  /** CA certificate: the truststore of brokers and clients (`ssl.truststore.location`, kcat `ssl.ca.location`). */
  readonly ca: string;
  /** Broker key + certificate + CA in one file (`ssl.keystore.location`); CN=localhost, SAN localhost and 127.0.0.1. */
  readonly broker: string;
  readonly brokerKey: string;
  /** Broker certificate followed by the CA. */
  readonly brokerCert: string;
  /** Client key + certificate (subject `CN=client,O=Tributary`) + CA in one file. */
  readonly client: string;
  readonly clientKey: string;
  /** Client certificate followed by the CA. */
  readonly clientCert: string;
  /** A broker key + certificate that expired before the test began (same names as `broker`). */
  readonly brokerExpired: string;
}

/** The client certificate's subject as the broker names it (RFC 2253 order: most specific first). */
export const CLIENT_CERT_SUBJECT = 'CN=client,O=Tributary';

const script = fileURLToPath(new URL('../../scripts/make-certificates.sh', import.meta.url));
let made: TestCertificates | undefined;

export function testCertificates(): TestCertificates {
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'tributary-certs-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  execFileSync(script, [dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  made = {
    dir,
    ca: join(dir, 'ca.pem'),
    broker: join(dir, 'broker.pem'),
    brokerKey: join(dir, 'broker.key'),
    brokerCert: join(dir, 'broker.crt'),
    client: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    clientCert: join(dir, 'client.crt'),
    brokerExpired: join(dir, 'broker-expired.pem'),
  };
  return made;
}
