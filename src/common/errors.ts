/**
 * The one error type Tributary throws on purpose.
 *
 * Every failure a caller may act on carries a stable `code` (what went wrong, for programs), a
 * `retriable` flag (whether the same call may succeed later without anyone changing anything),
 * and the `cause` it came from. The message says what was wrong and what to do about it.
 */
import { inspect } from 'node:util';

export interface TributaryErrorOptions {
  /** Stable, upper-snake-case identifier, e.g. `CONFIG_INVALID`, `OFFSET_OUT_OF_RANGE`. */
  readonly code: string;
  readonly message: string;
  /** True when retrying the same operation unchanged may succeed (a timeout, a lost connection). */
  readonly retriable?: boolean;
  readonly cause?: unknown;
  /** Structured facts for logs and for programs: the partition, the path, the limit that was hit. */
  readonly details?: Readonly<Record<string, unknown>>;
}

export class TributaryError extends Error {
  readonly code: string;
  readonly retriable: boolean;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(options: TributaryErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TributaryError';
    this.code = options.code;
    this.retriable = options.retriable ?? false;
    this.details = options.details ?? {};
  }

  /** A JSON-friendly view for structured logs; the cause chain is flattened to messages. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      retriable: this.retriable,
      details: this.details,
      causes: causeMessages(this.cause),
    };
  }
}

export function isTributaryError(value: unknown): value is TributaryError {
  return value instanceof TributaryError;
}

/** Whether an error of any origin may succeed on retry; unknown errors are treated as permanent. */
export function isRetriable(error: unknown): boolean {
  return isTributaryError(error) && error.retriable;
}

/** The messages of an error's cause chain, outermost first, bounded against cycles. */
export function causeMessages(cause: unknown, limit = 10): string[] {
  const messages: string[] = [];
  let current = cause;
  while (current !== undefined && current !== null && messages.length < limit) {
    if (current instanceof Error) {
      messages.push(current.message);
      current = current.cause;
    } else {
      messages.push(typeof current === 'string' ? current : inspect(current, { depth: 2 }));
      break;
    }
  }
  return messages;
}
