/**
 * The loader's tier of the audit (issue #9: "the loader publishes its own AuditCount tier"): count
 * what each published commit put into the warehouse per window of creation time and origin server
 * as tier LOADER, publish the counts, and record durably that they were acknowledged.
 *
 * The committed data files are read back rather than summing `manifest.hours`, because the audit
 * compares every tier per 10-minute window (all tiers must use the same windows) and per origin
 * server (reconcile.ts leaves unknown origins out), and the manifest counts per hour with no
 * origin. The files hold both: the creation time in the load's timeField and the origin in the
 * event's header (EventHeader.server). Reading them back also makes the tier count what is in the
 * warehouse, not what the loader meant to write.
 *
 * Crash safety: every commit is counted by a fresh counter whose counterId is `etl/<load>/<seq>`,
 * reading its files in manifest order, so a recount cuts the same (counterId, sequence) keys with
 * the same counts, and reconciliation keeps one event per key: counting a commit twice never
 * double-counts. Once the audit topic acknowledged the counts, `_etl/<load>/audited/<seq>` is
 * created. Every run (auditCommits) counts each published commit without that record: a crash
 * between publication and the flush, or an audit topic that was unreachable, is made good by the
 * next run. A failure here never undoes or fails the data commit (the caller logs it).
 *
 * Limits: a load without timeField is refused (the Kafka record timestamp is not kept in the
 * files); both fields are read from the records as written, so a load whose transform drops or
 * renames them cannot be counted this way. A commit whose hour was later replayed is recounted
 * from the files its manifest names; a replay that renamed them away makes that recount fail.
 */
import { TributaryError } from '../../common/errors.js';
import { bindOnce, type Logger } from '../../common/logger.js';
import { AuditCounter, type AuditEncoder, type AuditPublisher } from '../../audit/counter.js';
import { UNKNOWN_ORIGIN } from '../../audit/origin.js';
import { readClaim, readCommitLog } from '../load/commit-log.js';
import { etlError } from '../errors.js';
import type { FailpointName } from '../load/failpoints.js';
import { decodeDataFile, type DataFileFormat } from '../files/data-files.js';
import { auditedDir, auditedPath } from '../layout.js';
import type { LoadDefinition } from '../load-file.js';
import type { Manifest } from '../load/manifest.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

/** EventHeader.server: where Tributary's events carry the server that created them. */
export const DEFAULT_ORIGIN_FIELD = 'header.server';

/** Where LOADER counts go: an acks=-1 producer on the audit cluster and the registry's serializer. */
export interface LoaderAuditSink {
  readonly publisher: AuditPublisher;
  readonly encoder: AuditEncoder;
  /** AUDIT_TOPIC unless the load says otherwise. */
  readonly auditTopic?: string;
  /** The counter's cluster name (null by default). */
  readonly cluster?: string;
  /** The counter's server name (the host name by default). */
  readonly server?: string;
}

export interface LoaderAuditOptions {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  readonly sink: LoaderAuditSink;
  readonly logger?: Logger;
  /** Dotted path of the string field naming the origin server; default DEFAULT_ORIGIN_FIELD. */
  readonly originField?: string;
  /** Crash tests: `after-audit-flush` fires between the acknowledged flush and the audited record. */
  readonly failpoint?: ((point: FailpointName) => void) | undefined;
}

export interface LoaderCount {
  readonly seq: number;
  readonly counterId: string;
  readonly files: number;
  readonly records: number;
}

/** What auditCommits did: the commits counted, and the first failure (seq 0: before any commit; the rest wait for the next run). */
export interface AuditStepReport {
  readonly audited: readonly LoaderCount[];
  readonly failed?: { readonly seq: number; readonly error: TributaryError };
  /** Published commits still without their audited record after this step. */
  readonly unaudited: readonly number[];
}

/** The deterministic counter id of a commit's LOADER counts: equal on every recount. */
export function loaderCounterId(load: string, seq: number): string {
  return `etl/${load}/${seq}`;
}

/**
 * Counts the records of a commit's data files into the counter (without publishing), file by file
 * in manifest order and record by record in file order, so a recount cuts the same events.
 */
export async function countCommit(manifest: Manifest, options: Pick<LoaderAuditOptions, 'load' | 'warehouse' | 'originField'>, counter: AuditCounter): Promise<LoaderCount> {
  const timeField = checkTimeField(options.load);
  if (counter.tier !== 'LOADER') {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `the loader's audit counter must be of tier LOADER, not ${counter.tier}` });
  }
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
      counter.count(file.topic, time, typeof origin === 'string' && origin !== '' ? origin : UNKNOWN_ORIGIN);
    }
    records += decoded.records.length;
  }
  return { seq: manifest.seq, counterId: counter.counterId, files: manifest.files.length, records };
}

/** A fresh LOADER counter for commit `seq`, publishing only when flushed. */
export function commitCounter(options: LoaderAuditOptions, seq: number): AuditCounter {
  const { sink } = options;
  return new AuditCounter({
    tier: 'LOADER',
    counterId: loaderCounterId(options.load.name, seq),
    publisher: sink.publisher,
    encoder: sink.encoder,
    publishIntervalMs: 0,
    ...(sink.auditTopic === undefined ? {} : { auditTopic: sink.auditTopic }),
    ...(sink.cluster === undefined ? {} : { cluster: sink.cluster }),
    ...(sink.server === undefined ? {} : { server: sink.server }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
}

/** Counts and publishes one commit, then records that the audit topic acknowledged it. */
export async function auditCommit(manifest: Manifest, options: LoaderAuditOptions): Promise<LoaderCount> {
  const counter = commitCounter(options, manifest.seq);
  const counted = await countCommit(manifest, options, counter);
  await counter.close();
  options.failpoint?.('after-audit-flush');
  const root = options.load.warehouse.root;
  const record = { seq: manifest.seq, counterId: counted.counterId, files: counted.files, records: counted.records, auditTopic: counter.auditTopic };
  try {
    await options.warehouse.create(auditedPath(root, options.load.name, manifest.seq), Buffer.from(`${JSON.stringify(record, null, 2)}\n`, 'utf8'));
  } catch (error) {
    // Another run counted it too (same keys, so no harm): its record is as good as ours.
    if (!hasWarehouseCode(error, 'WAREHOUSE_FILE_EXISTS')) throw error;
  }
  return counted;
}

/** The seqs whose LOADER counts were acknowledged (an audited record exists). */
export async function auditedCommits(warehouse: WarehouseFileSystem, root: string, load: string): Promise<Set<number>> {
  try {
    const entries = await warehouse.list(auditedDir(root, load));
    return new Set(entries.filter((entry) => /^\d{10}$/.test(entry.name)).map((entry) => Number(entry.name)));
  } catch (error) {
    if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) return new Set();
    throw error;
  }
}

/** Published commits of the load without their audited record, ascending. */
export async function unauditedCommits(warehouse: WarehouseFileSystem, root: string, load: string): Promise<number[]> {
  const log = await readCommitLog(warehouse, root, load);
  const audited = await auditedCommits(warehouse, root, load);
  return [...log.published].filter((seq) => !audited.has(seq)).sort((a, b) => a - b);
}

/**
 * Counts and publishes every published commit lacking its audited record, oldest first. Stops at
 * the first failure and reports it instead of throwing: the data commits stand, and the next run
 * tries again with the same keys.
 */
export async function auditCommits(options: LoaderAuditOptions): Promise<AuditStepReport> {
  const { load, warehouse } = options;
  const root = load.warehouse.root;
  const log = options.logger === undefined ? undefined : bindOnce(options.logger, { load: load.name });
  const audited: LoaderCount[] = [];
  let pending: number[];
  try {
    pending = await unauditedCommits(warehouse, root, load.name);
  } catch (error) {
    const failure = asAuditError(error, load.name, undefined);
    log?.warn({ err: failure, event: 'audit-failed' }, failure.message);
    return { audited, failed: { seq: 0, error: failure }, unaudited: [] };
  }
  for (const [index, seq] of pending.entries()) {
    try {
      const { manifest } = await readClaim(warehouse, root, load.name, seq);
      const counted = await auditCommit(manifest, options);
      audited.push(counted);
      log?.info({ seq, records: counted.records, counterId: counted.counterId, event: 'audited' }, 'LOADER audit counts published');
    } catch (error) {
      const failure = asAuditError(error, load.name, seq);
      log?.warn({ err: failure, seq, event: 'audit-failed' }, failure.message);
      return { audited, failed: { seq, error: failure }, unaudited: pending.slice(index) };
    }
  }
  return { audited, unaudited: [] };
}

/** seq undefined: the audited records could not even be listed. */
function asAuditError(error: unknown, load: string, seq: number | undefined): TributaryError {
  const why = error instanceof Error ? error.message : String(error);
  const what = seq === undefined ? `the commits of load ${load} still to count at the LOADER audit tier could not be listed` : `the LOADER audit counts of commit ${seq} of load ${load} were not published`;
  return etlError(
    'ETL_AUDIT_UNAVAILABLE',
    `${what} (${why}); the data commits stand. The next run counts them again under the same keys; \`tributary etl status\` lists commits not yet audited`,
    { retriable: true, cause: error, details: { load, seq, ...(error instanceof TributaryError ? { code: error.code } : {}) } },
  );
}

function checkTimeField(load: LoadDefinition): string {
  const timeField = load.timeField;
  if (timeField === undefined) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: `load ${load.name} (${load.file}) has no timeField: the LOADER audit tier counts by creation time, which the data files hold only in a record field. Set timeField (e.g. header.time)`,
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
