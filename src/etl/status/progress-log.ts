/**
 * Progress as log lines, for runs and replays that draw no bar (--no-progress, or stderr not a
 * terminal: cron, systemd, a pipe). Every `intervalMs` while the tasks read, one line per task at
 * work — records read of those planned, bytes, rate and ETA — and one for the whole run; when
 * reading ends, the run's line once more with what comes next (`stage`). Silent before the plan
 * and after reading: the other log lines tell those phases.
 *
 *   {"event":"task-progress","topic":"views","partition":3,"start":0,"end":1000000,"records":412000,
 *    "planned":1000000,"bytes":52428800,"recordsPerSecond":82400,"etaSeconds":7.1,…}
 *   {"event":"progress","records":1650000,"planned":4000000,"bytes":…,"partitions":4,"partitionsDone":1,
 *    "tasks":3,"elapsedSeconds":20,"recordsPerSecond":82500,"etaSeconds":28.5,…}
 */
import { systemClock, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/logger.js';
import { formatBytes } from './progress-bar.js';
import type { LoadProgress, ProgressTask } from './progress.js';

export const DEFAULT_PROGRESS_INTERVAL_MS = 5_000;

/** Calls `tick` every `intervalMs` until the returned function is called. */
export type Repeat = (intervalMs: number, tick: () => void) => () => void;

export interface ProgressLogOptions {
  readonly logger: Logger;
  /** @defaultValue DEFAULT_PROGRESS_INTERVAL_MS */
  readonly intervalMs?: number;
  /** @defaultValue systemClock */
  readonly clock?: Clock;
  /** @defaultValue an unref'd setInterval, so a forgotten log never keeps the process alive */
  readonly repeat?: Repeat;
}

export interface ProgressLog extends LoadProgress {
  /** Logs the lines of now (what every interval does). */
  report(): void;
  /** Stops the timer; safe to call more than once. */
  stop(): void;
}

interface TaskState {
  readonly task: ProgressTask;
  readonly since: number;
  records: number;
  bytes: number;
}

const unrefInterval: Repeat = (intervalMs, tick) => {
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
};

export function progressLog(options: ProgressLogOptions): ProgressLog {
  const { logger } = options;
  const clock = options.clock ?? systemClock;
  const intervalMs = options.intervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  const repeat = options.repeat ?? unrefInterval;
  const tasks = new Map<string, TaskState>();
  let cancel: (() => void) | undefined;
  let startedAt = 0;
  let planned = 0;
  let partitions = 0;
  let partitionsDone = 0;
  let records = 0;
  let bytes = 0;

  const stop = (): void => {
    cancel?.();
    cancel = undefined;
  };
  const report = (stage?: string): void => {
    const now = clock.now();
    for (const state of tasks.values()) {
      const { task } = state;
      const span = task.end - task.start;
      const pace = pacing(state.records, span, now - state.since);
      logger.info(
        { event: 'task-progress', ...task, records: state.records, planned: span, bytes: state.bytes, ...pace },
        `${task.topic}-${task.partition} [${task.start}, ${task.end}): ${state.records}/${span} records, ${formatBytes(state.bytes)}, ${describePace(pace)}`,
      );
    }
    const pace = pacing(records, planned, now - startedAt);
    const fields = { event: 'progress', records, planned, bytes, partitions, partitionsDone, tasks: tasks.size, elapsedSeconds: seconds(now - startedAt), ...pace };
    const said = `${records}/${planned} records (${percent(records, planned)}), ${formatBytes(bytes)}, ${partitionsDone}/${partitions} partitions done`;
    if (stage === undefined) logger.info(fields, `progress: ${said}, ${tasks.size} tasks reading, ${describePace(pace)}`);
    else logger.info({ ...fields, stage }, `progress: reading done in ${formatDuration(seconds(now - startedAt))}: ${said}, ${pace.recordsPerSecond} records/s; ${stage}`);
  };

  return {
    planned(totals) {
      planned = totals.records;
      partitions = totals.partitions;
      startedAt = clock.now();
      stop();
      cancel = repeat(intervalMs, () => report());
    },
    fetched(count, size, task) {
      records += count;
      bytes += size;
      if (task === undefined) return;
      let state = tasks.get(taskKey(task));
      if (state === undefined) tasks.set(taskKey(task), (state = { task: { topic: task.topic, partition: task.partition, start: task.start, end: task.end }, since: clock.now(), records: 0, bytes: 0 }));
      state.records += count;
      state.bytes += size;
    },
    taskDone(task) {
      tasks.delete(taskKey(task));
    },
    partitionDone() {
      partitionsDone += 1;
    },
    finishing(what) {
      if (cancel === undefined) return; // not planned, or told twice
      stop();
      tasks.clear();
      report(what);
    },
    report: () => report(),
    stop,
  };
}

/** Replay ranges of one partition may be read at once: a task is its partition and start. */
function taskKey(task: ProgressTask): string {
  return `${task.topic}\u0000${task.partition}\u0000${task.start}`;
}

interface Pace {
  readonly recordsPerSecond: number;
  /** Seconds left at this rate; null before anything was read. */
  readonly etaSeconds: number | null;
}

function pacing(done: number, total: number, elapsedMs: number): Pace {
  const rate = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
  return { recordsPerSecond: Math.round(rate), etaSeconds: rate > 0 ? seconds((Math.max(0, total - done) / rate) * 1000) : null };
}

function describePace(pace: Pace): string {
  return `${pace.recordsPerSecond} records/s, ETA ${pace.etaSeconds === null ? 'unknown' : formatDuration(pace.etaSeconds)}`;
}

function seconds(milliseconds: number): number {
  return Math.round(milliseconds / 100) / 10;
}

function percent(done: number, total: number): string {
  return total === 0 ? '100%' : `${Math.min(100, Math.floor((done * 100) / total))}%`;
}

/** 42 → "42s", 200 → "3m20s", 3720 → "1h02m". */
export function formatDuration(totalSeconds: number): string {
  const whole = Math.round(totalSeconds);
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}
