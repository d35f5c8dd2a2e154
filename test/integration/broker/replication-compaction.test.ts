/**
 * Replicated compaction (issue #34's acceptance, short run of `npm run chaos -- replication
 * --scenario compacted-leader-kill`, test/chaos/compacted-replication.ts): three brokers cleaning
 * without pause, a compacted topic with RF 3, keyed acks=−1 writes and tombstones, and 3 rounds of
 * leader SIGKILLs while it writes and cleans (the third a double failover: 4 kills). Afterwards every key's latest acknowledged write is on
 * every replica and in a consumer's read from the log start, every replica is a valid compaction
 * of the same history, and log starts, log ends, leader epochs and producer state agree.
 */
import { describe, expect, it } from 'vitest';
import { runCompactedLeaderKills } from '../../chaos/compacted-replication.js';
import { openRun } from '../../services/run-dir.js';
import { seededRandom } from '../../support/seeded-random.js';
import { services, zookeeperAddress } from '../services.js';

describe('replication of a compacted topic', () => {
  it('keeps every key\'s latest acknowledged write on every replica through 3 rounds of leader SIGKILLs while all brokers clean', { timeout: 300_000 }, async () => {
    const seed = Date.now() % 1_000_000_007;
    const lines: string[] = [];
    const result = await runCompactedLeaderKills({
      run: openRun(services().runDir),
      zookeeper: zookeeperAddress().connectString,
      rounds: 3,
      random: seededRandom(seed),
      say: (line) => lines.push(line),
    });
    const context = `seed ${seed}\n${lines.join('\n')}\n${result.notes.join('\n')}\n${result.violations.join('\n')}`;
    expect(result.violations, context).toEqual([]);
    expect(result.faults, context).toBe(4);
    expect(result.lost, context).toBe(0);
    expect(result.checks.map((check) => check.partition), context).toEqual([0, 1, 2]);
    // The brokers cleaned while it ran: the replicas hold fewer records than offsets.
    expect(result.cleaning.passes, context).toBeGreaterThan(0);
    expect(result.cleaning.recordsRemoved, context).toBeGreaterThan(0);
    console.log(`compacted leader SIGKILL, 3 rounds: ${result.acknowledged} acknowledged, ${result.unknown} unknown; ${result.notes.join('; ')}; ${result.seconds} s`);
  });
});
