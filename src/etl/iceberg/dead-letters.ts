/**
 * The dead-letter table of a `format: iceberg` load: the records its runs set aside (quarantine.ts:
 * undecodable, no event time, …) as an Iceberg table of their own at `<root>/_etl/<load>/dead-letters/`,
 * beside the JSON-lines quarantine files, so the same engines that read the data can see what did
 * not load and why. A row:
 *
 *   code, reason         the failure's code and message
 *   key, value           the record's bytes exactly as Kafka holds them (null when absent)
 *   _event_time          the Kafka timestamp (a set-aside record may have no event time of its own);
 *                        the table is partitioned by its hour, like the data tables
 *   _kafka               topic, partition, offset, timestamp
 *
 * One snapshot per commit that set records aside, made from the claim's quarantine files after
 * they are in place and before the claim is published, with the commit's id: like the data
 * tables, a roll-forward finds it made. Its files are named after the quarantine files and hours,
 * and their bytes depend only on the records, so a roll-forward rewrites nothing.
 */
import type { Logger } from '../../common/logger.js';
import { parseDataFileSchema, type DataFileCodec } from '../files/data-files.js';
import { HOUR_MS, loadDir, topicHourFolder } from '../layout.js';
import { decodeQuarantine } from '../load/quarantine.js';
import type { Manifest } from '../load/manifest.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf, rowSchemaOf, type TableEntry } from './load-tables.js';
import { icebergTableOf, type CatalogEnvironment, type CatalogRef } from './load-catalog.js';
import { writeRowFile } from './row-files.js';
import { appendSnapshot, NAME_MAPPING_KEY, type AppendOutcome, type AppendedFile } from './table-commit.js';
import { tableRow, tableRowType } from './table-row.js';
import { nameMappingOf } from './table-schema.js';

export const DEAD_LETTER_TYPE = parseDataFileSchema({
  type: 'record',
  name: 'DeadLetter',
  namespace: 'io.tributary.iceberg',
  fields: [
    { name: 'code', type: 'string' },
    { name: 'reason', type: 'string' },
    { name: 'key', type: ['null', 'bytes'], default: null },
    { name: 'value', type: ['null', 'bytes'], default: null },
  ],
});

export function deadLetterDir(root: string, load: string): string {
  return `${loadDir(root, load)}/dead-letters`;
}

/** The dead-letter table's entry of a commit's claim (when it set records aside); `catalog` for a load with a REST catalog. */
export function deadLetterEntry(root: string, load: string, locate: (dir: string) => string, catalog?: CatalogRef): TableEntry {
  const dir = deadLetterDir(root, load);
  return { dir, location: locate(dir), schema: rowSchemaOf(DEAD_LETTER_TYPE), ...(catalog === undefined ? {} : { catalog }) };
}

/** Makes the dead-letter snapshot of a claimed commit (or finds it made), in the table the claim names; undefined when it set nothing aside. */
export async function publishDeadLetters(warehouse: WarehouseFileSystem, manifest: Manifest, logger: Logger, env: CatalogEnvironment = {}): Promise<AppendOutcome | undefined> {
  const entry = manifest.deadLetters;
  if (entry === undefined || manifest.quarantine.files.length === 0) return undefined;
  const rowType = tableRowType(DEAD_LETTER_TYPE);
  const files: AppendedFile[] = [];
  for (const quarantine of manifest.quarantine.files) {
    const byHour = new Map<number, Record<string, unknown>[]>();
    for (const record of decodeQuarantine(await warehouse.open(quarantine.path))) {
      const hour = Math.floor(record.timestamp / HOUR_MS);
      let rows = byHour.get(hour);
      if (rows === undefined) byHour.set(hour, (rows = []));
      const letter = { code: record.code, reason: record.reason, key: record.key, value: record.payload };
      rows.push(tableRow(letter, { topic: record.topic, partition: record.partition, offset: record.offset, timestamp: record.timestamp, eventTimeMs: record.timestamp }));
    }
    const name = quarantine.path.slice(quarantine.path.lastIndexOf('/') + 1).replace(/\.jsonl$/, '');
    for (const [hour, rows] of [...byHour].sort(([a], [b]) => a - b)) {
      const path = `${entry.dir}/${topicHourFolder(hour, 'iceberg')}/${String(manifest.seq).padStart(10, '0')}-${name}.parquet`;
      files.push(await writeRowFile({ warehouse, path, rowType, codec: manifest.output.codec as DataFileCodec, hour }, rows));
    }
  }
  const outcome = await appendSnapshot(
    await icebergTableOf(warehouse, entry, env),
    {
      commitId: `${manifest.load}/${manifest.seq}`,
      schema: entry.schema,
      spec: hourSpecOf(entry.schema),
      partitionFields: HOUR_PARTITION_FIELDS,
      properties: {
        'write.format.default': 'parquet',
        [NAME_MAPPING_KEY]: JSON.stringify(nameMappingOf(entry.schema)),
        'tributary.load': manifest.load,
        'tributary.table': 'dead-letters',
      },
      files,
      summary: { 'tributary.load': manifest.load, 'tributary.seq': String(manifest.seq), 'tributary.reasons': JSON.stringify(manifest.quarantine.reasons) },
      nowMs: Date.now,
    },
  );
  logger.info({ seq: manifest.seq, records: manifest.quarantine.records, snapshot: String(outcome.snapshotId), outcome: outcome.outcome, event: 'dead-letters-committed' }, 'dead-letter snapshot made');
  return outcome;
}
