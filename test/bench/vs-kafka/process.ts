/**
 * Runs one client program (a Kafka Java tool or kcat) to the end, in its own process group recorded
 * in the run's pid folder (so the run's guardian stops it if the benchmark dies), and times what it
 * printed: spawn, first and last stdout chunk, exit. Consumers' output is counted, not kept.
 */
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Writable } from 'node:stream';
import { javaCommand, javaEnvironment } from '../../services/java.js';
import type { ServiceRun } from '../../services/run-dir.js';

export interface ProcessRun {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Whole stdout when `keepStdout`, else its last 4 KiB. */
  readonly stdout: string;
  readonly stderr: string;
  /** Newlines printed on stdout. */
  readonly lines: number;
  /** performance.now() at spawn, at the first and last stdout chunk, at exit. */
  readonly spawnedAt: number;
  readonly firstOutputAt: number | undefined;
  readonly lastOutputAt: number | undefined;
  readonly exitedAt: number;
  /** Newlines in the first stdout chunk (printed before `firstOutputAt`). */
  readonly firstChunkLines: number;
  /** True when `stopWhen` matched and the process was killed on purpose. */
  readonly stoppedEarly: boolean;
}

export interface ProcessOptions {
  readonly run: ServiceRun;
  readonly label: string;
  readonly timeoutMs: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly keepStdout?: boolean;
  /** Writes the process's standard input (then it is closed); none when absent. */
  readonly feed?: (stdin: Writable) => Promise<void>;
  /** Checked on the kept stdout after each chunk; true kills the process group (the tool has printed what we need). */
  readonly stopWhen?: (stdout: string) => boolean;
}

let sequence = 0;
const TAIL = 4096;

export function runProcess(command: string, args: readonly string[], options: ProcessOptions): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const spawnedAt = performance.now();
    const child = spawn(command, [...args], { env: options.env ?? process.env, cwd: options.run.dir, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const pid = child.pid;
    sequence += 1;
    const pidFile = join(options.run.pidDir, `bench-client-${process.pid}-${sequence}.pid`);
    if (pid !== undefined) writeFileSync(pidFile, `${pid}\n`);
    const kill = (): void => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    let stdout = '';
    const stderr: Buffer[] = [];
    let lines = 0;
    let firstOutputAt: number | undefined;
    let lastOutputAt: number | undefined;
    let firstChunkLines = 0;
    let stoppedEarly = false;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      const now = performance.now();
      let count = 0;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) count += 1;
      lines += count;
      if (firstOutputAt === undefined) {
        firstOutputAt = now;
        firstChunkLines = count;
      }
      lastOutputAt = now;
      if (options.keepStdout === true || options.stopWhen !== undefined) stdout += chunk.toString('utf8');
      else stdout = (stdout + chunk.toString('latin1')).slice(-TAIL);
      if (options.stopWhen !== undefined && !stoppedEarly && options.stopWhen(stdout)) {
        stoppedEarly = true;
        kill();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      rmSync(pidFile, { force: true });
      reject(new Error(`could not run ${command} (${options.label}): ${error.message}`));
    });
    child.once('close', (status, signal) => {
      const exitedAt = performance.now();
      clearTimeout(timer);
      rmSync(pidFile, { force: true });
      const stderrText = Buffer.concat(stderr).toString('utf8');
      if (timedOut) {
        reject(new Error(`${options.label} did not finish in ${options.timeoutMs / 1000} s (killed).\nstderr (end):\n${stderrText.slice(-3000)}\nstdout (end):\n${stdout.slice(-1000)}`));
        return;
      }
      resolve({ status, signal, stdout, stderr: stderrText, lines, spawnedAt, firstOutputAt, lastOutputAt, exitedAt, firstChunkLines, stoppedEarly });
    });
    child.stdin.on('error', () => {}); // a process may exit before reading all its input; its exit status tells
    if (options.feed === undefined) child.stdin.end();
    else {
      options.feed(child.stdin).then(
        () => child.stdin.end(),
        (error: unknown) => {
          kill();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    }
  });
}

/** A failed run as text for error messages. */
export function describeProcess(label: string, run: ProcessRun): string {
  return `${label}: exit ${String(run.status ?? run.signal)}\n--- stderr (end):\n${run.stderr.slice(-3000)}\n--- stdout (end):\n${run.stdout.slice(-1500)}`;
}

/** Throws unless the run exited 0 (or was stopped on purpose). */
export function expectSuccess(label: string, run: ProcessRun): ProcessRun {
  if (run.status !== 0 && !run.stoppedEarly) throw new Error(describeProcess(label, run));
  return run;
}

// ---- Java ------------------------------------------------------------------------------------

/** JVM options of Kafka's bin/kafka-run-class.sh (KAFKA_JVM_PERFORMANCE_OPTS), used for the broker and the tools alike. */
export const KAFKA_JVM_PERFORMANCE_OPTS = [
  '-server', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-XX:InitiatingHeapOccupancyPercent=35',
  '-XX:+ExplicitGCInvokesConcurrent', '-Djava.awt.headless=true',
];

export interface JavaOptions extends ProcessOptions {
  readonly classpathDir: string;
  readonly heap: string;
  readonly log4jFile: string;
  /**
   * Write the whole command line into this file (mode 0600) and run `java @file` (the launcher's
   * argument files): an argument holding a secret stays off the process list. Only the whole
   * command can go there — the launcher does not expand an @file among the program's arguments.
   */
  readonly argFile?: string;
}

/** A java launcher argument file's quoting: every argument in double quotes, backslash and quote escaped. */
function argFileText(args: readonly string[]): string {
  return `${args.map((arg) => `"${arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join('\n')}\n`;
}

/** `java -Xmx… <perf opts> -Dlog4j.configuration=… -cp "<dir>/*" mainClass args…`. */
export function runJava(mainClass: string, args: readonly string[], options: JavaOptions): Promise<ProcessRun> {
  const javaArgs = [
    `-Xmx${options.heap}`, ...KAFKA_JVM_PERFORMANCE_OPTS, `-Dlog4j.configuration=file:${options.log4jFile}`,
    '-cp', `${options.classpathDir}/*`, mainClass, ...args,
  ];
  if (options.argFile !== undefined) writeFileSync(options.argFile, argFileText(javaArgs), { mode: 0o600 });
  return runProcess(javaCommand(), options.argFile === undefined ? javaArgs : [`@${options.argFile}`], { ...options, env: options.env ?? javaEnvironment() });
}

/** log4j 1 configuration: WARN and above to stderr (the tools print their results on stdout). */
export const TOOLS_LOG4J = [
  'log4j.rootLogger=WARN, stderr',
  'log4j.appender.stderr=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stderr.Target=System.err',
  'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n',
  '',
].join('\n');
