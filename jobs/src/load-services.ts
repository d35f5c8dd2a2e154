/** The connections one job of a load works with, opened for the job and closed after it. */
import type { Logger } from '../../src/common/logger.js';
import { openLoadAudit } from '../../src/etl/completeness/load-audit.js';
import { loadClientSecurity, parseLoadFile, type LoadDefinition } from '../../src/etl/load-file.js';
import type { LoadServices } from '../../src/etl/load/run.js';
import { KafkaLoadSource } from '../../src/etl/load/source.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import { loadRegistryClient } from '../../src/etl/load-registry.js';
import type { LoadFileData } from './job-data.js';

/** The load as the run read it (CONFIG_INVALID, naming the file and field, when it is not valid). */
export function loadOf(data: LoadFileData): LoadDefinition {
  return parseLoadFile(data.loadText, data.loadFile);
}

/** The warehouse and registry of a load, for its maintenance jobs (which read no Kafka). */
export function maintenanceServices(load: LoadDefinition, logger: Logger): { warehouse: ReturnType<typeof openWarehouse>; registry: ReturnType<typeof loadRegistryClient>; env: NodeJS.ProcessEnv } {
  // The Iceberg REST catalog's secrets, too, are read on the worker (files or environment), never carried by jobs.
  return { warehouse: openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger }), registry: loadRegistryClient(load, logger, process.env), env: process.env };
}

/** With the load's audit connections when it has an audit section (connected only if a phase uses them). */
export async function withLoadServices<T>(load: LoadDefinition, logger: Logger, work: (services: LoadServices) => Promise<T>): Promise<T> {
  const warehouse = openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger });
  const registry = loadRegistryClient(load, logger, process.env);
  // Secrets are read here, on the worker, from its files and environment: jobs carry only the load file's text.
  const auditSecurity = loadClientSecurity(load, 'audit', process.env);
  const audit = openLoadAudit(load, registry, logger, auditSecurity === undefined ? {} : { security: auditSecurity });
  const source = await KafkaLoadSource.connect(load.source.bootstrap, logger, loadClientSecurity(load, 'source', process.env));
  try {
    return await work({ load, warehouse, source, registry, logger, audit, env: process.env });
  } finally {
    source.close();
    await audit?.close().catch((error: unknown) => logger.warn({ err: error }, 'the audit connections did not close cleanly'));
  }
}
