/**
 * Runs one of Apache Kafka's Java tools (`java -cp "<kafkaToolsDir>/*" <mainClass> …`) to the end
 * and collects what it printed. The JVM logs WARN and above to stderr (a log4j 1 config written
 * into the run folder), gets -Xmx256m and a timeout, and runs in its own process group recorded in
 * the run's pid folder, so the run's guardian stops it if the test process dies.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { javaCommand, javaEnvironment } from '../services/java.js';

export interface JavaToolResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface JavaToolOptions {
  /** Folder with the Kafka tools jars and their dependencies. */
  readonly kafkaToolsDir: string;
  /** A guarded run folder (its `pids/` is watched by the run's guardian). */
  readonly runDir: string;
  readonly timeoutMs?: number;
  readonly input?: string;
}

/** Kafka's tools and clients log WARN and up to stderr (log4j 1 properties). */
export const KAFKA_TOOLS_LOG4J = [
  'log4j.rootLogger=WARN, stderr',
  'log4j.appender.stderr=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stderr.Target=System.err',
  'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n',
  '',
].join('\n');

let runs = 0;

export function runKafkaTool(mainClass: string, args: readonly string[], options: JavaToolOptions): Promise<JavaToolResult> {
  const timeoutMs = options.timeoutMs ?? 90_000;
  const log4j = join(options.runDir, 'kafka-tools-log4j.properties');
  writeFileSync(log4j, KAFKA_TOOLS_LOG4J);
  const pidDir = join(options.runDir, 'pids');
  mkdirSync(pidDir, { recursive: true });
  const javaArgs = ['-Xmx256m', `-Dlog4j.configuration=file:${log4j}`, '-cp', `${options.kafkaToolsDir}/*`, mainClass, ...args];
  const what = `${mainClass} ${args.join(' ')}`;

  return new Promise((resolve, reject) => {
    const child = spawn(javaCommand(), javaArgs, { env: javaEnvironment(), cwd: options.runDir, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const pid = child.pid;
    runs += 1;
    const pidFile = join(pidDir, `java-tool-${process.pid}-${runs}.pid`);
    if (pid !== undefined) writeFileSync(pidFile, `${pid}\n`);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const timer = setTimeout(() => {
      if (pid !== undefined) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      reject(new Error(`${what} did not finish in ${timeoutMs} ms.\nstdout:\n${Buffer.concat(stdout).toString()}\nstderr:\n${Buffer.concat(stderr).toString()}`));
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => {
      clearTimeout(timer);
      rmSync(pidFile, { force: true });
      reject(new Error(`could not run ${javaCommand()}: ${error.message}`));
    });
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      rmSync(pidFile, { force: true });
      resolve({ status, signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** The result as text for assertion messages. */
export function describeRun(result: JavaToolResult): string {
  return `exit ${String(result.status ?? result.signal)}\n--- stderr:\n${result.stderr}\n--- stdout (first 2000 chars):\n${result.stdout.slice(0, 2000)}`;
}
