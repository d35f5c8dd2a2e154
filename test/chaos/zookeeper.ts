/**
 * `npm run chaos -- zookeeper`: the ZooKeeper fault runs of issue #22 (zookeeper-scenarios.ts
 * does the work on a 3-node ensemble of its own; the short version runs in `npm test`:
 * test/integration/coordination/zookeeper-faults.test.ts):
 *
 *   leader-kill     ×20  SIGKILL the ensemble's leader under brokers (standalone and a replicated
 *                        cluster), acks=−1 producers, a ZooKeeper consumer group and the loader
 *   pause-broker    ×3   SIGSTOP the standalone broker and a replicated partition leader past
 *                        their sessions, SIGCONT
 *   pause-consumer  ×5   SIGSTOP a group member past its session, SIGCONT
 *   pause-loader    ×3   SIGSTOP a loader run between plan and commit past its lease, SIGCONT
 *
 * Prints one line of figures per scenario; a full run (every scenario, default counts) writes the
 * ZooKeeper table of docs/reliability.md between its markers (`--docs` for any run, `--no-docs`
 * never). Options: --scenario NAME (repeatable), --rounds N (every scenario), --seed N,
 * --members N (group members, default 3), --no-replicated (leave the replicated cluster out).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { seededRandom } from '../support/seeded-random.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, median, megabytes, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';
import { runZooKeeperScenario, ZOOKEEPER_SCENARIOS, type ScenarioResult, type ZooKeeperScenario } from './zookeeper-scenarios.js';

export const FULL_ZOOKEEPER_ROUNDS: Readonly<Record<ZooKeeperScenario, number>> = { 'leader-kill': 20, 'pause-broker': 3, 'pause-consumer': 5, 'pause-loader': 3 };

export const ZOOKEEPER_TABLE = {
  start: '<!-- chaos:zookeeper:start (written by `npm run chaos -- zookeeper`; edit the prose around it, not this) -->',
  end: '<!-- chaos:zookeeper:end -->',
  heading: 'ZooKeeper faults',
} as const;

const FAULTS: Readonly<Record<ZooKeeperScenario, string>> = {
  'leader-kill': 'SIGKILL of the ensemble leader, restart',
  'pause-broker': 'SIGSTOP of a broker past its session (standalone, and a replicated partition leader), SIGCONT',
  'pause-consumer': 'SIGSTOP of a group member past its session, SIGCONT',
  'pause-loader': 'SIGSTOP of a loader run between plan and commit past its lease, SIGCONT',
};

const INVARIANTS: Readonly<Record<ZooKeeperScenario, string>> = {
  'leader-kill': 'brokers and members stay registered, every partition owned, producers acknowledged again; no acks=−1 record lost, none stored twice; the group consumes everything; the loader exactly once',
  'pause-broker': 'the broker registers again; a paused leader is replaced and its stale state fenced: no acks=−1 record lost, none stored twice',
  'pause-consumer': 'the others own every partition; the resumed member commits nothing for partitions it lost (no committed offset goes back), registers again; nothing unconsumed',
  'pause-loader': 'the stale run commits nothing (its lease is fenced); another run commits; the warehouse holds every record exactly once',
};

export async function runZooKeeperChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      scenario: { type: 'string', multiple: true },
      rounds: { type: 'string' },
      seed: { type: 'string' },
      members: { type: 'string' },
      'no-replicated': { type: 'boolean' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const scenarios = chosenScenarios(values.scenario, ZOOKEEPER_SCENARIOS);
  const rounds = values.rounds === undefined ? undefined : positiveInteger('--rounds', values.rounds);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const members = values.members === undefined ? 3 : positiveInteger('--members', values.members);
  const full = rounds === undefined && scenarios.length === ZOOKEEPER_SCENARIOS.length && values['no-replicated'] !== true;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const { say } = context;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  say(`zookeeper chaos: scenarios ${scenarios.join(', ')}; rounds ${rounds ?? 'full'}; ${members} group members; seed ${seed} (the suite runs its own 3-node ensemble)`);
  const random = seededRandom(seed);
  const results: (ScenarioResult & { seconds: number })[] = [];
  for (const scenario of scenarios) {
    const began = Date.now();
    const result = await runZooKeeperScenario({
      run: context.run,
      steps: [{ scenario, rounds: rounds ?? FULL_ZOOKEEPER_ROUNDS[scenario] }],
      random,
      members,
      ...(values['no-replicated'] === true ? { replicated: false } : {}),
      say: (line) => say(`  ${scenario} ${line}`),
    });
    const done = { ...result, seconds: Math.round((Date.now() - began) / 1000) };
    results.push(done);
    say(formatZooKeeperLine(done));
    for (const violation of result.violations.slice(0, 20)) say(`  violation: ${violation}`);
  }
  say('');
  say('summary:');
  for (const result of results) say(`  ${formatZooKeeperLine(result)}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, seed ${seed}, ${members} group members, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, ZOOKEEPER_TABLE, `${facts}\n\n${formatZooKeeperTable(results)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return results.every((result) => result.violations.length === 0);
}

const span = (values: readonly number[]): string => `${seconds(median(values))} / ${seconds(values.length === 0 ? undefined : Math.max(...values))}`;

function loaderRuns(result: ScenarioResult): string {
  const failed = Object.entries(result.loaderRuns.failed).map(([code, count]) => `${code} ×${count}`);
  const total = result.loaderRuns.committed + Object.values(result.loaderRuns.failed).reduce((sum, count) => sum + count, 0);
  if (total === 0) return 'no loader';
  return `${total} loader runs: ${result.loaderRuns.committed} exited 0${failed.length === 0 ? '' : `, failed ${failed.join(', ')}`}${result.loaderRuns.fenced === 0 ? '' : ` (${result.loaderRuns.fenced} stale runs fenced)`}; warehouse ${result.loaderRecords} records, ${result.loaderMissing} missing, ${result.loaderDuplicates} duplicated`;
}

export function formatZooKeeperLine(result: ScenarioResult & { seconds: number }): string {
  return (
    `${result.scenario} ×${result.faults}: ${result.atRisk} records at risk (acks=−1 acknowledged + loaded), ${result.lost} lost, ${result.logDuplicates} stored twice; ` +
    `group: ${result.groupMissing} unconsumed, ${result.groupDuplicates} redelivered (at-least-once)${result.scenario === 'pause-consumer' ? `, ${result.staleDeliveries} handed out by resumed members for lost partitions` : ''}; ${loaderRuns(result)}; ` +
    `${result.quorumMs.length === 0 ? '' : `quorum back median / max ${span(result.quorumMs)}, `}recovered median / max ${span(result.recoverMs)}; ` +
    `sessions expired ${result.sessionsExpired}; broker peak RSS ${megabytes(result.peakRssBytes)}; ${result.violations.length} violations in ${result.seconds} s`
  );
}

export function formatZooKeeperTable(results: readonly (ScenarioResult & { seconds: number })[]): string {
  const lines = [
    '| scenario | faults injected | invariant | result | records at risk | lost | stored twice | group redelivered | loader | quorum back: median / max | recovered: median / max | sessions expired | broker peak RSS | run time |',
    '|---|---|---|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|',
  ];
  for (const result of results) {
    const verdict = result.violations.length === 0 ? 'pass' : `**FAIL** (${result.violations.length} violations: ${escapeCell(result.violations.slice(0, 3).join('; '))}${result.violations.length > 3 ? '; …' : ''})`;
    lines.push(
      `| ${result.scenario} | ${result.faults} × ${FAULTS[result.scenario]} | ${INVARIANTS[result.scenario]} | ${verdict} | ${result.atRisk} | ${result.lost} | ${result.logDuplicates} | ${result.groupDuplicates}${result.scenario === 'pause-consumer' ? ` (${result.staleDeliveries} by resumed members for lost partitions)` : ''} | ${escapeCell(loaderRuns(result))} | ${result.quorumMs.length === 0 ? '–' : span(result.quorumMs)} | ${span(result.recoverMs)} | ${result.sessionsExpired} | ${megabytes(result.peakRssBytes)} | ${result.seconds} s |`,
    );
  }
  return lines.join('\n');
}
