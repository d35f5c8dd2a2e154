/**
 * A load's hour-folder layout (layout.ts) cannot change once it has committed: the hours already
 * loaded stay where they are, and runs, replays, markers and `etl ddl` look for hours only where
 * the load file's layout puts them, so a changed layout would hide them and split the table. The
 * first commit's manifest records the layout (output.layout; absent in manifests written before
 * it, which is hourly: the only layout there was).
 */
import { TributaryError } from '../../common/errors.js';
import type { HourLayout } from '../layout.js';
import type { LoadDefinition } from '../load-file.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { readClaim, readCommitLog } from './commit-log.js';

/** The layout the load's first commit was written in, or undefined when it has no commit yet. */
export async function committedLayout(warehouse: WarehouseFileSystem, load: Pick<LoadDefinition, 'name' | 'warehouse'>): Promise<HourLayout | undefined> {
  const log = await readCommitLog(warehouse, load.warehouse.root, load.name);
  const first = log.claimed[0];
  if (first === undefined) return undefined;
  return (await readClaim(warehouse, load.warehouse.root, load.name, first)).manifest.output.layout ?? 'hourly';
}

/** Throws CONFIG_INVALID when the load file's layout is not the one the load committed in. */
export async function checkLayoutUnchanged(warehouse: WarehouseFileSystem, load: Pick<LoadDefinition, 'name' | 'warehouse' | 'layout' | 'file'>): Promise<void> {
  const committed = await committedLayout(warehouse, load);
  if (committed === undefined || committed === load.layout) return;
  throw new TributaryError({
    code: 'CONFIG_INVALID',
    message:
      `load file ${load.file} says layout: ${load.layout}, but load ${load.name} has committed its hours in the ${committed} layout (its first commit records it); ` +
      `a load's layout cannot change once it has commits, as the hours already loaded would no longer be found. Set layout: ${committed} again, ` +
      `or start a new load (another name or warehouse root) for the ${load.layout} layout`,
    details: { load: load.name, layout: load.layout, committed },
  });
}
