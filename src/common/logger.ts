/**
 * Structured logs with pino: one JSON object a line on stderr, so stdout stays free for a
 * command's own output. Components take a child logger named for themselves.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogLevel } from './config.js';
import { TributaryError } from './errors.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  readonly name: string;
  readonly level?: LogLevel;
  /** Where lines go; stderr (fd 2) unless a test or a file sink says otherwise. */
  readonly destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: serializeError },
    },
    options.destination ?? pino.destination({ fd: 2, sync: false }),
  );
}

/**
 * `logger` with those of `bindings` it does not carry yet. pino writes a key bound by a parent
 * child() and given again on a line twice in the same JSON object, so code handed a logger it did
 * not make (bound to the load or not) binds through this instead of repeating keys on lines.
 */
export function bindOnce(logger: Logger, bindings: Readonly<Record<string, unknown>>): Logger {
  const bound = logger.bindings();
  const missing = Object.entries(bindings).filter(([key]) => !Object.hasOwn(bound, key));
  return missing.length === 0 ? logger : logger.child(Object.fromEntries(missing));
}

/** pino's error serializer, plus our code, retriable flag and details. */
function serializeError(error: unknown): unknown {
  const base = pino.stdSerializers.err(error as Error);
  if (error instanceof TributaryError) {
    return { ...base, code: error.code, retriable: error.retriable, details: error.details };
  }
  return base;
}
