/**
 * Publishing a claimed manifest, shared by commits (`commits/<seq>.json`) and replay swaps
 * (`replays/<seq>.json`): a fresh copy of the claim's exact bytes is renamed to the published
 * name. Rename refuses an existing target, so a publication found in place (another process rolled
 * the same claim forward first) is accepted only if it holds the same bytes.
 */
import { etlError } from '../errors.js';
import { createUnderFreshName } from './stage.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

const PUBLISH_TRIES = 3;

export interface ClaimPublication {
  readonly warehouse: WarehouseFileSystem;
  readonly load: string;
  readonly seq: number;
  readonly claimBytes: Buffer;
  /** The claim the bytes come from, named in errors. */
  readonly claimPath: string;
  /** The published name, e.g. `commits/<seq>.json`. */
  readonly target: string;
  /** This attempt's staging folder; copies are written there under fresh names. */
  readonly stagingFolder: string;
  /** What a mismatch means was edited by hand, e.g. "commit log". */
  readonly logName: string;
  /** A copy of `claimBytes` already staged under a fresh name in `stagingFolder`: the first try renames it. */
  readonly staged?: string;
}

export async function publishClaim(publication: ClaimPublication): Promise<void> {
  const { warehouse, target, stagingFolder, claimBytes } = publication;
  for (let tryNumber = 1; ; tryNumber += 1) {
    let staged: string;
    try {
      staged =
        tryNumber === 1 && publication.staged !== undefined
          ? publication.staged
          : await createUnderFreshName(warehouse, `${stagingFolder}/manifest.json${tryNumber === 1 ? '' : `.${tryNumber}`}`, claimBytes);
    } catch (error) {
      // Rolling a claim forward beside the process that published it: that process removes the
      // seq's staging, this one's copy included, perhaps while it is being written.
      if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND') && (await warehouse.stat(target)) !== undefined) return checkPublished(publication);
      throw error;
    }
    try {
      await warehouse.rename(staged, target);
      return;
    } catch (error) {
      if (hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) {
        await warehouse.delete(staged).catch(() => false);
        return checkPublished(publication);
      }
      // Another process that published first may have removed our staged copy with its staging.
      if (!hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND') || tryNumber >= PUBLISH_TRIES) throw error;
      if ((await warehouse.stat(target)) !== undefined) return checkPublished(publication);
    }
  }
}

async function checkPublished({ warehouse, target, claimBytes, claimPath, logName, load, seq }: ClaimPublication): Promise<void> {
  if ((await warehouse.open(target)).equals(claimBytes)) return;
  throw etlError('ETL_WAREHOUSE_DAMAGED', `${warehouse.describe(target)} does not hold the bytes of its claim ${claimPath}; the ${logName} was changed by hand`, {
    details: { load, seq },
  });
}
