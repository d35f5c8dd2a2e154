/**
 * Removing data files from a table in a new snapshot (an `overwrite`: a replay replacing an
 * hour's files, a rollback restoring them): the parent's manifests that hold a file to remove are
 * rewritten, the others kept as they are (the format's "Manifests" and "Sequence Number
 * Inheritance").
 *
 * A rewritten manifest keeps every live entry of the old one: the removed files as DELETED
 * (snapshot id: the new snapshot), the rest as EXISTING (their own snapshot id), both with their
 * data and file sequence numbers written out, as Java requires of non-ADDED entries (an ADDED
 * entry's null numbers are the old manifest's, from its manifest-list row). Entries already
 * DELETED in the old manifest are dropped: they were removed by an earlier snapshot. The new
 * manifest-list row counts them: existing and deleted files and rows, its sequence number the new
 * snapshot's, its minimum the smallest data sequence number still live in it.
 */
import { randomUUID } from 'node:crypto';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { decodeManifest, encodeManifest, ENTRY_DELETED, ENTRY_EXISTING, type ManifestEntryRecord, type ManifestFileRecord, type ManifestMetadata, type PartitionFieldSchema } from './manifest-avro.js';

/** A live data file of the parent snapshot, as the remove predicate sees it. */
export interface LiveFile {
  /** As the manifest names it (a full URI). */
  readonly path: string;
  readonly partition: Readonly<Record<string, number | null>>;
  readonly records: bigint;
  readonly bytes: bigint;
}

export interface RewrittenManifests {
  /** The manifest-list rows of the new snapshot for the parent's manifests (kept or rewritten). */
  readonly rows: ManifestFileRecord[];
  /** Files the snapshot removes. */
  readonly removed: readonly LiveFile[];
  /** Manifests written (to delete if the attempt loses its commit). */
  readonly written: readonly string[];
}

export interface RewriteContext {
  readonly warehouse: WarehouseFileSystem;
  /** Warehouse path of the table's metadata folder. */
  readonly metadataDir: string;
  /** URI of a warehouse path; and the warehouse path of a URI the table names. */
  readonly uri: (path: string) => string;
  readonly pathOf: (uri: string) => string;
  readonly snapshotId: bigint;
  readonly sequenceNumber: number;
  readonly partitionFields: readonly PartitionFieldSchema[];
  readonly manifestMetadata: ManifestMetadata;
}

/** The parent's manifest-list rows with every live file `remove` picks marked DELETED. */
export async function removeFiles(context: RewriteContext, parentRows: readonly ManifestFileRecord[], remove: (file: LiveFile) => boolean): Promise<RewrittenManifests> {
  const rows: ManifestFileRecord[] = [];
  const removed: LiveFile[] = [];
  const written: string[] = [];
  for (const row of parentRows) {
    const entries = decodeManifest(await context.warehouse.open(context.pathOf(row.manifest_path)));
    const live = entries.filter((entry) => entry.status !== ENTRY_DELETED);
    const picked = live.filter((entry) => remove(liveFileOf(entry)));
    if (picked.length === 0) {
      rows.push(row);
      continue;
    }
    const rewritten: ManifestEntryRecord[] = live.map((entry) => {
      const dataSequence = entry.sequence_number ?? row.sequence_number;
      const fileSequence = entry.file_sequence_number ?? row.sequence_number;
      const gone = picked.includes(entry);
      return {
        status: gone ? ENTRY_DELETED : ENTRY_EXISTING,
        snapshot_id: gone ? context.snapshotId : (entry.snapshot_id ?? row.added_snapshot_id),
        sequence_number: dataSequence,
        file_sequence_number: fileSequence,
        data_file: entry.data_file,
      };
    });
    removed.push(...picked.map(liveFileOf));
    const path = `${context.metadataDir}/${randomUUID()}-m0.avro`;
    const bytes = encodeManifest(rewritten, context.partitionFields, context.manifestMetadata);
    await context.warehouse.create(path, bytes);
    written.push(path);
    const kept = rewritten.filter((entry) => entry.status === ENTRY_EXISTING);
    const rowsOf = (list: readonly ManifestEntryRecord[]): bigint => list.reduce((sum, entry) => sum + entry.data_file.record_count, 0n);
    rows.push({
      ...row,
      manifest_path: context.uri(path),
      manifest_length: BigInt(bytes.length),
      sequence_number: BigInt(context.sequenceNumber),
      min_sequence_number: kept.reduce((least, entry) => (entry.sequence_number! < least ? entry.sequence_number! : least), BigInt(context.sequenceNumber)),
      added_snapshot_id: context.snapshotId,
      added_files_count: 0,
      existing_files_count: kept.length,
      deleted_files_count: picked.length,
      added_rows_count: 0n,
      existing_rows_count: rowsOf(kept),
      deleted_rows_count: rowsOf(picked),
    });
  }
  return { rows, removed, written };
}

function liveFileOf(entry: ManifestEntryRecord): LiveFile {
  return { path: entry.data_file.file_path, partition: entry.data_file.partition, records: entry.data_file.record_count, bytes: entry.data_file.file_size_in_bytes };
}
