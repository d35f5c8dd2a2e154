/**
 * Replays and rollbacks swap hour folders' files (swap.ts). An Iceberg table's files are named by
 * its snapshots, with their exact sizes: swapping them would break every snapshot that names
 * them. Until replay is an overwrite snapshot and rollback a move of `main` (issue #33), such
 * loads are refused before anything is read or written.
 */
import { TributaryError } from '../../common/errors.js';
import type { LoadDefinition } from '../load-file.js';

export function refuseIcebergLoad(load: LoadDefinition, operation: 'replay' | 'rollback'): void {
  if (load.iceberg === undefined) return;
  throw new TributaryError({
    code: 'CONFIG_INVALID',
    message:
      `load ${load.name} writes Iceberg tables, and etl ${operation} does not work on them yet: it would swap files that Iceberg snapshots name. Nothing was changed. ` +
      'The tables keep every snapshot: read an earlier one by time travel (Spark: VERSION AS OF <snapshot id>; Java: useSnapshot). ' +
      'Do not roll the table back with another tool: the loader records what it committed and refuses to build on a table that lost its commits',
    details: { load: load.name, operation },
  });
}
