/** Failures as the storage layer throws them, for the transition-retry tests. */
import { TributaryError } from '../../../../src/common/errors.js';

/** An I/O error as node:fs throws it. */
export function eio(syscall = 'fsync'): NodeJS.ErrnoException {
  return Object.assign(new Error(`EIO: i/o error, ${syscall}`), { code: 'EIO', errno: -5, syscall });
}

/** What LeaderEpochCache.assign throws when its checkpoint cannot be written. */
export function checkpointFailure(): TributaryError {
  return new TributaryError({ code: 'LEADER_EPOCH_CHECKPOINT_FAILED', message: 'could not write leader-epoch-checkpoint (EIO); the leader epochs are unchanged', cause: eio() });
}
