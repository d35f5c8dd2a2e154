/** The bounded message queue between a ZooKeeper consumer's fetchers and the application. */
import { describe, expect, it } from 'vitest';
import { MessageStream, type QueuedMessage } from '../../../../src/client/group/stream.js';

function entry(offset: number): QueuedMessage {
  return {
    message: { topic: 't', partition: 0, offset: BigInt(offset), from: BigInt(offset), key: null, value: null, headers: [], timestamp: 0 },
    current: () => true,
    delivered: () => undefined,
  };
}

const settled = async (promise: Promise<unknown>): Promise<boolean> =>
  Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 50))]);

describe('MessageStream', () => {
  it('makes a writer wait while full and releases it when a reader takes a message', async () => {
    const stream = new MessageStream('t', 0, 1);
    stream.push(entry(0));
    const waiting = stream.waitForSpace();
    expect(await settled(waiting)).toBe(false);
    const read = await stream[Symbol.asyncIterator]().next();
    expect(read.done).toBe(false);
    expect((read.value as { offset: bigint }).offset).toBe(0n);
    expect(await settled(waiting)).toBe(true);
  });

  it('releases a writer whose stop signal aborts, even after an earlier wake (a stopping fetcher never waits for a reader)', async () => {
    const stream = new MessageStream('t', 0, 1);
    stream.push(entry(0));
    const stop = new AbortController();
    stream.wake(); // the wake a stopping fetcher used to rely on came before it started waiting
    const waiting = stream.waitForSpace(stop.signal);
    expect(await settled(waiting)).toBe(false);
    stop.abort();
    expect(await settled(waiting)).toBe(true);
    // Already aborted: no wait at all, and no writer is left registered.
    expect(await settled(stream.waitForSpace(stop.signal))).toBe(true);
  });
});
