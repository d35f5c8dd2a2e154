/**
 * A test run killed before its teardown (SIGKILL, a CI time-out) must leave no service behind:
 * the guardian notices its owner is gone, stops the run's daemons and deletes the run folder.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { tcpExchange } from '../../services/network.js';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('service run guardian', () => {
  it('stops the daemons and deletes the folder of a run whose owner was killed', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'tributary-guardian-'));
    const owner = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'own-a-run.ts'), runDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const firstLine = await new Promise<string>((resolve, reject) => {
      createInterface({ input: owner.stdout }).once('line', resolve);
      owner.once('exit', (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    const { redisPid, redisPort } = JSON.parse(firstLine) as { redisPid: number; redisPort: number };
    expect(await tcpExchange(redisPort, 'PING\r\n', { firstLineOnly: true })).toBe('+PONG\r\n');

    owner.kill('SIGKILL');
    await expect.poll(() => isAlive(redisPid), { timeout: 20_000, interval: 200 }).toBe(false);
    await expect.poll(() => existsSync(runDir), { timeout: 20_000, interval: 200 }).toBe(false);
  });
});
