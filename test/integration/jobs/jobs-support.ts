/**
 * What the jobs integration tests share: `tributary worker` and `tributary scheduler` as real OS
 * processes (daemons of the service run, so nothing outlives a dead test run), the queues of a
 * test under a key prefix of its own in the real Redis, scheduled load files, and waiting for a
 * run's commit job to finish.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, type Job } from 'bullmq';
import { expect } from 'vitest';
import type { CommitJobData } from '../../../jobs/src/job-data.js';
import { QUEUE_NAMES, type QueuePurpose } from '../../../jobs/src/queues.js';
import { openRun } from '../../services/run-dir.js';
import { logTail, startDaemon, waitUntil, type Daemon } from '../../services/process.js';
import type { LoaderEnvironment, TestWarehouse } from '../etl/loader-support.js';
import { redisAddress, services, zookeeperAddress } from '../services.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = join(root, 'bin', 'tributary.js');

/** A key prefix of its own per test, so tests sharing the Redis never see each other's jobs. */
export function testPrefix(): string {
  return `tributary-test-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** The ZooKeeper of the test services, under a chroot of this test file's own. */
export function zookeeperForJobs(): string {
  return `${zookeeperAddress().connectString}/jobs-test-${process.pid}`;
}

export interface TestQueues {
  readonly prefix: string;
  readonly queues: Readonly<Record<QueuePurpose, Queue>>;
  /** Removes every job and scheduler of the test's queues from Redis. */
  dispose(): Promise<void>;
}

export function openTestQueues(prefix: string): TestQueues {
  const connection = { url: redisAddress().url, maxRetriesPerRequest: null };
  const queues = {
    runs: new Queue(QUEUE_NAMES.runs, { connection, prefix }),
    tasks: new Queue(QUEUE_NAMES.tasks, { connection, prefix }),
    commits: new Queue(QUEUE_NAMES.commits, { connection, prefix }),
    maintenance: new Queue(QUEUE_NAMES.maintenance, { connection, prefix }),
  };
  return {
    prefix,
    queues,
    async dispose() {
      for (const queue of Object.values(queues)) {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      }
    },
  };
}

export interface TributaryProcess {
  readonly daemon: Daemon;
  /** The process's stdout and stderr so far. */
  log(): string;
  /** SIGTERM; resolves with the exit code (or signal name). */
  terminate(): Promise<number | string>;
}

let processes = 0;

function startTributary(name: string, args: readonly string[], ready: string, env: Readonly<Record<string, string>> = {}): Promise<TributaryProcess> {
  processes += 1;
  const run = openRun(services().runDir);
  const logFile = join(run.dir, `${name}-${process.pid}-${processes}.log`);
  const daemon = startDaemon({ run, name: `${name}-${process.pid}-${processes}`, command: process.execPath, args: [bin, ...args], logFile, cwd: root, env: { ...process.env, ...env } });
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  return waitUntil(async () => log().includes(ready), { what: `${name} to say "${ready}"`, timeoutMs: 90_000, daemons: [daemon] }).then(() => ({
    daemon,
    log,
    async terminate() {
      daemon.signal('SIGTERM');
      return daemon.exited;
    },
  }));
}

export interface WorkerProcessOptions {
  readonly id: string;
  readonly prefix: string;
  readonly concurrency: number;
  /** After SIGTERM; default 30 s, as the command's. */
  readonly graceMs?: number;
  /** Extra environment, e.g. a failpoint. */
  readonly env?: Readonly<Record<string, string>>;
}

export function startWorkerProcess(options: WorkerProcessOptions): Promise<TributaryProcess> {
  return startTributary(
    options.id,
    [
      'worker',
      '--redis', redisAddress().url,
      '--prefix', options.prefix,
      '--zookeeper', zookeeperForJobs(),
      '--concurrency', String(options.concurrency),
      '--id', options.id,
      // A dead worker's jobs are taken over after 10 s instead of 30 s: the test stays short.
      '--lock-ms', '10000',
      '--grace-ms', String(options.graceMs ?? 30_000),
      '--log-level', 'debug',
    ],
    '"event":"worker-ready"',
    options.env,
  );
}

export function startSchedulerProcess(prefix: string, loads: string, intervalMs = 1_000): Promise<TributaryProcess> {
  return startTributary('scheduler', ['scheduler', '--redis', redisAddress().url, '--prefix', prefix, '--loads', loads, '--interval-ms', String(intervalMs)], 'scheduler: ');
}

export interface ScheduledLoadOptions {
  readonly name: string;
  readonly topic: string;
  readonly warehouse: TestWarehouse;
  readonly schedule?: string;
}

/** A load file in `folder` (one file per load, named after it). */
export async function writeScheduledLoadFile(env: LoaderEnvironment, folder: string, options: ScheduledLoadOptions): Promise<string> {
  await mkdir(folder, { recursive: true });
  const file = join(folder, `${options.name}.yaml`);
  const lines = [
    `name: ${options.name}`,
    `source: { bootstrap: [${env.broker.bootstrap}] }`,
    `topics: [${options.topic}]`,
    `registry: ${env.registry.url}`,
    `warehouse: { url: '${options.warehouse.url}', root: ${options.warehouse.root} }`,
    'format: avro',
    'codec: deflate',
    'timeField: header.time',
    ...(options.schedule === undefined ? [] : [`schedule: '${options.schedule}'`]),
  ];
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}

/** Polls the commits queue until a commit job of `load` has completed; fails on a failed one. */
export async function finishedCommitOf(queues: TestQueues, load: string, timeoutMs: number, watching: readonly TributaryProcess[]): Promise<Job> {
  const deadline = Date.now() + timeoutMs;
  const ofLoad = (job: Job): boolean => (job.data as Partial<CommitJobData>).plan?.load === load;
  for (;;) {
    const failed = (await queues.queues.commits.getJobs(['failed'])).find(ofLoad);
    expect(failed?.failedReason, `commit job ${failed?.id ?? ''} failed`).toBeUndefined();
    const completed = (await queues.queues.commits.getJobs(['completed'])).find(ofLoad);
    if (completed !== undefined) return completed;
    if (Date.now() > deadline) {
      const logs = watching.map((process) => `--- ${process.daemon.name}\n${logTail(process.daemon.logFile, 40)}`).join('\n');
      throw new Error(`no commit job of load ${load} completed within ${timeoutMs} ms.\n${logs}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Log lines (JSON) of a process that carry `event`. */
export function events(process: TributaryProcess, event: string): Record<string, unknown>[] {
  return process
    .log()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(`"event":"${event}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
