/**
 * `npm run chaos -- consumers`: the consumer fault runs of issue #22, by hand (the short versions
 * run in `npm test`: test/integration/client/consumer-faults.test.ts):
 *
 *   kill-zookeeper-group ×50  SIGKILL members of a ZooKeeper-coordinated group (the paper's
 *                             Algorithm 1) in and around rebalances, restart, repeat
 *                             (consumers-kills.ts)
 *   kill-broker-group    ×50  the same for a broker-coordinated group (kafkajs members)
 *   far-behind                a ZooKeeper consumer and a kafkajs member start at offset 0 of a
 *                             topic of many segments while producers keep writing: they catch up
 *                             without memory growth, loss or skips (consumers-far-behind.ts)
 *   off-retention             a group whose committed offset retention deleted: each reset policy
 *                             of the ZooKeeper consumer, kafkajs and kcat (librdkafka) resets as
 *                             configured and says so, or fails naming the offset
 *                             (consumers-off-retention.ts)
 *
 * Prints one line of figures per scenario; a full run (every scenario, default counts) writes the
 * table of the "Consumer faults" section of docs/reliability.md between its markers (`--docs` for
 * any run, `--no-docs` never).
 *
 * Options: --scenario NAME (repeatable), --kills N (kill scenarios), --backlog N (far-behind
 * records written before the consumers start), --seed N.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { seededRandom } from '../support/seeded-random.js';
import { runFarBehind, type FarBehindResult } from './consumers-far-behind.js';
import { runMemberKills, type KillResult } from './consumers-kills.js';
import { runOffRetention, type OffRetentionResult } from './consumers-off-retention.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, median, megabytes, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const CONSUMER_SCENARIOS = ['kill-zookeeper-group', 'kill-broker-group', 'far-behind', 'off-retention'] as const;
export type ConsumerScenario = (typeof CONSUMER_SCENARIOS)[number];
export const FULL_KILLS = 50;
export const FULL_BACKLOG = 400_000;

export const CONSUMERS_TABLE = {
  start: '<!-- chaos:consumers:start (written by `npm run chaos -- consumers`; edit the prose around it, not this) -->',
  end: '<!-- chaos:consumers:end -->',
  heading: 'Consumer faults',
} as const;

const INVARIANTS: Readonly<Record<ConsumerScenario, string>> = {
  'kill-zookeeper-group':
    'after each kill every partition owned by exactly one live member, none unowned; committed offsets never back, never past the log end; every acknowledged record consumed; duplicates within the kills’ uncommitted windows',
  'kill-broker-group': 'as kill-zookeeper-group, and: assignments disjoint in every generation, records only of assigned partitions, members told what the coordinator holds',
  'far-behind': 'catches up from offset 0 with every record once, in order, none skipped; RSS in the second half of the catch-up within 64 MiB of the first half',
  'off-retention': 'earliest/latest reset to the log start/end and say so; none fails naming topic, partition, offset and log start; never silent',
};

type ScenarioResult =
  | { readonly scenario: 'kill-zookeeper-group' | 'kill-broker-group'; readonly result: KillResult }
  | { readonly scenario: 'far-behind'; readonly result: FarBehindResult }
  | { readonly scenario: 'off-retention'; readonly result: OffRetentionResult };

export async function runConsumersChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      scenario: { type: 'string', multiple: true },
      kills: { type: 'string' },
      backlog: { type: 'string' },
      seed: { type: 'string' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const scenarios = chosenScenarios(values.scenario, CONSUMER_SCENARIOS);
  const kills = values.kills === undefined ? FULL_KILLS : positiveInteger('--kills', values.kills);
  const backlog = values.backlog === undefined ? FULL_BACKLOG : positiveInteger('--backlog', values.backlog);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const full = values.kills === undefined && values.backlog === undefined && scenarios.length === CONSUMER_SCENARIOS.length;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const { say } = context;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  say(`consumers chaos: scenarios ${scenarios.join(', ')}; kills ${kills}; backlog ${backlog}; seed ${seed}`);
  const random = seededRandom(seed);
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    const log = (line: string): void => say(`  ${scenario} ${line}`);
    let done: ScenarioResult;
    if (scenario === 'kill-zookeeper-group' || scenario === 'kill-broker-group') {
      const result = await runMemberKills({ run: context.run, zookeeperRoot: context.zookeeper, kind: scenario === 'kill-zookeeper-group' ? 'zookeeper' : 'kafkajs', kills, random, say: log });
      done = { scenario, result };
    } else if (scenario === 'far-behind') {
      done = { scenario, result: await runFarBehind({ run: context.run, zookeeperRoot: context.zookeeper, backlog, say: log }) };
    } else {
      done = { scenario, result: await runOffRetention({ run: context.run, zookeeperRoot: context.zookeeper, say: log }) };
    }
    results.push(done);
    say(formatLine(done));
    for (const violation of done.result.violations.slice(0, 20)) say(`  violation: ${violation}`);
  }
  say('');
  say('summary:');
  for (const result of results) say(`  ${formatLine(result)}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, CONSUMERS_TABLE, `${facts}\n\n${formatTable(results)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return results.every((entry) => entry.result.violations.length === 0);
}

const ownership = (result: KillResult): string => `${seconds(median(result.ownershipMs))} / ${seconds(result.ownershipMs.length === 0 ? undefined : Math.max(...result.ownershipMs))}`;

/** faults injected; records at risk; lost; duplicates; time to recover; peak RSS. */
function figures(entry: ScenarioResult): { faults: string; atRisk: string; lost: string; duplicates: string; recover: string; rss: string } {
  if (entry.scenario === 'far-behind') {
    const r = entry.result;
    return {
      faults: `${r.segments} segments, ${r.backlog} records behind, producers writing on`,
      atRisk: `${r.acknowledged} records`,
      lost: `${r.lost} lost, ${r.skipped} skipped, ${r.outOfOrder} out of order`,
      duplicates: String(r.duplicates),
      recover: r.members.map((m) => `${m.kind} caught up in ${seconds(m.catchUpMs)} (${Math.round(m.recordsPerSecond)} records/s)`).join('; '),
      rss: r.members.map((m) => `${m.kind} peak ${megabytes(m.peakRssBytes)} (first half ${megabytes(m.firstHalfMaxRssBytes)}, second half ${megabytes(m.secondHalfMaxRssBytes)})`).join('; '),
    };
  }
  if (entry.scenario === 'off-retention') {
    const r = entry.result;
    return {
      faults: `${r.cases.length} groups whose offsets retention deleted (${r.cases.map((c) => c.name).join(', ')})`,
      atRisk: `${r.deletedBelowCommitted} records between the committed offsets and the log start`,
      lost: `${r.cases.filter((c) => c.ok).length}/${r.cases.length} cases as configured and announced`,
      duplicates: '–',
      recover: r.cases.map((c) => `${c.name}: ${c.outcome}`).join('; '),
      rss: `broker ${megabytes(r.peakBrokerRssBytes)}`,
    };
  }
  const r = entry.result;
  return {
    faults: `${r.kills} SIGKILLs of ${r.kind === 'zookeeper' ? 'ZooKeeper-group' : 'kafkajs'} members (${r.killsDuringRebalance} while the group was rebalancing)`,
    atRisk: `${r.acknowledged} acknowledged records`,
    lost: `${r.lost} lost`,
    duplicates: `${r.duplicates} (bound ${r.duplicateBound})`,
    recover: `kill to full ownership median / max ${ownership(r)}`,
    rss: `member ${megabytes(r.peakMemberRssBytes)}, broker ${megabytes(r.peakBrokerRssBytes)}`,
  };
}

export function formatLine(entry: ScenarioResult): string {
  const f = figures(entry);
  return `${entry.scenario}: faults ${f.faults}; at risk ${f.atRisk}; ${f.lost}; duplicates ${f.duplicates}; ${f.recover}; peak RSS ${f.rss}; ${entry.result.violations.length} violations in ${entry.result.seconds} s`;
}

export function formatTable(results: readonly ScenarioResult[]): string {
  const lines = [
    '| scenario | faults injected | invariant | result | records at risk | lost | duplicates | time to recover | peak RSS | run time |',
    '|---|---|---|---|---|---|---|---|---|---:|',
  ];
  for (const entry of results) {
    const f = figures(entry);
    const violations = entry.result.violations;
    const verdict = violations.length === 0 ? 'pass' : `**FAIL** (${violations.length} violations: ${escapeCell(violations.slice(0, 3).join('; '))}${violations.length > 3 ? '; …' : ''})`;
    lines.push(`| ${entry.scenario} | ${escapeCell(f.faults)} | ${INVARIANTS[entry.scenario]} | ${verdict} | ${escapeCell(f.atRisk)} | ${escapeCell(f.lost)} | ${escapeCell(f.duplicates)} | ${escapeCell(f.recover)} | ${escapeCell(f.rss)} | ${entry.result.seconds} s |`);
  }
  return lines.join('\n');
}
