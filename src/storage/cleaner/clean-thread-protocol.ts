/**
 * The messages between the log cleaner (main thread) and its pass thread (clean-worker.ts).
 *
 *   main → thread   pass      one pass's input, the key map's size, the I/O rate, and a shared
 *                             Int32 flag the main thread sets to 1 when the pass must stop
 *   thread → main   swap      a group is written: swap it in (the main thread owns the log)
 *   main → thread   swapped   the swap's outcome (an error message when it was refused)
 *   thread → main   done      the pass's result  |  failed: its error (aborted when it stopped on the flag)
 */
import type { CleanedGroup, PassInput, PassResult } from './clean-pass.js';

/** What of a pass's input crosses to the thread: its callbacks and key map stay behind. */
export type PassData = Omit<PassInput, 'map' | 'throttle' | 'checkAborted' | 'sliceMs'>;

export type ToCleanThread =
  | { readonly type: 'pass'; readonly id: number; readonly input: PassData; readonly mapSlots: number; readonly loadFactor: number; readonly maxIoBytesPerSecond: number; readonly abortFlag: SharedArrayBuffer }
  | { readonly type: 'swapped'; readonly id: number; readonly error?: { readonly message: string; readonly aborted: boolean } };

export type FromCleanThread =
  | { readonly type: 'swap'; readonly id: number; readonly group: CleanedGroup }
  | { readonly type: 'done'; readonly id: number; readonly result: PassResult }
  | { readonly type: 'failed'; readonly id: number; readonly message: string; readonly aborted: boolean };
