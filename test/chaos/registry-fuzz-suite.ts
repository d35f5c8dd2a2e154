/**
 * `npm run chaos -- hostile-input [--scenario fuzz-registry|fuzz-avro|fuzz-avro-loader] [--requests N] [--payloads N] [--seed N]`:
 * the registry and Avro payload fuzz runs of issue #22 (test/chaos/registry-fuzz.ts,
 * test/chaos/avro-fuzz.ts at the decoder, test/chaos/avro-fuzz-loader.ts end to end through
 * `tributary etl run`). Prints one line of figures per scenario; a full run (every scenario, full
 * counts; `--docs` for any run, `--no-docs` never) writes its table into docs/reliability.md
 * between its markers. A run of some scenarios replaces their rows and keeps the others' rows
 * with the facts of the run that wrote them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatAvroFuzzLine, runAvroFuzz, type AvroFuzzResult } from './avro-fuzz.js';
import { formatAvroLoaderFuzzLine, runAvroLoaderFuzz, type AvroLoaderFuzzResult } from './avro-fuzz-loader.js';
import { formatRegistryFuzzLine, runRegistryFuzz, type RegistryFuzzResult } from './registry-fuzz.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, megabytes, positiveInteger, readMarkedBlock, RELIABILITY_DOC, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const HOSTILE_INPUT_SCENARIOS = ['fuzz-registry', 'fuzz-avro', 'fuzz-avro-loader'] as const;
export const FULL_REGISTRY_REQUESTS = 100_000;
export const FULL_AVRO_PAYLOADS = 100_000;
/** The end-to-end run's full count is the decoder run's: the same payloads, produced and loaded. */
export const FULL_AVRO_LOADER_PAYLOADS = FULL_AVRO_PAYLOADS;

export const HOSTILE_INPUT_TABLE = {
  start: '<!-- chaos:hostile-input-registry-avro:start (written by `npm run chaos -- hostile-input`; edit the prose around it, not this) -->',
  end: '<!-- chaos:hostile-input-registry-avro:end -->',
  heading: 'Hostile input: registry and Avro payloads',
} as const;

export async function runHostileInputChaos(args: readonly string[], context: ChaosContext): Promise<boolean> {
  const { values } = parseArgs({
    args: [...args],
    options: { scenario: { type: 'string', multiple: true }, requests: { type: 'string' }, payloads: { type: 'string' }, seed: { type: 'string' }, docs: { type: 'boolean' }, 'no-docs': { type: 'boolean' } },
    strict: true,
  });
  const scenarios = chosenScenarios(values.scenario, HOSTILE_INPUT_SCENARIOS);
  const requests = values.requests === undefined ? FULL_REGISTRY_REQUESTS : positiveInteger('--requests', values.requests);
  const payloads = values.payloads === undefined ? FULL_AVRO_PAYLOADS : positiveInteger('--payloads', values.payloads);
  const seed = values.seed === undefined ? Date.now() % 1_000_000_007 : positiveInteger('--seed', values.seed);
  // Every scenario run at its full count (what the table's facts say), and all of them (a full run, which writes the table unasked).
  const fullCounts = (!scenarios.includes('fuzz-registry') || requests >= FULL_REGISTRY_REQUESTS) && (!scenarios.some((scenario) => scenario.startsWith('fuzz-avro')) || payloads >= Math.max(FULL_AVRO_PAYLOADS, FULL_AVRO_LOADER_PAYLOADS));
  const full = scenarios.length === HOSTILE_INPUT_SCENARIOS.length && fullCounts;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  context.say(`hostile input chaos: ${scenarios.join(', ')}; ${requests} registry requests, ${payloads} Avro payloads; seed ${seed}`);
  const folder = mkdtempSync(join(tmpdir(), 'tributary-hostile-input-'));
  let registry: RegistryFuzzResult | undefined;
  let avro: AvroFuzzResult | undefined;
  let loader: AvroLoaderFuzzResult | undefined;
  try {
    if (scenarios.includes('fuzz-registry')) {
      registry = await runRegistryFuzz({ folder: join(folder, 'registry'), requests, seed, say: context.say });
      context.say(formatRegistryFuzzLine(registry));
      for (const violation of registry.violations.slice(0, 20)) context.say(`  violation: ${violation}`);
    }
    if (scenarios.includes('fuzz-avro')) {
      avro = await runAvroFuzz({ folder: join(folder, 'avro'), payloads, seed, say: context.say });
      context.say(formatAvroFuzzLine(avro));
      for (const violation of avro.violations.slice(0, 20)) context.say(`  violation: ${violation}`);
    }
    if (scenarios.includes('fuzz-avro-loader')) {
      loader = await runAvroLoaderFuzz({ run: context.run, payloads, seed, say: context.say, evidenceFolder: join(folder, 'avro-loader') });
      context.say(formatAvroLoaderFuzzLine(loader));
      for (const violation of loader.violations.slice(0, 20)) context.say(`  violation: ${violation}`);
    }
  } finally {
    const failed = (registry?.violations.length ?? 0) + (avro?.violations.length ?? 0) + (loader?.violations.length ?? 0) > 0;
    if (failed) context.say(`evidence kept in ${folder}`);
    else rmSync(folder, { recursive: true, force: true });
  }
  if (writeDocs) {
    const facts = `${scenarios.join(', ')}: run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${fullCounts ? 'full counts' : 'reduced counts'}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    const block = mergeHostileInputBlock(readMarkedBlock(RELIABILITY_DOC, HOSTILE_INPUT_TABLE), facts, formatHostileInputTable(registry, avro, loader));
    updateMarkedBlock(RELIABILITY_DOC, HOSTILE_INPUT_TABLE, block);
    context.say(`results table written to ${RELIABILITY_DOC}`);
  }
  return (registry?.violations.length ?? 0) === 0 && (avro?.violations.length ?? 0) === 0 && (loader?.violations.length ?? 0) === 0;
}

const TABLE_HEAD = ['| scenario | faults injected | invariant | result | figures | peak RSS (growth) | run time |', '|---|---|---|---|---|---:|---:|'];

/** The scenario a table row is of (its first cell), undefined for other lines. */
function rowScenario(line: string): string | undefined {
  return /^\| ([a-z-]+) \|/.exec(line)?.[1];
}

/**
 * The block a run writes: its facts and rows, plus, from the block before it, the rows of
 * scenarios this run did not run and the facts paragraphs that name any of them (a paragraph
 * without names, from before runs named their scenarios, covers every row it had).
 */
export function mergeHostileInputBlock(previous: string | undefined, facts: string, table: string): string {
  const rows = table.split('\n').filter((line) => rowScenario(line) !== undefined && !TABLE_HEAD.includes(line));
  const ran = new Set(rows.map((line) => rowScenario(line)));
  const earlier = (previous ?? '').split('\n');
  const kept = earlier.filter((line) => line.startsWith('| ') && !TABLE_HEAD.includes(line) && rowScenario(line) !== undefined && !ran.has(rowScenario(line)));
  const keptNames = kept.map((line) => rowScenario(line) ?? '');
  const keptFacts = earlier
    .filter((line) => line !== '' && !line.startsWith('|'))
    .flatMap((line) => {
      const named = /^([a-z-]+(?:, [a-z-]+)*): run /.exec(line);
      if (named === null) return kept.length === 0 ? [] : [`${keptNames.join(', ')}: ${line.charAt(0).toLowerCase()}${line.slice(1)}`];
      const names = (named[1] ?? '').split(', ').filter((name) => keptNames.includes(name));
      return names.length === 0 ? [] : [`${names.join(', ')}: ${line.slice(named[0].length - 'run '.length)}`];
    });
  const order = (line: string): number => HOSTILE_INPUT_SCENARIOS.indexOf(rowScenario(line) as (typeof HOSTILE_INPUT_SCENARIOS)[number]);
  const allRows = [...rows, ...kept].sort((a, b) => order(a) - order(b));
  return [...[facts, ...keptFacts].flatMap((line) => [line, '']), ...TABLE_HEAD, ...allRows].join('\n');
}

function verdict(violations: readonly string[]): string {
  return violations.length === 0 ? 'pass' : `**FAIL** (${violations.length} violations: ${escapeCell(violations.slice(0, 3).join('; '))})`;
}

export function formatHostileInputTable(registry: RegistryFuzzResult | undefined, avro: AvroFuzzResult | undefined, loader?: AvroLoaderFuzzResult): string {
  const lines = [...TABLE_HEAD];
  if (registry !== undefined) {
    const { success, clientError, serverError, none, closed } = registry.answers;
    lines.push(
      `| fuzz-registry | ${registry.requests} hostile requests (${Object.entries(registry.byKind).map(([kind, count]) => `${kind} ${count}`).join(', ')}) to a \`tributary registry start\` process | ` +
        'no crash; every answer a Confluent error (`error_code` + `message`, 4xx) or a correct success; accepted schemas valid; afterwards every stored schema parses with avsc, no duplicate ids, every subject\'s live versions compatible (BACKWARD_TRANSITIVE); the official client served | ' +
        `${verdict(registry.violations)} | answers 2xx ${success}, 4xx ${clientError}, 5xx ${serverError}, none ${none}, closed unanswered (oversized or cut-short bodies) ${closed}; ${registry.accepted} registrations accepted, ${registry.storedSchemas} schemas stored, ${registry.subjects} subjects, ${registry.pairsChecked} version pairs checked, ${registry.duplicateIds} duplicate ids, official client ${registry.officialClient ? 'served' : 'not served'} | ` +
        `${megabytes(registry.peakRssBytes)} (+${megabytes(registry.peakRssBytes - registry.rssBeforeBytes)}) | ${registry.seconds} s |`,
    );
  }
  if (avro !== undefined) {
    lines.push(
      `| fuzz-avro | ${avro.payloads} framed payloads, ${avro.broken} broken (${Object.entries(avro.byMutation).map(([mutation, count]) => `${mutation} ${count}`).join(', ')}), decoded as the loader decodes | ` +
        'no crash; memory bounded (2^31 declared counts allocate nothing); every valid payload decoded exactly; every broken one a record failure the loader quarantines, or still valid Avro read as avsc reads it | ' +
        `${verdict(avro.violations)} | ${avro.validDecoded} of ${avro.valid} valid decoded exactly; quarantined ${avro.broken - avro.stillValid} (${Object.entries(avro.quarantined).map(([code, count]) => `${code} ${count}`).join(', ')}); still valid ${avro.stillValid} | ` +
        `${megabytes(avro.peakRssBytes)} (+${megabytes(avro.peakRssBytes - avro.rssBeforeBytes)}) | ${avro.seconds} s |`,
    );
  }
  if (loader !== undefined) {
    const quarantined = Object.values(loader.quarantined).reduce((sum, count) => sum + count, 0);
    lines.push(
      `| fuzz-avro-loader | ${loader.payloads} framed payloads, ${loader.broken} broken (${Object.entries(loader.byMutation).map(([mutation, count]) => `${mutation} ${count}`).join(', ')}), produced into ${loader.topics} topics × ${loader.partitions / Math.max(loader.topics, 1)} partitions of a broker process with timestamps over 3 hours, then two \`tributary etl run\` processes into a local warehouse | ` +
        'from the warehouse files alone: every payload the decoder accepts stored exactly once with its value in the hour of its timestamp; every other one in a quarantine file with the predicted code and its exact key and bytes; manifests count what the files hold; nothing else stored; the run exits 0 and says what it committed; the second run commits nothing; loader peak RSS bounded (< 1 GiB) | ' +
        `${verdict(loader.violations)} | loaded exactly once ${loader.loadedOnce} (${loader.valid} valid + ${loader.stillValidLoaded} still-valid broken); quarantined ${quarantined} (${Object.entries(loader.quarantined).map(([code, count]) => `${code} ${count}`).join(', ')}); lost ${loader.lost}, duplicates ${loader.duplicates}, foreign ${loader.foreign}; commits ${loader.commits} after two runs; loader ${loader.loaderSeconds} s | ` +
        `${megabytes(loader.peakRssBytes)} (loader process; second run ${megabytes(loader.secondPeakRssBytes)}) | ${loader.seconds} s |`,
    );
  }
  return lines.join('\n');
}
