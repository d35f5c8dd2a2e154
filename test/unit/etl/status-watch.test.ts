/**
 * `tributary etl status --watch` (src/etl/status/status.ts watchStatus): a frame now and one per
 * interval until interrupted; a failed read is shown and the watch goes on; a terminal is
 * redrawn in place, a pipe gets frames one after another.
 */
import { describe, expect, it } from 'vitest';
import { watchStatus } from '../../../src/etl/status/status.js';

describe('status --watch', () => {
  it('writes a frame per interval until aborted, showing a failed read and going on', async () => {
    const stop = new AbortController();
    const written: string[] = [];
    let reads = 0;
    const render = async (): Promise<string> => {
      reads += 1;
      if (reads === 2) throw new Error('HDFS is in safe mode');
      if (reads === 3) stop.abort();
      return `frame ${reads}\n`;
    };
    const frames = await watchStatus(render, (text) => written.push(text), { intervalMs: 10, signal: stop.signal, clearScreen: false, now: () => new Date('2026-11-30T09:00:00Z') });
    expect(frames).toBe(2);
    expect(written).toEqual([
      'status at 2026-11-30T09:00:00.000Z, every 0.01s; Ctrl-C stops\nframe 1\n',
      '\nstatus at 2026-11-30T09:00:00.000Z, every 0.01s; Ctrl-C stops\nstatus unavailable: HDFS is in safe mode\n',
    ]);
  });

  it('clears the screen before each frame on a terminal, and stops during the wait', async () => {
    const stop = new AbortController();
    const written: string[] = [];
    const watching = watchStatus(async () => 'ok\n', (text) => written.push(text), { intervalMs: 60_000, signal: stop.signal, clearScreen: true });
    await new Promise((resolve) => setTimeout(resolve, 50));
    stop.abort();
    expect(await watching).toBe(1);
    expect(written[0]?.startsWith('\x1b[2J\x1b[Hstatus at')).toBe(true);
  });
});
