/**
 * A long-running client (a group member: kcat -G, a kafkajs member script, a Java consumer) as a
 * child process in its own process group, recorded in the run's pid folder so the run's guardian
 * stops it if the test process dies. What it prints is collected: stdout as lines, stderr whole.
 * With `input: true` its stdin is a pipe the test writes to (a producer fed line by line).
 */
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitUntil } from '../services/process.js';
import type { ServiceRun } from '../services/run-dir.js';

export interface LineProcess {
  readonly name: string;
  readonly pid: number;
  /** Complete stdout lines printed so far (a partial last line is held back). */
  readonly lines: string[];
  /** Everything printed to stderr so far. */
  stderr(): string;
  hasExited(): boolean;
  /** Resolves with the exit code, or the signal's name. */
  readonly exited: Promise<number | string>;
  /** Sends a signal to the process group. */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL, and waits until it is gone. */
  kill(): Promise<void>;
  /** SIGTERM (a clean close: commit and leave), SIGKILL after `graceMs`; resolves with how it ended. */
  stop(graceMs?: number): Promise<number | string>;
  /** Waits until `probe` holds, failing early (with the stderr tail) if the process exits. */
  waitFor(probe: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Writes to its stdin (started with `input: true`); ignored once the process has gone. */
  write(text: string): void;
  /** Closes its stdin (started with `input: true`): end of input. */
  endInput(): void;
}

export interface LineProcessOptions {
  readonly run: ServiceRun;
  /** Unique within the run; names the pid file. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Give it a stdin pipe (`write`, `endInput`); default false: stdin is /dev/null. */
  readonly input?: boolean;
}

export function startLineProcess(options: LineProcessOptions): LineProcess {
  const common = { cwd: options.cwd ?? options.run.dir, env: options.env ?? process.env, detached: true };
  const child =
    options.input === true
      ? spawn(options.command, [...options.args], { ...common, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(options.command, [...options.args], { ...common, stdio: ['ignore', 'pipe', 'pipe'] });
  // A process that exits before reading all its input must not crash the test with EPIPE.
  child.stdin?.on('error', () => {});
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${options.name}: ${options.command} did not spawn`);
  const pidFile = join(options.run.pidDir, `${options.name}.pid`);
  writeFileSync(pidFile, `${pid}\n`);
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  let done = false;
  const exited = new Promise<number | string>((resolve) => {
    // 'close': the exit and the end of both pipes, so every printed line has been read.
    child.once('close', (code, signal) => {
      done = true;
      if (partial !== '') lines.push(partial);
      partial = '';
      rmSync(pidFile, { force: true });
      resolve(code ?? signal ?? 'unknown');
    });
    child.once('error', (error) => {
      done = true;
      rmSync(pidFile, { force: true });
      resolve(`spawn error: ${error.message}`);
    });
  });
  const signal = (name: NodeJS.Signals): void => {
    try {
      process.kill(-pid, name);
    } catch {
      // Already gone.
    }
  };
  const tail = (): string => stderr.split('\n').slice(-40).join('\n');
  return {
    name: options.name,
    pid,
    lines,
    stderr: () => stderr,
    hasExited: () => done,
    exited,
    signal,
    async kill() {
      signal('SIGKILL');
      await exited;
    },
    async stop(graceMs = 20_000) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      const how = await exited;
      clearTimeout(timer);
      return how;
    },
    write(text) {
      if (child.stdin === null) throw new Error(`${options.name} was started without input: true`);
      if (!done && child.stdin.writable) child.stdin.write(text);
    },
    endInput() {
      if (child.stdin === null) throw new Error(`${options.name} was started without input: true`);
      child.stdin.end();
    },
    async waitFor(probe, what, timeoutMs = 60_000) {
      try {
        await waitUntil(async () => done || probe(), { what, timeoutMs });
      } catch (error) {
        throw new Error(`${options.name}: ${(error as Error).message}\nstderr:\n${tail()}`, { cause: error });
      }
      if (!probe()) throw new Error(`${options.name} exited (${String(await exited)}) while waiting for ${what}; stderr:\n${tail()}`);
    },
  };
}
