/**
 * The hour-folder replay and rollback swap files (swap.ts). An Iceberg table's files are named by
 * its snapshots, with their exact sizes: swapping them would break every snapshot that names
 * them, so those functions refuse Iceberg loads outright (the CLI sends them to iceberg-replay.ts).
 */
import { TributaryError } from '../../common/errors.js';
import type { LoadDefinition } from '../load-file.js';

export function refuseIcebergLoad(load: LoadDefinition, operation: 'replay' | 'rollback'): void {
  if (load.iceberg === undefined) return;
  throw new TributaryError({
    code: 'CONFIG_INVALID',
    message:
      `load ${load.name} writes Iceberg tables, whose ${operation} is a table operation (iceberg-replay.ts), not a swap of hour folders: ` +
      'swapping would break every snapshot that names the files. Nothing was changed',
    details: { load: load.name, operation },
  });
}
