/**
 * Daemons for the test services: each runs in its own process group (so a stop reaches any
 * children it forks), writes stdout and stderr to a log file, and is recorded in the run's pid
 * folder until it has stopped.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceRun } from './run-dir.js';

export interface Daemon {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal name) once the process has ended. */
  readonly exited: Promise<number | string>;
  hasExited(): boolean;
  /** SIGTERM to the process group, SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** Sends a signal to the process group without waiting (fault tests: SIGKILL, SIGSTOP, SIGCONT). */
  signal(signal: NodeJS.Signals): void;
}

export interface DaemonOptions {
  readonly run: ServiceRun;
  /** Unique within the run; names the pid file. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

export function startDaemon(options: DaemonOptions): Daemon {
  const logFd = openSync(options.logFile, 'a');
  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd ?? options.run.dir,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${options.name}: ${options.command} did not spawn`);
  // The daemon must not keep the owner's event loop alive; `exited` still fires.
  child.unref();

  const pidFile = join(options.run.pidDir, `${options.name}.pid`);
  writeFileSync(pidFile, `${pid}\n`);
  let exitedFlag = false;
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedFlag = true;
      rmSync(pidFile, { force: true });
      resolve(code ?? signal ?? 'unknown');
    });
    child.once('error', (error) => {
      exitedFlag = true;
      rmSync(pidFile, { force: true });
      resolve(`spawn error: ${error.message}`);
    });
  });

  return {
    name: options.name,
    pid,
    logFile: options.logFile,
    exited,
    hasExited: () => exitedFlag,
    stop: (graceMs) => stopProcessGroup(pid, { exited, graceMs }),
    signal: (signal) => signalGroup(pid, signal),
  };
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Stops a process group: SIGTERM, then SIGKILL after the grace period. With `exited` (the child
 * is ours) it waits on the exit event; otherwise it polls, which also works from another process.
 */
export async function stopProcessGroup(
  pid: number,
  { exited, graceMs = 10_000 }: { exited?: Promise<unknown>; graceMs?: number | undefined } = {},
): Promise<void> {
  const gone = exited ?? pollUntilGone(pid);
  signalGroup(pid, 'SIGCONT'); // a SIGSTOPped daemon cannot act on SIGTERM
  signalGroup(pid, 'SIGTERM');
  // The grace timer is cancelled once the group is gone: a pending timer would hold the event loop
  // (and a whole benchmark or tool) open for the rest of the grace period.
  const grace = new AbortController();
  const stopped = await Promise.race([gone.then(() => true), sleep(graceMs, false, { signal: grace.signal }).catch(() => false)]);
  grace.abort();
  if (!stopped) {
    signalGroup(pid, 'SIGKILL');
    const last = new AbortController();
    await Promise.race([gone, sleep(5_000, undefined, { signal: last.signal }).catch(() => undefined)]);
    last.abort();
  }
}

async function pollUntilGone(pid: number): Promise<void> {
  while (isAlive(pid)) await sleep(100);
}

/** The last lines of a log file, for error messages. */
export function logTail(file: string, lines = 30): string {
  if (!existsSync(file)) return '(no log written)';
  const text = readFileSync(file, 'utf8').trimEnd();
  return text.split('\n').slice(-lines).join('\n');
}

export interface WaitOptions {
  /** What is awaited, for the error message: "ZooKeeper on 127.0.0.1:2181 to serve requests". */
  readonly what: string;
  readonly timeoutMs: number;
  readonly intervalMs?: number;
  /** Daemons whose early exit ends the wait at once, with their log in the error. */
  readonly daemons?: readonly Daemon[];
}

/** Polls `probe` until it returns true; fails with the daemons' log tails on exit or timeout. */
export async function waitUntil(probe: () => Promise<boolean>, options: WaitOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const daemons = options.daemons ?? [];
  for (;;) {
    const dead = daemons.find((daemon) => daemon.hasExited());
    if (dead !== undefined) {
      throw new Error(
        `${dead.name} exited (${String(await dead.exited)}) while waiting for ${options.what}.\n` +
          `Last lines of ${dead.logFile}:\n${logTail(dead.logFile)}`,
      );
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) {
      const logs = daemons.map((d) => `--- ${d.logFile}\n${logTail(d.logFile)}`).join('\n');
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}.\n${logs}`);
    }
    await sleep(options.intervalMs ?? 200);
  }
}
