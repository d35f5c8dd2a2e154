/**
 * A service run: one folder holding every service's data, configs and logs, plus `pids/`, where
 * each running daemon leaves a file named `<name>.pid` holding its process-group id. The guardian
 * (guardian.mjs) and `stopRun` read that folder, so nothing started in a run outlives it.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopProcessGroup } from './process.js';

export interface ServiceRun {
  readonly dir: string;
  readonly pidDir: string;
}

export function openRun(dir: string): ServiceRun {
  const pidDir = join(dir, 'pids');
  mkdirSync(pidDir, { recursive: true });
  return { dir, pidDir };
}

export function createTemporaryRun(prefix = 'tributary-test-'): ServiceRun {
  return openRun(mkdtempSync(join(tmpdir(), prefix)));
}

/** The service folder `<run>/<name>`, created empty. */
export function serviceDir(run: ServiceRun, name: string): string {
  const dir = join(run.dir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Process-group ids of the daemons recorded in the run, by pid-file name. */
export function recordedDaemons(run: ServiceRun): Map<string, number> {
  const daemons = new Map<string, number>();
  let files: string[];
  try {
    files = readdirSync(run.pidDir);
  } catch {
    return daemons;
  }
  for (const file of files) {
    if (!file.endsWith('.pid')) continue;
    const pid = Number(readFileSync(join(run.pidDir, file), 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0) daemons.set(file.slice(0, -'.pid'.length), pid);
  }
  return daemons;
}

/** Stops every daemon still recorded in the run, then deletes the run folder. */
export async function stopRun(run: ServiceRun, { keepDir = false } = {}): Promise<void> {
  await Promise.all([...recordedDaemons(run).values()].map((pid) => stopProcessGroup(pid)));
  if (!keepDir) rmSync(run.dir, { recursive: true, force: true });
}

/**
 * Starts a detached watchdog that stops the run's daemons and deletes its folder as soon as
 * `ownerPid` is gone — the safety net for a test run killed before its teardown could run.
 */
export function startGuardian(run: ServiceRun, ownerPid = process.pid): void {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'guardian.mjs');
  const guardian = spawn(process.execPath, [script, String(ownerPid), run.dir], {
    detached: true,
    stdio: 'ignore',
  });
  guardian.unref();
}
