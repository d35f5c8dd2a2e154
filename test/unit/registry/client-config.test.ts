/**
 * The registry client's security settings from Confluent's property names, files and the
 * TRIBUTARY_REGISTRY_* environment; and that the client sends the credentials only in the
 * Authorization header, never in its messages.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryClient } from '../../../src/registry/client.js';
import { registryClientSecurity } from '../../../src/registry/client-config.js';

const PEM = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
let folder: string;

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'tributary-registry-client-config-'));
  writeFileSync(join(folder, 'user-info'), 'ann:pa:ss\n');
  writeFileSync(join(folder, 'ca.pem'), PEM);
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('registry client properties', () => {
  it('gives nothing when nothing is configured', () => {
    expect(registryClientSecurity({}, {})).toEqual({});
  });

  it('reads USER_INFO inline, from a file (relative to the properties), or from the environment', () => {
    expect(registryClientSecurity({ 'basic.auth.credentials.source': 'USER_INFO', 'basic.auth.user.info': 'ann:pw' })).toEqual({ basicAuth: { username: 'ann', password: 'pw' } });
    expect(registryClientSecurity({ 'basic.auth.user.info.file': 'user-info' }, {}, folder)).toEqual({ basicAuth: { username: 'ann', password: 'pa:ss' } });
    expect(registryClientSecurity({}, { TRIBUTARY_REGISTRY_USER_INFO: 'bo:x' })).toEqual({ basicAuth: { username: 'bo', password: 'x' } });
    expect(registryClientSecurity({}, { TRIBUTARY_REGISTRY_USER_INFO_FILE: join(folder, 'user-info') })).toEqual({ basicAuth: { username: 'ann', password: 'pa:ss' } });
    // The properties win over the environment.
    expect(registryClientSecurity({ 'basic.auth.user.info': 'ann:pw' }, { TRIBUTARY_REGISTRY_USER_INFO: 'bo:x' }).basicAuth?.username).toBe('ann');
    // URL: the credentials are the URL's; the environment is not consulted.
    expect(registryClientSecurity({ 'basic.auth.credentials.source': 'URL' }, { TRIBUTARY_REGISTRY_USER_INFO: 'bo:x' })).toEqual({});
  });

  it('reads a PEM truststore and keystore and the hostname check', () => {
    const security = registryClientSecurity(
      { 'schema.registry.ssl.truststore.location': 'ca.pem', 'schema.registry.ssl.keystore.location': join(folder, 'ca.pem'), 'schema.registry.ssl.endpoint.identification.algorithm': '' },
      {},
      folder,
    );
    expect(security.tls?.ca?.toString()).toBe(PEM);
    expect(security.tls?.cert?.toString()).toBe(PEM);
    expect(security.tls?.checkHostname).toBe(false);
    expect(registryClientSecurity({}, { TRIBUTARY_REGISTRY_CA_FILE: join(folder, 'ca.pem') }).tls).toMatchObject({ checkHostname: true });
  });

  it('refuses what it cannot honour, naming the setting and never the secret', () => {
    expect(() => registryClientSecurity({ 'basic.auth.credentials.source': 'SASL_INHERIT' })).toThrow(/USER_INFO or URL/);
    expect(() => registryClientSecurity({ 'basic.auth.user.info': 'no-colon-secret' })).toThrow(/^basic\.auth\.user\.info must be user:password$/);
    expect(() => registryClientSecurity({ 'basic.auth.user.info': 'a:b', 'basic.auth.user.info.file': 'f' })).toThrow(/not both/);
    expect(() => registryClientSecurity({ 'schema.registry.ssl.truststore.location': 'missing.pem' }, {}, folder)).toThrow(/truststore\.location: cannot read/);
    expect(() => registryClientSecurity({ 'schema.registry.ssl.truststore.location': 'user-info' }, {}, folder)).toThrow(/is not a PEM file/);
    expect(() => registryClientSecurity({ 'schema.registry.ssl.endpoint.identification.algorithm': 'none' })).toThrow(/https or empty/);
  });
});

describe('registry client credentials', () => {
  let server: Server;
  let url: string;
  const authorizations: (string | undefined)[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      authorizations.push(request.headers.authorization);
      response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error_code: 40101, message: 'Unauthorized' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends basic credentials, maps 401 to REGISTRY_UNAUTHORIZED, and keeps the password out of messages', async () => {
    const client = new RegistryClient({ url, basicAuth: { username: 'ann', password: 'hunter2' }, retries: 0 });
    const error = await client.subjects().catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'REGISTRY_UNAUTHORIZED' });
    expect(authorizations.at(-1)).toBe(`Basic ${Buffer.from('ann:hunter2').toString('base64')}`);
    expect(JSON.stringify(error) + String(error)).not.toContain('hunter2');
  });

  it('takes credentials from the URL and drops them from the URL it names', async () => {
    const [scheme, rest] = url.split('//');
    const client = new RegistryClient({ url: `${scheme}//bo:s%3Acret@${rest}`, retries: 0 });
    expect(client.url).toBe(url);
    const error = await client.subjects().catch((caught: unknown) => caught);
    expect(authorizations.at(-1)).toBe(`Basic ${Buffer.from('bo:s:cret').toString('base64')}`);
    expect(String(error)).toContain('the registry refused these credentials');
    expect(JSON.stringify(error) + String(error)).not.toContain('cret');
  });

  it('without credentials says how to give them', async () => {
    const error = await new RegistryClient({ url, retries: 0 }).subjects().catch((caught: unknown) => caught);
    expect(String(error)).toContain('basic.auth.user.info.file');
    expect(authorizations.at(-1)).toBeUndefined();
  });
});
