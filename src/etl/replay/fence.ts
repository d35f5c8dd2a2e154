/**
 * The commit that fences a swap. The lease (/etl/locks/<load>) keeps scheduled runs out while a
 * replay or rollback works; a run that lost its lease without noticing is stopped by the warehouse
 * instead (commit.ts): before claiming its swap, a replay commits an empty manifest (no ranges, no
 * files, the same next offsets) as the next seq, so a run that planned earlier finds its seq taken
 * and stops with ETL_COMMIT_FENCED. The swap then takes that seq as its own number.
 */
import type { CommitContext } from '../load/commit.js';
import { claimCommit, completeCommit } from '../load/commit.js';
import type { LoadDefinition } from '../load-file.js';
import { MANIFEST_FORMAT, type Manifest } from '../load/manifest.js';

export interface FenceInputs {
  readonly load: LoadDefinition;
  /** The last published commit: its next offsets carry over unchanged. */
  readonly base: Manifest | undefined;
  readonly seq: number;
  readonly runNumber: number | null;
  readonly now: Date;
}

export function fenceManifest(inputs: FenceInputs, attempt: string): Manifest {
  const { load } = inputs;
  return {
    format: MANIFEST_FORMAT,
    load: load.name,
    seq: inputs.seq,
    attempt,
    runNumber: inputs.runNumber,
    plannedAt: inputs.now.toISOString(),
    output: { format: load.format, codec: load.codec, timeField: load.timeField ?? null, layout: load.layout },
    readerSchemas: {},
    ranges: [],
    nextOffsets: inputs.base?.nextOffsets ?? {},
    files: [],
    quarantine: { records: 0, reasons: {}, files: [] },
    hours: {},
  };
}

/** Claims and publishes the fencing commit; ETL_COMMIT_FENCED if a run took the seq first. */
export async function commitFence(context: CommitContext, inputs: FenceInputs): Promise<void> {
  const manifest = fenceManifest(inputs, context.attempt);
  const bytes = await claimCommit(context, manifest);
  await completeCommit(context, manifest, bytes);
}
