/**
 * `npm run chaos -- storage`: the storage fault runs of issue #22, by hand. Today one scenario:
 *
 *   corrupt-files ×100  SIGKILL a broker under acks=−1 producers, damage one file of its data dir
 *                       (torn or overwritten active segment, index, time index, producer snapshot,
 *                       checkpoint), restart, read everything back checking every batch
 *                       (test/chaos/corrupt-files.ts)
 *
 * Prints one line of figures; a full run (default counts) writes its row of the storage table in
 * docs/reliability.md between its markers (`--docs` for any run, `--no-docs` never).
 *
 * Options: --rounds N, --seed N, --kind KIND (repeatable; default every kind), --probes N
 * (random offsets and timestamps checked per partition per round, default 20).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { DAMAGE_KINDS, type DamageKind } from '../support/file-damage.js';
import { seededRandom } from '../support/seeded-random.js';
import { runCorruptFiles, type CorruptFilesResult } from './corrupt-files.js';
import { escapeCell, gitCommit, machineFacts, median, megabytes, positiveInteger, RELIABILITY_DOC, seconds, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const FULL_CORRUPT_FILES_ROUNDS = 100;
export const STORAGE_TABLE = {
  start: '<!-- chaos:storage:start (written by `npm run chaos -- storage`; edit the prose around it, not this) -->',
  end: '<!-- chaos:storage:end -->',
  heading: 'Storage chaos results',
} as const;

export async function runStorageChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      rounds: { type: 'string' },
      seed: { type: 'string' },
      kind: { type: 'string', multiple: true },
      probes: { type: 'string' },
      docs: { type: 'boolean' },
      'no-docs': { type: 'boolean' },
    },
    strict: true,
  });
  const kinds = (values.kind ?? [...DAMAGE_KINDS]).map((kind) => {
    if (!(DAMAGE_KINDS as readonly string[]).includes(kind)) throw new Error(`unknown damage kind "${kind}"; kinds: ${DAMAGE_KINDS.join(', ')}`);
    return kind as DamageKind;
  });
  const rounds = values.rounds === undefined ? FULL_CORRUPT_FILES_ROUNDS : positiveInteger('--rounds', values.rounds);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  const probes = values.probes === undefined ? 20 : positiveInteger('--probes', values.probes);
  const full = values.rounds === undefined && values.kind === undefined;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const { say } = context;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  say(`storage chaos: corrupt-files ×${rounds}; kinds ${kinds.join(', ')}; seed ${seed}`);
  const began = Date.now();
  const result = await runCorruptFiles({ run: context.run, rounds, kinds, probes, random: seededRandom(seed), say: (line) => say(`  ${line}`) });
  const runSeconds = Math.round((Date.now() - began) / 1000);
  const line = formatCorruptFilesLine(result, runSeconds);
  say(line);
  for (const violation of result.violations.slice(0, 20)) say(`  violation: ${violation}`);
  if (result.violations.length > 0) say(`broker log: ${result.brokerLog}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : `${rounds} rounds`}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, STORAGE_TABLE, `${facts}\n\n${formatCorruptFilesTable(result, runSeconds)}`);
    say(`results table written to ${RELIABILITY_DOC}`);
  }
  return result.violations.length === 0;
}

function kindCounts(result: CorruptFilesResult): string {
  const counts = new Map<string, number>();
  for (const damage of result.damages) counts.set(damage.kind, (counts.get(damage.kind) ?? 0) + 1);
  return [...counts].map(([kind, count]) => `${kind} ${count}`).join(', ');
}

export function formatCorruptFilesLine(result: CorruptFilesResult, runSeconds: number): string {
  return (
    `corrupt-files ×${result.rounds}: ${result.damages.length} files damaged (${kindCounts(result)}), ${result.acknowledged} acknowledged, ` +
    `${result.cutByDamage} cut with their damaged batches, ${result.lost} lost, ${result.duplicated} duplicated, ` +
    `recovery to first write median ${seconds(median(result.recoveryMs))} max ${seconds(result.recoveryMs.length === 0 ? undefined : Math.max(...result.recoveryMs))}, ` +
    `broker peak RSS ${megabytes(result.peakRssBytes)}, ${result.violations.length} violations in ${runSeconds} s`
  );
}

export function formatCorruptFilesTable(result: CorruptFilesResult, runSeconds: number): string {
  const verdict = result.violations.length === 0 ? 'pass' : `**FAIL** (${result.violations.length} violations: ${escapeCell(result.violations.slice(0, 3).join('; '))}${result.violations.length > 3 ? '; …' : ''})`;
  return [
    '| scenario | faults injected | invariant | result | acknowledged | cut with damaged batches | lost | duplicated | recovery to first write: median / max | broker peak RSS | run time |',
    '|---|---|---|---|---:|---:|---:|---:|---|---:|---:|',
    `| corrupt-files ×${result.rounds} | ${result.damages.length} SIGKILLs + damaged files (${kindCounts(result)}) | nothing corrupt served; indexes agree with the data; nothing acknowledged below the damage lost; writes resume | ${verdict} | ` +
      `${result.acknowledged} | ${result.cutByDamage} | ${result.lost} | ${result.duplicated} | ${seconds(median(result.recoveryMs))} / ${seconds(result.recoveryMs.length === 0 ? undefined : Math.max(...result.recoveryMs))} | ${megabytes(result.peakRssBytes)} | ${runSeconds} s |`,
  ].join('\n');
}
