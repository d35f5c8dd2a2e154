/** The registry's HTTPS settings: what is refused before anything listens, and the options built. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryTls } from '../../../src/registry/registry-tls.js';

const CERT = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
let folder: string;
const at = (name: string): string => join(folder, name);

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'tributary-registry-tls-'));
  writeFileSync(at('chain.pem'), CERT);
  writeFileSync(at('key.pem'), KEY);
  writeFileSync(at('both.pem'), KEY + CERT);
  writeFileSync(at('passphrase'), 'sesame\nignored\n');
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('registry TLS settings', () => {
  it('takes the key from the certificate file when no key file is given, and asks for no client certificate by default', async () => {
    const options = await readRegistryTls({ certFile: at('both.pem') });
    expect(options).toMatchObject({ cert: KEY + CERT, key: KEY + CERT, minVersion: 'TLSv1.2', requestCert: false, rejectUnauthorized: false });
  });

  it('reads a key, a passphrase (first line) and a CA for required client certificates', async () => {
    const options = await readRegistryTls({ certFile: at('chain.pem'), keyFile: at('key.pem'), keyPasswordFile: at('passphrase'), caFile: at('chain.pem'), clientAuth: 'required' });
    expect(options).toMatchObject({ key: KEY, passphrase: 'sesame', ca: CERT, requestCert: true, rejectUnauthorized: true });
  });

  it('refuses a certificate without a key, a missing file, and client certificates without a CA', async () => {
    await expect(readRegistryTls({ certFile: at('chain.pem') })).rejects.toThrow(/holds no PEM private key; give it with --tls-key FILE/);
    await expect(readRegistryTls({ certFile: at('key.pem') })).rejects.toThrow(/holds no PEM certificate/);
    await expect(readRegistryTls({ certFile: at('missing.pem') })).rejects.toThrow(/cannot read the registry's certificate/);
    await expect(readRegistryTls({ certFile: at('both.pem'), clientAuth: 'requested' })).rejects.toThrow(/need a CA bundle/);
  });
});
