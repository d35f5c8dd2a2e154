/**
 * The main thread's side of the cleaner's pass thread (clean-worker.ts): starts the thread on the
 * first pass, hands it one pass at a time, swaps in the groups it writes, and raises the shared
 * abort flag when the log changes under the pass or the cleaner stops. The thread lets the
 * process exit while no pass runs.
 */
import type { Worker } from 'node:worker_threads';
import { TributaryError } from '../../common/errors.js';
import { startModuleWorker } from '../../common/module-worker.js';
import type { CleanedGroup, PassResult } from './clean-pass.js';
import type { FromCleanThread, PassData, ToCleanThread } from './clean-thread-protocol.js';

const WORKER_SOURCE = new URL('./clean-worker.ts', import.meta.url);
/** How often a running pass is checked for a reason to stop (the log truncated, deleted, closed). */
const ABORT_POLL_MS = 10;

export interface ThreadPass {
  readonly input: PassData;
  readonly mapSlots: number;
  readonly loadFactor: number;
  readonly maxIoBytesPerSecond: number;
  /** Swaps a written group in; throws (CLEANING_ABORTED when the log changed) to refuse it. */
  readonly swap: (group: CleanedGroup) => void;
  /** A reason to stop the pass now, if any. */
  readonly shouldStop: () => string | undefined;
}

interface Running {
  readonly pass: ThreadPass;
  readonly resolve: (result: PassResult) => void;
  readonly reject: (error: Error) => void;
}

export class CleanThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly running = new Map<number, Running>();

  /** Runs one pass on the thread. */
  run(pass: ThreadPass): Promise<PassResult> {
    const worker = this.start();
    const id = (this.nextId += 1);
    const abortFlag = new SharedArrayBuffer(4);
    const abort = new Int32Array(abortFlag);
    const poll = setInterval(() => {
      if (pass.shouldStop() !== undefined) Atomics.store(abort, 0, 1);
    }, ABORT_POLL_MS);
    return new Promise<PassResult>((resolve, reject) => {
      this.running.set(id, { pass, resolve, reject });
      worker.ref();
      const message: ToCleanThread = { type: 'pass', id, input: pass.input, mapSlots: pass.mapSlots, loadFactor: pass.loadFactor, maxIoBytesPerSecond: pass.maxIoBytesPerSecond, abortFlag };
      worker.postMessage(message);
    }).finally(() => {
      clearInterval(poll);
      if (this.running.size === 0) this.worker?.unref();
    });
  }

  /** Ends the thread; a pass still running fails. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = startModuleWorker(WORKER_SOURCE, { name: 'tributary-log-cleaner' });
    worker.unref();
    worker.on('message', (message: FromCleanThread) => this.answered(worker, message));
    worker.on('error', (error) => this.failAll(error));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(new Error(`the log cleaner's thread exited with code ${code}`));
    });
    this.worker = worker;
    return worker;
  }

  private answered(worker: Worker, message: FromCleanThread): void {
    const running = this.running.get(message.id);
    if (running === undefined) return;
    if (message.type === 'swap') {
      let reply: ToCleanThread = { type: 'swapped', id: message.id };
      try {
        running.pass.swap(message.group);
      } catch (error) {
        const aborted = (error as { code?: string }).code === 'CLEANING_ABORTED';
        reply = { type: 'swapped', id: message.id, error: { message: error instanceof Error ? error.message : String(error), aborted } };
      }
      worker.postMessage(reply);
      return;
    }
    this.running.delete(message.id);
    if (message.type === 'done') {
      running.resolve(message.result);
      return;
    }
    running.reject(
      message.aborted
        ? new TributaryError({ code: 'CLEANING_ABORTED', message: message.message, retriable: true })
        : new TributaryError({ code: 'CLEANER_PASS_FAILED', message: `the cleaning pass failed: ${message.message}` }),
    );
  }

  private failAll(cause: Error): void {
    const running = [...this.running.values()];
    this.running.clear();
    for (const pass of running) pass.reject(new TributaryError({ code: 'CLEANER_PASS_FAILED', message: `the log cleaner's thread failed: ${cause.message}`, cause }));
  }
}
