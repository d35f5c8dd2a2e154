/**
 * What the loader fault runs share (test/chaos/loader.ts, test/integration/etl/loader-faults.test.ts):
 * the services with a hand on each daemon (HDFS NameNode and DataNode, Redis), a broker process
 * and a registry, a load per scenario on real HDFS, loader processes (`tributary etl run`,
 * `worker`, `scheduler`) whose debug log a scenario watches to strike at a chosen event, and the
 * exactly-once check of the warehouse against what was produced, counting instead of stopping at
 * the first difference.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../src/common/logger.js';
import { readClaim, readCommitLog } from '../../src/etl/load/commit-log.js';
import { expandOffsets } from '../../src/etl/load/extract.js';
import { decodeDataFile } from '../../src/etl/files/data-files.js';
import { hourKey } from '../../src/etl/layout.js';
import type { Manifest } from '../../src/etl/load/manifest.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../src/etl/warehouse/warehouse.js';
import { controlHdfs, startHdfs, type HdfsDaemonControl } from '../services/hdfs.js';
import { logTail, startDaemon, waitUntil, type Daemon } from '../services/process.js';
import { controlRedis, startRedis, type RedisControl } from '../services/redis.js';
import type { ServiceRun } from '../services/run-dir.js';
import type { ServiceAddresses } from '../services/stack.js';
import { peakResidentBytes, residentBytes } from '../support/process-memory.js';
import {
  createTopic,
  dataFilesOf,
  hashValue,
  producedPerHour,
  producePageViews,
  publishedManifests,
  registerPageViews,
  startLoaderEnvironment,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
} from '../integration/etl/loader-support.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tributaryBin = join(root, 'bin', 'tributary.js');
export const silent = createLogger({ name: 'loader-chaos', level: 'silent' });

export interface LoaderServices {
  readonly run: ServiceRun;
  readonly zookeeper: string;
  readonly webHdfsUrl: string;
  readonly hdfsUser: string;
  readonly hdfs: HdfsDaemonControl;
  readonly redisUrl: string;
  readonly redis: RedisControl;
  /** Stops what this module started (not services it was given). */
  stop(): Promise<void>;
}

/** HDFS and Redis from `given` (a state.json's addresses) when it has them, else started in `run`. */
export async function loaderServices(run: ServiceRun, zookeeper: string, given: ServiceAddresses | undefined, say: (line: string) => void): Promise<LoaderServices> {
  const stops: (() => Promise<void>)[] = [];
  let hdfs = given?.hdfs;
  if (hdfs === undefined) {
    const began = Date.now();
    const cluster = await startHdfs(run);
    stops.push(() => cluster.stop());
    hdfs = { nameNodeUri: cluster.nameNodeUri, webHdfsUrl: cluster.webHdfsUrl, user: cluster.user };
    say(`HDFS ${hdfs.webHdfsUrl} started in ${((Date.now() - began) / 1000).toFixed(1)} s`);
  }
  let redis = given?.redis;
  if (redis === undefined) {
    const server = await startRedis(run);
    stops.push(() => server.stop());
    redis = { host: server.host, port: server.port, url: server.url };
    say(`Redis ${redis.url} started`);
  }
  return {
    run,
    zookeeper,
    webHdfsUrl: hdfs.webHdfsUrl,
    hdfsUser: hdfs.user,
    hdfs: controlHdfs(run, hdfs.webHdfsUrl),
    redisUrl: redis.url,
    redis: controlRedis(run, redis.port),
    async stop() {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
    },
  };
}

export interface LoaderWorld {
  readonly services: LoaderServices;
  readonly env: LoaderEnvironment;
  close(): Promise<void>;
}

/** A broker process (no retention: the records carry fixed past hours) and a registry, beside the services. */
export async function startLoaderWorld(services: LoaderServices): Promise<LoaderWorld> {
  const env = await startLoaderEnvironment({}, services.run);
  return { services, env, close: () => env.close() };
}

export interface ChaosLoad {
  readonly name: string;
  readonly topic: string;
  readonly partitions: number;
  readonly warehouse: TestWarehouse;
  /** The load file, for `etl run`. */
  readonly file: string;
  /** A folder holding only this load's file, for `tributary scheduler --loads`. */
  readonly folder: string;
  readonly produced: ProducedRecord[];
}

export interface ChaosLoadOptions {
  readonly partitions: number;
  readonly maxRecordsPerRun?: number;
  /** Cron, 6 fields allowed: makes the file a scheduled load. */
  readonly schedule?: string;
}

/** A topic, its schemas, and a load of it into its own folder of HDFS. */
export async function createChaosLoad(world: LoaderWorld, scenario: string, options: ChaosLoadOptions): Promise<ChaosLoad> {
  const name = `${scenario}-${randomBytes(3).toString('hex')}`;
  const topic = `t-${name}`;
  const { webHdfsUrl, hdfsUser } = world.services;
  const base = `${webHdfsUrl.replace(/^http:/, 'webhdfs:')}`;
  const url = `${base}/tributary-chaos/${name}?user=${hdfsUser}`;
  const warehouse: TestWarehouse = {
    url,
    root: 'data',
    warehouse: openWarehouse(url, { logger: silent }),
    cleanup: async () => {
      await openWarehouse(`${base}/?user=${hdfsUser}`, { logger: silent }).delete(`tributary-chaos/${name}`, { recursive: true });
    },
  };
  await createTopic(world.env.broker.bootstrap, topic, options.partitions);
  await registerPageViews(world.env.registryClient, topic);
  const folder = join(world.env.folder, `loads-${name}`);
  await mkdir(folder, { recursive: true });
  const file = join(folder, `${name}.yaml`);
  const lines = [
    `name: ${name}`,
    `source: { bootstrap: [${world.env.broker.bootstrap}] }`,
    `topics: [${topic}]`,
    `registry: ${world.env.registry.url}`,
    `warehouse: { url: '${url}', root: data }`,
    'format: avro',
    'codec: deflate',
    'timeField: header.time',
    `maxRecordsPerRun: ${options.maxRecordsPerRun ?? 1_000_000}`,
    'quarantine: { maxRecords: 0 }',
    'latenessHorizon: 2h',
    ...(options.schedule === undefined ? [] : [`schedule: '${options.schedule}'`]),
  ];
  await writeFile(file, `${lines.join('\n')}\n`);
  return { name, topic, partitions: options.partitions, warehouse, file, folder, produced: [] };
}

/** Produces `count` page views over the load's partitions and 3 event hours; remembers them. */
export async function produceWave(world: LoaderWorld, load: ChaosLoad, count: number): Promise<void> {
  load.produced.push(...(await producePageViews(world.env, load.topic, { count, partitions: load.partitions, hours: 3, firstId: load.produced.length })));
}

/** The next offset per partition as the last published manifest records it (empty before the first commit). */
export async function committedOffsets(load: ChaosLoad): Promise<Map<number, number>> {
  const { warehouse, root } = load.warehouse;
  const log = await readCommitLog(warehouse, root, load.name);
  const offsets = new Map<number, number>();
  if (log.lastPublished === 0) return offsets;
  const { manifest } = await readClaim(warehouse, root, load.name, log.lastPublished);
  for (const [partition, next] of Object.entries(nextOffsetsOf(manifest, load.topic))) offsets.set(Number(partition), next);
  return offsets;
}

function nextOffsetsOf(manifest: Manifest, topic: string): Readonly<Record<string, number>> {
  return manifest.nextOffsets[topic] ?? {};
}

/** Produced records not yet committed, as `partition/offset` keys. */
export function uncommitted(load: ChaosLoad, committed: ReadonlyMap<number, number>): string[] {
  return load.produced.filter((record) => record.offset >= (committed.get(record.partition) ?? 0)).map((record) => `${record.partition}/${record.offset}`);
}

export async function caughtUp(load: ChaosLoad): Promise<boolean> {
  return uncommitted(load, await committedOffsets(load)).length === 0;
}

export interface ExactlyOnceReport {
  readonly produced: number;
  readonly stored: number;
  readonly lost: number;
  readonly duplicates: number;
  /** Each difference, said once (the first few of each kind). */
  readonly violations: readonly string[];
}

/**
 * The invariant: the warehouse holds each produced record exactly once (the multiset of
 * partition/offset with payload hash and hour equals what was produced), the manifests' per-hour
 * counts equal the produced counts, the last manifest's next offsets equal the data, and no
 * claim is left unpublished.
 */
export async function checkExactlyOnce(load: ChaosLoad): Promise<ExactlyOnceReport> {
  const { warehouse, root } = load.warehouse;
  const violations: string[] = [];
  const stored = new Map<string, { hash: string; hour: string; file: string }[]>();
  for (const { path, hour } of await dataFilesOf(warehouse, root, load.topic)) {
    const decoded = await decodeDataFile(await warehouse.open(path), 'avro');
    const offsets = expandOffsets(decoded.metadata['tributary.offsets'] ?? '');
    if (offsets.length !== decoded.records.length) violations.push(`${path}: ${decoded.records.length} records but ${offsets.length} offsets in its metadata`);
    decoded.records.forEach((value, index) => {
      const key = `${decoded.metadata['tributary.partition']}/${offsets[index]}`;
      const list = stored.get(key) ?? [];
      list.push({ hash: hashValue(value), hour: hourKey(hour), file: path });
      stored.set(key, list);
    });
  }
  const expected = new Map(load.produced.map((record) => [`${record.partition}/${record.offset}`, record]));
  let lost = 0;
  let duplicates = 0;
  let storedCount = 0;
  const note = (kind: string, text: string, counts: Map<string, number>): void => {
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    if ((counts.get(kind) ?? 0) <= 5) violations.push(text);
  };
  const counts = new Map<string, number>();
  for (const [key, record] of expected) {
    const copies = stored.get(key) ?? [];
    storedCount += copies.length;
    if (copies.length === 0) {
      lost += 1;
      note('lost', `record ${key} (hour ${record.hour}) is not in the warehouse`, counts);
      continue;
    }
    if (copies.length > 1) {
      duplicates += copies.length - 1;
      note('duplicate', `record ${key} is stored ${copies.length} times: ${copies.map((copy) => copy.file).join(', ')}`, counts);
    }
    for (const copy of copies) if (copy.hash !== record.hash || copy.hour !== record.hour) note('changed', `record ${key} in ${copy.file} has other contents or another hour (${copy.hour}, produced ${record.hour})`, counts);
  }
  for (const [key, copies] of stored) {
    if (expected.has(key)) continue;
    storedCount += copies.length;
    duplicates += copies.length;
    note('foreign', `record ${key} in ${copies[0]?.file ?? '?'} was never produced`, counts);
  }
  for (const [kind, count] of counts) if (count > 5) violations.push(`… ${count - 5} more ${kind}`);

  const manifests = await publishedManifests(warehouse, root, load.name);
  const perHour: Record<string, number> = {};
  for (const manifest of manifests) for (const [hour, count] of Object.entries(manifest.hours[load.topic] ?? {})) perHour[hour] = (perHour[hour] ?? 0) + count;
  const wanted = producedPerHour(load.produced);
  for (const hour of new Set([...Object.keys(perHour), ...Object.keys(wanted)])) {
    if (perHour[hour] !== wanted[hour]) violations.push(`hour ${hour}: the manifests count ${perHour[hour] ?? 0} records, ${wanted[hour] ?? 0} were produced`);
  }
  const last = manifests.at(-1);
  const next = last === undefined ? {} : nextOffsetsOf(last, load.topic);
  for (let partition = 0; partition < load.partitions; partition += 1) {
    const producedHere = load.produced.filter((record) => record.partition === partition).length;
    const storedHere = [...stored.keys()].filter((key) => key.startsWith(`${partition}/`)).length;
    const committed = next[String(partition)] ?? 0;
    if (committed !== producedHere || storedHere !== committed) violations.push(`partition ${partition}: committed next offset ${committed}, ${storedHere} distinct offsets stored, ${producedHere} produced`);
  }
  const log = await readCommitLog(warehouse, root, load.name);
  if (log.pending.length > 0) violations.push(`claims left unpublished: ${log.pending.join(', ')}`);
  return { produced: load.produced.length, stored: storedCount, lost, duplicates, violations };
}

/** A moment of a loader process: `delayMs` after the `pass`-th log line with `"event":"<event>"`. */
export interface Moment {
  readonly event: string;
  readonly pass: number;
  readonly delayMs: number;
}

export const describeMoment = (moment: Moment): string => `${moment.delayMs} ms after ${moment.event} #${moment.pass}`;

export interface EtlRunResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The lines that are not JSON log lines: what the command said (its error, if any). */
  readonly said: string;
  readonly stderrTail: string;
  /** Whether the moment came (and `strike` was called). */
  readonly struck: boolean;
  readonly endedAt: number;
  /** The process's largest resident set: its kernel high-water mark (VmHWM), last read before it exited (sampled every 200 ms). */
  readonly peakRssBytes: number;
}

/**
 * One `tributary etl run` with debug logs; at `moment` (if it comes) calls `strike` with the
 * process, which may kill it or break a service under it.
 */
export function runEtlProcess(file: string, options: { readonly moment?: Moment; readonly strike?: (child: ChildProcess) => void; readonly zookeeper?: string } = {}): Promise<EtlRunResult> {
  return new Promise((resolve) => {
    const args = [tributaryBin, 'etl', 'run', '--load', file, '--log-level', 'debug', ...(options.zookeeper === undefined ? [] : ['--zookeeper', options.zookeeper])];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
    let stdout = '';
    let said = '';
    let tail = '';
    let partial = '';
    let passes = 0;
    let struck = false;
    let peakRssBytes = 0;
    // VmHWM, not VmRSS: a peak between two samples still counts.
    const sampler = setInterval(() => (peakRssBytes = Math.max(peakRssBytes, peakResidentBytes(child.pid), residentBytes(child.pid))), 200);
    const strike = (): void => {
      if (struck) return;
      struck = true;
      setTimeout(() => options.strike?.(child), options.moment?.delayMs ?? 0);
    };
    if (options.moment?.event === 'start') strike();
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-6_000);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) said += `${line}\n`;
        if (options.moment === undefined || struck || !line.includes(`"event":"${options.moment.event}"`)) continue;
        passes += 1;
        if (passes === options.moment.pass) strike();
      }
    });
    child.once('close', (status, signal) => {
      clearInterval(sampler);
      resolve({ status, signal, stdout, said: said + (partial.startsWith('{') ? '' : partial), stderrTail: tail.slice(-3_000), struck, endedAt: Date.now(), peakRssBytes });
    });
  });
}

/** The code in brackets of `tributary: … [CODE]`, the CLI's last word on a failure. */
export function failureCode(result: EtlRunResult): string | undefined {
  const match = /\[([A-Z_]+)\]\s*$/m.exec(result.said.trim());
  return match?.[1];
}

/** Failures an `etl run` may end with while HDFS or a daemon of it is away: each says to run again. */
export const OUTAGE_CODES: ReadonlySet<string> = new Set([
  'WAREHOUSE_UNAVAILABLE',
  'WAREHOUSE_OUTCOME_UNKNOWN',
  'WAREHOUSE_CREATE_INCOMPLETE',
  'WAREHOUSE_DATA_FAILED',
  'WAREHOUSE_FILE_BUSY',
]);

/** `etl run` until one exits 0 (at most `attempts`); the failures on the way, each described. */
export async function runUntilSuccess(file: string, attempts: number, pauseMs = 1_000): Promise<{ ok: EtlRunResult | undefined; failures: EtlRunResult[] }> {
  const failures: EtlRunResult[] = [];
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    const result = await runEtlProcess(file);
    if (result.status === 0) return { ok: result, failures };
    failures.push(result);
    await sleep(pauseMs);
  }
  return { ok: undefined, failures };
}

/** `tributary worker` or `tributary scheduler` as a daemon of the run, its log (JSON lines) in a file. */
export interface JobProcess {
  readonly name: string;
  readonly daemon: Daemon;
  log(): string;
}

let started = 0;

function startJobProcess(run: ServiceRun, name: string, args: readonly string[], ready: string): Promise<JobProcess> {
  started += 1;
  const id = `${name}-${process.pid}-${started}`;
  const logFile = join(run.dir, `${id}.log`);
  const daemon = startDaemon({ run, name: id, command: process.execPath, args: [tributaryBin, ...args], logFile, cwd: root });
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  return waitUntil(async () => log().includes(ready), { what: `${id} to say "${ready}"`, timeoutMs: 90_000, intervalMs: 100, daemons: [daemon] }).then(() => ({ name: id, daemon, log }));
}

export interface JobsSetup {
  readonly prefix: string;
  /** ZooKeeper with a chroot of its own (the run leases). */
  readonly zookeeper: string;
  readonly lockMs: number;
}

export function startWorker(services: LoaderServices, setup: JobsSetup, id: string, concurrency = 2): Promise<JobProcess> {
  return startJobProcess(
    services.run,
    `worker-${id}`,
    ['worker', '--redis', services.redisUrl, '--prefix', setup.prefix, '--zookeeper', setup.zookeeper, '--concurrency', String(concurrency), '--id', id, '--lock-ms', String(setup.lockMs), '--grace-ms', '2000', '--log-level', 'debug'],
    '"event":"worker-ready"',
  );
}

export function startScheduler(services: LoaderServices, setup: JobsSetup, loads: string): Promise<JobProcess> {
  return startJobProcess(services.run, 'scheduler', ['scheduler', '--redis', services.redisUrl, '--prefix', setup.prefix, '--loads', loads, '--interval-ms', '1000', '--log-level', 'debug'], 'scheduler: ');
}

/**
 * Resolves when one of `processes` writes its `pass`-th new log line with `event` from now on
 * (then `delayMs` later), with that process; undefined after `timeoutMs`.
 */
export async function nextEvent(processes: readonly JobProcess[], moment: Moment, timeoutMs: number): Promise<JobProcess | undefined> {
  const from = new Map(processes.map((process) => [process.name, process.log().length]));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const process of processes) {
      const fresh = process.log().slice(from.get(process.name) ?? 0);
      const passes = fresh.split('\n').filter((line) => line.includes(`"event":"${moment.event}"`)).length;
      if (passes >= moment.pass) {
        await sleep(moment.delayMs);
        return process;
      }
    }
    await sleep(20);
  }
  return undefined;
}

/** Log lines (JSON) of a process with `event`. */
export function eventsOf(process: JobProcess, event: string): Record<string, unknown>[] {
  return process
    .log()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(`"event":"${event}"`))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

export function tailOf(process: JobProcess, lines = 30): string {
  return `--- ${process.name}\n${logTail(process.daemon.logFile, lines)}`;
}

/** Polls until the load has committed every produced record; false after `timeoutMs`. */
export async function waitCaughtUp(load: ChaosLoad, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await caughtUp(load).catch(() => false)) return true;
    await sleep(300);
  }
  return false;
}

export type { WarehouseFileSystem };
