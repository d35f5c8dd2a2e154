/**
 * Rolling back a replay of an Iceberg table that has snapshots on top of it (loads appended since,
 * say). Moving `main` back would drop those snapshots' records while the load counts them as
 * loaded, so instead a new `overwrite` snapshot undoes the replay alone: the files it added are
 * removed and the files it removed are added back as they were (their data sequence numbers
 * kept). The replay stays in the history, and the new snapshot names it in
 * `tributary.rolled-back`, so it is not rolled back twice.
 *
 * Refused (ETL_ROLLBACK_NOT_LIVE, nothing changed) when that cannot be exact: a file the replay
 * added is no longer live (compacted, or replaced by a later replay of the hour), or a file it
 * removed is gone (its snapshots were expired).
 */
import { decodeManifest, decodeManifestList, ENTRY_ADDED, ENTRY_DELETED } from '../iceberg/manifest-avro.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf } from '../iceberg/load-tables.js';
import { liveDataFiles } from '../iceberg/live-files.js';
import { appendSnapshot, type RestoredFile } from '../iceberg/table-commit.js';
import { currentSchema, currentSnapshot, type Snapshot } from '../iceberg/table-metadata.js';
import { pathUnderLocation, type IcebergTable, type LoadedTable } from '../iceberg/table-versions.js';
import { replayError } from './errors.js';

/** Summary key of a snapshot that undid a replay: the replay's snapshot id. */
export const ROLLED_BACK_KEY = 'tributary.rolled-back';

/** What the replay snapshot changed: the files it added (URIs) and the entries it removed. */
async function replayChanges(table: IcebergTable, loaded: LoadedTable, replay: Snapshot): Promise<{ added: Set<string>; removed: RestoredFile[] }> {
  const pathOf = (uri: string): string => `${table.dir}/${pathUnderLocation(loaded.metadata.location, uri) ?? uri}`;
  const added = new Set<string>();
  const removed: RestoredFile[] = [];
  for (const row of decodeManifestList(await table.warehouse.open(pathOf(replay['manifest-list'])))) {
    if (row.added_snapshot_id !== replay['snapshot-id']) continue;
    for (const entry of decodeManifest(await table.warehouse.open(pathOf(row.manifest_path)))) {
      if (entry.snapshot_id !== replay['snapshot-id']) continue;
      if (entry.status === ENTRY_ADDED) added.add(entry.data_file.file_path);
      if (entry.status === ENTRY_DELETED) removed.push({ dataFile: entry.data_file, dataSequenceNumber: entry.sequence_number ?? row.sequence_number });
    }
  }
  return { added, removed };
}

/** Undoes `replay` in a new overwrite snapshot on top of the table's current one. */
export async function restoreBeforeReplay(
  table: IcebergTable,
  loaded: LoadedTable,
  replay: Snapshot,
  summary: Readonly<Record<string, string>>,
): Promise<{ snapshotId: bigint; version: number; records: number }> {
  const current = currentSnapshot(loaded.metadata);
  const schema = currentSchema(loaded.metadata);
  if (current === undefined || schema === undefined) throw new Error('a table with a replay has a current snapshot and schema');
  const { added, removed } = await replayChanges(table, loaded, replay);
  const live = new Set((await liveDataFiles(table, loaded.metadata, current)).map((file) => file.uri));
  const window = replay.summary['tributary.replay'] ?? '?';
  const rewritten = [...added].filter((uri) => !live.has(uri));
  if (rewritten.length > 0) {
    throw replayError(
      'ETL_ROLLBACK_NOT_LIVE',
      `Iceberg table ${table.warehouse.describe(table.dir)}: ${rewritten.length} of the ${added.size} files the replay of ${window} (snapshot ${replay['snapshot-id']}) wrote are no longer live ` +
        '(a compaction rewrote them, or a later replay replaced them), so it cannot be undone exactly. Nothing was changed. Replay the window again (with the code you want) instead',
      { table: table.dir, snapshot: String(replay['snapshot-id']), files: rewritten },
    );
  }
  const gone: string[] = [];
  for (const file of removed) if ((await table.warehouse.stat(`${table.dir}/${pathUnderLocation(loaded.metadata.location, file.dataFile.file_path) ?? file.dataFile.file_path}`)) === undefined) gone.push(file.dataFile.file_path);
  if (gone.length > 0) {
    throw replayError(
      'ETL_ROLLBACK_NOT_LIVE',
      `Iceberg table ${table.warehouse.describe(table.dir)}: ${gone.length} of the files the replay of ${window} replaced were deleted when old snapshots expired, so the version before it is gone. ` +
        'Nothing was changed. Replay the window again (with the code you want) instead',
      { table: table.dir, snapshot: String(replay['snapshot-id']), files: gone },
    );
  }
  const outcome = await appendSnapshot(table, {
    commitId: `${summary['tributary.load'] ?? 'load'}/rollback/${replay['snapshot-id']}`,
    schema,
    spec: hourSpecOf(schema),
    partitionFields: HOUR_PARTITION_FIELDS,
    properties: {},
    files: [],
    restore: removed,
    summary: { ...summary, [ROLLED_BACK_KEY]: String(replay['snapshot-id']) },
    removesExactly: added,
    nowMs: Date.now,
  });
  return { snapshotId: outcome.snapshotId, version: outcome.version, records: removed.reduce((sum, file) => sum + Number(file.dataFile.record_count), 0) };
}
