/**
 * `npm run chaos -- disk`: the disk-full runs of issue #22 (reliability reference §8 S9), by hand;
 * short versions run in `npm test` (test/integration/broker/disk-full.test.ts). Each puts one
 * component's files on a small tmpfs (test/support/tmpfs.ts; needs root) and fills it, cycle after
 * cycle:
 *
 *   disk-full            ×20  a broker's data dir (with ZooKeeper; SIGKILL on the full disk and a
 *                             start on it every 5th cycle): produce refused with
 *                             KAFKA_STORAGE_ERROR, reads served, writes resume without a restart
 *   disk-full-standalone ×20  the same, standalone (its coordination file shares the full disk:
 *                             a killed broker starts again once the space is back)
 *   registry-disk-full   ×20  the schema registry's file store: 5xx with Confluent's body, reads
 *                             served, registrations accepted once the space is back
 *   warehouse-disk-full  ×10  the loader's local warehouse: a run fails clearly and commits
 *                             nothing; the next run after the space returns loads exactly once
 *
 * Prints one line of figures per scenario; a full run (every scenario, default counts) writes the
 * disk-full table of docs/reliability.md between its markers (`--docs` for any run, `--no-docs`
 * never). Options: --scenario NAME (repeatable), --cycles N (every scenario), --seed N.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { seededRandom } from '../support/seeded-random.js';
import { tmpfsSupported } from '../support/tmpfs.js';
import { runDiskFullBroker } from './disk-broker.js';
import { runDiskFullRegistry } from './disk-registry.js';
import { runDiskFullWarehouse } from './disk-warehouse.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, median, megabytes, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const DISK_SCENARIOS = ['disk-full', 'disk-full-standalone', 'registry-disk-full', 'warehouse-disk-full'] as const;
export type DiskScenario = (typeof DISK_SCENARIOS)[number];
export const FULL_DISK_CYCLES: Readonly<Record<DiskScenario, number>> = { 'disk-full': 20, 'disk-full-standalone': 20, 'registry-disk-full': 20, 'warehouse-disk-full': 10 };

export const DISK_TABLE = {
  start: '<!-- chaos:disk:start (written by `npm run chaos -- disk`; edit the prose around it, not this) -->',
  end: '<!-- chaos:disk:end -->',
  heading: 'Disk full results',
} as const;

const INVARIANTS: Readonly<Record<DiskScenario, string>> = {
  'disk-full': 'refusals are KAFKA_STORAGE_ERROR; broker up; every partition read back checked while full; nothing acknowledged lost; no refused record ever stored; writes resume on every partition without a restart',
  'disk-full-standalone': 'as disk-full, standalone (coordination file on the same full disk)',
  'registry-disk-full': "registrations refused 5xx with Confluent's error body; ids and versions served while full; nothing refused ever visible; accepted once space returns; consistent after restarts",
  'warehouse-disk-full': 'a run on the full disk fails with a clear error and commits nothing; the next run loads every record exactly once',
};

/** One scenario's figures, formatted alike. */
export interface DiskLine {
  readonly scenario: DiskScenario;
  readonly cycles: number;
  readonly faults: string;
  readonly refused: string;
  readonly acknowledged: string;
  readonly lost: number;
  readonly resumeMs: readonly number[];
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
  readonly seconds: number;
}

const resume = (values: readonly number[]): string =>
  values.length === 0 ? '–' : `${seconds(median(values))} / ${seconds(Math.max(...values))}`;

export function formatDiskLine(line: DiskLine): string {
  return (
    `${line.scenario} ×${line.cycles}: ${line.faults}; refused ${line.refused}; ${line.acknowledged}; ${line.lost} lost; ` +
    `time to resume median / max ${resume(line.resumeMs)}; peak RSS ${megabytes(line.peakRssBytes)}; ${line.violations.length} violations in ${line.seconds} s`
  );
}

export function formatDiskTable(lines: readonly DiskLine[]): string {
  const rows = [
    '| scenario | faults injected | invariant | result | refused | acknowledged | lost | time to resume: median / max | peak RSS | run time |',
    '|---|---|---|---|---|---|---:|---|---:|---:|',
  ];
  for (const line of lines) {
    const verdict = line.violations.length === 0 ? 'pass' : `**FAIL** (${line.violations.length} violations: ${escapeCell(line.violations.slice(0, 3).join('; '))}${line.violations.length > 3 ? '; …' : ''})`;
    rows.push(
      `| ${line.scenario} ×${line.cycles} | ${line.faults} | ${INVARIANTS[line.scenario]} | ${verdict} | ${line.refused} | ${line.acknowledged} | ${line.lost} | ${resume(line.resumeMs)} | ${megabytes(line.peakRssBytes)} | ${line.seconds} s |`,
    );
  }
  return rows.join('\n');
}

/** Runs one scenario; `cycles` as given. */
export async function runDiskScenario(scenario: DiskScenario, cycles: number, random: () => number, context: ChaosContext): Promise<DiskLine> {
  const began = Date.now();
  const say = (line: string): void => context.say(`  ${scenario} ${line}`);
  const took = (): number => Math.round((Date.now() - began) / 1000);
  if (scenario === 'disk-full' || scenario === 'disk-full-standalone') {
    const zookeeper = scenario === 'disk-full' ? context.zookeeper : undefined;
    const result = await runDiskFullBroker({ run: context.run, cycles, random, killEvery: 5, say, ...(zookeeper === undefined ? {} : { zookeeper }) });
    if (result.violations.length > 0) say(`broker log: ${result.brokerLog}`);
    const codes = [...result.refusedByCode].map(([code, count]) => `${count}× error ${code}`).join(', ');
    return {
      scenario,
      cycles: result.cycles,
      faults: `${result.fills} fills of an 8 MiB tmpfs, ${result.kills} SIGKILLs on the full disk`,
      refused: `${result.refusedRequests} produce requests (${codes || 'none'})`,
      acknowledged: `${result.acknowledged} records acknowledged (acks=−1), ${result.readsWhileFull} checked reads while full, ${result.refusedStored} refused records stored, ${result.duplicated} duplicated`,
      lost: result.lost,
      resumeMs: result.resumeMs,
      peakRssBytes: result.peakRssBytes,
      violations: result.violations,
      seconds: took(),
    };
  }
  if (scenario === 'registry-disk-full') {
    const result = await runDiskFullRegistry({ run: context.run, cycles, random, killEvery: 5, say });
    if (result.violations.length > 0) say(`registry log: ${result.logFile}`);
    return {
      scenario,
      cycles: result.cycles,
      faults: `${result.fills} fills of a 1 MiB tmpfs, ${result.kills} SIGKILLs on the full disk`,
      refused: `${result.refused} registrations (5xx, Confluent body)`,
      acknowledged: `${result.registered} registrations acknowledged, ${result.readsWhileFull} reads answered while full`,
      lost: result.lost,
      resumeMs: result.resumeMs,
      peakRssBytes: result.peakRssBytes,
      violations: result.violations,
      seconds: took(),
    };
  }
  const result = await runDiskFullWarehouse({ run: context.run, cycles, random, say });
  return {
    scenario,
    cycles: result.cycles,
    faults: `${result.fills} fills of a 4 MiB tmpfs (every other one leaving 4–64 KiB)`,
    refused: `${result.refusedRuns} runs failed clearly, committing nothing (${result.fittedRuns} fitted and committed)`,
    acknowledged: `${result.produced} records produced, ${result.commits} commits, ${result.duplicated} duplicated`,
    lost: result.lost,
    resumeMs: result.resumeMs,
    peakRssBytes: result.peakRssBytes,
    violations: result.violations,
    seconds: took(),
  };
}

export async function runDiskChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      scenario: { type: 'string', multiple: true },
      cycles: { type: 'string' },
      seed: { type: 'string' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const scenarios = chosenScenarios(values.scenario, DISK_SCENARIOS);
  if (!tmpfsSupported()) throw new Error('the disk suite mounts tmpfs filesystems: run it as root where mount(8) works');
  const cycles = values.cycles === undefined ? undefined : positiveInteger('--cycles', values.cycles);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const full = cycles === undefined && scenarios.length === DISK_SCENARIOS.length;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const { say } = context;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  say(`disk chaos: scenarios ${scenarios.join(', ')}; cycles ${cycles ?? 'full'}; seed ${seed}`);
  const random = seededRandom(seed);
  const lines: DiskLine[] = [];
  for (const scenario of scenarios) {
    const line = await runDiskScenario(scenario, cycles ?? FULL_DISK_CYCLES[scenario], random, context);
    lines.push(line);
    say(formatDiskLine(line));
    for (const violation of line.violations.slice(0, 20)) say(`  violation: ${violation}`);
  }
  say('');
  say('summary:');
  for (const line of lines) say(`  ${formatDiskLine(line)}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, DISK_TABLE, `${facts}\n\n${formatDiskTable(lines)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return lines.every((line) => line.violations.length === 0);
}
