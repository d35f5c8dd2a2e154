/**
 * The commit manifest: what one commit of a load put into the warehouse, and where every
 * partition of the load stands after it. Written once as the claim `<seq>.pending` and published
 * with the same bytes as `<seq>.json` (commit.ts); UTF-8 JSON, 2-space indented, keys in the order
 * below. Offsets are JSON numbers (safe integers); a range [start, end) excludes end.
 *
 *   format        "tributary-etl-manifest-v1"
 *   load, seq     the load's name; this commit's number (1, 2, …; planned from commit seq-1)
 *   attempt       the run attempt that wrote it (names its staging folder)
 *   runNumber     the lease's run number (null with the in-process coordination store)
 *   plannedAt     ISO time the plan was made (no name depends on it; eventTimes of caught-up
 *                 partitions do)
 *   output        {format, codec, timeField|null, layout?}: how the data files were written; layout
 *                 (layout.ts's hourly | hive) is absent in manifests written before it, meaning hourly
 *   readerSchemas {<topic>: {subject, version, id}}: the reader schema each topic was written in
 *   ranges        [{topic, partition, start, end, records, quarantined, gap?: {from, to}}]: what this
 *                 commit read; `gap` is an accepted loss [from, to) just before start (--accept-gap).
 *                 records + quarantined ≤ end − start: on a compacted topic offsets without records
 *                 (removed by the cleaner) are part of the range, never a loss
 *   nextOffsets   {<topic>: {<partition>: offset}}: cumulative, every partition ever loaded, so the
 *                 next run reads only the last manifest
 *   files         [{topic, partition, hour, start, end, records, bytes, sha256, staged, path, metrics?}]:
 *                 data files; `staged` is renamed to `path` by the commit; `metrics` (Iceberg
 *                 loads) the file's column metrics by field id (iceberg/file-metrics.ts)
 *   quarantine    {records, reasons: {<code>: count}, files: [{topic, partition, start, end,
 *                 records, bytes, sha256, staged, path}]}
 *   hours         {<topic>: {<YYYY-MM-DDTHH>: records}}: records written per event hour (UTC)
 *   iceberg       {<topic>: {dir, location, schema, catalog?}} (format iceberg): the table each topic's
 *                 files go to, the URI it is named by, and the Iceberg schema of the rows
 *                 (iceberg/load-tables.ts); the commit makes one snapshot per table from this and
 *                 `files` alone. `catalog` (loads with iceberg.catalog): the REST catalog table that
 *                 keeps its metadata, {type: rest, uri, warehouse?, namespace, name, credentialFile?,
 *                 tokenFile?, scope?, caFile?} (iceberg/load-catalog.ts; paths, never secrets);
 *                 absent, as in every manifest written before it: a file-system table
 *   deadLetters   {dir, location, schema, catalog?} (format iceberg, records set aside): the load's
 *                 dead-letter table, whose snapshot the commit makes from the quarantine files
 *   eventTimes    {<topic>: {<partition>: ms}}: cumulative, like nextOffsets: how far in event time
 *                 the partition is loaded. It is the largest event time loaded from it so far, or,
 *                 when the plan read the partition up to its high watermark (not capped by
 *                 maxRecordsPerRun: nothing older is waiting in the log), at least plannedAt, so a
 *                 caught-up or idle partition does not hold hours open forever. Never decreases.
 *                 Absent in manifests written before it (hour-completeness.ts then waits for a
 *                 commit that has it). Used only to decide which hours are closed.
 */
import { z } from 'zod';
import { etlError } from '../errors.js';
import type { HourLayout, ReaderSchemaRef } from '../load-types.js';
import type { DataFileMetrics } from '../iceberg/file-metrics.js';
import type { TableEntry } from '../iceberg/load-tables.js';

export type { ReaderSchemaRef } from '../load-types.js';

export const MANIFEST_FORMAT = 'tributary-etl-manifest-v1';

export interface OffsetGap {
  readonly from: number;
  readonly to: number;
}

export interface ManifestRange {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly records: number;
  readonly quarantined: number;
  readonly gap?: OffsetGap;
}

export interface ManifestFile {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly records: number;
  readonly bytes: number;
  readonly sha256: string;
  readonly staged: string;
  readonly path: string;
}

export interface ManifestDataFile extends ManifestFile {
  readonly hour: string;
  /** Iceberg loads: the file's column metrics for the table's manifest. */
  readonly metrics?: DataFileMetrics;
}

export type NextOffsets = Readonly<Record<string, Readonly<Record<string, number>>>>;

export interface Manifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly load: string;
  readonly seq: number;
  readonly attempt: string;
  readonly runNumber: number | null;
  readonly plannedAt: string;
  readonly output: { readonly format: string; readonly codec: string; readonly timeField: string | null; readonly layout?: HourLayout };
  readonly readerSchemas: Readonly<Record<string, ReaderSchemaRef>>;
  readonly ranges: readonly ManifestRange[];
  readonly nextOffsets: NextOffsets;
  readonly files: readonly ManifestDataFile[];
  readonly quarantine: {
    readonly records: number;
    readonly reasons: Readonly<Record<string, number>>;
    readonly files: readonly ManifestFile[];
  };
  readonly hours: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly eventTimes?: NextOffsets;
  readonly iceberg?: Readonly<Record<string, TableEntry>>;
  /** Format iceberg, a commit that set records aside: the load's dead-letter table (iceberg/dead-letters.ts). */
  readonly deadLetters?: TableEntry;
}

const offset = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const count = z.number().int().nonnegative();
const fileShape = {
  topic: z.string().min(1),
  partition: count,
  start: offset,
  end: offset,
  records: count,
  bytes: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  staged: z.string().min(1),
  path: z.string().min(1),
};

const countsById = z.record(z.string().regex(/^\d+$/), count);
const boundsById = z.record(z.string().regex(/^\d+$/), z.string().regex(/^([0-9a-f]{2})*$/));
const metricsShape = z.strictObject({
  columnSizes: countsById,
  valueCounts: countsById,
  nullValueCounts: countsById,
  nanValueCounts: countsById,
  lowerBounds: boundsById,
  upperBounds: boundsById,
  splitOffsets: z.array(count),
});

const catalogRefShape = z.strictObject({
  type: z.literal('rest'),
  uri: z.string().min(1),
  warehouse: z.string().min(1).optional(),
  namespace: z.array(z.string().min(1)).min(1),
  name: z.string().min(1),
  credentialFile: z.string().min(1).optional(),
  tokenFile: z.string().min(1).optional(),
  scope: z.string().min(1).optional(),
  caFile: z.string().min(1).optional(),
});

const tableEntryShape = z.strictObject({
  dir: z.string().min(1),
  location: z.string().min(1),
  schema: z.custom<TableEntry['schema']>((value) => typeof value === 'object' && value !== null),
  catalog: catalogRefShape.optional(),
});

const manifestSchema = z.strictObject({
  format: z.literal(MANIFEST_FORMAT),
  load: z.string().min(1),
  seq: z.number().int().positive(),
  attempt: z.string().min(1),
  runNumber: z.number().int().nonnegative().nullable(),
  plannedAt: z.string(),
  output: z.strictObject({ format: z.string(), codec: z.string(), timeField: z.string().nullable(), layout: z.enum(['hourly', 'hive', 'iceberg']).optional() }),
  readerSchemas: z.record(z.string(), z.strictObject({ subject: z.string(), version: count, id: count })),
  ranges: z.array(
    z.strictObject({
      topic: z.string().min(1),
      partition: count,
      start: offset,
      end: offset,
      records: count,
      quarantined: count,
      gap: z.strictObject({ from: offset, to: offset }).optional(),
    }),
  ),
  nextOffsets: z.record(z.string(), z.record(z.string().regex(/^\d+$/), offset)),
  files: z.array(z.strictObject({ ...fileShape, hour: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}$/), metrics: metricsShape.optional() })),
  quarantine: z.strictObject({ records: count, reasons: z.record(z.string(), count), files: z.array(z.strictObject(fileShape)) }),
  hours: z.record(z.string(), z.record(z.string(), count)),
  eventTimes: z.record(z.string(), z.record(z.string().regex(/^\d+$/), offset)).optional(),
  // The schema is checked where it is used: the table's own metadata must agree with it.
  iceberg: z.record(z.string(), tableEntryShape).optional(),
  deadLetters: tableEntryShape.optional(),
});

export function serializeManifest(manifest: Manifest): Buffer {
  return Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
}

/** Parses and checks a manifest read from `where`; ETL_MANIFEST_INVALID says what is wrong. */
export function parseManifest(bytes: Buffer, where: string): Manifest {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw etlError('ETL_MANIFEST_INVALID', `manifest ${where} is not JSON (${(error as Error).message}); it was damaged after it was written. Restore it from a backup; do not delete it, later commits build on it`, {
      cause: error,
      details: { where },
    });
  }
  const result = manifestSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`);
    throw etlError('ETL_MANIFEST_INVALID', `manifest ${where} is not a ${MANIFEST_FORMAT} manifest: ${problems.slice(0, 5).join('; ')}`, {
      cause: result.error,
      details: { where, problems },
    });
  }
  return result.data as Manifest;
}

/** The next offset of a partition after `manifest`, or undefined if it was never loaded. */
export function nextOffsetOf(nextOffsets: NextOffsets | undefined, topic: string, partition: number): number | undefined {
  return nextOffsets?.[topic]?.[String(partition)];
}
