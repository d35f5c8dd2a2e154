/**
 * What runs and replays write to the log, on the loader's in-process fakes and a real registry
 * server in this process: progress lines name each task at work (a slice of a partition's range, a
 * replay's range) with its planned offsets, the run's total follows, and no line names the load
 * twice (the commit and swap lines used to add `load` to a logger already bound to it).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { replayWindow } from '../../../src/etl/replay/replay.js';
import { progressLog } from '../../../src/etl/status/progress-log.js';
import type { LoadProgress } from '../../../src/etl/status/progress.js';
import type { RegistryClient } from '../../../src/registry/client.js';
import { startTestRegistry, type TestRegistry } from '../registry/serde-registry.js';
import { FakeSource, MemoryWarehouse } from './loader-fakes.js';
import { capturingLogger, keyCount, manualRepeat, type CapturedLog, type LogLine, type ManualRepeat } from './log-capture.js';
import { BUGGY, FIXED, HOURS, SCHEMA, TOPIC, loadWith, produce, replayOptions } from './replay-fixture.js';

let registry: TestRegistry;
let client: RegistryClient;

beforeAll(async () => {
  registry = await startTestRegistry();
  client = registry.client();
  await client.register(`${TOPIC}-value`, SCHEMA);
});
afterAll(async () => {
  await registry.close();
});

/** Progress lines into `log`, one interval passing after every fetch, so each task shows while it reads. */
function progressInto(log: CapturedLog): { progress: LoadProgress; timer: ManualRepeat } {
  const timer = manualRepeat();
  const inner = progressLog({ logger: log.logger, repeat: timer.repeat });
  const progress: LoadProgress = {
    ...inner,
    fetched(records, bytes, task) {
      inner.fetched(records, bytes, task);
      timer.tick();
    },
  };
  return { progress, timer };
}

function tasksIn(lines: readonly LogLine[]): string[] {
  const seen = new Set(lines.filter((line) => line['event'] === 'task-progress').map((line) => `${String(line['topic'])}-${String(line['partition'])} [${String(line['start'])}, ${String(line['end'])}) of ${String(line['planned'])}`));
  return [...seen].sort();
}

function expectLoadOnce(log: CapturedLog, messages: readonly string[]): void {
  for (const line of log.raw) expect(keyCount(line, 'load'), line).toBeLessThanOrEqual(1);
  for (const message of messages) {
    const found = log.raw.filter((line) => (JSON.parse(line) as LogLine)['msg'] === message);
    expect(found, message).not.toEqual([]);
    for (const line of found) expect(keyCount(line, 'load'), line).toBe(1);
  }
}

let warehouse: MemoryWarehouse;
let source: FakeSource;
let load: LoadDefinition;

beforeEach(async () => {
  warehouse = new MemoryWarehouse();
  source = new FakeSource();
  source.addTopic(TOPIC, 3);
  load = loadWith(registry.url, BUGGY, { maxRecordsPerTask: 10 });
  await produce(source, client, 60, 3);
});

function run(log: CapturedLog, progress?: LoadProgress): ReturnType<typeof runLoad> {
  return runLoad({ load, warehouse, source, registry: client, logger: log.logger, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false, progress, now: () => new Date('2026-11-29T17:00:00Z') });
}

describe('a run without a progress bar', () => {
  it('logs each task (slice) it reads with its planned offsets, and the run total, then stops its timer', async () => {
    const log = capturingLogger();
    const { progress, timer } = progressInto(log);
    expect((await run(log, progress)).outcome).toBe('committed');
    expect(tasksIn(log.lines())).toEqual([0, 1, 2].flatMap((partition) => [0, 10].map((start) => `${TOPIC}-${partition} [${start}, ${start + 10}) of 10`)).sort());
    expect(log.lines().filter((line) => line['event'] === 'progress').at(-1)).toMatchObject({ planned: 60, partitions: 3 });
    expect(timer.running).toBe(false);
  });

  it('names the load once on every line, the commit lines included', async () => {
    const log = capturingLogger('debug');
    await run(log);
    expectLoadOnce(log, ['planned', 'task started', 'commit claimed', 'files in place', 'commit published']);
  });
});

describe('a replay without a progress bar', () => {
  it('logs each range it reads again, and names the load once on every line', async () => {
    await run(capturingLogger());
    const log = capturingLogger('debug');
    const { progress } = progressInto(log);
    await replayWindow(replayOptions(loadWith(registry.url, FIXED), warehouse, { registry: client, source }, HOURS[0], HOURS[2], { logger: log.logger, progress }));
    const ranges = tasksIn(log.lines());
    expect(ranges.length).toBeGreaterThan(0);
    for (const range of ranges) expect(range).toMatch(new RegExp(`^${TOPIC}-[012] \\[(0|10), (10|20)\\) of 10$`));
    expectLoadOnce(log, ['swap claimed', 'hour swapped', 'swap published', 'commit published']);
  });
});
