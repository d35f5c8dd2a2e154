/**
 * The short version of `npm run chaos -- storage` (test/chaos/corrupt-files.ts): a broker
 * process SIGKILLed under acks=−1 producers, one file of its data dir damaged each round (each
 * kind of damage twice: torn and overwritten active segments, indexes, time indexes, producer
 * snapshots, checkpoints), restarted, and every partition read back with every batch checked.
 * Nothing corrupt is served, the indexes answer as the data says, nothing acknowledged below the
 * damage is lost, and the broker takes writes again.
 */
import { describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { DAMAGE_KINDS } from '../../support/file-damage.js';
import { runCorruptFiles } from '../../chaos/corrupt-files.js';
import { seededRandom } from '../../support/seeded-random.js';
import { services } from '../services.js';

describe('torn and corrupt files', () => {
  it(`recovers from ${DAMAGE_KINDS.length * 2} damaged files without serving damage or losing what preceded it`, async () => {
    const seed = Date.now() % 1_000_000;
    const lines: string[] = [];
    const result = await runCorruptFiles({
      run: openRun(services().runDir),
      rounds: DAMAGE_KINDS.length * 2,
      kinds: DAMAGE_KINDS,
      kindOrder: 'each-in-turn',
      random: seededRandom(seed),
      say: (line) => lines.push(line),
    });
    const context = `seed ${seed}\n${lines.join('\n')}\n${result.violations.join('\n')}\nbroker log: ${result.brokerLog}`;
    expect(result.violations, context).toEqual([]);
    expect(new Set(result.damages.map((damage) => damage.kind)), context).toEqual(new Set(DAMAGE_KINDS));
    expect(result.acknowledged, context).toBeGreaterThan(0);
    expect(result.lost, context).toBe(0);
    expect(result.duplicated, context).toBe(0);
  }, 600_000);
});
