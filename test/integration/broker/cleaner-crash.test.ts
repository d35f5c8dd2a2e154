/**
 * The short version of `npm run chaos -- compaction` (test/chaos/compaction.ts): a process that
 * writes keyed records and tombstones to a compacted partition and cleans it without pause is
 * SIGKILLed 30 times, each after a random number of acknowledged appends. After every kill the
 * data dir opens, and every key's latest acknowledged value is readable at its offset.
 */
import { describe, expect, it } from 'vitest';
import { runCleanerCrashRounds } from '../../chaos/compaction.js';
import { openRun } from '../../services/run-dir.js';
import { services } from '../services.js';

describe('the log cleaner under SIGKILL', () => {
  it('loses no key\'s latest acknowledged value over 30 kills at random points, and recovery always opens the log', async () => {
    const seed = Date.now() % 100_000;
    const lines: string[] = [];
    const result = await runCleanerCrashRounds({ run: openRun(services().runDir), rounds: 30, seed, say: (line) => lines.push(line) });
    const context = `seed ${seed}\n${lines.join('\n')}\n${result.violations.join('\n')}`;
    expect(result.violations, context).toEqual([]);
    expect(result.kills, context).toBe(30);
    // The worker cleaned as it wrote: records were removed, and some kills landed inside a pass or a swap.
    expect(result.removed, context).toBeGreaterThan(0);
    expect(result.swapsRecovered, context).toBeGreaterThan(0);
  }, 600_000);
});
