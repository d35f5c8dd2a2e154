/**
 * The loader's tier of the audit (issue #9: "the loader publishes its own AuditCount tier"):
 * once a commit is published, count what it put into the warehouse per window of creation time
 * and origin server as tier LOADER, and publish the counts. Pass `loaderAuditHook(…)` as
 * `RunOptions.onCommitted`.
 *
 * The committed data files are read back rather than summing `manifest.hours`, because the audit
 * compares every tier per 10-minute window (all tiers must use the same windows) and per origin
 * server (reconcile.ts leaves unknown origins out), and the manifest counts per hour with no
 * origin. The files hold both: the creation time in the load's timeField and the origin in the
 * event's header (EventHeader.server). Reading them back also makes the tier count what is in the
 * warehouse, not what the loader meant to write.
 *
 * Limits: a load without timeField is refused (the Kafka record timestamp is not kept in the
 * files); both fields are read from the records as written, so a load whose transform drops or
 * renames them cannot be counted this way. Counts are published after the commit, so a crash between the two loses that commit's
 * LOADER counts (its windows then show LOSS though the data is there); no later run recounts it.
 */
import { TributaryError } from '../common/errors.js';
import type { AuditCounter } from '../audit/counter.js';
import { UNKNOWN_ORIGIN } from '../audit/origin.js';
import { etlError } from './errors.js';
import { decodeDataFile, type DataFileFormat } from './files/data-files.js';
import type { LoadDefinition } from './load-file.js';
import type { Manifest } from './manifest.js';
import type { WarehouseFileSystem } from './warehouse/warehouse.js';

/** EventHeader.server: where Tributary's events carry the server that created them. */
export const DEFAULT_ORIGIN_FIELD = 'header.server';

export interface LoaderAuditOptions {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  /** A counter of tier LOADER, publishing to the audit topic of the cluster the load reads. */
  readonly counter: AuditCounter;
  /** Dotted path of the string field naming the origin server; default DEFAULT_ORIGIN_FIELD. */
  readonly originField?: string;
}

export interface LoaderCount {
  readonly files: number;
  readonly records: number;
}

/** The `onCommitted` hook of runLoad that counts each published commit at the LOADER tier. */
export function loaderAuditHook(options: LoaderAuditOptions): (manifest: Manifest) => Promise<void> {
  checkOptions(options);
  return async (manifest) => {
    await countCommit(manifest, options);
    await options.counter.flush();
  };
}

/** Counts the records of a commit's data files into the counter (without publishing). */
export async function countCommit(manifest: Manifest, options: LoaderAuditOptions): Promise<LoaderCount> {
  const timeField = checkOptions(options);
  const originPath = (options.originField ?? DEFAULT_ORIGIN_FIELD).split('.');
  const timePath = timeField.split('.');
  const format = manifest.output.format as DataFileFormat;
  let records = 0;
  for (const file of manifest.files) {
    const decoded = await decodeDataFile(await options.warehouse.open(file.path), format);
    if (decoded.records.length !== file.records) {
      throw etlError(
        'ETL_WAREHOUSE_DAMAGED',
        `${options.warehouse.describe(file.path)} holds ${decoded.records.length} records, but commit ${manifest.seq} of load ${manifest.load} says ${file.records}; the LOADER tier was not counted. Compare the file with the manifest before trusting this hour`,
        { details: { path: file.path, seq: manifest.seq, expected: file.records, found: decoded.records.length } },
      );
    }
    for (const value of decoded.records) {
      const time = millisAt(fieldAt(value, timePath));
      if (time === undefined) {
        throw etlError('ETL_SCHEMA_PROBLEM', `a record in ${options.warehouse.describe(file.path)} has no time in ms at ${timeField}; the loader should not have committed it`, {
          details: { path: file.path, timeField },
        });
      }
      const origin = fieldAt(value, originPath);
      options.counter.count(file.topic, time, typeof origin === 'string' && origin !== '' ? origin : UNKNOWN_ORIGIN);
    }
    records += decoded.records.length;
  }
  return { files: manifest.files.length, records };
}

function checkOptions(options: LoaderAuditOptions): string {
  if (options.counter.tier !== 'LOADER') {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `the loader's audit counter must be of tier LOADER, not ${options.counter.tier}` });
  }
  const timeField = options.load.timeField;
  if (timeField === undefined) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `load ${options.load.name} (${options.load.file}) has no timeField: the LOADER audit tier counts by creation time, which the data files hold only in a record field. Set timeField (e.g. header.time)`,
    });
  }
  return timeField;
}

function fieldAt(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const name of path) current = typeof current === 'object' && current !== null ? (current as Record<string, unknown>)[name] : undefined;
  return current;
}

/** Parquet files may give longs back as bigint. */
function millisAt(value: unknown): number | undefined {
  const number = typeof value === 'bigint' ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) && number >= 0 ? number : undefined;
}
