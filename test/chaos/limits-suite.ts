/**
 * `npm run chaos -- limits`: the resource-exhaustion runs of issue #22 at full counts, by hand
 * (test/chaos/limits.ts does the work; the short version runs in `npm test`). Prints one line per
 * attack and, for a full run (every attack, full counts; `--docs` for any run, `--no-docs` never),
 * writes the limits table of docs/reliability.md between its markers.
 *
 * Options: --scenario NAME (repeatable: connection-flood, oversized-frames, slowloris,
 * tiny-produce), --short (the counts `npm test` uses).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { FULL_LIMIT_COUNTS, LIMIT_SCENARIOS, runLimits, SHORT_LIMIT_COUNTS, type LimitResult, type LimitScenario } from './limits.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, megabytes, RELIABILITY_DOC, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const LIMITS_TABLE = {
  start: '<!-- chaos:limits:start (written by `npm run chaos -- limits`; edit the prose around it, not this) -->',
  end: '<!-- chaos:limits:end -->',
  heading: 'Limits results',
} as const;

const INVARIANTS: Readonly<Record<LimitScenario, string>> = {
  'connection-flood': 'connections over max.connections closed at once; a real client served after',
  'oversized-frames': 'every hostile size prefix closed before allocating; memory flat; a real client served after',
  slowloris: 'memory bounded; a real client served throughout',
  'tiny-produce': 'every request answered, offsets contiguous, memory bounded',
};

export async function runLimitsChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: { scenario: { type: 'string', multiple: true }, short: { type: 'boolean' }, docs: { type: 'boolean' }, 'no-docs': { type: 'boolean' } },
    strict: true,
  });
  const scenarios = chosenScenarios(values.scenario, LIMIT_SCENARIOS);
  const counts = values.short === true ? SHORT_LIMIT_COUNTS : FULL_LIMIT_COUNTS;
  const full = values.short !== true && scenarios.length === LIMIT_SCENARIOS.length;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  context.say(`limits chaos: ${scenarios.join(', ')}; counts ${JSON.stringify(counts)}`);
  const { results, brokerLog } = await runLimits({ run: context.run, scenarios, counts, say: context.say });
  const ok = results.every((result) => result.violations.length === 0);
  for (const result of results) for (const violation of result.violations) context.say(`  violation (${result.scenario}): ${violation}`);
  if (!ok) context.say(`broker log: ${brokerLog}`);
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, LIMITS_TABLE, `${facts}\n\n${formatLimitsTable(results)}`);
    context.say(`results table written to ${RELIABILITY_DOC}`);
  }
  return ok;
}

export function formatLimitsTable(results: readonly LimitResult[]): string {
  const lines = [
    '| attack | injected | invariant | result | refused | served | broker RSS before | peak RSS (growth) | run time | notes |',
    '|---|---:|---|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const result of results) {
    const verdict = result.violations.length === 0 ? 'pass' : `**FAIL** (${escapeCell(result.violations.slice(0, 3).join('; '))})`;
    lines.push(
      `| ${result.scenario} | ${result.injected} | ${INVARIANTS[result.scenario]} | ${verdict} | ${result.refused} | ${result.served} | ${megabytes(result.rssBeforeBytes)} | ` +
        `${megabytes(result.peakRssBytes)} (+${megabytes(result.peakRssBytes - result.rssBeforeBytes)}) | ${result.seconds} s | ${escapeCell(result.notes.join('; ') || '–')} |`,
    );
  }
  return lines.join('\n');
}
