/**
 * Keeps `npm run bench:vs-kafka` working: runs it in smoke mode (tiny sizes, one round, Apache
 * Kafka 3.9.1 then a Tributary broker, never both at once; then a 3-broker cluster of each for the
 * replication scenario, with a 3 s session timeout) and checks only that it finished and
 * printed a Tributary ÷ Kafka row for every scenario. It asserts nothing about speed: on a shared
 * machine the figures of a smoke run mean nothing.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SCENARIOS } from '../bench/vs-kafka/options.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outDir = mkdtempSync(join(tmpdir(), 'tributary-bench-smoke-out-'));
const TIMEOUT_MS = 20 * 60_000;

afterAll(() => {
  rmSync(outDir, { recursive: true, force: true });
});

function runSmoke(): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test', 'bench', 'vs-kafka.ts'), '--smoke'], {
      cwd: root,
      env: { ...process.env, BENCH_OUT: outDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGINT'), TIMEOUT_MS - 30_000);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') });
    });
  });
}

describe('bench:vs-kafka --smoke', () => {
  it('finishes and prints a Tributary ÷ Kafka ratio row for every scenario', async () => {
    const { status, stdout, stderr } = await runSmoke();
    const context = `exit ${String(status)}\n--- stdout (end):\n${stdout.slice(-6000)}\n--- stderr (end):\n${stderr.slice(-3000)}`;
    expect(status, context).toBe(0);
    const missing = SCENARIOS.filter((scenario) => !new RegExp(`^${scenario}\\s+\\|.*\\|\\s*\\d+\\.\\d+×\\s*$`, 'm').test(stdout));
    expect(missing, context).toEqual([]);
    expect(stdout, context).toMatch(/^\| produce, batch 50 \(Java ProducerPerformance\) \|.*×/m); // the README headline table
    // Each consume figure also says what the broker process spent on it (from /proc/<pid>/stat).
    expect(stdout, context).toMatch(/consume\.kcat .*"broker CPU s per 1M records":\d/);
    // Idempotent produce (issue #17): what idempotence costs, per broker.
    expect(stdout, context).toMatch(/idempotent ÷ non-idempotent produce on tributary: .* = \d+\.\d+×/);
    // Replication: three brokers of each, the failover time on both, and what each side fsyncs.
    expect(stdout, context).toMatch(/^replication\s+\| leader SIGKILL → first acks=all write .*\|\s*\d+\.\d+×\s*$/m);
    expect(stdout, context).toMatch(/^replication: Kafka keeps its default flush settings and does not fsync/m);
    expect(existsSync(join(outDir, 'benchmarks.md')), context).toBe(true);
    expect(existsSync(join(outDir, 'charts', 'vs-kafka.json')), context).toBe(true);
  }, TIMEOUT_MS);
});
