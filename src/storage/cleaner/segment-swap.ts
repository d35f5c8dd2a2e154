/**
 * Swapping cleaned segments in, and finishing or rolling back a swap a crash interrupted (Kafka's
 * `.cleaned` / `.swap` / `.deleted` scheme, `LocalLog.replaceSegments` and `LogLoader`).
 *
 * A group of live segments S1…Sn (S1's base = B) is replaced by one cleaned segment named B:
 *
 *   1. `B.{log,index,timeindex}.cleaned` are complete and fsynced (clean-pass.ts).
 *   2. Each `.cleaned` file is renamed `.swap`; the folder is fsynced. From here the new segment
 *      is the truth: recovery finishes the swap.
 *   3. Every file of S1…Sn is renamed `.deleted`; the folder is fsynced.
 *   4. The `.swap` files lose their suffix, indexes first and the `.log` last; the folder is fsynced.
 *   5. The `.deleted` files are removed (readers holding the old segments keep their descriptors).
 *
 * Recovery, before segments are loaded: `.cleaned` files are removed (a swap not begun: the old
 * segments are whole). For each `B.log.swap`, live segment files with a base in [B, end of the
 * swap segment) are old sources not yet renamed and are removed; then every `.swap` file loses its
 * suffix. `.deleted` files are removed. The swap segment may end before its last source did (its
 * trailing batches were removed): a source starting at or after its end survives the rule and is
 * loaded as it was, uncleaned but valid, since nothing of the swap segment overlaps it.
 */
import { closeSync, fstatSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDirectory } from '../durable-files.js';
import { scanBatches } from '../batch-scan.js';
import { segmentFileName } from '../segment.js';
import { CLEANED_SUFFIX } from './clean-pass.js';

export const SWAP_SUFFIX = '.swap';
export const DELETED_SUFFIX = '.deleted';
const SEGMENT_SUFFIXES = ['.index', '.timeindex', '.log'] as const;

function renameIfPresent(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Steps 2–5 for one group; synchronous, so no other operation on the log interleaves. */
export function swapInCleaned(directory: string, baseOffset: number, sources: readonly number[]): void {
  for (const suffix of SEGMENT_SUFFIXES) {
    const live = join(directory, segmentFileName(baseOffset, suffix));
    renameIfPresent(live + CLEANED_SUFFIX, live + SWAP_SUFFIX);
  }
  fsyncDirectory(directory);
  for (const source of sources) {
    for (const suffix of SEGMENT_SUFFIXES) {
      const live = join(directory, segmentFileName(source, suffix));
      renameIfPresent(live, live + DELETED_SUFFIX);
    }
  }
  fsyncDirectory(directory);
  for (const suffix of SEGMENT_SUFFIXES) {
    const live = join(directory, segmentFileName(baseOffset, suffix));
    renameSync(live + SWAP_SUFFIX, live);
  }
  fsyncDirectory(directory);
  for (const source of sources) {
    for (const suffix of SEGMENT_SUFFIXES) rmSync(join(directory, segmentFileName(source, suffix)) + DELETED_SUFFIX, { force: true });
  }
}

/** One past the last offset of a segment file (its base when empty). */
function endOfSegmentFile(path: string, baseOffset: number): number {
  const fd = openSync(path, 'r');
  try {
    let end = baseOffset;
    for (const batch of scanBatches(fd, 0, fstatSync(fd).size)) end = batch.lastOffset + 1;
    return end;
  } finally {
    closeSync(fd);
  }
}

/** What recovery did, for the log's start-up report. */
export interface SwapRecovery {
  readonly removedCleaned: number;
  readonly finishedSwaps: readonly number[];
  readonly removedSources: readonly string[];
}

/** Finishes or rolls back interrupted swaps in a log folder (see the file comment). */
export function recoverSwaps(directory: string): SwapRecovery {
  const files = readdirSync(directory);
  let removedCleaned = 0;
  for (const file of files) {
    if (file.endsWith(CLEANED_SUFFIX)) {
      rmSync(join(directory, file), { force: true });
      removedCleaned += 1;
    }
  }
  const swaps = files.flatMap((file) => {
    const base = /^(\d{20})\.log\.swap$/.exec(file)?.[1];
    return base === undefined ? [] : [Number(base)];
  });
  const removedSources: string[] = [];
  for (const base of swaps) {
    const end = endOfSegmentFile(join(directory, segmentFileName(base, '.log') + SWAP_SUFFIX), base);
    for (const file of files) {
      const match = /^(\d{20})\.(log|index|timeindex)$/.exec(file);
      if (match?.[1] === undefined) continue;
      const fileBase = Number(match[1]);
      if (fileBase >= base && fileBase < end) {
        rmSync(join(directory, file), { force: true });
        removedSources.push(file);
      }
    }
  }
  let renamed = false;
  for (const file of files.filter((name) => name.endsWith(SWAP_SUFFIX)).sort((a, b) => Number(a.endsWith('.log.swap')) - Number(b.endsWith('.log.swap')))) {
    renameSync(join(directory, file), join(directory, file.slice(0, -SWAP_SUFFIX.length)));
    renamed = true;
  }
  for (const file of files) if (file.endsWith(DELETED_SUFFIX)) rmSync(join(directory, file), { force: true });
  if (renamed || removedCleaned > 0 || removedSources.length > 0) fsyncDirectory(directory);
  return { removedCleaned, finishedSwaps: swaps, removedSources };
}
