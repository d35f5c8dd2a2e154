/**
 * The short version of `npm run chaos -- limits` (test/chaos/limits.ts) against a broker process
 * with max.connections 1000: a connection flood of 1,500, hostile size prefixes (before and
 * after authentication), 200 slowloris clients for 4 s, 20,000 pipelined one-record produce
 * requests. Each attack is refused or served, and a real client is served after it. Peak RSS is
 * reported, not asserted (no timing or memory thresholds in tests: docs/reliability.md has the
 * full run's figures).
 */
import { describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { formatLimitLine, LIMIT_SCENARIOS, MAX_CONNECTIONS, runLimits, SHORT_LIMIT_COUNTS } from '../../chaos/limits.js';
import { services } from '../services.js';

describe('resource limits', () => {
  it('refuses or serves a connection flood, hostile frame sizes, slowloris clients and a storm of tiny produce requests, and serves a real client after each', async () => {
    const lines: string[] = [];
    const { results, brokerLog } = await runLimits({ run: openRun(services().runDir), scenarios: LIMIT_SCENARIOS, counts: SHORT_LIMIT_COUNTS, say: (line) => lines.push(line) });
    const context = `${lines.join('\n')}\nbroker log: ${brokerLog}`;
    console.log(results.map((result) => `${formatLimitLine(result)}${result.violations.map((violation) => `\n  violation: ${violation}`).join("")}`).join("\n"));
    expect(results.map((result) => result.scenario)).toEqual([...LIMIT_SCENARIOS]);
    for (const result of results) expect(result.violations, `${result.scenario}\n${context}`).toEqual([]);
    const byName = new Map(results.map((result) => [result.scenario, result]));
    expect(byName.get('connection-flood')?.refused, context).toBeGreaterThanOrEqual(SHORT_LIMIT_COUNTS.floodConnections - MAX_CONNECTIONS);
    expect(byName.get('oversized-frames')?.refused, context).toBe(byName.get('oversized-frames')?.injected);
    expect(byName.get('slowloris')?.served, context).toBeGreaterThan(0);
    expect(byName.get('tiny-produce')?.served, context).toBeGreaterThan(SHORT_LIMIT_COUNTS.tinyRequests - 100);
  }, 300_000);
});
