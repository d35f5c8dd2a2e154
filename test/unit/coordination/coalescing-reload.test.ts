/**
 * The coalesced re-read the broker's cluster view, ACL cache and SASL user cache share: calls
 * during a pass share it and cause exactly one more; a pass can ask for another; a failure
 * reaches the caller, or the handler once per run; nothing starts once closed.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { createLogger } from '../../../src/common/logger.js';
import { CoalescingReload, retryWhenRetriable } from '../../../src/coordination/coalescing-reload.js';

/** A pass that waits for `release()` each time, counting how many ran. */
function gatedPass(): { pass: () => Promise<void>; release: () => void; passes: () => number } {
  let passes = 0;
  let open: (() => void) | undefined;
  return {
    pass: () => {
      passes += 1;
      return new Promise<void>((resolve) => (open = resolve));
    },
    release: () => open?.(),
    passes: () => passes,
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('CoalescingReload', () => {
  it('runs one more pass for any number of calls made during a pass, and they all share it', async () => {
    const gate = gatedPass();
    const reload = new CoalescingReload(gate.pass, { isClosed: () => false });
    const first = reload.run();
    const during = [reload.run(), reload.run(), reload.run()];
    expect(during.every((promise) => promise === first)).toBe(true);
    gate.release();
    await tick();
    expect(gate.passes()).toBe(2); // the calls during the first pass are covered by one more
    gate.release();
    await first;
    expect(gate.passes()).toBe(2);
    const later = reload.run(); // a new run after the last one settled
    expect(later).not.toBe(first);
    gate.release();
    await later;
    expect(gate.passes()).toBe(3);
  });

  it('reads again when a pass says what it read is stale, and starts no further pass once closed', async () => {
    let closed = false;
    let passes = 0;
    const reload: CoalescingReload = new CoalescingReload(
      async () => {
        passes += 1;
        if (passes < 3) reload.passAgain();
      },
      { isClosed: () => closed },
    );
    await reload.run();
    expect(passes).toBe(3);
    closed = true;
    passes = 0;
    await reload.run();
    expect(passes).toBe(1); // the pass asked for runs; the one it asks for does not
  });

  it('rejects the shared run without a handler; with one, calls it once per failed run and resolves', async () => {
    const failure = new Error('store unreachable');
    const rejecting = new CoalescingReload(() => Promise.reject(failure), { isClosed: () => false });
    await expect(rejecting.run()).rejects.toBe(failure);
    const seen: unknown[] = [];
    const handled = new CoalescingReload(() => Promise.reject(failure), { isClosed: () => false, onFailure: (error) => seen.push(error) });
    await Promise.all([handled.run(), handled.run(), handled.run()]);
    expect(seen).toEqual([failure]);
  });
});

describe('retryWhenRetriable', () => {
  const logger = createLogger({ name: 'coalescing-reload-test', level: 'silent' });

  it('retries after the delay only retriable failures, and nothing once closed', async () => {
    let retries = 0;
    let closed = false;
    const handle = retryWhenRetriable({ logger, message: 'could not read', isClosed: () => closed, retry: () => (retries += 1), retryMs: 5 });
    handle(new TributaryError({ code: 'CONNECTION_LOSS', message: 'lost', retriable: true }));
    handle(new TributaryError({ code: 'NO_AUTH', message: 'refused', retriable: false }));
    handle(new Error('plain'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(retries).toBe(1);
    closed = true;
    handle(new TributaryError({ code: 'CONNECTION_LOSS', message: 'lost', retriable: true }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(retries).toBe(1);
  });
});
