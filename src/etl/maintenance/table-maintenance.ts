/**
 * Maintenance of an Iceberg load's tables, as `etl compact|expire|orphans` run it by hand and the
 * `maintain` job (jobs/) runs it on the load's `iceberg.maintenance.schedule`:
 *
 *   compaction   each topic table's small files per hour rewritten (iceberg/table-compaction.ts),
 *                with the rows' schema as a load would write them today (the registry's latest,
 *                the load's transform). No lease: it only replaces files with the same rows, its
 *                commit checks every input is still live, and loads keep committing beside it.
 *   expiry       under the load's lease (iceberg/table-expiry.ts), so no commit of the load lands
 *                between reading the table and deleting files
 *   orphans      under the lease, after rolling claimed commits forward so none of their files
 *                waits unreferenced (iceberg/table-orphans.ts)
 *
 * The dead-letter table is expired and cleaned like the others but not compacted: it is small,
 * and its rows have no registry schema to be rewritten with.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../common/logger.js';
import type { CoordinationStore } from '../../coordination/store.js';
import type { RegistryClient } from '../../registry/client.js';
import type { LoadDefinition } from '../load-file.js';
import { recoverCommits } from '../load/commit.js';
import { acquireLease } from '../load/lease.js';
import { registryReaderSchemas } from '../load/run.js';
import { compileTransform } from '../records/transform.js';
import { planTableSchemas, rowSchemaOf } from '../iceberg/load-tables.js';
import { idMapping } from '../iceberg/schema-evolution.js';
import { compactTable, DEFAULT_COMPACTION_POLICY, type CompactionPolicy, type CompactionReport } from '../iceberg/table-compaction.js';
import { expireSnapshots, type ExpiryPolicy, type ExpiryReport } from '../iceberg/table-expiry.js';
import { removeOrphans, type OrphanReport } from '../iceberg/table-orphans.js';
import { tableRowType } from '../iceberg/table-row.js';
import { icebergTableOf, type CatalogEnvironment } from '../iceberg/load-catalog.js';
import { findIcebergTables, type IcebergTableFound } from '../tables/iceberg-registration.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface MaintenanceServices {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  readonly logger: Logger;
  /** The process environment: secrets of the tables' REST catalog (iceberg/load-catalog.ts); absent: none. */
  readonly env?: CatalogEnvironment | undefined;
}

export interface LeaseServices {
  readonly store: CoordinationStore;
  readonly numberRuns: boolean;
}

export interface TableCompaction extends CompactionReport {
  readonly topic: string;
  readonly location: string;
}

export interface TableExpiry extends ExpiryReport {
  readonly topic: string;
  readonly location: string;
}

export interface TableOrphans extends OrphanReport {
  readonly topic: string;
  readonly location: string;
}

/** Compacts every topic table of the load (or one topic's), one `replace` snapshot each. */
export async function compactLoadTables(
  services: MaintenanceServices & { readonly registry: RegistryClient },
  policy: CompactionPolicy = DEFAULT_COMPACTION_POLICY,
  options: { readonly topic?: string | undefined } = {},
): Promise<TableCompaction[]> {
  const { load, warehouse, logger } = services;
  const attempt = randomBytes(6).toString('hex');
  const reports: TableCompaction[] = [];
  for (const table of await dataTables(load, warehouse, options.topic, services.env)) {
    const reader = await registryReaderSchemas(services.registry)(table.topic);
    const recordType = load.transform === undefined ? reader.fileType : compileTransform(load.transform, reader, table.topic).outputType;
    const schema = (await planTableSchemas(load, warehouse, new Map([[table.topic, reader]]), logger, services.env)).get(table.topic)!;
    const report = await compactTable(
      await icebergTableOf(warehouse, table, services.env),
      {
        policy,
        rows: { rowType: tableRowType(recordType), schema, fieldIds: idMapping(rowSchemaOf(recordType), schema), codec: load.codec },
        attempt,
        commitId: `${load.name}/compact/${attempt}`,
        summary: { 'tributary.load': load.name, 'tributary.topic': table.topic, 'tributary.compaction': policyText(policy) },
      },
    );
    if (report.snapshotId !== undefined) {
      const files = report.hours.reduce((sum, hour) => sum + hour.inputFiles, 0);
      logger.info({ load: load.name, topic: table.topic, snapshot: report.snapshotId, hours: report.hours.length, files, event: 'table-compacted' }, 'Iceberg replace snapshot made');
    }
    reports.push({ topic: table.topic, location: table.location, ...report });
  }
  return reports;
}

/** The policy as the snapshot summary records it: `target=<bytes>,min-input-files=<n>`. */
function policyText(policy: CompactionPolicy): string {
  return `target=${policy.targetFileBytes},min-input-files=${policy.minInputFiles}`;
}

/** Expires old snapshots of every table of the load, under its lease. */
export async function expireLoadTables(services: MaintenanceServices & LeaseServices, policy: { readonly olderThanMs: number; readonly retainLast: number }, nowMs: number = Date.now()): Promise<TableExpiry[]> {
  const { load, warehouse } = services;
  const lease = await acquireLease(services.store, load.name, { attempt: `expire${randomBytes(4).toString('hex')}`, numberRuns: services.numberRuns });
  try {
    const reports: TableExpiry[] = [];
    const expiry: ExpiryPolicy = { olderThanMs: nowMs - policy.olderThanMs, retainLast: policy.retainLast };
    for (const table of await findIcebergTables(load, warehouse, services.env)) {
      reports.push({ topic: table.topic, location: table.location, ...(await expireSnapshots(await icebergTableOf(warehouse, table, services.env), expiry)) });
    }
    return reports;
  } finally {
    await lease.release();
  }
}

/** Deletes files under the load's tables that no snapshot reaches and are older than `olderThanMs`, under its lease. */
export async function removeLoadOrphans(services: MaintenanceServices & LeaseServices, options: { readonly olderThanMs: number; readonly dryRun: boolean }, nowMs: number = Date.now()): Promise<TableOrphans[]> {
  const { load, warehouse, logger } = services;
  const attempt = `orphans${randomBytes(4).toString('hex')}`;
  const lease = await acquireLease(services.store, load.name, { attempt, numberRuns: services.numberRuns });
  try {
    await recoverCommits({ warehouse, root: load.warehouse.root, load: load.name, attempt, logger: logger.child({ load: load.name }), env: services.env });
    const reports: TableOrphans[] = [];
    for (const table of await findIcebergTables(load, warehouse, services.env)) {
      reports.push({ topic: table.topic, location: table.location, ...(await removeOrphans(await icebergTableOf(warehouse, table, services.env), { olderThanMs: nowMs - options.olderThanMs, dryRun: options.dryRun })) });
    }
    return reports;
  } finally {
    await lease.release();
  }
}

export interface MaintenanceReport {
  readonly compaction?: readonly TableCompaction[];
  readonly expiry?: readonly TableExpiry[];
  readonly orphans?: readonly TableOrphans[];
}

/** The scheduled maintenance of a load: the steps its load file asks for, in order. */
export async function maintainLoad(services: MaintenanceServices & LeaseServices & { readonly registry: RegistryClient }): Promise<MaintenanceReport> {
  const settings = services.load.iceberg?.maintenance;
  if (settings === undefined) return {};
  const compaction = settings.compaction === undefined ? undefined : await compactLoadTables(services, settings.compaction);
  const expiry = settings.expiry === undefined ? undefined : await expireLoadTables(services, settings.expiry);
  const orphans = settings.orphans === undefined ? undefined : await removeLoadOrphans(services, { olderThanMs: settings.orphans.olderThanMs, dryRun: false });
  return { ...(compaction === undefined ? {} : { compaction }), ...(expiry === undefined ? {} : { expiry }), ...(orphans === undefined ? {} : { orphans }) };
}

async function dataTables(load: LoadDefinition, warehouse: WarehouseFileSystem, topic: string | undefined, env: CatalogEnvironment | undefined): Promise<IcebergTableFound[]> {
  return (await findIcebergTables(load, warehouse, env)).filter((table) => table.kind === 'data' && (topic === undefined || table.topic === topic));
}
