/**
 * Loader fault runs (issue #22, "Loader"; reliability reference §8.4 L1–L3): the batch loader
 * into real HDFS, as real processes, while its services fail under it.
 *
 *   namenode-restart  an `etl run` per round; at a random event of its commit (a staged file, the
 *                     claim, a rename, the manifest) the NameNode is stopped (SIGTERM or SIGKILL),
 *                     stays down 0–3 s and is started again on the same metadata
 *   datanode-kill     the same with the DataNode SIGKILLed (its block being written is lost
 *                     mid-pipeline) and restarted
 *   redis-restart     a scheduled load (every 2 s), `tributary scheduler` and two `tributary
 *                     worker` processes; at a random event of a worker's log Redis is stopped and
 *                     started again on the same port, empty (no persistence: the run's jobs, flow
 *                     and job schedulers are gone)
 *   worker-kills      the same with three workers, one SIGKILLed at a random event of its log
 *                     (a job starting, a fetch, a staged file, the claim, a rename, the manifest)
 *                     and replaced, again and again
 *   racing-workers    two loaders started together on the same window, round after round: two
 *                     `etl run` without a lease (they race for the claim), two with the ZooKeeper
 *                     lease, and two commits of one planned run (a commit job run twice)
 *
 * Invariant, checked at the end of every scenario: the warehouse holds each produced record
 * exactly once (partition/offset with payload hash and hour), the manifests' per-hour counts equal
 * the produced counts, the last manifest's next offsets equal the data, no claim is left
 * unpublished. Along the way: a run that fails while HDFS is down fails with a retriable warehouse
 * code (nothing else: no "unexpected failure", no damage); once the service is back a run
 * completes; worker and scheduler processes survive Redis going away; no job fails with an
 * unexpected failure; racing loaders end committed, already committed, fenced or busy, never
 * anything else.
 *
 * Figures per scenario: faults injected, records at risk (produced and not yet committed when a
 * fault struck, each counted once), records lost, duplicates, time to recover (service back, or
 * the last kill, until a run completed or the load caught up), peak RSS of the loader processes.
 *
 *   npm run chaos -- loader [--scenario NAME]… [--rounds N] [--kills N] [--short] [--seed N] [--docs|--no-docs]
 *
 * HDFS and Redis are those of $TRIBUTARY_TEST_SERVICES when it names them, else started here.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { QUEUE_NAMES } from '../../jobs/src/queues.js';
import { readCommitLog } from '../../src/etl/load/commit-log.js';
import { seededRandom } from '../support/seeded-random.js';
import type { ServiceAddresses } from '../services/stack.js';
import { residentBytes } from '../support/process-memory.js';
import type { HdfsDaemonKind } from '../services/hdfs.js';
import {
  caughtUp,
  checkExactlyOnce,
  committedOffsets,
  createChaosLoad,
  describeMoment,
  eventsOf,
  failureCode,
  loaderServices,
  nextEvent,
  OUTAGE_CODES,
  produceWave,
  runEtlProcess,
  runUntilSuccess,
  startLoaderWorld,
  startScheduler,
  startWorker,
  tailOf,
  uncommitted,
  waitCaughtUp,
  type ChaosLoad,
  type EtlRunResult,
  type JobProcess,
  type JobsSetup,
  type LoaderWorld,
  type Moment,
} from './loader-world.js';
import { raceCommitJobs } from './loader-race.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, median, megabytes, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const LOADER_SCENARIOS = ['namenode-restart', 'datanode-kill', 'redis-restart', 'worker-kills', 'racing-workers'] as const;
export type LoaderScenario = (typeof LOADER_SCENARIOS)[number];

/** Faults per scenario in the full run. */
export const FULL_LOADER_COUNTS: Readonly<Record<LoaderScenario, number>> = { 'namenode-restart': 20, 'datanode-kill': 20, 'redis-restart': 15, 'worker-kills': 60, 'racing-workers': 30 };

/**
 * `--short`: each fault once or twice at an event sure to come, with short job locks: the HDFS
 * daemon faults that `npm test` cannot afford (a private HDFS to restart costs more than its
 * budget, and the shared one serves the other test files), checked by hand in a few minutes.
 */
const SHORT_COUNTS: Readonly<Record<LoaderScenario, number>> = { 'namenode-restart': 1, 'datanode-kill': 1, 'redis-restart': 1, 'worker-kills': 2, 'racing-workers': 3 };
const SHORT_OPTIONS: Readonly<Record<LoaderScenario, Partial<ScenarioOptions>>> = {
  'namenode-restart': { events: ['claimed'] },
  'datanode-kill': { events: ['claimed'] },
  'redis-restart': { events: ['staged-file'], lockMs: 4_000, workers: 1 },
  'worker-kills': { events: ['fetching', 'claimed'], lockMs: 3_000, workers: 2 },
  'racing-workers': {},
};

export const LOADER_TABLE = {
  start: '<!-- chaos:loader:start (written by `npm run chaos -- loader`; edit the prose around it, not this) -->',
  end: '<!-- chaos:loader:end -->',
  heading: 'Loader faults',
} as const;

const INVARIANTS: Readonly<Record<LoaderScenario, string>> = {
  'namenode-restart': 'exactly once; a run failing while the NameNode is down fails with a retriable warehouse code; a run completes once it is back',
  'datanode-kill': 'exactly once; a run failing while the DataNode is down fails with a retriable warehouse code; a run completes once it is back',
  'redis-restart': 'exactly once; workers and scheduler survive; the load catches up once Redis is back',
  'worker-kills': 'exactly once; no job fails with an unexpected failure; the load catches up after the kills',
  'racing-workers': 'exactly once; each racer commits, finds the commit made, or is fenced or busy; one commit per window',
};

export interface LoaderScenarioResult {
  readonly scenario: LoaderScenario;
  readonly faults: number;
  readonly faultText: string;
  readonly produced: number;
  readonly atRisk: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly recoveryMs: readonly number[];
  readonly peakRssBytes: number;
  readonly notes: string;
  readonly violations: readonly string[];
  readonly seconds: number;
}

export interface ScenarioOptions {
  readonly world: LoaderWorld;
  readonly count: number;
  readonly random: () => number;
  readonly say: (line: string) => void;
  /** Events to strike at, instead of the scenario's own list (short runs pick sure ones). */
  readonly events?: readonly string[];
  /** Worker job locks (BullMQ lockDuration); default 10 s with Redis restarts, 5 s with worker kills. */
  readonly lockMs?: number;
  /** Worker processes; default 2 with Redis restarts, 3 with worker kills. */
  readonly workers?: number;
  /** The ways two loaders race, taken in turn; default all three. */
  readonly raceModes?: readonly RaceMode[];
}

export const RACE_MODES = ['no lease', 'lease', 'commit job twice'] as const;
export type RaceMode = (typeof RACE_MODES)[number];

/** The scenario's moments, or those of `events` (each at its first pass). */
function momentsOf<T extends { readonly event: string; readonly most: number }>(options: ScenarioOptions, own: readonly T[]): readonly { readonly event: string; readonly most: number }[] {
  return options.events === undefined ? own : options.events.map((event) => ({ event, most: 1 }));
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

/** Events of one `etl run`'s commit, and how many of each a run of 6 partitions passes. */
const COMMIT_MOMENTS = [
  { event: 'staged-file', most: 12 },
  { event: 'claimed', most: 1 },
  { event: 'renamed-file', most: 12 },
  { event: 'renamed', most: 1 },
  { event: 'published', most: 1 },
] as const;

/** Events of a worker's log (jobs/ and src/etl), each a moment to strike. */
const JOB_MOMENTS = ['job-started', 'fanned-out', 'fetching', 'staged-file', 'claimed', 'renamed-file', 'published', 'job-completed'] as const;

class Tally {
  readonly violations: string[] = [];
  readonly atRisk = new Set<string>();
  readonly recoveryMs: number[] = [];
  peakRssBytes = 0;
  faults = 0;

  noteRisk(load: ChaosLoad, committed: ReadonlyMap<number, number>): void {
    for (const key of uncommitted(load, committed)) this.atRisk.add(key);
  }

  rss(bytes: number): void {
    this.peakRssBytes = Math.max(this.peakRssBytes, bytes);
  }
}

/** namenode-restart, datanode-kill: a daemon of HDFS goes away during the commit of an `etl run`. */
export async function hdfsDaemonFaults(options: ScenarioOptions, kind: HdfsDaemonKind): Promise<Omit<LoaderScenarioResult, 'seconds'>> {
  const { world, random, say } = options;
  const scenario: LoaderScenario = kind === 'namenode' ? 'namenode-restart' : 'datanode-kill';
  const load = await createChaosLoad(world, scenario, { partitions: 6 });
  const tally = new Tally();
  const endings = new Map<string, number>();
  const signals = new Map<string, number>();
  for (let round = 1; round <= options.count && tally.violations.length === 0; round += 1) {
    await produceWave(world, load, 48);
    const before = await committedOffsets(load);
    const choice = pick(random, momentsOf(options, COMMIT_MOMENTS));
    const moment: Moment = { event: choice.event, pass: 1 + Math.floor(random() * choice.most), delayMs: Math.floor(random() * 40) };
    const signal = kind === 'datanode' || random() < 0.5 ? 'SIGKILL' : 'SIGTERM';
    const downMs = Math.floor(random() * 3_000);
    let fault: Promise<{ restartedAt: number; readyAt: number }> | undefined;
    const first = await runEtlProcess(load.file, {
      moment,
      strike: () => {
        fault = (async () => {
          await world.services.hdfs.stop(kind, signal);
          await sleep(downMs);
          const restartedAt = Date.now();
          await world.services.hdfs.start(kind);
          await world.services.hdfs.waitReady(180_000);
          return { restartedAt, readyAt: Date.now() };
        })();
      },
    });
    tally.rss(first.peakRssBytes);
    if (fault === undefined) {
      say(`  ${scenario} round ${round}: the run ended before ${describeMoment(moment)} (${first.status === 0 ? 'ok' : first.said.trim()}); no fault`);
      if (first.status !== 0) tally.violations.push(`round ${round}: a run without a fault failed: ${first.said.trim()}`);
      continue;
    }
    const { restartedAt } = await fault;
    tally.faults += 1;
    tally.noteRisk(load, before);
    signals.set(signal, (signals.get(signal) ?? 0) + 1);
    const ending = first.status === 0 ? 'rode through' : (failureCode(first) ?? 'no code');
    endings.set(ending, (endings.get(ending) ?? 0) + 1);
    if (first.status !== 0 && !OUTAGE_CODES.has(ending)) tally.violations.push(`round ${round} (${kind} ${signal} ${describeMoment(moment)}): the run failed with ${ending}, not a retriable warehouse code: ${first.said.trim().slice(0, 600)}`);
    // A run after the service is back completes (it rolls forward or redoes what the fault cut).
    let completedAt = first.status === 0 && first.endedAt > restartedAt ? first.endedAt : undefined;
    const after = await runUntilSuccess(load.file, 4, 2_000);
    for (const failed of after.failures) tally.rss(failed.peakRssBytes);
    if (after.ok === undefined) {
      tally.violations.push(`round ${round} (${kind} ${signal} ${describeMoment(moment)}): no run completed after HDFS was back: ${after.failures.map((failed) => failed.said.trim().slice(0, 400)).join(' | ')}`);
      break;
    }
    tally.rss(after.ok.peakRssBytes);
    completedAt ??= after.ok.endedAt;
    tally.recoveryMs.push(completedAt - restartedAt);
    say(`  ${scenario} round ${round}: ${kind} ${signal} ${describeMoment(moment)}, down ${downMs} ms; the run ${first.status === 0 ? 'rode through' : `failed: ${ending}`}; completed ${seconds(completedAt - restartedAt)} after the restart`);
  }
  const faultText = `${tally.faults} ${kind} ${kind === 'namenode' ? 'restarts' : 'SIGKILLs and restarts'} during commits (${[...signals].map(([name, count]) => `${name} ${count}`).join(', ')})`;
  const notes = `runs hit: ${[...endings].map(([name, count]) => `${count} ${name}`).join(', ')}`;
  return finish(scenario, load, tally, faultText, notes);
}

/** A scheduled load with a scheduler and `workers` worker processes. */
async function startJobs(world: LoaderWorld, scenario: string, workers: number, lockMs: number): Promise<{ load: ChaosLoad; setup: JobsSetup; scheduler: JobProcess; workers: JobProcess[] }> {
  const load = await createChaosLoad(world, scenario, { partitions: 6, schedule: '*/2 * * * * *' });
  const setup: JobsSetup = { prefix: `chaos-${load.name}`, zookeeper: `${world.services.zookeeper}/loader-chaos-${load.name}`, lockMs };
  const started = await Promise.all(Array.from({ length: workers }, (_, index) => startWorker(world.services, setup, `w${index + 1}`)));
  const scheduler = await startScheduler(world.services, setup, load.folder);
  return { load, setup, scheduler, workers: started };
}

async function stopJobs(processes: readonly JobProcess[], setup: JobsSetup, redisUrl: string): Promise<string[]> {
  await Promise.all(processes.map((process) => process.daemon.stop(5_000)));
  // Jobs that failed for good, with a reason that is not one of the loader's own: a bug.
  const unclear: string[] = [];
  for (const name of Object.values(QUEUE_NAMES)) {
    const queue = new Queue(name, { connection: { url: redisUrl, maxRetriesPerRequest: null }, prefix: setup.prefix });
    try {
      for (const job of await queue.getJobs(['failed'])) if (job.failedReason.startsWith('unexpected failure')) unclear.push(`job ${job.id ?? '?'} of ${name} failed: ${job.failedReason.slice(0, 400)}`);
      await queue.obliterate({ force: true }).catch(() => undefined);
    } finally {
      await queue.close();
    }
  }
  return unclear;
}

function sampleRss(tally: Tally, processes: () => readonly JobProcess[]): NodeJS.Timeout {
  return setInterval(() => {
    for (const process of processes()) tally.rss(residentBytes(process.daemon.pid));
  }, 300);
}

/** redis-restart: Redis goes away and comes back empty during scheduled runs. */
export async function redisRestarts(options: ScenarioOptions): Promise<Omit<LoaderScenarioResult, 'seconds'>> {
  const { world, random, say } = options;
  const { load, setup, scheduler, workers } = await startJobs(world, 'redis-restart', options.workers ?? 2, options.lockMs ?? 10_000);
  const tally = new Tally();
  const all = (): JobProcess[] => [scheduler, ...workers];
  const sampler = sampleRss(tally, all);
  let missed = 0;
  try {
    for (let round = 1; round <= options.count && tally.violations.length === 0; round += 1) {
      await produceWave(world, load, 48);
      const moment: Moment = { event: pick(random, options.events ?? JOB_MOMENTS), pass: 1, delayMs: Math.floor(random() * 200) };
      const struck = await nextEvent(workers, moment, 30_000);
      if (struck === undefined) {
        missed += 1;
        say(`  redis-restart round ${round}: no ${moment.event} within 30 s; no fault`);
        if (!(await waitCaughtUp(load, 60_000))) tally.violations.push(`round ${round}: the load did not catch up without a fault.\n${all().map((process) => tailOf(process)).join('\n')}`);
        continue;
      }
      const signal = random() < 0.5 ? 'SIGKILL' : 'SIGTERM';
      const downMs = Math.floor(random() * 3_000);
      await world.services.redis.stop(signal);
      tally.faults += 1;
      tally.noteRisk(load, await committedOffsets(load));
      await sleep(downMs);
      const restartedAt = Date.now();
      await world.services.redis.start();
      const caught = await waitCaughtUp(load, 120_000);
      const recovered = Date.now() - restartedAt;
      for (const process of all()) if (process.daemon.hasExited()) tally.violations.push(`round ${round}: ${process.name} exited (${String(await process.daemon.exited)}) when Redis went away.\n${tailOf(process)}`);
      if (!caught) tally.violations.push(`round ${round}: the load did not catch up within 120 s after Redis came back.\n${all().map((process) => tailOf(process)).join('\n')}`);
      else tally.recoveryMs.push(recovered);
      say(`  redis-restart round ${round}: Redis ${signal} ${describeMoment(moment)} of ${struck.name}, down ${downMs} ms; ${caught ? `caught up ${seconds(recovered)} after the restart` : 'did NOT catch up'}`);
    }
  } finally {
    clearInterval(sampler);
  }
  const errors = all().reduce((sum, process) => sum + eventsOf(process, 'worker-error').length, 0);
  tally.violations.push(...(await stopJobs(all(), setup, world.services.redisUrl)));
  return finish('redis-restart', load, tally, `${tally.faults} Redis restarts (empty) during scheduled runs`, `${errors} worker-error log lines while Redis was away; ${missed} rounds without the chosen event`);
}

/** worker-kills: worker processes SIGKILLed at random events of their logs, and replaced. */
export async function workerKills(options: ScenarioOptions): Promise<Omit<LoaderScenarioResult, 'seconds'>> {
  const { world, random, say } = options;
  const jobs = await startJobs(world, 'worker-kills', options.workers ?? 3, options.lockMs ?? 5_000);
  const { load, setup, scheduler } = jobs;
  const workers = [...jobs.workers];
  const killed: JobProcess[] = [];
  const tally = new Tally();
  const sampler = sampleRss(tally, () => workers);
  const byEvent = new Map<string, number>();
  let lastKill = Date.now();
  let misses = 0;
  let next = workers.length;
  try {
    // Events of a run's work come only while there is work: a wave before each kill.
    while (tally.faults < options.count && misses < 20) {
      await produceWave(world, load, 24);
      const moment: Moment = { event: pick(random, options.events ?? JOB_MOMENTS), pass: 1, delayMs: Math.floor(random() * 30) };
      const victim = await nextEvent(workers, moment, 20_000);
      if (victim === undefined) {
        misses += 1; // another event next time; 20 in a row end the scenario
        continue;
      }
      misses = 0;
      victim.daemon.signal('SIGKILL');
      lastKill = Date.now();
      tally.faults += 1;
      byEvent.set(moment.event, (byEvent.get(moment.event) ?? 0) + 1);
      await victim.daemon.exited;
      killed.push(victim);
      tally.noteRisk(load, await committedOffsets(load));
      next += 1;
      workers.splice(workers.indexOf(victim), 1, await startWorker(world.services, setup, `w${next}`));
      if (tally.faults % 10 === 0) say(`  worker-kills: ${tally.faults} kills so far (${[...byEvent].map(([event, count]) => `${event} ${count}`).join(', ')})`);
    }
    if (tally.faults < options.count) tally.violations.push(`only ${tally.faults} of ${options.count} kills: no chosen event came within 20 s ${misses} times in a row`);
    const caught = await waitCaughtUp(load, 240_000);
    if (caught) tally.recoveryMs.push(Date.now() - lastKill);
    else tally.violations.push(`the load did not catch up within 240 s of the last kill.\n${[scheduler, ...workers].map((process) => tailOf(process)).join('\n')}`);
  } finally {
    clearInterval(sampler);
  }
  const stalled = [...workers, ...killed].reduce((sum, process) => sum + eventsOf(process, 'job-stalled').length, 0);
  tally.violations.push(...(await stopJobs([scheduler, ...workers], setup, world.services.redisUrl)));
  return finish('worker-kills', load, tally, `${tally.faults} worker SIGKILLs (${[...byEvent].map(([event, count]) => `${event} ${count}`).join(', ')})`, `${stalled} stalled jobs taken over; lock ${setup.lockMs / 1000} s`);
}

const RACE_ENDINGS: ReadonlySet<string> = new Set(['ETL_COMMIT_FENCED', 'ETL_LOAD_BUSY']);

/** racing-workers: two loaders started together on one window, three ways in turn. */
export async function racingWorkers(options: ScenarioOptions): Promise<Omit<LoaderScenarioResult, 'seconds'>> {
  const { world, say } = options;
  const load = await createChaosLoad(world, 'racing-workers', { partitions: 6 });
  const tally = new Tally();
  const outcomes = new Map<string, number>();
  const count = (name: string): void => void outcomes.set(name, (outcomes.get(name) ?? 0) + 1);
  const zookeeper = `${world.services.zookeeper}/loader-chaos-${randomBytes(3).toString('hex')}`;
  for (let round = 1; round <= options.count && tally.violations.length === 0; round += 1) {
    await produceWave(world, load, 48);
    const before = await committedOffsets(load);
    const logBefore = await readCommitLog(load.warehouse.warehouse, load.warehouse.root, load.name);
    tally.noteRisk(load, before);
    tally.faults += 1;
    const modes = options.raceModes ?? RACE_MODES;
    const mode = modes[(round - 1) % modes.length]!;
    const began = Date.now();
    let endings: { readonly ending: string; readonly said: string }[];
    if (mode === 'commit job twice') {
      endings = await raceCommitJobs(load);
    } else {
      const racers: EtlRunResult[] = await Promise.all([0, 1].map(() => runEtlProcess(load.file, mode === 'lease' ? { zookeeper } : {})));
      for (const racer of racers) tally.rss(racer.peakRssBytes);
      endings = racers.map((racer) => ({ ending: racer.status === 0 ? (racer.stdout.includes('nothing new to load') ? 'nothing new' : 'committed') : (failureCode(racer) ?? `exit ${racer.status}`), said: racer.said.trim() }));
    }
    tally.recoveryMs.push(Date.now() - began);
    for (const { ending } of endings) count(`${mode}: ${ending}`);
    const bad = endings.filter(({ ending }) => !['committed', 'already-committed', 'nothing new'].includes(ending) && !RACE_ENDINGS.has(ending));
    if (bad.length > 0) tally.violations.push(`round ${round} (${mode}): a racer ended with ${bad.map(({ ending, said }) => `${ending}: ${said.slice(0, 600)}`).join('; ')}`);
    const logAfter = await readCommitLog(load.warehouse.warehouse, load.warehouse.root, load.name);
    const made = logAfter.lastPublished - logBefore.lastPublished;
    // Both racers planned the same window: one commit holds it, whoever won.
    if (made !== 1) tally.violations.push(`round ${round} (${mode}): ${made} commits for one window (endings ${endings.map(({ ending }) => ending).join(', ')})`);
    say(`  racing-workers round ${round} (${mode}): ${endings.map(({ ending }) => ending).join(' / ')}; ${made} commit`);
  }
  const final = await runUntilSuccess(load.file, 3);
  if (final.ok === undefined) tally.violations.push(`a run after the races failed: ${final.failures.map((failed) => failed.said.trim()).join(' | ')}`);
  return finish('racing-workers', load, tally, `${tally.faults} races of two loaders for one commit (no lease, ZooKeeper lease, a commit job run twice: in turn)`, [...outcomes].map(([name, n]) => `${n}× ${name}`).join(', '));
}

async function finish(scenario: LoaderScenario, load: ChaosLoad, tally: Tally, faultText: string, notes: string): Promise<Omit<LoaderScenarioResult, 'seconds'>> {
  // Load what is left (usually nothing: each round ends caught up), then judge the warehouse.
  if (!(await caughtUp(load))) {
    const last = await runUntilSuccess(load.file, 4, 2_000);
    if (last.ok === undefined) tally.violations.push(`the final run failed: ${last.failures.map((failed) => failed.said.trim().slice(0, 400)).join(' | ')}`);
  }
  const check = await checkExactlyOnce(load);
  tally.violations.push(...check.violations);
  await load.warehouse.cleanup().catch(() => undefined);
  return {
    scenario,
    faults: tally.faults,
    faultText,
    produced: check.produced,
    atRisk: tally.atRisk.size,
    lost: check.lost,
    duplicates: check.duplicates,
    recoveryMs: tally.recoveryMs,
    peakRssBytes: tally.peakRssBytes,
    notes,
    violations: tally.violations,
  };
}

export async function runLoaderScenario(scenario: LoaderScenario, options: ScenarioOptions): Promise<LoaderScenarioResult> {
  const began = Date.now();
  const result =
    scenario === 'namenode-restart'
      ? await hdfsDaemonFaults(options, 'namenode')
      : scenario === 'datanode-kill'
        ? await hdfsDaemonFaults(options, 'datanode')
        : scenario === 'redis-restart'
          ? await redisRestarts(options)
          : scenario === 'worker-kills'
            ? await workerKills(options)
            : await racingWorkers(options);
  return { ...result, seconds: Math.round((Date.now() - began) / 1000) };
}

const recovery = (result: LoaderScenarioResult): string => `${seconds(median(result.recoveryMs))} / ${seconds(result.recoveryMs.length === 0 ? undefined : Math.max(...result.recoveryMs))}`;

export function formatLoaderLine(result: LoaderScenarioResult): string {
  return (
    `${result.scenario}: faults injected ${result.faults}, records at risk ${result.atRisk} (of ${result.produced} produced), records lost ${result.lost}, duplicates ${result.duplicates}, ` +
    `time to recover median / max ${recovery(result)}, peak RSS ${megabytes(result.peakRssBytes)}, ${result.violations.length} violations in ${result.seconds} s`
  );
}

export function formatLoaderTable(results: readonly LoaderScenarioResult[]): string {
  const lines = [
    '| scenario | faults injected | invariant | result | produced | records at risk | lost | duplicates | time to recover: median / max | loader peak RSS | run time | notes |',
    '|---|---|---|---|---:|---:|---:|---:|---|---:|---:|---|',
  ];
  for (const result of results) {
    const verdict = result.violations.length === 0 ? 'pass' : `**FAIL** (${result.violations.length} violations: ${escapeCell(result.violations.slice(0, 2).join('; ').slice(0, 500))}${result.violations.length > 2 ? '; …' : ''})`;
    lines.push(
      `| ${result.scenario} | ${escapeCell(result.faultText)} | ${INVARIANTS[result.scenario]} | ${verdict} | ${result.produced} | ${result.atRisk} | ${result.lost} | ${result.duplicates} | ${recovery(result)} | ${megabytes(result.peakRssBytes)} | ${result.seconds} s | ${escapeCell(result.notes)} |`,
    );
  }
  return lines.join('\n');
}

export async function runLoaderChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      scenario: { type: 'string', multiple: true },
      rounds: { type: 'string' },
      kills: { type: 'string' },
      seed: { type: 'string' },
      short: { type: 'boolean' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const short = values.short === true;
  const scenarios = chosenScenarios(values.scenario, LOADER_SCENARIOS);
  const rounds = values.rounds === undefined ? undefined : positiveInteger('--rounds', values.rounds);
  const kills = values.kills === undefined ? undefined : positiveInteger('--kills', values.kills);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const full = !short && rounds === undefined && kills === undefined && scenarios.length === LOADER_SCENARIOS.length;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const { say } = context;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  const reuse = process.env['TRIBUTARY_TEST_SERVICES'];
  const given = reuse === undefined || reuse === '' ? undefined : (JSON.parse(readFileSync(reuse, 'utf8')) as ServiceAddresses);
  say(`loader chaos: scenarios ${scenarios.join(', ')}; rounds ${rounds ?? 'full'}; kills ${kills ?? 'full'}; seed ${seed}`);
  const services = await loaderServices(context.run, context.zookeeper, given, say);
  const results: LoaderScenarioResult[] = [];
  try {
    const world = await startLoaderWorld(services);
    try {
      const random = seededRandom(seed);
      for (const scenario of scenarios) {
        const count = scenario === 'worker-kills' ? (kills ?? (short ? 2 : FULL_LOADER_COUNTS[scenario])) : (rounds ?? (short ? SHORT_COUNTS[scenario] : FULL_LOADER_COUNTS[scenario]));
        const result = await runLoaderScenario(scenario, { world, count, random, say, ...(short ? SHORT_OPTIONS[scenario] : {}) });
        results.push(result);
        say(formatLoaderLine(result));
        for (const violation of result.violations.slice(0, 10)) say(`  violation: ${violation}`);
      }
    } finally {
      await world.close();
    }
  } finally {
    await services.stop();
  }
  say('');
  say('summary:');
  for (const result of results) say(`  ${formatLoaderLine(result)}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, LOADER_TABLE, `${facts}\n\n${formatLoaderTable(results)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return results.every((result) => result.violations.length === 0);
}

