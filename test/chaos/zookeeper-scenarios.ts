/**
 * The ZooKeeper fault scenarios (issue #22, reliability reference §8.1 S11, §8.3 C3 and C6, §8.4),
 * each on a fresh ZooKeeperWorld (zookeeper-world.ts) and each ending with the world's checks:
 *
 *   leader-kill     SIGKILL the ensemble's leader (the node whose `srvr` says leader), wait for a
 *                   new quorum and for everything to be registered, owned and acknowledged again,
 *                   restart the node; again and again. The loader runs meanwhile, run after run.
 *   pause-broker    SIGSTOP the standalone broker (and, with the replicated cluster, the leader of
 *                   a partition) until its /brokers/ids node is gone, then SIGCONT: it registers
 *                   again; the paused leader's stale writes are fenced (nothing acknowledged lost).
 *   pause-consumer  SIGSTOP a group member until its session expires and the others own every
 *                   partition, let them commit, SIGCONT: it must commit nothing for partitions it
 *                   lost (no committed offset goes back), register again, and the group rebalance.
 *   pause-loader    SIGSTOP a loader run between its plan and its commit until its lease node is
 *                   gone, let another run commit, SIGCONT: the stale run commits nothing, and the
 *                   warehouse holds every record exactly once.
 *
 * Invariants (any breach is a violation): no acks=−1 record lost, no value stored twice by the
 * idempotent producers, every record consumed by the group (redeliveries counted, at-least-once),
 * no committed offset going back, everything re-registered and owned within the wait, the loader
 * exactly once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { etlLockPath } from '../../src/coordination/paths.js';
import { formatSummary } from '../support/replication-history.js';
import { BROKER_SESSION_MS, GROUP_PARTITIONS, LOADER_TOPIC, MEMBER_SESSION_MS, REPLICATED_TOPIC, ZooKeeperWorld, type WorldReport } from './zookeeper-world.js';
import type { ServiceRun } from '../services/run-dir.js';
import type { LoaderRunOutcome } from './zookeeper-loader.js';

export const ZOOKEEPER_SCENARIOS = ['leader-kill', 'pause-broker', 'pause-consumer', 'pause-loader'] as const;
export type ZooKeeperScenario = (typeof ZOOKEEPER_SCENARIOS)[number];

/** One scenario's faults; several steps run one after the other on the same world. */
export interface FaultStep {
  readonly scenario: ZooKeeperScenario;
  /** Faults to inject (leader kills, pauses). */
  readonly rounds: number;
}

export interface ScenarioOptions {
  readonly run: ServiceRun;
  readonly steps: readonly FaultStep[];
  readonly random: () => number;
  /** Also a 3-broker replicated cluster (default: when a step is leader-kill or pause-broker). */
  readonly replicated?: boolean;
  /** The loader (default: when a step is leader-kill or pause-loader; pause-loader needs it). */
  readonly loader?: boolean;
  /** Group members; default 3. */
  readonly members?: number;
  readonly say?: (line: string) => void;
}

export interface ScenarioResult {
  /** The first step's scenario (the suite runs one step per world). */
  readonly scenario: ZooKeeperScenario;
  readonly steps: readonly FaultStep[];
  readonly faults: number;
  /** acks=−1 records acknowledged (standalone + replicated) plus loader records: what was at risk. */
  readonly atRisk: number;
  readonly lost: number;
  /** Values stored twice by the idempotent producers (each a violation). */
  readonly logDuplicates: number;
  /** Records the group consumed more than once (at-least-once: counted, allowed). */
  readonly groupDuplicates: number;
  readonly groupMissing: number;
  /** pause-consumer: records a resumed member handed out for partitions others owned by then. */
  readonly staleDeliveries: number;
  /** Loader records in the warehouse more than once, or missing (each a violation). */
  readonly loaderDuplicates: number;
  readonly loaderMissing: number;
  readonly loaderRecords: number;
  /** Loader runs: committed (exit 0), failed (by error code), fenced stale runs. */
  readonly loaderRuns: { committed: number; failed: Record<string, number>; fenced: number };
  /** Per fault: until a quorum takes writes again (leader-kill only). */
  readonly quorumMs: readonly number[];
  /** Per fault: until everything is registered, owned and acknowledged again. */
  readonly recoverMs: readonly number[];
  readonly sessionsExpired: number;
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
}

export async function runZooKeeperScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  const say = options.say ?? (() => undefined);
  const names = options.steps.map((step) => step.scenario);
  const scenario = names[0] ?? 'leader-kill';
  const replicated = options.replicated ?? names.some((name) => name === 'leader-kill' || name === 'pause-broker');
  const loader = options.loader ?? names.some((name) => name === 'leader-kill' || name === 'pause-loader');
  const world = await ZooKeeperWorld.start({ run: options.run, members: options.members ?? 3, replicated, loader, say });
  const tally: Tally = { violations: [], quorumMs: [], recoverMs: [], loaderOutcomes: [], fenced: 0, faults: 0, staleDeliveries: 0 };
  let report: WorldReport | undefined;
  try {
    for (const step of options.steps) {
      const stepOptions = { random: options.random, rounds: step.rounds };
      switch (step.scenario) {
        case 'leader-kill':
          await leaderKills(world, stepOptions, tally, say);
          break;
        case 'pause-broker':
          await pauseBrokers(world, stepOptions, tally, say);
          break;
        case 'pause-consumer':
          await pauseConsumers(world, stepOptions, tally, say);
          break;
        case 'pause-loader':
          await pauseLoaders(world, stepOptions, tally, say);
          break;
      }
    }
    report = await world.finish();
  } catch (error) {
    tally.violations.push(`the scenario stopped: ${(error as Error).message}`);
  }
  let loaderCheck = { expected: 0, found: 0, missing: 0, duplicated: 0, unexpected: 0 };
  try {
    if (world.loader !== undefined && report !== undefined) {
      // The last run loads what is left, then the warehouse must hold exactly the topic.
      const last = await world.loader.runUntilDone();
      tally.loaderOutcomes.push(...last);
      if (last.at(-1)?.exit !== 0) tally.violations.push(`the final loader run did not succeed: ${JSON.stringify(last)}`);
      const ends = new Map<number, number>();
      for (let partition = 0; partition < world.loader.partitions; partition += 1) ends.set(partition, await world.standalone.highWatermark(LOADER_TOPIC, partition));
      for (const [partition, acknowledged] of world.loader.acknowledgedEnds()) {
        if (acknowledged > (ends.get(partition) ?? 0)) tally.violations.push(`loader topic partition ${partition}: acknowledged up to ${acknowledged}, high watermark ${ends.get(partition)}`);
      }
      loaderCheck = await world.loader.checkExactlyOnce(ends);
      if (loaderCheck.missing + loaderCheck.duplicated + loaderCheck.unexpected > 0) tally.violations.push(`warehouse not exactly once: ${JSON.stringify(loaderCheck)}`);
    }
  } catch (error) {
    tally.violations.push(`the loader check failed: ${(error as Error).message}`);
  } finally {
    if (tally.violations.length > 0 || (report !== undefined && (report.offsetRegressions.length > 0 || report.group.memberExits.length > 0 || report.group.missing > 0 || !report.standalone.ok || report.replicated?.ok === false))) {
      tally.violations.push(`evidence: ${world.saveEvidence(names.join('+'))}`);
    }
    await world.close();
  }
  const violations = [...tally.violations];
  if (report !== undefined) {
    for (const [name, result] of [['standalone', report.standalone], ['replicated', report.replicated]] as const) {
      if (result === undefined) continue;
      say(`${name} history: ${formatSummary(result.summary)}`);
      if (!result.ok) violations.push(...result.violations.slice(0, 10).map((violation) => `${name}: ${JSON.stringify(violation)}`));
    }
    if (report.group.missing > 0) violations.push(`the group never consumed ${report.group.missing} of ${report.group.records} records`);
    violations.push(...report.offsetRegressions, ...report.group.memberExits);
  }
  const summaries = [report?.standalone.summary, report?.replicated?.summary].filter((summary) => summary !== undefined);
  const failed: Record<string, number> = {};
  let committed = 0;
  for (const outcome of tally.loaderOutcomes) {
    if (outcome.exit === 0) committed += 1;
    else failed[outcome.code ?? String(outcome.exit)] = (failed[outcome.code ?? String(outcome.exit)] ?? 0) + 1;
  }
  return {
    scenario,
    steps: options.steps,
    faults: tally.faults,
    atRisk: summaries.reduce((sum, summary) => sum + summary.acknowledged, 0) + loaderCheck.expected,
    lost: summaries.reduce((sum, summary) => sum + summary.lost, 0) + loaderCheck.missing,
    logDuplicates: summaries.reduce((sum, summary) => sum + summary.extraCopies, 0),
    groupDuplicates: report?.group.duplicates ?? 0,
    groupMissing: report?.group.missing ?? 0,
    staleDeliveries: tally.staleDeliveries,
    loaderDuplicates: loaderCheck.duplicated,
    loaderMissing: loaderCheck.missing,
    loaderRecords: loaderCheck.expected,
    loaderRuns: { committed, failed, fenced: tally.fenced },
    quorumMs: tally.quorumMs,
    recoverMs: tally.recoverMs,
    sessionsExpired: report?.sessionsExpired ?? 0,
    peakRssBytes: report?.peakRssBytes ?? 0,
    violations,
  };
}

interface Tally {
  readonly violations: string[];
  readonly quorumMs: number[];
  readonly recoverMs: number[];
  readonly loaderOutcomes: LoaderRunOutcome[];
  fenced: number;
  faults: number;
  staleDeliveries: number;
}

interface StepOptions {
  readonly rounds: number;
  readonly random: () => number;
}

const RECOVER_TIMEOUT_MS = 60_000;

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

// ---- leader-kill -------------------------------------------------------------------------------

async function leaderKills(world: ZooKeeperWorld, options: StepOptions, tally: Tally, say: (line: string) => void): Promise<void> {
  // The loader meanwhile: new page views, a run, again, until the kills are over.
  let loading = world.loader !== undefined;
  const loaderLoop = (async () => {
    while (loading && world.loader !== undefined) {
      await world.loader.produce(100);
      tally.loaderOutcomes.push(await world.loader.runOnce());
      await sleep(200);
    }
  })();
  try {
    for (let round = 1; round <= options.rounds; round += 1) {
      await sleep(1_000 + Math.floor(options.random() * 2_000));
      const leader = await waitForLeader(world);
      const killed = Date.now();
      await world.ensemble.stopNode(leader, { kill: true });
      tally.faults += 1;
      const quorum = await waitFor('a quorum taking writes', () => world.quorumWrites(), RECOVER_TIMEOUT_MS);
      const quorumMs = Date.now() - killed;
      tally.quorumMs.push(quorumMs);
      const recoverMs = await world.waitHealthy(RECOVER_TIMEOUT_MS, killed);
      tally.recoverMs.push(recoverMs);
      const restarted = Date.now();
      await world.ensemble.startNode(leader);
      say(`kill ${round}: leader node ${leader} SIGKILLed; quorum back in ${(quorumMs / 1000).toFixed(1)} s (${quorum} ms of polling), all registered, owned and acknowledging in ${(recoverMs / 1000).toFixed(1)} s; node restarted in ${((Date.now() - restarted) / 1000).toFixed(1)} s`);
    }
  } finally {
    loading = false;
    await loaderLoop;
  }
}

async function waitForLeader(world: ZooKeeperWorld): Promise<number> {
  let leader: number | undefined;
  await waitFor('one ensemble leader', async () => (leader = await world.leader()) !== undefined, RECOVER_TIMEOUT_MS, 200);
  return leader as number;
}

// ---- pause-broker ------------------------------------------------------------------------------

async function pauseBrokers(world: ZooKeeperWorld, options: StepOptions, tally: Tally, say: (line: string) => void): Promise<void> {
  for (let round = 1; round <= options.rounds; round += 1) {
    await sleep(1_000 + Math.floor(options.random() * 2_000));
    // The standalone broker: paused past its session, it must register again when resumed.
    const id = world.standalone.brokerIds[0] as number;
    const paused = Date.now();
    world.standalone.pause(id);
    tally.faults += 1;
    try {
      await waitFor(`/brokers/ids/${id} to vanish`, async () => !((await world.observer.children('/brokers/ids').catch(() => [String(id)])) ?? []).includes(String(id)), BROKER_SESSION_MS * 5);
      await sleep(500 + Math.floor(options.random() * 1_000));
    } finally {
      world.standalone.resume(id);
    }
    const resumed = Date.now();
    const recoverMs = await world.waitHealthy(RECOVER_TIMEOUT_MS, resumed);
    tally.recoverMs.push(recoverMs);
    say(`pause ${round}: standalone broker ${id} stopped ${((resumed - paused) / 1000).toFixed(1)} s (its registration expired); registered, owned and acknowledging again ${(recoverMs / 1000).toFixed(1)} s after SIGCONT`);

    const cluster = world.replicated;
    const observer = world.replicatedObserver;
    if (cluster === undefined || observer === undefined) continue;
    // The leader of a partition of the replicated cluster: the others take over while it sleeps;
    // when it wakes it must not serve or acknowledge as leader from its stale state.
    const partition = Math.floor(options.random() * 3);
    const before = await cluster.waitForLeader(REPLICATED_TOPIC, partition);
    const leaderPaused = Date.now();
    cluster.pause(before.leader);
    tally.faults += 1;
    try {
      await waitFor(`/brokers/ids/${before.leader} to vanish`, async () => !((await observer.children('/brokers/ids').catch(() => [String(before.leader)])) ?? []).includes(String(before.leader)), BROKER_SESSION_MS * 5);
      await cluster.waitForLeaderChange(before, { timeoutMs: RECOVER_TIMEOUT_MS });
    } finally {
      cluster.resume(before.leader);
    }
    const leaderResumed = Date.now();
    const leaderRecoverMs = await world.waitHealthy(RECOVER_TIMEOUT_MS, leaderResumed);
    tally.recoverMs.push(leaderRecoverMs);
    say(`pause ${round}: replicated broker ${before.leader} (leader of ${REPLICATED_TOPIC}-${partition}, epoch ${before.leaderEpoch}) stopped ${((leaderResumed - leaderPaused) / 1000).toFixed(1)} s, leadership moved; registered again ${(leaderRecoverMs / 1000).toFixed(1)} s after SIGCONT`);
  }
}

// ---- pause-consumer ----------------------------------------------------------------------------

async function pauseConsumers(world: ZooKeeperWorld, options: StepOptions, tally: Tally, say: (line: string) => void): Promise<void> {
  for (let round = 1; round <= options.rounds; round += 1) {
    await sleep(1_000 + Math.floor(options.random() * 2_000));
    const member = world.members[Math.floor(options.random() * world.members.length)];
    if (member === undefined) throw new Error('no group member');
    const id = world.consumerIdOf(member);
    const paused = Date.now();
    world.pauseMember(member);
    tally.faults += 1;
    let rebalanceMs: number;
    let owners: (string | undefined)[] = [];
    let printed = 0;
    try {
      // Its session expires; the others take every partition and commit past where it stopped.
      rebalanceMs = await world.waitHealthy(MEMBER_SESSION_MS * 10, paused);
      await sleep(1_500 + Math.floor(options.random() * 1_500));
    } finally {
      // Who owns what now: records the resumed member prints for partitions owned by others are
      // stale deliveries (redeliveries the others will make too; at-least-once allows them).
      owners = await Promise.all(Array.from({ length: GROUP_PARTITIONS }, (_, partition) => world.ownerOf(partition).catch(() => undefined)));
      printed = member.process.lines.length;
      world.resumeMember(member);
    }
    const resumed = Date.now();
    const recoverMs = await world.waitHealthy(RECOVER_TIMEOUT_MS, resumed);
    tally.recoverMs.push(recoverMs);
    // Split brain: what it printed after SIGCONT that another member printed too, in a partition
    // another member owned when it woke (a clean handover back to it commits first: no overlap).
    const elsewhere = new Set<string>();
    for (const other of world.members) if (other !== member) for (const line of other.process.lines) elsewhere.add(recordKey(line));
    const stale = member.process.lines.slice(printed).filter((line) => {
      const name = recordKey(line);
      return owners[Number(name.split('/')[0])] !== id && elsewhere.has(name);
    }).length;
    tally.staleDeliveries += stale;
    // One record may have been taken from the stream before SIGSTOP and printed after SIGCONT.
    if (stale > 1) tally.violations.push(`pause ${round}: the resumed member ${member.index} handed out ${stale} records of partitions another member owned and handed out too (split brain)`);
    say(`pause ${round}: group member ${member.index} (${id ?? '?'}) stopped ${((resumed - paused) / 1000).toFixed(1)} s; the others owned all ${GROUP_PARTITIONS} partitions ${(rebalanceMs / 1000).toFixed(1)} s after SIGSTOP; after SIGCONT it handed out ${stale} records of partitions it had lost that another member handed out too, then registered again and the group rebalanced to full ownership in ${(recoverMs / 1000).toFixed(1)} s; offset regressions so far: ${world.offsetRegressions.length}`);
  }
}

/** `partition/offset` of a line a group member printed ('' for anything else). */
function recordKey(line: string): string {
  try {
    const parsed = JSON.parse(line) as { partition: number; offset: string };
    return `${parsed.partition}/${parsed.offset}`;
  } catch {
    return '';
  }
}

// ---- pause-loader ------------------------------------------------------------------------------

async function pauseLoaders(world: ZooKeeperWorld, options: StepOptions, tally: Tally, say: (line: string) => void): Promise<void> {
  const loader = world.loader;
  if (loader === undefined) throw new Error('the pause-loader scenario needs the loader');
  let batch = 3_000;
  for (let round = 1; round <= options.rounds; round += 1) {
    await loader.produce(batch);
    const stale = loader.startRun();
    // Between its plan and its commit: the 'planned' log line.
    await stale.waitFor(() => stale.stderr().includes('"event":"planned"'), 'the loader run to plan', 60_000).catch(() => undefined);
    if (stale.hasExited()) {
      const outcome = { exit: await stale.exited, code: undefined };
      tally.loaderOutcomes.push(outcome);
      say(`pause ${round}: the loader run ended (${String(outcome.exit)}) before it could be paused; again with more records`);
      batch *= 2;
      round -= 1;
      if (batch > 50_000) throw new Error('the loader runs too fast to be paused between plan and commit');
      continue;
    }
    stale.signal('SIGSTOP');
    const paused = Date.now();
    tally.faults += 1;
    const attempt = /"attempt":"([0-9a-f]+)"/.exec(stale.stderr())?.[1];
    let fresh: LoaderRunOutcome[] = [];
    try {
      await waitFor(`the stale run's lease ${etlLockPath(loader.load)} to expire`, async () => (await world.observer.exists(etlLockPath(loader.load)).catch(() => true)) === false, BROKER_SESSION_MS * 5);
      // Another run takes the lease and commits what the stale one had planned.
      await loader.produce(100);
      fresh = await loader.runUntilDone();
      tally.loaderOutcomes.push(...fresh);
      // Time to recover: from the pause until another run has committed in the stale one's place.
      tally.recoverMs.push(Date.now() - paused);
    } finally {
      stale.signal('SIGCONT');
    }
    const resumed = Date.now();
    const exit = await stale.exited;
    const code = /\[([A-Z][A-Z0-9_]+)\]/g.exec(stale.stderr().split('\n').filter((line) => !line.startsWith('{')).join('\n'))?.[1];
    const committedAttempts = await loader.committedAttempts();
    const staleCommitted = attempt !== undefined && committedAttempts.includes(attempt);
    if (staleCommitted) tally.violations.push(`pause ${round}: the stale loader run ${attempt} committed after losing its lease`);
    if (exit === 0) tally.violations.push(`pause ${round}: the stale loader run exited 0 after losing its lease`);
    else tally.fenced += 1;
    if (fresh.at(-1)?.exit !== 0) tally.violations.push(`pause ${round}: no other run could commit while the stale one slept: ${JSON.stringify(fresh)}`);
    say(`pause ${round}: loader run ${attempt ?? '?'} stopped after planning for ${((resumed - paused) / 1000).toFixed(1)} s; its lease expired, ${fresh.length} other run(s) committed; resumed, it exited ${String(exit)}${code === undefined ? '' : ` with ${code}`} and committed ${staleCommitted ? 'SOMETHING' : 'nothing'}`);
  }
}
