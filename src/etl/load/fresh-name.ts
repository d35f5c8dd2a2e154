/**
 * Creating a warehouse file so that no name is ever written twice: a crashed or failed HDFS
 * CREATE may leave a partial file under its name, still leased to the dead writer (warehouse.ts),
 * so a try that may have left something behind is followed by one under `<path>.retry<n>`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../common/errors.js';
import type { WarehouseData, WarehouseFileSystem } from '../warehouse/warehouse.js';

/** Failures after which the name may hold a partial, leased file: write again under a new name. */
const FRESH_NAME_AND_RETRY = new Set(['WAREHOUSE_CREATE_INCOMPLETE', 'WAREHOUSE_OUTCOME_UNKNOWN', 'WAREHOUSE_FILE_BUSY', 'WAREHOUSE_UNAVAILABLE', 'WAREHOUSE_DATA_FAILED']);
const CREATE_TRIES = 4;

/**
 * Creates the file at `path`, or, when a try may have left something there, at `path.retry<n>`.
 * `data` is the bytes, or a function giving them afresh for each try (a stream is read once).
 * Returns the name used.
 */
export async function createUnderFreshName(warehouse: WarehouseFileSystem, path: string, data: Buffer | (() => WarehouseData)): Promise<string> {
  for (let tryNumber = 1; ; tryNumber += 1) {
    const name = tryNumber === 1 ? path : `${path}.retry${tryNumber}`;
    try {
      await warehouse.create(name, Buffer.isBuffer(data) ? data : data());
      return name;
    } catch (error) {
      if (!(error instanceof TributaryError) || !FRESH_NAME_AND_RETRY.has(error.code) || tryNumber >= CREATE_TRIES) throw error;
      await sleep(200 * 2 ** tryNumber);
    }
  }
}
