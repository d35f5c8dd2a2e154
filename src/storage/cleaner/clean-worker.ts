/**
 * The cleaner's pass thread: runs clean-pass.ts off the broker's event loop, so a pass (digesting
 * and filtering every record of the log) takes the second core instead of the time requests need.
 * It keeps the key map between passes, as Kafka's cleaner thread does. The log itself stays on
 * the main thread: the thread only reads closed segments and writes `.cleaned` files, and asks
 * the main thread to swap each group in. Messages: clean-thread-protocol.ts.
 */
import { parentPort } from 'node:worker_threads';
import { cleanLog, type CleanedGroup } from './clean-pass.js';
import type { FromCleanThread, ToCleanThread } from './clean-thread-protocol.js';
import { IoThrottle } from './io-throttle.js';
import { KeyOffsetMap } from './key-offset-map.js';

const port = parentPort;
let map: KeyOffsetMap | undefined;
const swaps = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();

class PassAborted extends Error {}

function post(message: FromCleanThread): void {
  port?.postMessage(message);
}

function swap(id: number, group: CleanedGroup): Promise<void> {
  return new Promise((resolve, reject) => {
    swaps.set(id, { resolve, reject });
    post({ type: 'swap', id, group });
  });
}

async function runPass(message: Extract<ToCleanThread, { type: 'pass' }>): Promise<void> {
  const abort = new Int32Array(message.abortFlag);
  if (map === undefined || map.maxSlots !== message.mapSlots || map.loadFactor !== message.loadFactor) map = new KeyOffsetMap(message.mapSlots, message.loadFactor);
  const throttle = new IoThrottle(message.maxIoBytesPerSecond);
  try {
    const result = await cleanLog(
      {
        ...message.input,
        map,
        throttle: (bytes) => throttle.take(bytes),
        checkAborted: () => {
          if (Atomics.load(abort, 0) !== 0) throw new PassAborted('the log changed under the pass, or the cleaner is stopping');
        },
        // Nothing else runs on this thread: yield only now and then, for the swap answers.
        sliceMs: 50,
      },
      (group) => swap(message.id, group),
    );
    post({ type: 'done', id: message.id, result });
  } catch (error) {
    post({ type: 'failed', id: message.id, message: error instanceof Error ? error.message : String(error), aborted: error instanceof PassAborted });
  }
}

port?.on('message', (message: ToCleanThread) => {
  if (message.type === 'pass') {
    void runPass(message);
    return;
  }
  const waiting = swaps.get(message.id);
  swaps.delete(message.id);
  if (message.error === undefined) waiting?.resolve();
  else waiting?.reject(message.error.aborted ? new PassAborted(message.error.message) : new Error(message.error.message));
});
