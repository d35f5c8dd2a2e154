/**
 * The open data files of one slice of a partition's range, filled record by record as the task
 * decodes them: one writer per event hour, each writing its Avro blocks / Parquet row groups as
 * they fill into a SpillBuffer (spill.ts), and staged into the warehouse when the slice ends or
 * the file reaches `maxFileBytes`. Memory is bounded by the open files (a block, a row group and
 * the spill's memory part each), not by the range.
 *
 * A slice is a sub-range [start, end) of the partition's planned range, of at most
 * maxRecordsPerTask offsets counted from the range's start (slices.ts). Files are named and
 * filled from the slice alone, so a slice gives the same bytes whether one task reads the whole
 * range or each slice is a task of its own on another worker:
 *
 *   <hour folder>/<topic>+<partition>+<start>+<end>.<ext>       the hour's first file of the slice
 *   <hour folder>/<topic>+<partition>+<start>+<end>.<n>.<ext>   part n ≥ 1, once part n−1 reached maxFileBytes
 *
 * Data files carry their provenance as metadata: tributary.topic, tributary.partition,
 * tributary.range (`start-end` of the slice, end exclusive), tributary.offsets (each record's
 * offset, as compact ranges `100-150,152`), tributary.reader (`subject/version/id`).
 */
import { createHash } from 'node:crypto';
import { inPool } from '../../common/in-pool.js';
import type { Type } from 'avsc';
import { DATA_FILE_EXTENSIONS, openDataFileWriter, type DataFileWriter } from '../files/data-files.js';
import { dataFilePath, hourKey, partFilePath, quarantineDir, rangeName, type HourLayout } from '../layout.js';
import type { ReaderSchema } from '../load-types.js';
import type { ManifestDataFile, ManifestFile } from './manifest.js';
import { encodeQuarantine, type QuarantinedRecord } from './quarantine.js';
import { SpillBuffer } from './spill.js';
import { effectiveRowGroupBytes, ENCODING_EXPANSION, memoryBudget, type MemoryBudget } from './memory-budget.js';
import { DEFAULT_ROW_GROUP_BYTES } from '../files/parquet-file.js';
import { workerEncoder } from '../files/parquet-encoder.js';
import { createUnderFreshName } from './fresh-name.js';
import { icebergMetrics } from '../iceberg/file-metrics.js';
import type { DataFileCodec, DataFileFormat } from '../files/data-files.js';
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
  /** A file rolls to its next part once this many bytes are written (undefined: never). */
  readonly maxFileBytes?: number | undefined;
  /** Local folder for the bytes of open files (spill.ts); default spillDirectory(). */
  readonly spillDirectory?: string | undefined;
  /** What the open files may hold in memory (memory-budget.ts); default the process's default budget. */
  readonly budget?: MemoryBudget | undefined;
  /** Parquet: a row group closes once its rows' Avro bytes reach this (default 128 MiB), at most the budget's share. */
  readonly rowGroupBytes?: number | undefined;
  /** Parquet: encode row groups on the process's encoder thread (parquet-encoder.ts); default on this thread. */
  readonly encoderThread?: boolean | undefined;
  /** Parquet: record each file's column metrics (Iceberg tables keep them in their manifests). */
  readonly tableMetrics?: boolean | undefined;
  /** Called after each staged file (failpoints). */
  readonly afterStagedFile?: () => void;
}

export interface StagedRange {
  readonly files: readonly ManifestDataFile[];
  readonly quarantine: ManifestFile | undefined;
}

/** Files of a slice uploaded at once when it ends. */
const STAGE_CONCURRENCY = 4;

export interface SliceInputs {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly reader: ReaderSchema;
  /** The Type the records are valid for: the transformation's output, else the reader's file type. */
  readonly outputType: Type;
  /** Parquet: field ids as the files' schema numbers them, mapped to the ids of the table they go to. */
  readonly fieldIds?: ReadonlyMap<number, number> | undefined;
}

/** Offsets as compact ranges, built as they come (ascending): `100-150,152,160-200`. */
export class CompactOffsets {
  private readonly parts: string[] = [];
  private first = -1;
  private last = -2;

  add(offset: number): void {
    if (offset === this.last + 1 && this.first >= 0) {
      this.last = offset;
      return;
    }
    this.close();
    this.first = offset;
    this.last = offset;
  }

  toString(): string {
    this.close();
    return this.parts.join(',');
  }

  private close(): void {
    if (this.first < 0) return;
    this.parts.push(this.first === this.last ? String(this.first) : `${this.first}-${this.last}`);
    this.first = -1;
    this.last = -2;
  }
}

/** One data file being written. */
class OpenFile {
  readonly spill: SpillBuffer;
  readonly writer: DataFileWriter;
  readonly offsets = new CompactOffsets();

  constructor(
    readonly path: string,
    context: StageContext,
    type: Type,
    fieldIds: ReadonlyMap<number, number> | undefined,
  ) {
    const budget = context.budget ?? memoryBudget();
    const rowGroupBytes = effectiveRowGroupBytes(context.rowGroupBytes ?? DEFAULT_ROW_GROUP_BYTES, budget);
    this.spill = new SpillBuffer(context.spillDirectory, budget);
    this.writer = openDataFileWriter(
      {
        format: context.format,
        codec: context.codec,
        schema: type,
        identity: path,
        rowGroupBytes,
        rowStore: () => new SpillBuffer(context.spillDirectory, budget),
        encodeRowGroup: (rowBytes, work) => budget.exclusive(ENCODING_EXPANSION * rowBytes, work),
        // Off the main thread unless files are cut by size, which needs emittedBytes to be current.
        compressOffThread: context.maxFileBytes === undefined,
        encoder: context.encoderThread === true ? workerEncoder(rowGroupBytes) : undefined,
        fieldIds,
        // An Iceberg table's times are microseconds (its spec; Iceberg 1.10's vectorized reader refuses MILLIS).
        microseconds: context.layout === 'iceberg',
      },
      (chunk) => this.spill.write(chunk),
    );
  }
}

export class SliceWriter {
  private readonly open = new Map<number, OpenFile>();
  private readonly parts = new Map<number, number>();
  private readonly files: ManifestDataFile[] = [];
  private readonly quarantined: QuarantinedRecord[] = [];
  private readonly extension: string;
  private readonly budget: MemoryBudget;

  constructor(
    private readonly context: StageContext,
    private readonly slice: SliceInputs,
  ) {
    this.extension = DATA_FILE_EXTENSIONS[context.format];
    this.budget = context.budget ?? memoryBudget();
  }

  /** Adds a record of event hour `hour` (records come in offset order). */
  append(hour: number, value: unknown, offset: number): void | Promise<void> {
    const file = this.open.get(hour) ?? this.openFile(hour);
    file.offsets.add(offset);
    const appended = file.writer.append(value);
    const roll = this.context.maxFileBytes !== undefined && file.writer.emittedBytes >= this.context.maxFileBytes;
    if (appended === undefined && !roll) return undefined;
    return (async () => {
      await appended;
      if (roll) await this.stage(hour, file);
    })();
  }

  quarantine(record: QuarantinedRecord): void {
    this.quarantined.push(record);
  }

  get quarantinedCount(): number {
    return this.quarantined.length;
  }

  /** Waits until the open files' bytes are on their way to disk (call between fetches). */
  async drain(): Promise<void> {
    for (const file of this.open.values()) await file.spill.drain();
    await this.budget.drain();
  }

  /** Stages every open file (in hour order) and the quarantine file; answers what the manifest needs. */
  async finish(): Promise<StagedRange> {
    // Staged a few at once: an HDFS CREATE often waits ~0.4 s for the NameNode to close the file.
    const staging = [...this.open.entries()].sort(([a], [b]) => a - b);
    await inPool(staging, STAGE_CONCURRENCY, ([hour, file]) => this.stage(hour, file));
    // The order of the files does not depend on which upload finished first.
    this.files.sort((a, b) => (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    let quarantine: ManifestFile | undefined;
    if (this.quarantined.length > 0) {
      const { topic, partition, start, end } = this.slice;
      const name = `${rangeName(topic, partition, start, end)}.jsonl`;
      const bytes = encodeQuarantine(this.quarantined);
      const staged = await createUnderFreshName(this.context.warehouse, `${this.context.stagingDir}/quarantine/${name}`, bytes);
      this.context.afterStagedFile?.();
      quarantine = {
        topic,
        partition,
        start,
        end,
        records: this.quarantined.length,
        bytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        staged,
        path: `${quarantineDir(this.context.root, this.context.load, this.context.seq)}/${name}`,
      };
    }
    return { files: this.files, quarantine };
  }

  /** Removes what the open files spilled (after a failure). */
  async abandon(): Promise<void> {
    for (const file of this.open.values()) {
      await file.writer.abandon();
      await file.spill.dispose();
    }
    this.open.clear();
  }

  private openFile(hour: number): OpenFile {
    const { topic, partition, start, end, outputType } = this.slice;
    const part = this.parts.get(hour) ?? 0;
    const first = dataFilePath(this.context.root, topic, hour, partition, start, end, this.extension, this.context.layout);
    const file = new OpenFile(part === 0 ? first : partFilePath(first, part), this.context, outputType, this.slice.fieldIds);
    this.open.set(hour, file);
    return file;
  }

  /** Finishes the hour's open file and stages it: header + spilled bytes, under a fresh name. */
  private async stage(hour: number, file: OpenFile): Promise<void> {
    const { topic, partition, start, end, reader } = this.slice;
    this.open.delete(hour);
    this.parts.set(hour, (this.parts.get(hour) ?? 0) + 1);
    try {
      const head = await file.writer.finish({
        'tributary.topic': topic,
        'tributary.partition': String(partition),
        'tributary.range': `${start}-${end}`,
        'tributary.offsets': file.offsets.toString(),
        'tributary.reader': `${reader.ref.subject}/${reader.ref.version}/${reader.ref.id}`,
      });
      let digest = '';
      const staged = await createUnderFreshName(this.context.warehouse, `${this.context.stagingDir}/data/${file.path}`, () => {
        const hash = createHash('sha256');
        return (async function* () {
          hash.update(head);
          yield head;
          for await (const chunk of file.spill.chunks()) {
            hash.update(chunk);
            yield chunk;
          }
          digest = hash.digest('hex');
        })();
      });
      this.context.afterStagedFile?.();
      const bytes = head.length + file.spill.length;
      const statistics = this.context.tableMetrics === true ? file.writer.statistics() : undefined;
      const metrics = statistics === undefined ? {} : { metrics: icebergMetrics(statistics) };
      this.files.push({ topic, partition, hour: hourKey(hour), start, end, records: file.writer.records, bytes, sha256: digest, staged, path: file.path, ...metrics });
    } finally {
      await file.spill.dispose();
    }
  }
}
