/**
 * Redis with a password (`requirepass`) and an ACL user, started by this test (the shared test
 * Redis has none): the BullMQ connection options of the worker and scheduler carry the
 * credentials from the TRIBUTARY_REDIS_* environment, a connection without them gets NOAUTH, and
 * `tributary worker` started with TRIBUTARY_REDIS_PASSWORD_FILE connects and is seen by BullMQ;
 * over `rediss://` the server's certificate is checked against TRIBUTARY_REDIS_CA_FILE.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES, redisConnection } from '../../../jobs/src/queues.js';
import { redisCredentialsFrom } from '../../../src/cli/service-credentials.js';
import { redisClientOptions } from '../../../src/common/redis-options.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { testCertificates } from '../../support/certificates.js';

const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'tributary.js');
const poll = { timeout: 30_000, interval: 200 };
let folder: string;
let redis: ChildProcess;
let url: string;
let tlsUrl: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tributary-redis-auth-'));
  const [port, tlsPort] = [await freePort(), await freePort()];
  url = `redis://${LOOPBACK}:${port}`;
  tlsUrl = `rediss://${LOOPBACK}:${tlsPort}`;
  const certs = testCertificates();
  redis = spawn('redis-server', [
    '--port', String(port), '--bind', LOOPBACK, '--dir', folder, '--save', '', '--appendonly', 'no',
    '--tls-port', String(tlsPort), '--tls-cert-file', certs.brokerCert, '--tls-key-file', certs.brokerKey,
    '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no',
    // One argv element per ACL rule: redis-server quotes each element as one token.
    '--requirepass', 'default-pw', '--user', 'etl', 'on', '>etl-pw', '~*', '&*', '+@all',
  ], { stdio: 'ignore' });
  const probe = new Redis(url, { password: 'default-pw', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
  // Refusals until the server is up are expected; each ping reports its own.
  probe.on('error', () => undefined);
  try {
    // expect.poll is for tests only; a bounded wait for the server to answer.
    for (let attempt = 0; (await probe.ping().catch(() => 'down')) !== 'PONG'; attempt++) {
      if (attempt >= 100) throw new Error('redis-server did not answer PING within about 20 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    probe.disconnect();
  }
});

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  redis.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

async function ping(credentials: { username?: string; password?: string; ca?: Buffer }, at = url): Promise<string> {
  const client = new Redis(at, { ...redisClientOptions(at, credentials), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // A refusal comes back from ping(); a failed TLS handshake only as an error event.
  let connectionError = '';
  client.on('error', (error: Error) => (connectionError = error.message));
  try {
    return await client.ping();
  } catch (error) {
    return `${(error as Error).message} ${connectionError}`.trim();
  } finally {
    client.disconnect();
  }
}

describe('Redis credentials', () => {
  it('reads them from the environment: requirepass, or an ACL user with a password file', async () => {
    writeFileSync(join(folder, 'etl-password'), 'etl-pw\n');
    expect(redisCredentialsFrom({})).toEqual({});
    expect(await ping(redisCredentialsFrom({ TRIBUTARY_REDIS_PASSWORD: 'default-pw' }))).toBe('PONG');
    expect(await ping(redisCredentialsFrom({ TRIBUTARY_REDIS_USERNAME: 'etl', TRIBUTARY_REDIS_PASSWORD_FILE: join(folder, 'etl-password') }))).toBe('PONG');
    expect(await ping({})).toMatch(/NOAUTH/);
    expect(await ping({ username: 'etl', password: 'wrong' })).toMatch(/WRONGPASS/);
  });

  it('checks a rediss:// server against TRIBUTARY_REDIS_CA_FILE', async () => {
    const env = { TRIBUTARY_REDIS_PASSWORD: 'default-pw', TRIBUTARY_REDIS_CA_FILE: testCertificates().ca };
    expect(await ping(redisCredentialsFrom(env), tlsUrl)).toBe('PONG');
    expect(await ping({ password: 'default-pw' }, tlsUrl)).toMatch(/certificate/i);
    const queue = new Queue('tls-test', { connection: redisConnection(tlsUrl, '--redis', redisCredentialsFrom(env)), prefix: 'creds-tls' });
    try {
      await queue.add('job', { n: 1 });
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
  });

  it('gives BullMQ the credentials with the URL', async () => {
    const queue = new Queue('credentials-test', { connection: redisConnection(url, '--redis', { password: 'default-pw' }), prefix: 'creds' });
    try {
      await queue.add('job', { n: 1 });
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
  });

  it('`tributary worker` connects with TRIBUTARY_REDIS_USERNAME and TRIBUTARY_REDIS_PASSWORD_FILE', async () => {
    writeFileSync(join(folder, 'etl-password'), 'etl-pw\n');
    const worker = spawn(process.execPath, [bin, 'worker', '--redis', url, '--prefix', 'creds-worker', '--id', 'creds-test', '--log-level', 'warn'], {
      env: { ...process.env, TRIBUTARY_REDIS_USERNAME: 'etl', TRIBUTARY_REDIS_PASSWORD_FILE: join(folder, 'etl-password') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(worker);
    let out = '';
    worker.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await expect.poll(() => out, poll).toContain('worker creds-test: working on');
    const queue = new Queue(QUEUE_NAMES.tasks, { connection: redisConnection(url, '--redis', { password: 'default-pw' }), prefix: 'creds-worker' });
    try {
      await expect.poll(async () => (await queue.getWorkers()).length, poll).toBeGreaterThan(0);
    } finally {
      await queue.close();
    }
    worker.kill('SIGTERM');
    expect(await new Promise((resolve) => worker.once('exit', resolve))).toBe(0);
  });
});
