/**
 * Runs one of Apache Kafka's Java tools (`java -cp "<kafkaToolsDir>/*" <mainClass> …`) to the end
 * and collects what it printed. The JVM logs WARN and above to stderr (a log4j 1 config written
 * into the run folder), gets -Xmx256m and a timeout, and runs in its own process group recorded in
 * the run's pid folder, so the run's guardian stops it if the test process dies. Long-running
 * Java services (Kafka Connect, Kafka Streams applications) start as daemons of a run instead.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { javaCommand, javaEnvironment } from '../services/java.js';
import { startDaemon, type Daemon } from '../services/process.js';
import type { ServiceRun } from '../services/run-dir.js';

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

export interface JavaServiceOptions {
  /** A guarded run (its `pids/` is watched by the run's guardian). */
  readonly run: ServiceRun;
  /** Unique within the run: names the pid file, the log file and the log4j config. */
  readonly name: string;
  /** Folder with the service's jars (class path `<jarDir>/*`). */
  readonly jarDir: string;
  readonly mainClass: string;
  readonly args: readonly string[];
  /** log4j 1 loggers and levels beyond the root's INFO, e.g. `{ 'org.reflections': 'ERROR' }`. */
  readonly loggers?: Readonly<Record<string, string>>;
  readonly heap?: string;
}

/**
 * Starts a long-running Java service (Kafka Connect, a Kafka Streams application) as a daemon of
 * the run: its own process group, INFO and up logged through log4j 1 to `<run>/<name>.log`.
 * SIGTERM (`stop`) runs its shutdown hooks, as Ctrl-C would.
 */
export function startJavaService(options: JavaServiceOptions): Daemon {
  const log4j = join(options.run.dir, `${options.name}-log4j.properties`);
  const loggers = Object.entries(options.loggers ?? {}).map(([logger, level]) => `log4j.logger.${logger}=${level}`);
  writeFileSync(log4j, `${KAFKA_TOOLS_LOG4J.replace('rootLogger=WARN', 'rootLogger=INFO')}${loggers.join('\n')}\n`);
  return startDaemon({
    run: options.run,
    name: options.name,
    command: javaCommand(),
    args: [`-Xmx${options.heap ?? '256m'}`, `-Dlog4j.configuration=file:${log4j}`, '-cp', `${options.jarDir}/*`, options.mainClass, ...options.args],
    logFile: join(options.run.dir, `${options.name}.log`),
    env: javaEnvironment(),
  });
}

/** WARN and ERROR lines of a service's log (log4j's `[date] LEVEL message (logger)` layout). */
export function warningsIn(logFile: string): string[] {
  return readFileSync(logFile, 'utf8').split('\n').filter((line) => /^\[[^\]]+\] (WARN|ERROR|FATAL) /.test(line));
}
