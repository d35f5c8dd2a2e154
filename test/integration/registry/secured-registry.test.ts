/**
 * The registry over HTTPS with basic authentication, as real clients meet it: curl,
 * @kafkajs/confluent-schema-registry (an independent Confluent-API client, with its `auth` and
 * an https agent), our RegistryClient, and `tributary registry start|user-line` + `tributary
 * schemas --command-config` as OS processes. Also client certificates, and that a plaintext
 * client or one that does not trust the CA gets nothing.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { userLine } from '../../../src/registry/auth/users-file.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { testCertificates, type TestCertificates } from '../../support/certificates.js';
import { runTributary } from '../../support/cli.js';
import { cleanUp, dataDirectory, recordSchema, silent } from './registry-support.js';

const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'tributary.js');
const userV1 = recordSchema('User', ['name']);
let certs: TestCertificates;
let usersFolder: string;
let usersFile: string;
const running: RunningRegistry[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  certs = testCertificates();
  usersFolder = mkdtempSync(join(tmpdir(), 'tributary-registry-users-'));
  usersFile = join(usersFolder, 'registry-users');
  const lines = await Promise.all([userLine('reader', 'read-only', 'r-pw'), userLine('writer', 'writer', 'w-pw'), userLine('admin', 'admin', 'a-pw')]);
  writeFileSync(usersFile, `${lines.join('\n')}\n`);
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const registry of running.splice(0)) await registry.close();
  await cleanUp();
});

afterAll(() => rmSync(usersFolder, { recursive: true, force: true }));

async function secureRegistry(clientAuth: 'none' | 'required' = 'none'): Promise<RunningRegistry> {
  const registry = await startRegistryServer({
    host: '127.0.0.1',
    port: 0,
    dataDir: dataDirectory(),
    logger: silent,
    tls: { certFile: certs.brokerCert, keyFile: certs.brokerKey, caFile: certs.ca, clientAuth },
    usersFile,
  });
  running.push(registry);
  return registry;
}

/** curl with the credentials in a config read from stdin (not in its argv). */
function curl(args: readonly string[], user?: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile('curl', ['-sS', '-K', '-', '-w', '\n%{http_code}', ...args], (error, out, err) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), out, err }));
    child.stdin?.end(user === undefined ? '' : `user = "${user}"\n`);
  });
}

describe('the registry over HTTPS with basic authentication', () => {
  it('curl: 401 without credentials, 403 for a reader registering, 200 for a writer', async () => {
    const registry = await secureRegistry();
    expect(registry.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const post = ['--cacert', certs.ca, '-H', 'content-type: application/vnd.schemaregistry.v1+json', '-d', JSON.stringify({ schema: userV1 }), `${registry.url}/subjects/users-value/versions`];

    const anonymous = await curl(['-i', `${registry.url}/subjects`, '--cacert', certs.ca]);
    expect(anonymous.out).toMatch(/^HTTP\/1\.1 401/);
    expect(anonymous.out).toMatch(/www-authenticate: Basic realm="tributary-registry"/i);
    expect(anonymous.out).toContain('"error_code":40101');

    expect((await curl(post, 'reader:r-pw')).out).toMatch(/"error_code":40301.*\n403$/s);
    expect((await curl(post, 'writer:w-pw')).out).toBe('{"id":1}\n200');
    expect((await curl(['--cacert', certs.ca, `${registry.url}/subjects`], 'reader:r-pw')).out).toBe('["users-value"]\n200');
    // Without the CA curl does not trust the certificate; plain HTTP gets no API answer.
    expect((await curl([`${registry.url}/subjects`], 'reader:r-pw')).code).not.toBe(0);
    expect((await curl([`${registry.url.replace('https', 'http')}/subjects`], 'reader:r-pw')).out).not.toContain('users-value');
  });

  it('@kafkajs/confluent-schema-registry registers, encodes and decodes with auth over HTTPS', async () => {
    const registry = await secureRegistry();
    const agent = new Agent({ ca: readFileSync(certs.ca) });
    const writer = new SchemaRegistry({ host: registry.url, auth: { username: 'writer', password: 'w-pw' }, agent });
    // Its first registration sets the subject's level (PUT /config/s): an admin's right.
    const admin = new SchemaRegistry({ host: registry.url, auth: { username: 'admin', password: 'a-pw' }, agent });
    const { id } = await admin.register({ type: SchemaType.AVRO, schema: userV1 }, { subject: 'users-value' });
    const encoded = await writer.encode(id, { name: 'ann' });
    const reader = new SchemaRegistry({ host: registry.url, auth: { username: 'reader', password: 'r-pw' }, agent });
    expect(await reader.decode(encoded)).toEqual({ name: 'ann' });
    await expect(new SchemaRegistry({ host: registry.url, agent }).decode(encoded)).rejects.toMatchObject({ status: 401 });
    await expect(
      reader.register({ type: SchemaType.AVRO, schema: recordSchema('Other', ['x']) }, { subject: 'other-value' }),
    ).rejects.toMatchObject({ status: 403 });
  });

  it('RegistryClient with the CA and credentials; without the CA it fails on the certificate', async () => {
    const registry = await secureRegistry();
    const ca = readFileSync(certs.ca);
    const writer = new RegistryClient({ url: registry.url, basicAuth: { username: 'writer', password: 'w-pw' }, tls: { ca }, retries: 0 });
    expect(await writer.register('users-value', userV1)).toEqual({ id: 1 });
    await expect(writer.setConfig('NONE', 'users-value')).rejects.toMatchObject({ code: 'REGISTRY_FORBIDDEN' });
    const stranger = new RegistryClient({ url: registry.url, basicAuth: { username: 'writer', password: 'w-pw' }, retries: 0 });
    await expect(stranger.subjects()).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE', message: expect.stringMatching(/certificate/) as unknown });
  });

  it('asks for a client certificate when told to, and takes one signed by the CA', async () => {
    const registry = await secureRegistry('required');
    const ca = readFileSync(certs.ca);
    const keystore = readFileSync(certs.client);
    const auth = { username: 'reader', password: 'r-pw' };
    await expect(new RegistryClient({ url: registry.url, basicAuth: auth, tls: { ca }, retries: 0 }).subjects()).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
    expect(await new RegistryClient({ url: registry.url, basicAuth: auth, tls: { ca, cert: keystore, key: keystore }, retries: 0 }).subjects()).toEqual([]);
  });
});

describe('tributary registry start with --tls-cert and --users-file', () => {
  it('serves HTTPS to `schemas --command-config`, and takes a user added by user-line without a restart', async () => {
    const folder = dataDirectory();
    const child = spawn(process.execPath, [
      bin, 'registry', 'start', '--listen', '127.0.0.1:0', '--log-level', 'warn', '--data-dir', folder,
      '--tls-cert', certs.brokerCert, '--tls-key', certs.brokerKey, '--users-file', usersFile,
    ]);
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]!.trim());
      });
      child.once('exit', (code) => reject(new Error(`registry exited ${code}: ${err}`)));
    });
    expect(url).toMatch(/^https:\/\//);

    const schemaFile = join(folder, 'user.avsc');
    writeFileSync(schemaFile, userV1);
    const properties = (name: string): string => {
      writeFileSync(join(folder, `${name}.user-info`), `${name}:${name === 'carl' ? 'c-pw' : 'w-pw'}\n`);
      const file = join(folder, `${name}.properties`);
      writeFileSync(file, `basic.auth.credentials.source=USER_INFO\nbasic.auth.user.info.file=${name}.user-info\nschema.registry.ssl.truststore.location=${certs.ca}\n`);
      return file;
    };
    const register = await runTributary(['schemas', 'register', '--registry', url, '--command-config', properties('writer'), '--subject', 'users-value', '--file', schemaFile]);
    expect(register.stderr).toBe('');
    expect(register.stdout).toBe('schema id 1 is version 1 of subject users-value\n');

    const anonymousConfig = join(folder, 'anonymous.properties');
    writeFileSync(anonymousConfig, `schema.registry.ssl.truststore.location=${certs.ca}\n`);
    const anonymous = await runTributary(['schemas', 'list', '--registry', url, '--command-config', anonymousConfig]);
    expect(anonymous.status).toBe(1);
    expect(anonymous.stderr).toContain('[REGISTRY_UNAUTHORIZED]');

    const line = await runTributary(['registry', 'user-line', 'carl', '--role', 'admin'], 'c-pw\n');
    expect(line.status).toBe(0);
    expect(line.stdout).toMatch(/^carl:admin:scrypt\$/);
    expect(line.stdout + line.stderr).not.toContain('c-pw');
    appendFileSync(usersFile, line.stdout);
    child.kill('SIGHUP');
    // The file watch or the SIGHUP picks the new user up; wait for it, boundedly.
    let config: Awaited<ReturnType<typeof runTributary>> | undefined;
    for (let attempt = 0; attempt < 20; attempt++) {
      config = await runTributary(['schemas', 'config', '--registry', url, '--command-config', properties('carl'), '--level', 'FULL']);
      if (config.status === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(config?.stdout).toContain('FULL');
    child.kill('SIGTERM');
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
  });
});
