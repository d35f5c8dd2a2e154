/**
 * `npm run chaos -- hostile-input [--scenario fuzz-registry|fuzz-avro] [--requests N] [--payloads N] [--seed N]`:
 * the registry and Avro payload fuzz runs of issue #22 (test/chaos/registry-fuzz.ts,
 * test/chaos/avro-fuzz.ts). Prints one line of figures per scenario; a full run (both scenarios,
 * full counts; `--docs` for any run, `--no-docs` never) writes its table into docs/reliability.md
 * between its markers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatAvroFuzzLine, runAvroFuzz, type AvroFuzzResult } from './avro-fuzz.js';
import { formatRegistryFuzzLine, runRegistryFuzz, type RegistryFuzzResult } from './registry-fuzz.js';
import { chosenScenarios, escapeCell, gitCommit, machineFacts, megabytes, positiveInteger, RELIABILITY_DOC, updateMarkedBlock } from './report.js';
import type { ChaosContext } from './run.js';

export const HOSTILE_INPUT_SCENARIOS = ['fuzz-registry', 'fuzz-avro'] as const;
export const FULL_REGISTRY_REQUESTS = 100_000;
export const FULL_AVRO_PAYLOADS = 100_000;

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
  const full = scenarios.length === HOSTILE_INPUT_SCENARIOS.length && requests >= FULL_REGISTRY_REQUESTS && payloads >= FULL_AVRO_PAYLOADS;
  const writeDocs = values['no-docs'] === true ? false : values.docs === true || full;
  const startedAt = new Date();
  const loadAtStart = loadavg();
  context.say(`hostile input chaos: ${scenarios.join(', ')}; ${requests} registry requests, ${payloads} Avro payloads; seed ${seed}`);
  const folder = mkdtempSync(join(tmpdir(), 'tributary-hostile-input-'));
  let registry: RegistryFuzzResult | undefined;
  let avro: AvroFuzzResult | undefined;
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
  } finally {
    const failed = (registry?.violations.length ?? 0) + (avro?.violations.length ?? 0) > 0;
    if (failed) context.say(`evidence kept in ${folder}`);
    else rmSync(folder, { recursive: true, force: true });
  }
  if (writeDocs) {
    const facts = `Run ${startedAt.toISOString().slice(0, 16).replace('T', ' ')}–${new Date().toISOString().slice(11, 16)} UTC at commit \`${gitCommit()}\`, ${full ? 'full counts' : 'reduced counts'}, seed ${seed}, ${machineFacts(loadAtStart, loadavg())}.`;
    updateMarkedBlock(RELIABILITY_DOC, HOSTILE_INPUT_TABLE, `${facts}\n\n${formatHostileInputTable(registry, avro)}`);
    context.say(`results table written to ${RELIABILITY_DOC}`);
  }
  return (registry?.violations.length ?? 0) === 0 && (avro?.violations.length ?? 0) === 0;
}

function verdict(violations: readonly string[]): string {
  return violations.length === 0 ? 'pass' : `**FAIL** (${violations.length} violations: ${escapeCell(violations.slice(0, 3).join('; '))})`;
}

export function formatHostileInputTable(registry: RegistryFuzzResult | undefined, avro: AvroFuzzResult | undefined): string {
  const lines = ['| scenario | faults injected | invariant | result | figures | peak RSS (growth) | run time |', '|---|---|---|---|---|---:|---:|'];
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
  return lines.join('\n');
}
