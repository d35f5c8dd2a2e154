/**
 * Retries of a role transition that failed (replica-manager.ts `apply`): becoming leader, follower
 * or fenced from the partition state the controller wrote. Without them a failure waited for the
 * controller's next write of that state, which may never come: a broker named leader did not lead
 * (producers got NOT_LEADER_OR_FOLLOWER for good) or a follower did not fetch (and left the ISR for
 * good). Kafka marks such a partition offline and its controller elects another leader; we have no
 * such path, so the broker keeps trying on its own.
 *
 * Per partition: at most one retry timer, with exponential backoff and jitter; a later successful
 * apply, the replica's removal and the manager's stop cancel it. A storage failure (an I/O error
 * writing the leader-epoch checkpoint, a log gone offline) is retried on a slower schedule — every
 * attempt is a durable write on a disk that is failing — and its message says what the operator
 * must do. Each failed attempt is logged once, at warn, and at error every `errorEvery`-th
 * attempt, so a long outage stands out without one line per partition per 100 ms.
 */
import { backoffDelay, type BackoffSchedule } from '../../common/backoff.js';
import type { Clock } from '../../common/clock.js';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { Counter } from 'prom-client';

export interface TransitionRetrySettings {
  /** Pauses after a failure that is not the disk's. */
  readonly backoff: BackoffSchedule;
  /** Pauses after a storage failure: slower, so a failing disk is not hammered with durable writes. */
  readonly storageBackoff: BackoffSchedule;
  /** Every this many consecutive failures of a partition, the failure is logged at error. */
  readonly errorEvery: number;
}

export const DEFAULT_TRANSITION_RETRY: TransitionRetrySettings = {
  backoff: { initialDelayMs: 100, maxDelayMs: 10_000 },
  storageBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000 },
  errorEvery: 10,
};

/** What the failed transition was for: named in logs and in the error's message. */
export interface TransitionTarget {
  readonly partition: string;
  /** The role the state gives, e.g. "leader of epoch 4" or "follower of broker 2 in epoch 4". */
  readonly role: string;
  /** The partition's folder, named in a storage failure's advice. */
  readonly directory: string;
}

export interface TransitionRetryHost {
  readonly clock: Clock;
  readonly logger: Logger;
  /** Counts every failed attempt, by kind. */
  readonly failures: Counter<'kind'>;
  /** Jitter's source (tests pin it). */
  readonly random?: () => number;
}

interface Failing {
  attempts: number;
  readonly since: number;
  timer: NodeJS.Timeout | undefined;
}

/** Error codes of our own that mean the partition's storage failed. */
const STORAGE_CODES = new Set(['KAFKA_STORAGE_ERROR', 'LEADER_EPOCH_CHECKPOINT_FAILED']);

/**
 * The storage failure in `error`'s cause chain, if any: our storage error codes, or a system call's
 * errno (EIO, EROFS, ENOSPC, …). Returns the most specific code found (an errno over ours).
 */
export function storageFailureCode(error: unknown): string | undefined {
  let found: string | undefined;
  let current: unknown = error;
  for (let depth = 0; depth < 10 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      const systemCall = typeof (current as { errno?: unknown }).errno === 'number' || (current as { syscall?: unknown }).syscall !== undefined;
      if (systemCall && /^E[A-Z0-9]+$/.test(code)) return code;
      if (STORAGE_CODES.has(code)) found ??= code;
    }
    current = current.cause;
  }
  return found;
}

export class TransitionRetries {
  private readonly failing = new Map<string, Failing>();
  private stopped = false;

  constructor(
    private readonly settings: TransitionRetrySettings,
    private readonly host: TransitionRetryHost,
  ) {}

  /** Partitions whose last transition failed (each has a retry scheduled). */
  get size(): number {
    return this.failing.size;
  }

  /** Retry timers waiting to fire: at most one per failing partition, none after `stop`. */
  get pendingTimers(): number {
    let timers = 0;
    for (const entry of this.failing.values()) if (entry.timer !== undefined) timers += 1;
    return timers;
  }

  /** Consecutive failed attempts of `partition` (0 when its last transition succeeded). */
  attempts(partition: string): number {
    return this.failing.get(partition)?.attempts ?? 0;
  }

  /**
   * Records a failed attempt, logs it, and calls `retry` after the backoff (replacing a retry
   * already scheduled: one timer per partition). Returns the error that was logged, which says
   * what failed and what to do.
   */
  failed(target: TransitionTarget, error: unknown, retry: () => void): TributaryError {
    const now = this.host.clock.now();
    let entry = this.failing.get(target.partition);
    if (entry === undefined) {
      entry = { attempts: 0, since: now, timer: undefined };
      this.failing.set(target.partition, entry);
    }
    entry.attempts += 1;
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    entry.timer = undefined;
    const storage = storageFailureCode(error);
    const delayMs = backoffDelay(storage === undefined ? this.settings.backoff : this.settings.storageBackoff, entry.attempts, this.host.random);
    const failure = transitionFailure(target, error, storage, entry.attempts, delayMs);
    this.host.failures.inc({ kind: storage === undefined ? 'other' : 'storage' });
    const context = { err: failure, partition: target.partition, attempt: entry.attempts, nextDelayMs: delayMs, failingForMs: now - entry.since };
    if (entry.attempts % this.settings.errorEvery === 0) {
      this.host.logger.error(context, `partition ${target.partition} has failed to take its role ${entry.attempts} times in a row; still retrying`);
    } else {
      this.host.logger.warn(context, 'could not take the role the partition state gives; retrying after a backoff');
    }
    if (!this.stopped) {
      const scheduled = entry;
      scheduled.timer = setTimeout(() => {
        scheduled.timer = undefined;
        retry();
      }, delayMs);
      // A pending retry must not keep a stopping process alive; stop() clears it anyway.
      scheduled.timer.unref();
    }
    return failure;
  }

  /** The partition took its role: no more retries, the count starts over. */
  succeeded(partition: string): void {
    const entry = this.failing.get(partition);
    if (entry === undefined) return;
    this.cancel(partition);
    this.host.logger.info({ partition, failedAttempts: entry.attempts, failedForMs: this.host.clock.now() - entry.since }, 'took the role the partition state gives after failed attempts');
  }

  /** Forgets `partition`'s failures and its pending retry (its replica is gone, or nothing is left to apply). */
  cancel(partition: string): void {
    const entry = this.failing.get(partition);
    if (entry === undefined) return;
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    this.failing.delete(partition);
  }

  /** Cancels every pending retry; later failures are logged but schedule none. */
  stop(): void {
    this.stopped = true;
    for (const partition of [...this.failing.keys()]) this.cancel(partition);
  }
}

/** The error a failed attempt is logged with: what failed, the schedule, and for storage what to do. */
function transitionFailure(target: TransitionTarget, error: unknown, storage: string | undefined, attempt: number, delayMs: number): TributaryError {
  const why = error instanceof Error ? error.message : String(error);
  const message =
    storage === undefined
      ? `${target.partition} could not become ${target.role}: ${why}; retrying in ${delayMs} ms (attempt ${attempt})`
      : `${target.partition} could not become ${target.role}: its storage failed (${storage}): ${why}. ` +
        `Until it works this broker neither leads nor follows ${target.partition}. Check the disk holding ${target.directory} ` +
        `(kernel log for I/O errors, a read-only remount, free space). Once it is fixed the next attempt takes the role; a log a failed write took ` +
        `offline needs a restart of this broker (its logs are recovered at start). ` +
        `To move leadership away now, stop this broker: the controller then elects another in-sync replica. Retrying in ${delayMs} ms (attempt ${attempt})`;
  return new TributaryError({
    code: 'REPLICA_TRANSITION_FAILED',
    message,
    // Retried here on a timer; a caller could retry it too, nothing has to change first.
    retriable: true,
    cause: error,
    details: { partition: target.partition, role: target.role, attempt, nextDelayMs: delayMs, ...(storage === undefined ? {} : { storage, directory: target.directory }) },
  });
}
