/**
 * The terminal progress bar of runs and replays (src/etl/status/progress-bar.ts): shown only on a
 * terminal unless --progress/--no-progress say otherwise, and drawing records, bytes, partitions,
 * rate and ETA from what the run reports.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatBytes, progressBar, shouldShowProgress } from '../../../src/etl/status/progress-bar.js';

class Capture extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('progress bar', () => {
  it('is shown on a terminal, not in a pipe, and the flags decide over both', () => {
    expect(shouldShowProgress(undefined, { isTTY: true })).toBe(true);
    expect(shouldShowProgress(undefined, {})).toBe(false);
    expect(shouldShowProgress(true, {})).toBe(true);
    expect(shouldShowProgress(false, { isTTY: true })).toBe(false);
  });

  it('draws records of those planned, bytes, partitions done and the stage', () => {
    const stream = new Capture();
    const bar = progressBar('run views', stream);
    bar.planned({ partitions: 2, records: 100 });
    bar.fetched(60, 3 * 1024 * 1024);
    bar.partitionDone();
    bar.fetched(38, 1024);
    bar.partitionDone();
    bar.finishing('committing');
    bar.stop();
    const last = stream.text.trim().split('\n').at(-1) ?? '';
    expect(last).toMatch(/^run views \[.+\] 100% \| 100\/100 records \| 3\.0 MiB \| 2\/2 partitions \| \d+ records\/s \| ETA 0s — committing$/);
  });

  it('draws nothing when nothing was planned', () => {
    const stream = new Capture();
    progressBar('run views', stream).stop();
    expect(stream.text).toBe('');
  });

  it('formats bytes in binary units', () => {
    expect([formatBytes(0), formatBytes(1023), formatBytes(1536), formatBytes(5 * 1024 ** 3)]).toEqual(['0 B', '1023 B', '1.5 KiB', '5.0 GiB']);
  });
});
