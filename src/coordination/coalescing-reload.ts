/**
 * One re-read at a time of state kept current by one-shot watches (the broker's cluster view, its
 * ACLs, its SASL users). A burst of watch events costs one or two passes, not one each: a call
 * during a pass shares it and asks for one more after it, so once `run()` resolves, whatever was
 * stored when it was called has been read.
 */
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';

export interface CoalescingReloadOptions {
  /** Once true, no further pass starts. */
  readonly isClosed: () => boolean;
  /** Called once per failed run, which then resolves; without it the run rejects with the error. */
  readonly onFailure?: (error: unknown) => void;
}

export class CoalescingReload {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly options: CoalescingReloadOptions,
  ) {}

  run(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    const passes = (async () => {
      do {
        this.again = false;
        await this.pass();
      } while (this.again && !this.options.isClosed());
    })();
    const { onFailure } = this.options;
    this.running = (onFailure === undefined ? passes : passes.catch(onFailure)).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** From inside a pass: what it read is already stale, read again before resolving. */
  passAgain(): void {
    this.again = true;
  }
}

/**
 * The failure handling the watch-driven caches share: logged, and when the store may answer
 * later (a lost connection, a timeout) everything is read again after `retryMs`, since watch
 * notifications may have been missed meanwhile.
 */
export function retryWhenRetriable(options: { readonly logger: Logger; readonly message: string; readonly isClosed: () => boolean; readonly retry: () => void; readonly retryMs?: number }): (error: unknown) => void {
  return (error) => {
    if (options.isClosed()) return;
    const retriable = error instanceof TributaryError && error.retriable;
    options.logger.warn({ err: error, retrying: retriable }, options.message);
    if (retriable) setTimeout(options.retry, options.retryMs ?? 500).unref();
  };
}
