/**
 * log.cleaner.io.max.bytes.per.second: the cleaner's reads plus writes, held to a rate by sleeping
 * whenever they run ahead of it within the current second.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export class IoThrottle {
  private window = { start: 0, bytes: 0 };

  constructor(private readonly bytesPerSecond: number) {}

  /** Counts `bytes` read or written; resolves when the rate lets the caller go on. */
  async take(bytes: number): Promise<void> {
    if (!Number.isFinite(this.bytesPerSecond)) return;
    const now = performance.now();
    if (now - this.window.start > 1000) this.window = { start: now, bytes: 0 };
    this.window.bytes += bytes;
    const due = (this.window.bytes / this.bytesPerSecond) * 1000 - (now - this.window.start);
    if (due > 0) await sleep(due);
  }
}
