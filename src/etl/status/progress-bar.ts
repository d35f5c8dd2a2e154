/**
 * A terminal progress bar (cli-progress) for runs and replays: records read of those planned,
 * bytes, partition ranges done, rate and ETA, redrawn in place on stderr. Only for people at a
 * terminal: `shouldShowProgress` leaves it out when stderr is not a TTY (tests, logs, cron)
 * unless --progress asks for it, and --no-progress always leaves it out.
 */
import cliProgress from 'cli-progress';
import type { LoadProgress } from './progress.js';

export interface ProgressBar extends LoadProgress {
  /** Draws the last state and lets go of the terminal line. */
  stop(): void;
}

/** `flag` is --progress (true), --no-progress (false) or neither (undefined). */
export function shouldShowProgress(flag: boolean | undefined, stream: { readonly isTTY?: boolean }): boolean {
  return flag ?? stream.isTTY === true;
}

export function progressBar(label: string, stream: NodeJS.WritableStream & { readonly isTTY?: boolean }): ProgressBar {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${label} [{bar}] {percentage}% | {value}/{total} records | {size} | {done}/{partitions} partitions | {rate} records/s | ETA {eta_formatted} {stage}`,
      hideCursor: stream.isTTY === true,
      // Asked for without a terminal (--progress): a plain line now and then instead of redraws.
      noTTYOutput: stream.isTTY !== true,
      notTTYSchedule: 5_000,
      etaBuffer: 200,
      fps: 5,
      barsize: 24,
    },
    cliProgress.Presets.shades_classic,
  );
  const startedAt = Date.now();
  let records = 0;
  let bytes = 0;
  let done = 0;
  let partitions = 0;
  let total = 0;
  let stage = '';
  let started = false;
  const payload = (): Record<string, string | number> => {
    const seconds = Math.max(0.001, (Date.now() - startedAt) / 1000);
    return { size: formatBytes(bytes), done, partitions, rate: Math.round(records / seconds), stage };
  };
  return {
    planned(totals) {
      partitions = totals.partitions;
      total = Math.max(1, totals.records);
      if (!started) bar.start(total, 0, payload());
      else bar.setTotal(total);
      started = true;
    },
    fetched(count, size) {
      records += count;
      bytes += size;
      // Offsets without a record (compacted, transaction markers) never arrive: stay below 100% until done.
      if (started) bar.update(Math.min(records, total), payload());
    },
    partitionDone() {
      done += 1;
      if (started) bar.update(done === partitions ? total : Math.min(records, total), payload());
    },
    finishing(what) {
      stage = `— ${what}`;
      if (started) bar.update(total, payload());
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}
