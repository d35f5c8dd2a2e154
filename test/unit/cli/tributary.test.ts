/** The `tributary` command as a user runs it: the bin script, through tsx, in a child process. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import packageJson from '../../../package.json' with { type: 'json' };

const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'tributary.js');

function tributary(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

// Each test starts the command through tsx: seconds on a loaded 2-core machine.
describe('tributary command', { timeout: 60_000 }, () => {
  it('lists every subcommand in --help', () => {
    const { status, stdout } = tributary('--help');
    expect(status).toBe(0);
    for (const command of ['broker', 'topics', 'produce', 'consume', 'registry', 'mirror', 'audit', 'etl', 'worker', 'scheduler', 'demo']) {
      expect(stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });

  it('prints the package version', () => {
    expect(tributary('--version').stdout.trim()).toBe(packageJson.version);
  });

  it('answers a failing command with status 1 and a message that says what was wrong and what to do', () => {
    const { status, stdout, stderr } = tributary('etl', 'plan', '--load', '/nonexistent/load.yaml');
    expect(status).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('cannot read load file /nonexistent/load.yaml');
    expect(stderr).toContain('Pass --load with the path of a load YAML file');
    expect(stderr).toContain('[CONFIG_INVALID]');
  });

  it('rejects an unknown command with status 1 and the usage', () => {
    const { status, stderr } = tributary('frobnicate');
    expect(status).toBe(1);
    expect(stderr).toContain("unknown command 'frobnicate'");
    expect(stderr).toContain('Usage: tributary');
  });
});
