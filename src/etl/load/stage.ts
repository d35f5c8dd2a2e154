/**
 * Writes one task's output into the attempt's staging folder: a data file per event hour (named
 * and filled from the range alone) and a quarantine file when records were set aside. Returns the
 * manifest entries that say where each staged file goes on commit.
 *
 * Data files carry their provenance as metadata: tributary.topic, tributary.partition,
 * tributary.range (`start-end`, end exclusive), tributary.offsets (each record's offset, as
 * compact ranges `100-150,152`), tributary.reader (`subject/version/id`).
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../common/errors.js';
import { DATA_FILE_EXTENSIONS, encodeDataFile, type DataFileCodec, type DataFileFormat } from '../files/data-files.js';
import { compactOffsets, type ExtractedRange } from './extract.js';
import { dataFilePath, hourKey, quarantineDir, rangeName, type HourLayout } from '../layout.js';
import type { ManifestDataFile, ManifestFile } from './manifest.js';
import type { ReaderSchema } from './plan.js';
import { encodeQuarantine } from './quarantine.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface StageContext {
  readonly warehouse: WarehouseFileSystem;
  readonly root: string;
  readonly layout: HourLayout;
  readonly load: string;
  readonly seq: number;
  /** `<root>/_etl/<load>/staging/<seq>-<attempt>` */
  readonly stagingDir: string;
  readonly format: DataFileFormat;
  readonly codec: DataFileCodec;
  /** Called after each staged file (failpoints). */
  readonly afterStagedFile?: () => void;
}

export interface StagedRange {
  readonly files: readonly ManifestDataFile[];
  readonly quarantine: ManifestFile | undefined;
}

/** Failures after which the name may hold a partial, leased file: write again under a new name. */
const FRESH_NAME_AND_RETRY = new Set(['WAREHOUSE_CREATE_INCOMPLETE', 'WAREHOUSE_OUTCOME_UNKNOWN', 'WAREHOUSE_FILE_BUSY', 'WAREHOUSE_UNAVAILABLE', 'WAREHOUSE_DATA_FAILED']);
const CREATE_TRIES = 4;

/**
 * Creates `bytes` at `path`, or, when a try may have left something there, at `path.retry<n>`:
 * a name is never written twice (a crashed HDFS CREATE leaves a lease on it). Returns the name used.
 */
export async function createUnderFreshName(warehouse: WarehouseFileSystem, path: string, bytes: Buffer): Promise<string> {
  for (let tryNumber = 1; ; tryNumber += 1) {
    const name = tryNumber === 1 ? path : `${path}.retry${tryNumber}`;
    try {
      await warehouse.create(name, bytes);
      return name;
    } catch (error) {
      if (!(error instanceof TributaryError) || !FRESH_NAME_AND_RETRY.has(error.code) || tryNumber >= CREATE_TRIES) throw error;
      await sleep(200 * 2 ** tryNumber);
    }
  }
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export async function stageRange(context: StageContext, range: ExtractedRange, reader: ReaderSchema): Promise<StagedRange> {
  const { topic, partition, start, end } = range;
  const extension = DATA_FILE_EXTENSIONS[context.format];
  const files: ManifestDataFile[] = [];
  for (const bucket of range.hours) {
    const path = dataFilePath(context.root, topic, bucket.hour, partition, start, end, extension, context.layout);
    const bytes = await encodeDataFile(bucket.values, {
      format: context.format,
      codec: context.codec,
      schema: range.outputType ?? reader.fileType,
      identity: path,
      metadata: {
        'tributary.topic': topic,
        'tributary.partition': String(partition),
        'tributary.range': `${start}-${end}`,
        'tributary.offsets': compactOffsets(bucket.offsets),
        'tributary.reader': `${reader.ref.subject}/${reader.ref.version}/${reader.ref.id}`,
      },
    });
    const staged = await createUnderFreshName(context.warehouse, `${context.stagingDir}/data/${path}`, bytes);
    context.afterStagedFile?.();
    files.push({ topic, partition, hour: hourKey(bucket.hour), start, end, records: bucket.values.length, bytes: bytes.length, sha256: sha256(bytes), staged, path });
  }
  let quarantine: ManifestFile | undefined;
  if (range.quarantined.length > 0) {
    const name = `${rangeName(topic, partition, start, end)}.jsonl`;
    const bytes = encodeQuarantine(range.quarantined);
    const staged = await createUnderFreshName(context.warehouse, `${context.stagingDir}/quarantine/${name}`, bytes);
    context.afterStagedFile?.();
    quarantine = {
      topic,
      partition,
      start,
      end,
      records: range.quarantined.length,
      bytes: bytes.length,
      sha256: sha256(bytes),
      staged,
      path: `${quarantineDir(context.root, context.load, context.seq)}/${name}`,
    };
  }
  return { files, quarantine };
}
