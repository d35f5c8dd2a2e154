/**
 * `npm run chaos -- replication`: the full replication fault runs of replication.md §6 (tests 2,
 * 3, 4 and 9), by hand. Each scenario gets its own three-broker cluster (the harness,
 * test/support/replicated-cluster.ts) on its own ZooKeeper chroot, a topic of 3 partitions with
 * RF=3 and min.insync.replicas 2, an idempotent acks=−1 producer, a consumer per partition and
 * the metadata sampler running throughout, then injects its fault round after round:
 *
 *   leader-kill      ×50  SIGKILL the leader of partition 0; once another broker leads, restart it
 *   controller-kill  ×20  SIGKILL the broker holding /controller; a new one must take over with a
 *                         higher controller epoch (+1 per round at least); restart it
 *   double-failover  ×50  SIGKILL the leader of partition 0, then the newly elected leader after
 *                         a random 0–500 ms; restart both (KIP-279)
 *   power-loss       ×50  SIGKILL 1–3 random brokers (all three at once in every fifth round: 10
 *                         of 50), cut their files back to their last fsync (the fsync journal,
 *                         test/support/power-loss.ts), restart them
 *   compacted-leader-kill ×20  on a compacted topic with keyed writes and tombstones, every broker
 *                         cleaning without pause: SIGKILL the leader of a random partition after a
 *                         random 0.3–2.5 s, restart it (issue #34; its own workload and checks,
 *                         test/chaos/compacted-replication.ts)
 *
 * Before each round every partition has its full ISR again; after the last, the run heals,
 * stops producing, reads every partition to its end, and checks I1–I7 (the checker,
 * test/support/replication-history.ts) and I6 on the files (replica-files.ts). Each scenario
 * prints one line: faults injected, records acknowledged, lost, duplicated, unseen, the median
 * and maximum time from a kill until every partition the killed broker led has a new leader (as
 * the harness sees it polling every 100 ms: a new epoch in ZooKeeper, served by a live broker),
 * and violations. A failed scenario's broker logs, data dirs and history are copied to the output
 * folder. A full run (every scenario, full counts) writes the results table of
 * docs/reliability.md between its markers; `--docs` writes it for any run, `--no-docs` never.
 *
 * Options: --rounds N (every scenario; power-loss then has max(1, N/5) all-three rounds),
 * --scenario NAME (repeatable), --seed N, --rate N (sends per second, default 200),
 * --segment-bytes N (log.segment.bytes of the brokers, default 65536: segments roll every ten
 * seconds or so, so rolls, producer snapshots and new files meet the faults too),
 * --out DIR (evidence of failures; default a new folder under the system temp dir).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { formatPowerLoss } from '../support/power-loss.js';
import { formatReplicaComparison } from '../support/replica-files.js';
import { ReplicatedCluster, type MetadataSampler, type PartitionState, type Workload } from '../support/replicated-cluster.js';
import { checkReplicationHistory, describeViolation, formatReport, type CheckResult } from '../support/replication-history.js';
import { seededRandom } from '../support/seeded-random.js';
import { escapeCell, gitCommit, machineFacts, median, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import { runCompactedLeaderKills } from './compacted-replication.js';
import type { ChaosContext } from './run.js';

export const REPLICATION_SCENARIOS = ['leader-kill', 'controller-kill', 'double-failover', 'power-loss', 'compacted-leader-kill'] as const;
export type ReplicationScenario = (typeof REPLICATION_SCENARIOS)[number];

/** The issue's counts (replication.md §6 tests 2, 3, 4, 9; issue #34 for the compacted topic). */
export const FULL_ROUNDS: Readonly<Record<ReplicationScenario, number>> = {
  'leader-kill': 50,
  'controller-kill': 20,
  'double-failover': 50,
  'power-loss': 50,
  'compacted-leader-kill': 20,
};

const TOPIC = 'chaos';
const PARTITIONS = [0, 1, 2] as const;
const BROKERS = [1, 2, 3] as const;
/** How long a killed leader's partitions may stay leaderless (§6 test 2: 15 s; generous on a loaded machine). */
const LEADER_TIMEOUT_MS = 60_000;
/** How long the ISR may take to be whole again after a restart. */
const ISR_TIMEOUT_MS = 120_000;
const POLL_MS = 100;

export { RELIABILITY_DOC } from './report.js';
export const TABLE_START = '<!-- chaos:replication:start (written by `npm run chaos -- replication`; edit the prose around it, not this) -->';
export const TABLE_END = '<!-- chaos:replication:end -->';

export interface ScenarioResult {
  readonly scenario: ReplicationScenario;
  readonly rounds: number;
  /** Broker processes SIGKILLed. */
  readonly faults: number;
  readonly acknowledged: number;
  readonly lost: number;
  readonly unseen: number;
  /** Values stored more than once (every one a violation: the producer is idempotent). */
  readonly duplicated: number;
  readonly unknown: number;
  /** Milliseconds from each kill until every partition the killed broker(s) led had a new leader. */
  readonly leaderTimes: readonly number[];
  /** Invariant violations and broken expectations (a wait that timed out, an epoch that did not grow), one line each. */
  readonly violations: readonly string[];
  /** Scenario-specific figures: controller epochs, bytes dropped by power losses. */
  readonly notes: readonly string[];
  readonly seconds: number;
}

interface RoundContext {
  readonly cluster: ReplicatedCluster;
  readonly workload: Workload;
  readonly random: () => number;
  readonly say: (line: string) => void;
  readonly leaderTimes: number[];
  readonly violations: string[];
  readonly notes: string[];
  faults: number;
  /** Power-loss totals: bytes dropped, files cut, entries removed, rounds with all three brokers. */
  readonly powerLoss: { bytes: number; segmentBytes: number; files: number; removed: number; allThree: number };
}

export async function runReplicationChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      rounds: { type: 'string' },
      scenario: { type: 'string', multiple: true },
      seed: { type: 'string' },
      rate: { type: 'string' },
      'segment-bytes': { type: 'string' },
      out: { type: 'string' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const rounds = values.rounds === undefined ? undefined : positiveInteger('--rounds', values.rounds);
  const chosen = values.scenario ?? [...REPLICATION_SCENARIOS];
  for (const name of chosen) {
    if (!(REPLICATION_SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario "${name}"; scenarios: ${REPLICATION_SCENARIOS.join(', ')}`);
  }
  const scenarios = chosen as ReplicationScenario[];
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const rate = values.rate === undefined ? 200 : positiveInteger('--rate', values.rate);
  const segmentBytes = values['segment-bytes'] === undefined ? 65_536 : positiveInteger('--segment-bytes', values['segment-bytes']);
  const out = values.out ?? mkdtempSync(join(tmpdir(), 'tributary-chaos-evidence-'));
  const full = rounds === undefined && scenarios.length === REPLICATION_SCENARIOS.length;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  const { say } = context;
  say(`replication chaos: scenarios ${scenarios.join(', ')}; rounds ${rounds ?? 'full'}; seed ${seed}; ${rate} sends/s; segments of ${segmentBytes} bytes; load average ${loadAtStart.map((load) => load.toFixed(2)).join(' ')}`);

  const random = seededRandom(seed);
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    const result = await runScenario(scenario, rounds ?? FULL_ROUNDS[scenario], { ...context, random, rate, segmentBytes, out });
    results.push(result);
    say(formatResultLine(result));
  }
  const loadAtEnd = loadavg();
  say('');
  say('summary:');
  for (const result of results) say(`  ${formatResultLine(result)}`);
  const ok = results.every((result) => result.violations.length === 0);
  if (!ok) say(`evidence of the failed scenarios: ${out}`);
  if (writeDocs) {
    const table = formatResultsTable(results, { startedAt, endedAt: new Date(), seed, rate, segmentBytes, loadAtStart, loadAtEnd, rounds, commit: gitCommit() });
    updateReliabilityDoc(RELIABILITY_DOC, table);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return ok;
}

// -------------------------------------------------------------------------------------------------
// One scenario

async function runScenario(scenario: ReplicationScenario, rounds: number, options: ChaosContext & { readonly random: () => number; readonly rate: number; readonly segmentBytes: number; readonly out: string }): Promise<ScenarioResult> {
  const { say } = options;
  const began = Date.now();
  say(`--- ${scenario} ×${rounds}`);
  if (scenario === 'compacted-leader-kill') return runCompactedScenario(rounds, options);
  const cluster = await ReplicatedCluster.start({
    run: options.run,
    zookeeper: options.zookeeper,
    name: `chaos-${scenario}`,
    settings: { 'shutdown.grace.ms': '1000', 'log.segment.bytes': String(options.segmentBytes) },
    fsyncJournal: scenario === 'power-loss',
  });
  const violations: string[] = [];
  const notes: string[] = [];
  const leaderTimes: number[] = [];
  let round: RoundContext | undefined;
  let check: CheckResult | undefined;
  try {
    await cluster.createTopic(TOPIC, { partitions: PARTITIONS.length, replicationFactor: BROKERS.length });
    const sampler = cluster.startMetadataSampler(TOPIC);
    const workload = await cluster.startWorkload({ topic: TOPIC, idempotent: true, ratePerSecond: options.rate });
    const context: RoundContext = { cluster, workload, random: options.random, say, leaderTimes, violations, notes, faults: 0, powerLoss: { bytes: 0, segmentBytes: 0, files: 0, removed: 0, allThree: 0 } };
    round = context;
    await workload.waitForAcknowledged(200, { timeoutMs: 60_000 });
    const inject = INJECTORS[scenario];
    const state = await inject.setUp?.(context);
    for (let index = 1; index <= rounds; index += 1) {
      try {
        await inject.round(context, index, rounds);
        await healAndWaitForWrites(context);
      } catch (error) {
        violations.push(`round ${index}: ${messageOf(error)}`);
        say(`  round ${index}: FAILED: ${messageOf(error)}`);
        // Carry on from a healed cluster if it can be had; the final check says the rest.
        await healAndWaitForWrites(context).catch((healError: unknown) => violations.push(`round ${index}: could not heal: ${messageOf(healError)}`));
      }
    }
    await inject.tearDown?.(context, state);
    check = await finalCheck(context, sampler);
  } catch (error) {
    violations.push(`scenario stopped: ${messageOf(error)}`);
    say(`  ${scenario} stopped: ${messageOf(error)}`);
  } finally {
    if (violations.length > 0) saveEvidence(scenario, cluster, violations, check, options.out, say);
    await cluster.close();
  }
  const summary = check?.summary;
  return {
    scenario,
    rounds,
    faults: round?.faults ?? 0,
    acknowledged: summary?.acknowledged ?? round?.workload.acknowledged() ?? 0,
    lost: summary?.lost ?? Number.NaN,
    unseen: summary?.unseen ?? Number.NaN,
    duplicated: summary?.duplicatedValues ?? Number.NaN,
    unknown: summary?.unknown ?? Number.NaN,
    leaderTimes,
    violations,
    notes,
    seconds: Math.round((Date.now() - began) / 1000),
  };
}

/** The compacted topic's scenario: its own workload (keyed writes) and checks (compacted-replication.ts). */
async function runCompactedScenario(rounds: number, options: ChaosContext & { readonly random: () => number; readonly rate: number; readonly out: string }): Promise<ScenarioResult> {
  const result = await runCompactedLeaderKills({ run: options.run, zookeeper: options.zookeeper, rounds, random: options.random, rate: Math.min(options.rate, 150), say: options.say, out: options.out });
  return {
    scenario: 'compacted-leader-kill',
    rounds,
    faults: result.faults,
    acknowledged: result.acknowledged,
    lost: result.lost,
    // Records the cleaner removed are not "unseen": nothing a consumer must read is missing unless counted as lost.
    unseen: 0,
    duplicated: result.duplicated,
    unknown: result.unknown,
    leaderTimes: result.leaderTimes,
    violations: result.violations,
    notes: result.notes,
    seconds: result.seconds,
  };
}

interface Injector {
  setUp?(round: RoundContext): Promise<unknown>;
  round(round: RoundContext, index: number, rounds: number): Promise<void>;
  tearDown?(round: RoundContext, state: unknown): Promise<void>;
}

const INJECTORS: Readonly<Record<Exclude<ReplicationScenario, 'compacted-leader-kill'>, Injector>> = {
  'leader-kill': {
    async round(round, index, rounds) {
      const { cluster } = round;
      const before = await leaders(cluster);
      const victim = partitionZero(before).leader;
      const killedAt = Date.now();
      await kill(round, [victim]);
      const { ms, after } = await newLeaders(round, before, [victim], killedAt);
      const next = partitionZero(after);
      round.say(`  round ${index}/${rounds}: killed leader ${victim}; partition 0 led by ${next.leader} at epoch ${next.leaderEpoch} after ${ms} ms`);
      await cluster.restart(victim);
    },
  },

  'controller-kill': {
    async setUp(round) {
      return (await waitForController(round.cluster)).epoch;
    },
    async round(round, index, rounds) {
      const { cluster } = round;
      const controller = await waitForController(cluster);
      const before = await leaders(cluster);
      const killedAt = Date.now();
      await kill(round, [controller.brokerId]);
      const [next, leadersBack] = await Promise.all([
        cluster.waitFor(
          `a controller other than broker ${controller.brokerId} with an epoch above ${controller.epoch}`,
          async () => {
            const now = await cluster.controller();
            if (now.brokerId === undefined || now.brokerId === controller.brokerId || (now.epoch ?? -1) <= controller.epoch) {
              throw new Error(`controller ${now.brokerId ?? 'none'} at epoch ${now.epoch ?? 'none'}`);
            }
            return { brokerId: now.brokerId, epoch: now.epoch ?? -1, ms: Date.now() - killedAt };
          },
          { timeoutMs: LEADER_TIMEOUT_MS, intervalMs: POLL_MS },
        ),
        newLeaders(round, before, [controller.brokerId], killedAt, { record: false }),
      ]);
      // The figure is the time until both a new controller and new leaders are in place.
      const ms = Math.max(next.ms, leadersBack.ms);
      round.leaderTimes.push(ms);
      round.say(`  round ${index}/${rounds}: killed controller ${controller.brokerId} (epoch ${controller.epoch}); broker ${next.brokerId} controls at epoch ${next.epoch} after ${next.ms} ms, partitions it led have leaders after ${leadersBack.ms} ms`);
      await cluster.restart(controller.brokerId);
    },
    async tearDown(round, state) {
      const first = state as number;
      const last = (await waitForController(round.cluster)).epoch;
      round.notes.push(`controller epoch ${first} → ${last} (+${last - first})`);
      if (last - first < round.faults) round.violations.push(`the controller epoch grew by ${last - first}, less than the ${round.faults} controller kills`);
    },
  },

  'double-failover': {
    async round(round, index, rounds) {
      const { cluster } = round;
      const before = await leaders(cluster);
      const first = partitionZero(before);
      const firstKilledAt = Date.now();
      await kill(round, [first.leader]);
      const second = await cluster.waitForLeaderChange(first, { timeoutMs: LEADER_TIMEOUT_MS, intervalMs: 50 });
      round.leaderTimes.push(Date.now() - firstKilledAt);
      const delay = Math.floor(round.random() * 501);
      await sleep(delay);
      const secondKilledAt = Date.now();
      await kill(round, [second.leader]);
      const third = await cluster.waitForLeaderChange(second, { timeoutMs: LEADER_TIMEOUT_MS, intervalMs: POLL_MS });
      round.leaderTimes.push(Date.now() - secondKilledAt);
      round.say(`  round ${index}/${rounds}: killed leader ${first.leader}, then after ${delay} ms its successor ${second.leader} (epoch ${second.leaderEpoch}); partition 0 led by ${third.leader} at epoch ${third.leaderEpoch}`);
      await Promise.all([cluster.restart(first.leader), cluster.restart(second.leader)]);
    },
  },

  'power-loss': {
    async round(round, index, rounds) {
      const { cluster } = round;
      // Every fifth round (the last one too when there are fewer than five) loses all three.
      const allThree = index % 5 === 0 || (rounds < 5 && index === rounds);
      const count = allThree ? BROKERS.length : 1 + Math.floor(round.random() * 2);
      const victims = shuffle([...BROKERS], round.random).slice(0, count).sort();
      const before = await leaders(cluster);
      const killedAt = Date.now();
      await kill(round, victims);
      const led = victims.filter((id) => before.some((state) => state.leader === id));
      // Leadership is measured while the brokers lose their page cache and come back.
      const measured = led.length === 0 ? undefined : newLeaders(round, before, victims, killedAt);
      measured?.catch(() => undefined);
      const cuts: string[] = [];
      for (const id of victims) {
        const report = cluster.loseUnsyncedWrites(id);
        const dropped = report.cut.reduce((sum, entry) => sum + entry.from - entry.to, 0);
        const fromSegments = report.cut.filter((entry) => entry.path.endsWith('.log')).reduce((sum, entry) => sum + entry.from - entry.to, 0);
        round.powerLoss.bytes += dropped;
        round.powerLoss.segmentBytes += fromSegments;
        round.powerLoss.removed += report.removed.length;
        round.powerLoss.files += report.cut.length;
        cuts.push(`broker ${id}: ${formatPowerLoss(report, 0)}, ${fromSegments} of the bytes from segments${report.removed.length > 0 ? ` (removed ${report.removed.join(', ')})` : ''}`);
      }
      if (allThree) round.powerLoss.allThree += 1;
      await Promise.all(victims.map((id) => cluster.restart(id)));
      const ms = (await measured)?.ms;
      round.say(`  round ${index}/${rounds}: power loss on ${victims.join(', ')}${allThree ? ' (all three)' : ''}; ${ms === undefined ? 'they led nothing' : `leaders back after ${ms} ms`}; ${cuts.join('; ')}`);
    },
    async tearDown(round) {
      const { bytes, segmentBytes, files, removed, allThree } = round.powerLoss;
      round.notes.push(`${allThree} rounds with all three brokers; ${bytes} unsynced bytes dropped from ${files} files (${segmentBytes} from segments, the rest from indexes), ${removed} unsynced files or folders removed`);
    },
  },
};

// -------------------------------------------------------------------------------------------------
// Steps

/** Every partition's state, once each has a leader (in ZooKeeper, served so by that broker). */
async function leaders(cluster: ReplicatedCluster): Promise<PartitionState[]> {
  return Promise.all(PARTITIONS.map((partition) => cluster.waitForLeader(TOPIC, partition, { timeoutMs: LEADER_TIMEOUT_MS })));
}

function partitionZero(states: readonly PartitionState[]): PartitionState {
  const state = states.find((entry) => entry.partition === 0);
  if (state === undefined) throw new Error('no state for partition 0');
  return state;
}

async function kill(round: RoundContext, ids: readonly number[]): Promise<void> {
  round.faults += ids.length;
  await Promise.all(ids.map((id) => round.cluster.kill(id)));
}

/**
 * Until every partition led by one of `victims` in `before` has a new leader (a higher epoch, at a
 * running broker); the time from `killedAt`, recorded as a figure unless `record` is false.
 */
async function newLeaders(round: RoundContext, before: readonly PartitionState[], victims: readonly number[], killedAt: number, { record = true } = {}): Promise<{ ms: number; after: PartitionState[] }> {
  const after = await Promise.all(
    before.map((state) => (victims.includes(state.leader) ? round.cluster.waitForLeaderChange(state, { timeoutMs: LEADER_TIMEOUT_MS, intervalMs: POLL_MS }) : Promise.resolve(state))),
  );
  const ms = Date.now() - killedAt;
  if (record) round.leaderTimes.push(ms);
  return { ms, after };
}

async function waitForController(cluster: ReplicatedCluster): Promise<{ brokerId: number; epoch: number }> {
  return cluster.waitFor(
    'a controller',
    async () => {
      const { brokerId, epoch } = await cluster.controller();
      if (brokerId === undefined || epoch === undefined) throw new Error(`controller ${brokerId ?? 'none'}, epoch ${epoch ?? 'none'}`);
      if (cluster.state(brokerId) !== 'running') throw new Error(`controller ${brokerId} is ${cluster.state(brokerId)}`);
      return { brokerId, epoch };
    },
    { timeoutMs: LEADER_TIMEOUT_MS, intervalMs: POLL_MS },
  );
}

/**
 * Restarts any broker that is down, waits until every one is registered and every partition has
 * its full ISR, then until the producer gets 50 more acknowledgements (writes flow again).
 */
async function healAndWaitForWrites(round: RoundContext): Promise<void> {
  const { cluster, workload } = round;
  for (const id of BROKERS) if (cluster.state(id) === 'stopped') await cluster.restart(id);
  await cluster.waitForRegistered([...BROKERS], { timeoutMs: ISR_TIMEOUT_MS });
  for (const partition of PARTITIONS) await cluster.waitForIsr(TOPIC, partition, [...BROKERS], { timeoutMs: ISR_TIMEOUT_MS });
  await workload.waitForAcknowledged(workload.acknowledged() + 50, { timeoutMs: 60_000 });
}

/** Heals, stops producing, reads everything, checks I1–I7 and I6; violations go to the round context. */
async function finalCheck(round: RoundContext, sampler: MetadataSampler): Promise<CheckResult> {
  const { cluster, workload } = round;
  await healAndWaitForWrites(round).catch((error: unknown) => round.violations.push(`final heal: ${messageOf(error)}`));
  await workload.stopProducing();
  const finalRead = await cluster.readAll(TOPIC, { timeoutMs: 120_000 });
  await workload.waitForConsumers(finalRead, { timeoutMs: 120_000 }).catch((error: unknown) => round.violations.push(`consumers: ${messageOf(error)}`));
  await workload.stopConsuming();
  await sampler.stop();
  const result = checkReplicationHistory(cluster.history(TOPIC, finalRead));
  for (const violation of result.violations) round.violations.push(describeViolation(violation));
  if (!result.ok) round.say(formatReport(result));
  for (const partition of PARTITIONS) {
    const comparison = await cluster.checkReplicaFiles(TOPIC, partition);
    if (!comparison.ok) round.violations.push(`I6 ${TOPIC}-${partition}: ${formatReplicaComparison(comparison)}`);
  }
  return result;
}

/** Copies a failed scenario's broker logs, data dirs and history to `out`. */
function saveEvidence(scenario: ReplicationScenario, cluster: ReplicatedCluster, violations: readonly string[], check: CheckResult | undefined, out: string, say: (line: string) => void): void {
  const folder = join(out, scenario);
  try {
    mkdirSync(folder, { recursive: true });
    for (const id of cluster.brokerIds) {
      const broker = cluster.broker(id);
      const target = join(folder, `broker-${id}`);
      mkdirSync(target, { recursive: true });
      if (existsSync(broker.logFile)) cpSync(broker.logFile, join(target, 'broker.log'));
      if (existsSync(broker.dataDir)) cpSync(broker.dataDir, join(target, 'data'), { recursive: true });
      if (broker.fsyncJournal !== undefined && existsSync(broker.fsyncJournal)) cpSync(broker.fsyncJournal, join(target, 'fsync-journal.jsonl'));
    }
    writeFileSync(join(folder, 'violations.txt'), `${violations.join('\n')}\n`);
    if (check !== undefined) writeFileSync(join(folder, 'check.txt'), `${formatReport(check, 50)}\n`);
    const history = cluster.history(TOPIC, []);
    writeFileSync(join(folder, 'history.json'), JSON.stringify({ sends: history.sends, polls: history.polls, metadataSamples: history.metadataSamples }));
    say(`  evidence of ${scenario} saved in ${folder}`);
  } catch (error) {
    say(`  could not save the evidence of ${scenario}: ${messageOf(error)}`);
  }
}

// -------------------------------------------------------------------------------------------------
// Reports

export function formatResultLine(result: ScenarioResult): string {
  const times = result.leaderTimes;
  return [
    `${result.scenario} ×${result.rounds}:`,
    `${result.faults} faults injected,`,
    `${result.acknowledged} acknowledged,`,
    `${result.lost} lost,`,
    `${result.duplicated} duplicated,`,
    `${result.unseen} unseen,`,
    `time to new leader median ${seconds(median(times))} max ${seconds(times.length === 0 ? undefined : Math.max(...times))} (${times.length} measured),`,
    `${result.violations.length} violations`,
    result.notes.length > 0 ? `(${result.notes.join('; ')})` : '',
    `in ${result.seconds} s`,
  ]
    .filter((part) => part !== '')
    .join(' ');
}

const INVARIANTS: Readonly<Record<ReplicationScenario, string>> = {
  'leader-kill': 'I1–I7; a new leader for every kill',
  'controller-kill': 'I1–I7; a new controller for every kill, controller epoch +1 per kill at least',
  'double-failover': 'I1–I7; logs converge by leader epoch (KIP-279)',
  'power-loss': 'I1–I7 with unsynced data dropped; nothing acknowledged or seen lost',
  'compacted-leader-kill': 'every key\'s latest acknowledged write on every replica and in a read from the start; replicas valid compactions of one history; log start, end, epochs, producer state agree',
};

interface RunFacts {
  readonly startedAt: Date;
  readonly endedAt: Date;
  readonly seed: number;
  readonly rate: number;
  readonly segmentBytes: number;
  readonly loadAtStart: readonly number[];
  readonly loadAtEnd: readonly number[];
  readonly rounds: number | undefined;
  readonly commit: string;
}

/** The markdown table of docs/reliability.md, with a line saying when, where and how it was run. */
export function formatResultsTable(results: readonly ScenarioResult[], facts: RunFacts): string {
  const lines = [
    `Run ${facts.startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${facts.endedAt.toISOString().slice(11, 16)} UTC at commit \`${facts.commit}\`, ` +
      `${facts.rounds === undefined ? 'full counts' : `${facts.rounds} rounds per scenario`}, seed ${facts.seed}, ${facts.rate} sends/s, log.segment.bytes ${facts.segmentBytes}, ` +
      `${machineFacts(facts.loadAtStart, facts.loadAtEnd)}.`,
    '',
    '| scenario | faults injected | invariants | result | acknowledged | lost | duplicated | unseen | time to new leader: median / max (kills measured) | notes | run time |',
    '|---|---:|---|---|---:|---:|---:|---:|---|---|---:|',
  ];
  for (const result of results) {
    const times = result.leaderTimes;
    const verdict = result.violations.length === 0 ? 'pass' : `**FAIL** (${result.violations.length} violations: ${escapeCell(result.violations.slice(0, 3).join('; '))}${result.violations.length > 3 ? '; …' : ''})`;
    lines.push(
      `| ${result.scenario} ×${result.rounds} | ${result.faults} | ${INVARIANTS[result.scenario]} | ${verdict} | ${result.acknowledged} | ${result.lost} | ${result.duplicated} | ${result.unseen} | ` +
        `${seconds(median(times))} / ${seconds(times.length === 0 ? undefined : Math.max(...times))} (${times.length}) | ${escapeCell(result.notes.join('; ') || '–')} | ${result.seconds} s |`,
    );
  }
  return lines.join('\n');
}

/** Replaces the text between the markers (or appends a section with them). */
export function updateReliabilityDoc(file: string, table: string): void {
  updateMarkedBlock(file, { start: TABLE_START, end: TABLE_END, heading: 'Replication chaos results' }, table);
}

// -------------------------------------------------------------------------------------------------
// Small things

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let index = items.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other] as T, items[index] as T];
  }
  return items;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
