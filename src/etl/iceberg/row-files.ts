/**
 * One Parquet data file of table rows, for the table writers outside the load's slice writer
 * (replays, dead letters, compaction), with the column metrics the table's manifest keeps. Rows
 * may come from an async iterable (compaction reads them file by file); the file's bytes are held
 * until written.
 */
import type { Type } from 'avsc';
import { openDataFileWriter, type DataFileCodec } from '../files/data-files.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { icebergMetrics } from './file-metrics.js';
import type { AppendedFile } from './table-commit.js';

export interface RowFile {
  readonly warehouse: WarehouseFileSystem;
  readonly path: string;
  readonly rowType: Type;
  readonly codec: DataFileCodec;
  /** The table's ids for the row type's own numbering (schema-evolution.ts idMapping). */
  readonly fieldIds?: ReadonlyMap<number, number> | undefined;
  /** The file's `hour(_event_time)` partition. */
  readonly hour: number;
  readonly metadata?: Readonly<Record<string, string>>;
}

/**
 * Writes `rows` as the file at `path`. The bytes depend only on the rows and the options, so a
 * file already there with the same length is taken as this one written before (a roll-forward).
 */
export async function writeRowFile(file: RowFile, rows: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>): Promise<AppendedFile> {
  const chunks: Buffer[] = [];
  const writer = openDataFileWriter({ format: 'parquet', codec: file.codec, schema: file.rowType, identity: file.path, fieldIds: file.fieldIds, microseconds: true }, (chunk) => chunks.push(chunk));
  let records = 0;
  try {
    for await (const row of rows) {
      await writer.append(row);
      records += 1;
    }
    await writer.finish(file.metadata ?? {});
  } catch (error) {
    await writer.abandon().catch(() => undefined);
    throw error;
  }
  const statistics = writer.statistics();
  const bytes = Buffer.concat(chunks);
  try {
    await file.warehouse.create(file.path, bytes);
  } catch (error) {
    const existing = hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS') ? await file.warehouse.stat(file.path) : undefined;
    if (existing?.length !== bytes.length) throw error;
  }
  return { path: file.path, hour: file.hour, records, bytes: bytes.length, ...(statistics === undefined ? {} : { metrics: icebergMetrics(statistics) }) };
}
