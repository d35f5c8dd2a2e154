/**
 * The replay manifest: one hour swap of a load, a replay or a rollback. Written once as the claim
 * `replays/<seq>.pending` and published with the same bytes as `replays/<seq>.json`
 * (replay-swap.ts); UTF-8 JSON, 2-space indented, keys in the order below.
 *
 *   format        "tributary-etl-replay-v1"
 *   kind          "replay" (hours rebuilt from their offset ranges) | "rollback" (an earlier version restored)
 *   load, seq     the load; the seq of the empty commit that fenced this swap (commits and swaps share it)
 *   attempt       the attempt that wrote it (names its staging folder)
 *   runNumber     the lease's run number (null with the in-process coordination store)
 *   createdAt     ISO time (information only)
 *   reason        the operator's --reason, or null
 *   request       {from, to, topic|null}: the window asked for ([from, to), whole UTC hours; one hour for a rollback)
 *   transform     the load's transformation as canonical JSON (transform.ts), or null; replays only
 *   readerSchemas {<topic>: {subject, version, id}}: the reader schema a replay wrote with ({} for a rollback)
 *   ranges        [{topic, partition, start, end, hours: [<YYYY-MM-DDTHH>…]}]: the offset ranges a replay read
 *                 again, [start, end), and the hours of the window each fed ([] for a rollback)
 *   hours         one entry per hour swapped:
 *     topic, hour       <YYYY-MM-DDTHH> (UTC)
 *     live              the hour folder (`<root>/<topic>/hourly/YYYY/MM/DD/HH`, or `…/dt=…/hr=…` in the hive layout)
 *     fromVersion       the version live before the swap; it moves to `keep`
 *     toVersion         the version live after; it comes from `bring`
 *     keep, bring       folders (replay-layout.ts)
 *     carried           names moved from `keep` back into `live` after the two renames: entries that
 *                       are not the outgoing version's own (markers such as _COMPLETE; on rollback,
 *                       files committed after the replay being undone)
 *     old, new          [{name, partition, start, end, records, bytes, sha256, readerId}]: data files of
 *                       the outgoing and the incoming version (carried files are in neither)
 *     recordsChanged    records whose content differs between the versions (by offset), null if not compared
 *     outputSchemaChanged  whether the data files' schema differs, null if not compared
 */
import { z } from 'zod';
import { etlError } from '../errors.js';

export const REPLAY_MANIFEST_FORMAT = 'tributary-etl-replay-v1';

export interface VersionFile {
  /** File name inside the hour folder: `<topic>+<partition>+<start>+<end>.<ext>`. */
  readonly name: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly records: number;
  readonly bytes: number;
  readonly sha256: string;
  /** Registry id of the reader schema the file was written with. */
  readonly readerId: number | null;
}

export interface HourSwap {
  readonly topic: string;
  readonly hour: string;
  readonly live: string;
  readonly fromVersion: number;
  readonly toVersion: number;
  readonly keep: string;
  readonly bring: string;
  readonly carried: readonly string[];
  readonly old: readonly VersionFile[];
  readonly new: readonly VersionFile[];
  readonly recordsChanged: number | null;
  readonly outputSchemaChanged: boolean | null;
}

export interface ReplayRangeEntry {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly hours: readonly string[];
}

export interface ReplayManifest {
  readonly format: typeof REPLAY_MANIFEST_FORMAT;
  readonly kind: 'replay' | 'rollback';
  readonly load: string;
  readonly seq: number;
  readonly attempt: string;
  readonly runNumber: number | null;
  readonly createdAt: string;
  readonly reason: string | null;
  readonly request: { readonly from: string; readonly to: string; readonly topic: string | null };
  readonly transform: string | null;
  readonly readerSchemas: Readonly<Record<string, { readonly subject: string; readonly version: number; readonly id: number }>>;
  readonly ranges: readonly ReplayRangeEntry[];
  readonly hours: readonly HourSwap[];
}

const count = z.number().int().nonnegative();
const offset = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const hourKey = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}$/);
const versionFile = z.strictObject({
  name: z.string().min(1),
  partition: count,
  start: offset,
  end: offset,
  records: count,
  bytes: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  readerId: count.nullable(),
});

const replayManifestSchema = z.strictObject({
  format: z.literal(REPLAY_MANIFEST_FORMAT),
  kind: z.enum(['replay', 'rollback']),
  load: z.string().min(1),
  seq: z.number().int().positive(),
  attempt: z.string().min(1),
  runNumber: count.nullable(),
  createdAt: z.string(),
  reason: z.string().nullable(),
  request: z.strictObject({ from: z.string(), to: z.string(), topic: z.string().nullable() }),
  transform: z.string().nullable(),
  readerSchemas: z.record(z.string(), z.strictObject({ subject: z.string(), version: count, id: count })),
  ranges: z.array(z.strictObject({ topic: z.string().min(1), partition: count, start: offset, end: offset, hours: z.array(hourKey) })),
  hours: z.array(
    z.strictObject({
      topic: z.string().min(1),
      hour: hourKey,
      live: z.string().min(1),
      fromVersion: z.number().int().positive(),
      toVersion: z.number().int().positive(),
      keep: z.string().min(1),
      bring: z.string().min(1),
      carried: z.array(z.string().min(1)),
      old: z.array(versionFile),
      new: z.array(versionFile),
      recordsChanged: count.nullable(),
      outputSchemaChanged: z.boolean().nullable(),
    }),
  ),
});

export function serializeReplayManifest(manifest: ReplayManifest): Buffer {
  return Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
}

/** Parses and checks a replay manifest read from `where`; ETL_MANIFEST_INVALID says what is wrong. */
export function parseReplayManifest(bytes: Buffer, where: string): ReplayManifest {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw etlError('ETL_MANIFEST_INVALID', `replay manifest ${where} is not JSON (${(error as Error).message}); it was damaged after it was written. Restore it from a backup; do not delete it`, {
      cause: error,
      details: { where },
    });
  }
  const result = replayManifestSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`);
    throw etlError('ETL_MANIFEST_INVALID', `replay manifest ${where} is not a ${REPLAY_MANIFEST_FORMAT} manifest: ${problems.slice(0, 5).join('; ')}`, {
      cause: result.error,
      details: { where, problems },
    });
  }
  return result.data;
}

/** Records in a version's data files. */
export function recordsOf(files: readonly VersionFile[]): number {
  return files.reduce((sum, file) => sum + file.records, 0);
}
