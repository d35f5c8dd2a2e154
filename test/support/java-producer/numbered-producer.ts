/**
 * Runs NumberedProducer.java (Apache Kafka's Java producer from the kafka-tools jars, in Java's
 * source-file mode: no build step) and follows its progress while it runs, so a test can inject
 * faults at chosen points of the stream. The JVM runs in its own process group recorded in the
 * run's pid folder (the run's guardian stops it if the test process dies); its log (WARN and up,
 * which is plenty under faults) goes to a file, not into memory.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { javaCommand, javaEnvironment } from '../../services/java.js';
import { KAFKA_TOOLS_LOG4J } from '../java.js';

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'NumberedProducer.java');


export interface NumberedProducerOptions {
  readonly kafkaToolsDir: string;
  /** A guarded run folder (its `pids/` is watched by the run's guardian). */
  readonly runDir: string;
  /** Names the log file and pid file. */
  readonly name: string;
  readonly bootstrap: string;
  readonly topic: string;
  readonly count: number;
  /** Producer settings on top of the client's defaults. */
  readonly settings?: Record<string, string>;
  /** Called with the number of acknowledged records, every 5,000. */
  readonly onAcked?: (acked: number) => void;
  readonly timeoutMs: number;
}

export interface NumberedProducerResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly partitions: number;
  readonly acked: number;
  /** Numbers of the records whose send failed (they may or may not be stored). */
  readonly failed: number[];
  /** The first few failure lines, for messages. */
  readonly failures: string[];
  /** The producer's own time from first send to flushed, ms. */
  readonly ms: number;
  readonly logFile: string;
  readonly done: boolean;
  /**
   * Produce errors the producer logged and retried, by error name, e.g. NETWORK_EXCEPTION (a
   * dropped connection), OUT_OF_ORDER_SEQUENCE_NUMBER (which makes the idempotent producer bump
   * its epoch).
   */
  readonly retriedErrors: Record<string, number>;
}

/** Counts the "Got error produce response … retrying … Error: NAME" lines of the producer's log. */
function retriedErrors(logFile: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const match of readFileSync(logFile, 'utf8').matchAll(/Got error produce response .*? retrying .*?Error: ([A-Z_]+)/g)) {
    const name = match[1] ?? '?';
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

export function runNumberedProducer(options: NumberedProducerOptions): Promise<NumberedProducerResult> {
  const folder = join(options.runDir, 'numbered-producer');
  mkdirSync(join(options.runDir, 'pids'), { recursive: true });
  mkdirSync(folder, { recursive: true });
  const log4j = join(folder, 'log4j.properties');
  writeFileSync(log4j, KAFKA_TOOLS_LOG4J);
  const logFile = join(folder, `${options.name}.log`);
  const settings = Object.entries(options.settings ?? {}).map(([key, value]) => `${key}=${value}`);
  const args = ['-Xmx512m', `-Dlog4j.configuration=file:${log4j}`, '-cp', `${options.kafkaToolsDir}/*`, SOURCE, options.bootstrap, options.topic, String(options.count), ...settings];
  const logFd = openSync(logFile, 'a');
  const child = spawn(javaCommand(), args, { env: javaEnvironment(), cwd: folder, detached: true, stdio: ['ignore', 'pipe', logFd] });
  closeSync(logFd);
  const pidFile = join(options.runDir, 'pids', `numbered-producer-${options.name}-${process.pid}.pid`);
  if (child.pid !== undefined) writeFileSync(pidFile, `${child.pid}\n`);

  let partitions = 0;
  let acked = 0;
  let ms = 0;
  let done = false;
  const failed: number[] = [];
  const failures: string[] = [];
  if (child.stdout === null) throw new Error('the producer JVM has no stdout pipe');
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [word, rest = ''] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
    if (word === 'acked') {
      acked = Number(rest);
      options.onAcked?.(acked);
    } else if (word === 'failed') {
      failed.push(Number(rest.slice(0, rest.indexOf(' '))));
      if (failures.length < 10) failures.push(line);
    } else if (word === 'partitions') {
      partitions = Number(rest);
    } else if (word === 'done') {
      const totals = JSON.parse(rest) as { acked: number; ms: number; partitions: number };
      acked = totals.acked;
      ms = totals.ms;
      partitions = totals.partitions;
      done = true;
    }
  });

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }, options.timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      rmSync(pidFile, { force: true });
      reject(new Error(`could not run ${javaCommand()}: ${error.message}`));
    });
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      rmSync(pidFile, { force: true });
      resolve({ status, signal, partitions, acked, failed, failures, ms, logFile, done, retriedErrors: retriedErrors(logFile) });
    });
  });
}
