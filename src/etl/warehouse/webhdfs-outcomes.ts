/**
 * What a CREATE, RENAME or DELETE whose answer was lost did, judged from HDFS state read back
 * afterwards. Repeating such a call blindly is wrong: WebHDFS calls get no retry-cache protection
 * on the NameNode, so a repeated RENAME sees "source missing" and a repeated CREATE sees "file
 * exists" after the first one succeeded.
 */

export interface CreateAttempt {
  /** Bytes handed to the DataNode connection before it failed. */
  readonly sentBytes: number;
  /** Whether the whole body had been handed over. */
  readonly sentAll: boolean;
}

export interface FoundFile {
  readonly length: number;
  /** From GET_BLOCK_LOCATIONS; undefined when HDFS could not say. */
  readonly underConstruction: boolean | undefined;
}

/**
 * - `created`: a closed file of exactly the bytes we sent is there. The caller writes each attempt
 *   under a fresh name, so a file of that name is ours.
 * - `absent`: no file. The DataNode may still be about to create it, so the name stays burnt.
 * - `incomplete`: a file is there but short, still open, or of unknown state.
 */
export type LostCreateVerdict = 'created' | 'absent' | 'incomplete';

export function judgeLostCreate(attempt: CreateAttempt, found: FoundFile | undefined): LostCreateVerdict {
  if (found === undefined) return 'absent';
  if (attempt.sentAll && found.underConstruction === false && found.length === attempt.sentBytes) return 'created';
  return 'incomplete';
}

/**
 * - `renamed`: the source is gone and the target is there.
 * - `not-renamed`: the source is still there and there is no target; nothing happened.
 * - `target-exists`: both are there; since a rename never overwrites, it was refused.
 * - `unknown`: neither is there; someone else moved or deleted the file.
 */
export type LostRenameVerdict = 'renamed' | 'not-renamed' | 'target-exists' | 'unknown';

export function judgeLostRename(sourceExists: boolean, targetExists: boolean): LostRenameVerdict {
  if (!sourceExists) return targetExists ? 'renamed' : 'unknown';
  return targetExists ? 'target-exists' : 'not-renamed';
}
