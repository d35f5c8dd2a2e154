/**
 * `tributary topics alter --config / --delete-config` and the settings in `topics describe`, run
 * as a user runs them (the bin script in a child process) against an in-process standalone broker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { runTributary, type CommandResult } from '../../support/cli.js';

let broker: InProcessBroker;
const topic = 'cli-configs';

beforeAll(async () => {
  broker = await startInProcessBroker();
});
afterAll(async () => {
  await broker?.stop();
});

function tributary(...args: string[]): Promise<CommandResult> {
  return runTributary(['topics', ...args, '--bootstrap-server', broker.bootstrap, '--topic', topic]);
}

function logConfig(partition = 0): { retentionMs: number; segmentBytes: number; flushMs: number } | undefined {
  return broker.broker.logManager.getLog(topic, partition)?.config;
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`gave up waiting until ${what}`);
}

// Each command starts through tsx: seconds on a loaded 2-core machine.
describe('tributary topics alter --config', { timeout: 120_000 }, () => {
  it('sets and removes overrides on the running log, and describe shows where each value comes from', async () => {
    const created = await tributary('create', '--partitions', '1');
    expect(created.status, created.output).toBe(0);
    await waitFor(() => logConfig() !== undefined, 'the log exists');

    const altered = await tributary('alter', '--config', 'retention.ms=3600000', '--config', 'segment.bytes=1048576');
    expect(altered.status, altered.output).toBe(0);
    expect(altered.stdout).toBe(`topic ${topic}: set retention.ms=3600000, set segment.bytes=1048576\n`);
    await waitFor(() => logConfig()?.retentionMs === 3_600_000 && logConfig()?.segmentBytes === 1_048_576, 'the overrides reach the log');

    const described = await tributary('describe');
    expect(described.status, described.output).toBe(0);
    expect(described.stdout).toMatch(/^retention\.ms\s+3600000\s+topic override$/m);
    expect(described.stdout).toMatch(/^segment\.bytes\s+1048576\s+topic override$/m);
    expect(described.stdout).toMatch(/^retention\.bytes\s+-1\s+default$/m);

    const removed = await tributary('alter', '--delete-config', 'retention.ms');
    expect(removed.status, removed.output).toBe(0);
    expect(removed.stdout).toBe(`topic ${topic}: removed retention.ms\n`);
    await waitFor(() => logConfig()?.retentionMs === 604_800_000, 'retention.ms back to the default');
    expect(logConfig()?.segmentBytes).toBe(1_048_576);
  });

  it('refuses a bad value with the broker\'s INVALID_CONFIG message, changing neither configs nor partitions', async () => {
    const before = logConfig();
    const refused = await tributary('alter', '--partitions', '3', '--config', 'flush.ms=50', '--config', 'retention.ms=soon');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`could not change the configs of ${topic}: INVALID_CONFIG — invalid value "soon" for topic config retention.ms: expected an integer of at least -1`);
    expect(logConfig()).toEqual(before);
    expect(broker.broker.logManager.getLog(topic, 1)).toBeUndefined();

    const unknown = await tributary('alter', '--config', 'retention.mss=1');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('INVALID_CONFIG — unknown topic config retention.mss');
  });

  it('grows partitions and changes configs in one command', async () => {
    const both = await tributary('alter', '--partitions', '2', '--config', 'flush.ms=50');
    expect(both.status, both.output).toBe(0);
    expect(both.stdout).toBe(`topic ${topic}: set flush.ms=50\ntopic ${topic} now has 2 partitions\n`);
    await waitFor(() => logConfig(0)?.flushMs === 50 && logConfig(1)?.flushMs === 50, 'both partitions have flush.ms=50');
  });

  it('says what to give when there is nothing to alter', async () => {
    const nothing = await tributary('alter');
    expect(nothing.status).toBe(1);
    expect(nothing.stderr).toContain('nothing to alter: give --partitions <n>, --config name=value or --delete-config name');
  });
});
