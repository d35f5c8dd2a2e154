/**
 * The live data files of a snapshot, read from its manifest list and manifests: every entry not
 * DELETED, with its hour partition and its data sequence number (an ADDED entry's null number is
 * its manifest's, from the manifest-list row: the format's "Sequence Number Inheritance").
 */
import { etlError } from '../errors.js';
import { decodeManifest, decodeManifestList, ENTRY_DELETED } from './manifest-avro.js';
import type { Snapshot, TableMetadata } from './table-metadata.js';
import { pathUnderLocation, type IcebergTable } from './table-versions.js';
import { ICEBERG_HOUR_PARTITION } from '../layout.js';

export interface LiveDataFile {
  /** As the manifest names it (a URI under the table's location). */
  readonly uri: string;
  /** Its warehouse path. */
  readonly path: string;
  /** Hours since the epoch (`hour(_event_time)`); undefined for a file of another spec. */
  readonly hour: number | undefined;
  readonly records: number;
  readonly bytes: number;
  readonly dataSequenceNumber: bigint;
}

export async function liveDataFiles(table: IcebergTable, metadata: TableMetadata, snapshot: Snapshot): Promise<LiveDataFile[]> {
  const location = metadata.location.replace(/\/+$/, '');
  const pathOf = (uri: string): string => {
    const relative = pathUnderLocation(location, uri);
    if (relative === undefined) {
      throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${table.warehouse.describe(table.dir)} names ${uri}, outside its location ${location}; this loader only maintains tables whose files are under their location`, {
        details: { table: table.dir, uri, location },
      });
    }
    return `${table.dir}/${relative}`;
  };
  const files: LiveDataFile[] = [];
  for (const row of decodeManifestList(await table.warehouse.open(pathOf(snapshot['manifest-list'])))) {
    if (row.content !== 0) continue;
    for (const entry of decodeManifest(await table.warehouse.open(pathOf(row.manifest_path)))) {
      if (entry.status === ENTRY_DELETED) continue;
      const hour = entry.data_file.partition[ICEBERG_HOUR_PARTITION];
      files.push({
        uri: entry.data_file.file_path,
        path: pathOf(entry.data_file.file_path),
        hour: typeof hour === 'number' ? hour : undefined,
        records: Number(entry.data_file.record_count),
        bytes: Number(entry.data_file.file_size_in_bytes),
        dataSequenceNumber: entry.sequence_number ?? row.sequence_number,
      });
    }
  }
  return files;
}
