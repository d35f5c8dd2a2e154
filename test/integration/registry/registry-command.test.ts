/**
 * `tributary registry start` as a real OS process: prints its URL, serves the API, refuses a
 * second instance on its data directory, and stops cleanly (exit 0, lock released) on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../../src/registry/store/data-dir-lock.js';
import { STATE_FILE } from '../../../src/registry/store/open-storage.js';
import { runTributary } from '../../support/cli.js';
import { cleanUp, dataDirectory, http, recordSchema, zookeeperChroot } from './registry-support.js';

const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'tributary.js');
const children: ChildProcess[] = [];

interface RegistryProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exit: Promise<number | null>;
  stderr(): string;
}

/** Starts the command and resolves with the URL it prints first. */
function startRegistryProcess(args: readonly string[]): Promise<RegistryProcess> {
  const child = spawn(process.execPath, [bin, 'registry', 'start', '--listen', '127.0.0.1:0', '--log-level', 'warn', ...args]);
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line !== undefined) resolve({ child, url: line.trim(), exit, stderr: () => stderr });
    });
    void exit.then((code) => reject(new Error(`the registry exited (${code}) before printing its URL: ${stderr}`)));
  });
}

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await cleanUp();
});

describe('tributary registry start', () => {
  it('serves the API on the printed URL and stops cleanly on SIGTERM', async () => {
    const dataDir = dataDirectory();
    const registry = await startRegistryProcess(['--data-dir', dataDir]);
    expect(registry.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await http(registry.url, 'GET', '/')).toEqual({ status: 200, json: {} });
    expect((await http(registry.url, 'POST', '/subjects/s/versions', { schema: recordSchema('S', ['x']) })).json).toEqual({ id: 1 });
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(true);

    registry.child.kill('SIGTERM');
    expect(await registry.exit).toBe(0);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    expect(existsSync(join(dataDir, STATE_FILE))).toBe(true);
  });

  it('runs on ZooKeeper with --zookeeper', async () => {
    const registry = await startRegistryProcess(['--zookeeper', zookeeperChroot()]);
    expect((await http(registry.url, 'POST', '/subjects/s/versions', { schema: recordSchema('S', ['x']) })).json).toEqual({ id: 1 });
    registry.child.kill('SIGTERM');
    expect(await registry.exit).toBe(0);
  });

  it('refuses a second instance on the same data directory, naming the first', async () => {
    const dataDir = dataDirectory();
    const first = await startRegistryProcess(['--data-dir', dataDir]);
    const second = await runTributary(['registry', 'start', '--listen', '127.0.0.1:0', '--data-dir', dataDir]);
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`another registry (pid ${first.child.pid}) is using the data directory`);
    expect(await http(first.url, 'GET', '/')).toEqual({ status: 200, json: {} });
  });

  it('says where state must go when given neither --zookeeper nor --data-dir', async () => {
    const result = await runTributary(['registry', 'start', '--listen', '127.0.0.1:0']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('give --zookeeper HOST:PORT[/chroot]');
    expect(result.stdout).toBe('');
  });
});
