/**
 * `npm run chaos -- storage`: the broker storage fault runs of issue #22, by hand
 * (test/chaos/broker-restarts.ts does the work; the short versions run in `npm test`):
 *
 *   crash-acks-all  ×50   SIGKILL a standalone broker under acks=−1 producers, restart, read back
 *   crash-acks-one  ×50   the same under acks=1 producers: what the crash takes is counted
 *   power-loss-acks-all ×50, power-loss-acks-one ×50: the same, and every file cut back to its
 *                         last fsync after the kill (test/support/power-loss.ts)
 *   corrupt-files   ×100  SIGKILL, then damage one file of the data dir (torn or overwritten
 *                         active segment, index, time index, producer snapshot, checkpoint)
 *
 * Prints one line of figures per scenario; a full run (every scenario, default counts) writes the
 * storage table of docs/reliability.md between its markers (`--docs` for any run, `--no-docs`
 * never).
 *
 * Options: --scenario NAME (repeatable), --rounds N (every scenario), --seed N, --kind KIND
 * (repeatable; corrupt-files only; default every kind), --probes N (random offsets and timestamps
 * checked per partition per round, default 20).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { DAMAGE_KINDS, type DamageKind } from '../support/file-damage.js';
import { seededRandom } from '../support/seeded-random.js';
import { runBrokerRestarts, type BrokerRestartsOptions, type BrokerRestartsResult } from './broker-restarts.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, median, megabytes, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const STORAGE_SCENARIOS = ['crash-acks-all', 'crash-acks-one', 'power-loss-acks-all', 'power-loss-acks-one', 'corrupt-files'] as const;
export type StorageScenario = (typeof STORAGE_SCENARIOS)[number];
export const FULL_STORAGE_ROUNDS: Readonly<Record<StorageScenario, number>> = { 'crash-acks-all': 50, 'crash-acks-one': 50, 'power-loss-acks-all': 50, 'power-loss-acks-one': 50, 'corrupt-files': 100 };

export const STORAGE_TABLE = {
  start: '<!-- chaos:storage:start (written by `npm run chaos -- storage`; edit the prose around it, not this) -->',
  end: '<!-- chaos:storage:end -->',
  heading: 'Storage chaos results',
} as const;

const INVARIANTS: Readonly<Record<StorageScenario, string>> = {
  'crash-acks-all': 'nothing corrupt served; indexes agree with the data; no acknowledged record lost; writes resume',
  'crash-acks-one': 'nothing corrupt served; indexes agree with the data; only records past the recovered end lost (counted); writes resume',
  'power-loss-acks-all': 'as crash-acks-all, with every file cut back to its last fsync: no acknowledged record lost',
  'power-loss-acks-one': 'as crash-acks-one, with every file cut back to its last fsync: only the unflushed tail lost (counted)',
  'corrupt-files': 'nothing corrupt served; indexes agree with the data; nothing acknowledged below the damaged batch lost; writes resume',
};

export interface StorageScenarioResult extends BrokerRestartsResult {
  readonly scenario: StorageScenario;
  readonly seconds: number;
}

/** The runner's options for a scenario. */
export function scenarioOptions(scenario: StorageScenario, kinds: readonly DamageKind[]): Pick<BrokerRestartsOptions, 'acks' | 'damage' | 'kinds' | 'powerLoss'> {
  if (scenario === 'crash-acks-one') return { acks: 1 };
  if (scenario === 'power-loss-acks-all') return { acks: -1, powerLoss: true };
  if (scenario === 'power-loss-acks-one') return { acks: 1, powerLoss: true };
  if (scenario === 'corrupt-files') return { acks: -1, damage: true, kinds };
  return { acks: -1 };
}

export async function runStorageChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      scenario: { type: 'string', multiple: true },
      rounds: { type: 'string' },
      seed: { type: 'string' },
      kind: { type: 'string', multiple: true },
      probes: { type: 'string' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const scenarios = chosenScenarios(values.scenario, STORAGE_SCENARIOS);
  const kinds = (values.kind ?? [...DAMAGE_KINDS]).map((kind) => {
    if (!(DAMAGE_KINDS as readonly string[]).includes(kind)) throw new Error(`unknown damage kind "${kind}"; kinds: ${DAMAGE_KINDS.join(', ')}`);
    return kind as DamageKind;
  });
  const rounds = values.rounds === undefined ? undefined : positiveInteger('--rounds', values.rounds);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const probes = values.probes === undefined ? 20 : positiveInteger('--probes', values.probes);
  const full = rounds === undefined && values.kind === undefined && scenarios.length === STORAGE_SCENARIOS.length;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const { say } = context;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  say(`storage chaos: scenarios ${scenarios.join(', ')}; rounds ${rounds ?? 'full'}; damage kinds ${kinds.join(', ')}; seed ${seed}`);
  const random = seededRandom(seed);
  const results: StorageScenarioResult[] = [];
  for (const scenario of scenarios) {
    const began = Date.now();
    const result = await runBrokerRestarts({ run: context.run, rounds: rounds ?? FULL_STORAGE_ROUNDS[scenario], probes, random, ...scenarioOptions(scenario, kinds), say: (line) => say(`  ${scenario} ${line}`) });
    const done: StorageScenarioResult = { ...result, scenario, seconds: Math.round((Date.now() - began) / 1000) };
    results.push(done);
    say(formatStorageLine(done));
    for (const violation of result.violations.slice(0, 20)) say(`  violation: ${violation}`);
    if (result.violations.length > 0) say(`  broker log: ${result.brokerLog}`);
  }
  say('');
  say('summary:');
  for (const result of results) say(`  ${formatStorageLine(result)}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, STORAGE_TABLE, `${facts}\n\n${formatStorageTable(results)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return results.every((result) => result.violations.length === 0);
}

function faults(result: BrokerRestartsResult): string {
  if (result.droppedBytes > 0) return `${result.kills} SIGKILLs + power losses (${result.droppedBytes} unsynced bytes dropped, ${result.droppedSegmentBytes} of them from segments)`;
  if (result.damages.length === 0) return `${result.kills} SIGKILLs`;
  const counts = new Map<string, number>();
  for (const damage of result.damages) counts.set(damage.kind, (counts.get(damage.kind) ?? 0) + 1);
  return `${result.kills} SIGKILLs, ${result.damages.length} files damaged (${[...counts].map(([kind, count]) => `${kind} ${count}`).join(', ')})`;
}

const recovery = (result: BrokerRestartsResult): string =>
  `${seconds(median(result.recoveryMs))} / ${seconds(result.recoveryMs.length === 0 ? undefined : Math.max(...result.recoveryMs))}`;

export function formatStorageLine(result: StorageScenarioResult): string {
  return (
    `${result.scenario} ×${result.rounds}: ${faults(result)}, ${result.acknowledged} acknowledged, ${result.lost} lost, ` +
    `${result.cutByDamage} cut with damaged batches, ${result.lostUnflushed} lost unflushed (acks=1), ${result.duplicated} duplicated, ` +
    `restart to reads median / max ${recovery(result)}, broker peak RSS ${megabytes(result.peakRssBytes)}, ${result.violations.length} violations in ${result.seconds} s`
  );
}

export function formatStorageTable(results: readonly StorageScenarioResult[]): string {
  const lines = [
    '| scenario | faults injected | invariant | result | acknowledged | lost | cut with damaged batches | lost unflushed (acks=1) | duplicated | restart to reads: median / max | broker peak RSS | run time |',
    '|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|',
  ];
  for (const result of results) {
    const verdict = result.violations.length === 0 ? 'pass' : `**FAIL** (${result.violations.length} violations: ${escapeCell(result.violations.slice(0, 3).join('; '))}${result.violations.length > 3 ? '; …' : ''})`;
    lines.push(
      `| ${result.scenario} ×${result.rounds} | ${faults(result)} | ${INVARIANTS[result.scenario]} | ${verdict} | ${result.acknowledged} | ${result.lost} | ${result.cutByDamage} | ${result.lostUnflushed} | ${result.duplicated} | ${recovery(result)} | ${megabytes(result.peakRssBytes)} | ${result.seconds} s |`,
    );
  }
  return lines.join('\n');
}
