/**
 * Progress as log lines (src/etl/status/progress-log.ts) for runs without a bar. A manual clock
 * and a hand-driven timer stand in for time: the tests check what each line says, never when or
 * how often lines come.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { formatDuration, progressLog } from '../../../src/etl/status/progress-log.js';
import { capturingLogger, manualRepeat } from './log-capture.js';

const views = (partition: number, start: number, end: number) => ({ topic: 'views', partition, start, end });

describe('progress lines', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('say, per task at work, records read of those planned, bytes, rate and ETA, and the same for the run', () => {
    const log = capturingLogger();
    const { logger } = log;
    const clock = new ManualClock(0);
    const timer = manualRepeat();
    const progress = progressLog({ logger, clock, repeat: timer.repeat, intervalMs: 2_000 });
    progress.planned({ partitions: 2, records: 3_000 });
    expect(timer.intervals).toEqual([2_000]);
    progress.fetched(100, 10_000, views(0, 0, 1_000));
    progress.fetched(200, 20_000, views(1, 0, 2_000));
    clock.advance(4_000);
    progress.fetched(300, 30_000, views(0, 0, 1_000));
    timer.tick();

    const tasks = log.lines().filter((line) => line['event'] === 'task-progress');
    expect(tasks).toEqual([
      expect.objectContaining({ topic: 'views', partition: 0, start: 0, end: 1_000, records: 400, planned: 1_000, bytes: 40_000, recordsPerSecond: 100, etaSeconds: 6 }),
      expect.objectContaining({ topic: 'views', partition: 1, start: 0, end: 2_000, records: 200, planned: 2_000, bytes: 20_000, recordsPerSecond: 50, etaSeconds: 36 }),
    ]);
    expect(tasks[0]?.['msg']).toBe('views-0 [0, 1000): 400/1000 records, 39.1 KiB, 100 records/s, ETA 6s');
    const run = log.lines().find((line) => line['event'] === 'progress');
    expect(run).toMatchObject({ records: 600, planned: 3_000, bytes: 60_000, partitions: 2, partitionsDone: 0, tasks: 2, elapsedSeconds: 4, recordsPerSecond: 150, etaSeconds: 16 });
    expect(run?.['msg']).toBe('progress: 600/3000 records (20%), 58.6 KiB, 0/2 partitions done, 2 tasks reading, 150 records/s, ETA 16s');
  });

  it('leave out tasks that are done, and stop once reading is over, with a line for the whole read', () => {
    const log = capturingLogger();
    const { logger } = log;
    const clock = new ManualClock(0);
    const timer = manualRepeat();
    const progress = progressLog({ logger, clock, repeat: timer.repeat });
    progress.planned({ partitions: 1, records: 20 });
    progress.fetched(10, 100, views(0, 0, 10));
    progress.taskDone?.(views(0, 0, 10));
    clock.advance(1_000);
    progress.fetched(5, 50, views(0, 10, 20));
    timer.tick();
    expect(log.lines().filter((line) => line['event'] === 'task-progress').map((line) => line['start'])).toEqual([10]);

    progress.partitionDone();
    progress.finishing('committing');
    expect(timer.running).toBe(false);
    progress.stop();
    const runLines = log.lines().filter((line) => line['event'] === 'progress');
    expect(runLines[0]).toMatchObject({ records: 15, planned: 20, partitionsDone: 0, tasks: 1 });
    expect(runLines.at(-1)).toMatchObject({ records: 15, planned: 20, partitionsDone: 1, tasks: 0, stage: 'committing', recordsPerSecond: 15 });
    expect(runLines.at(-1)?.['msg']).toBe('progress: reading done in 1s: 15/20 records (75%), 150 B, 1/1 partitions done, 15 records/s; committing');
  });

  it('say nothing before the plan, and an unknown ETA while nothing was read', () => {
    const log = capturingLogger();
    const { logger } = log;
    const clock = new ManualClock(0);
    const timer = manualRepeat();
    const progress = progressLog({ logger, clock, repeat: timer.repeat });
    timer.tick();
    expect(log.lines()).toEqual([]);
    progress.planned({ partitions: 1, records: 10 });
    clock.advance(5_000);
    timer.tick();
    expect(log.lines()).toEqual([expect.objectContaining({ event: 'progress', records: 0, recordsPerSecond: 0, etaSeconds: null })]);
    expect(log.lines()[0]?.['msg']).toContain('ETA unknown');
  });

  it('run on an unref’d timer that stop() clears', () => {
    const setSpy = vi.spyOn(globalThis, 'setInterval');
    const clearSpy = vi.spyOn(globalThis, 'clearInterval');
    const { logger } = capturingLogger();
    const progress = progressLog({ logger, intervalMs: 60_000 });
    progress.planned({ partitions: 1, records: 10 });
    const timer = setSpy.mock.results[0]?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    progress.stop();
    expect(clearSpy).toHaveBeenCalledWith(timer);
  });

  it('format durations for people', () => {
    expect([formatDuration(0), formatDuration(42.4), formatDuration(200), formatDuration(3_720)]).toEqual(['0s', '42s', '3m20s', '1h02m']);
  });
});
