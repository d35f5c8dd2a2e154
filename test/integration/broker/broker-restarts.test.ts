/**
 * The short versions of `npm run chaos -- storage` (test/chaos/broker-restarts.ts): a standalone
 * broker process SIGKILLed under idempotent producers, round after round, and read back with
 * every batch checked. With acks=−1 nothing acknowledged is lost; with damaged files (each kind
 * twice: torn and overwritten active segments, indexes, time indexes, producer snapshots,
 * checkpoints) nothing corrupt is served, the indexes answer as the data says, nothing
 * acknowledged below the damage is lost, and the broker takes writes again.
 */
import { describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { runBrokerRestarts, type BrokerRestartsOptions } from '../../chaos/broker-restarts.js';
import { DAMAGE_KINDS } from '../../support/file-damage.js';
import { seededRandom } from '../../support/seeded-random.js';
import { services } from '../services.js';

async function run(options: Omit<BrokerRestartsOptions, 'run' | 'random' | 'say'>) {
  const seed = Date.now() % 1_000_000;
  const lines: string[] = [];
  const result = await runBrokerRestarts({ ...options, run: openRun(services().runDir), random: seededRandom(seed), say: (line) => lines.push(line) });
  return { result, context: `seed ${seed}\n${lines.join('\n')}\n${result.violations.join('\n')}\nbroker log: ${result.brokerLog}` };
}

describe('broker restarts', () => {
  it('loses no acks=-1 record over 5 SIGKILLs under load', async () => {
    const { result, context } = await run({ rounds: 5, acks: -1 });
    expect(result.violations, context).toEqual([]);
    expect(result.kills, context).toBe(5);
    expect(result.acknowledged, context).toBeGreaterThan(100);
    expect([result.lost, result.duplicated, result.cutByDamage, result.lostUnflushed], context).toEqual([0, 0, 0, 0]);
  }, 300_000);

  it(`recovers from ${DAMAGE_KINDS.length * 2} damaged files without serving damage or losing what preceded it`, async () => {
    const { result, context } = await run({ rounds: DAMAGE_KINDS.length * 2, acks: -1, damage: true, kinds: DAMAGE_KINDS, kindOrder: 'each-in-turn' });
    expect(result.violations, context).toEqual([]);
    expect(new Set(result.damages.map((damage) => damage.kind)), context).toEqual(new Set(DAMAGE_KINDS));
    expect(result.acknowledged, context).toBeGreaterThan(100);
    expect([result.lost, result.duplicated], context).toEqual([0, 0]);
  }, 600_000);
});
