/** Log lines and timers the ETL's logging tests look at: a logger that keeps its lines, and a timer driven by hand. */
import { createLogger, type Logger } from '../../../src/common/logger.js';
import type { Repeat } from '../../../src/etl/status/progress-log.js';

export type LogLine = Record<string, unknown>;

export interface CapturedLog {
  readonly logger: Logger;
  /** Each line as written (JSON text): what shows a key written twice. */
  readonly raw: readonly string[];
  /** Each line so far, parsed. */
  lines(): LogLine[];
}

export function capturingLogger(level: 'info' | 'debug' = 'info'): CapturedLog {
  const raw: string[] = [];
  const logger = createLogger({ name: 'test', level, destination: { write: (text: string) => void raw.push(text) } });
  return {
    logger,
    raw,
    lines: () => raw.map((text) => JSON.parse(text) as LogLine),
  };
}

/** How many times `"key":` starts a property in a line of JSON text. */
export function keyCount(line: string, key: string): number {
  return line.split(`"${key}":`).length - 1;
}

export interface ManualRepeat {
  readonly repeat: Repeat;
  /** One interval passing. */
  tick(): void;
  readonly running: boolean;
  /** The interval of every timer started. */
  readonly intervals: readonly number[];
}

export function manualRepeat(): ManualRepeat {
  let current: (() => void) | undefined;
  const intervals: number[] = [];
  return {
    repeat: (intervalMs, tick) => {
      intervals.push(intervalMs);
      current = tick;
      return () => (current = undefined);
    },
    tick: () => current?.(),
    get running() {
      return current !== undefined;
    },
    intervals,
  };
}
