/**
 * The short version of `npm run chaos -- zookeeper` (test/chaos/zookeeper-scenarios.ts): on a
 * 3-node ZooKeeper ensemble of its own, a standalone broker process under an acks=−1 idempotent
 * producer and a ZooKeeper consumer group of two member processes. The ensemble's leader is
 * SIGKILLed twice (and restarted), then a member is SIGSTOPped past its session and resumed.
 * Everything stays or comes back registered and owned, nothing acknowledged is lost or stored
 * twice, the group consumes everything, no committed offset goes back (the resumed member
 * commits nothing for partitions it lost) and it hands out no record of those partitions.
 */
import { describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { runZooKeeperScenario } from '../../chaos/zookeeper-scenarios.js';
import { seededRandom } from '../../support/seeded-random.js';
import { services } from '../services.js';

describe('ZooKeeper faults', () => {
  it('rides out 2 leader kills and a consumer paused past its session', async () => {
    const seed = Date.now() % 1_000_000;
    const lines: string[] = [];
    const result = await runZooKeeperScenario({
      run: openRun(services().runDir),
      steps: [{ scenario: 'leader-kill', rounds: 2 }, { scenario: 'pause-consumer', rounds: 1 }],
      random: seededRandom(seed),
      members: 2,
      replicated: false,
      loader: false,
      say: (line) => lines.push(line),
    });
    const context = `seed ${seed}\n${lines.join('\n')}\n${result.violations.join('\n')}`;
    expect(result.violations, context).toEqual([]);
    expect(result.faults, context).toBe(3);
    expect(result.quorumMs, context).toHaveLength(2);
    expect(result.recoverMs, context).toHaveLength(3);
    expect(result.atRisk, context).toBeGreaterThan(100);
    expect([result.lost, result.logDuplicates, result.groupMissing], context).toEqual([0, 0, 0]);
    // One record the member took from its stream just before SIGSTOP may be printed after SIGCONT
    // (whether one was in flight depends on when the signal lands); more is split brain, which the
    // scenario reports as a violation (checked above).
    expect(result.staleDeliveries, context).toBeLessThanOrEqual(1);
    // The paused member's session expired (and it registered again under a new one).
    expect(result.sessionsExpired, context).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
