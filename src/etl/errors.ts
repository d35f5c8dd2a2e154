/**
 * The loader's own failures. Each code names something an operator or a scheduler acts on;
 * warehouse, registry and Kafka failures keep their own codes and pass through unchanged.
 */
import { TributaryError } from '../common/errors.js';

export const ETL_ERROR_CODES = [
  /** A partition's next offset was deleted by retention; the message names the missing range. */
  'ETL_OFFSETS_LOST',
  /** A partition's next offset is past its end: the topic was recreated or its log truncated. */
  'ETL_OFFSETS_AHEAD',
  /** More undecodable records than the load's quarantine threshold allows. */
  'ETL_QUARANTINE_THRESHOLD',
  /** Another run claimed this run's commit sequence number first: this run's plan is stale. */
  'ETL_COMMIT_FENCED',
  /** The commit log or a committed file is not what the manifests say; a person must look. */
  'ETL_WAREHOUSE_DAMAGED',
  /** Another run of the load holds the lease. */
  'ETL_LOAD_BUSY',
  /** This run's lease ended (session expired) before it could commit. */
  'ETL_LEASE_LOST',
  /** A reader schema, a topic or the time field does not fit the load. */
  'ETL_SCHEMA_PROBLEM',
  /** The registry cannot be reached and no committed data file carries the schema either (etl ddl). */
  'ETL_SCHEMA_UNAVAILABLE',
  /** A partition could not be read in full up to the planned end. */
  'ETL_FETCH_INCOMPLETE',
  /** A manifest in the warehouse cannot be read. */
  'ETL_MANIFEST_INVALID',
  /** The audit topic could not be read or written; the data commit stands and the next run tries again. */
  'ETL_AUDIT_UNAVAILABLE',
  /** The local spill file of an open data file could not be written (disk full?); nothing was committed. */
  'ETL_SPILL_FAILED',
  /** An Iceberg REST catalog could not be reached, refused the credentials, or refused or garbled a request; nothing was committed. */
  'ETL_ICEBERG_CATALOG_FAILED',
  /** An Iceberg REST catalog's commit failed in a way that leaves unknown whether it landed (5xx, a lost answer); the next run finds out by commit id. */
  'ETL_ICEBERG_COMMIT_STATE_UNKNOWN',
  /** An Iceberg table's metadata cannot be read, or is not a table this loader continues. */
  'ETL_ICEBERG_METADATA_INVALID',
  /** The rows a load writes cannot become an Iceberg table's schema (a change Iceberg cannot make), or the table changed since the plan. */
  'ETL_ICEBERG_SCHEMA_CHANGED',
  /** Other writers kept taking the next metadata version of an Iceberg table first. */
  'ETL_ICEBERG_COMMIT_CONFLICT',
  /** A compaction's input files were removed by another writer (a replay) before it committed; nothing was committed. */
  'ETL_ICEBERG_COMPACTION_STALE',
] as const;

export type EtlErrorCode = (typeof ETL_ERROR_CODES)[number];

export function etlError(
  code: EtlErrorCode,
  message: string,
  options: { readonly details?: Readonly<Record<string, unknown>>; readonly cause?: unknown; readonly retriable?: boolean } = {},
): TributaryError {
  return new TributaryError({
    code,
    message,
    retriable: options.retriable ?? false,
    ...(options.cause === undefined ? {} : { cause: options.cause }),
    ...(options.details === undefined ? {} : { details: options.details }),
  });
}
