/**
 * `etl compact`, `etl expire`, `etl orphans`: maintenance of an Iceberg load's tables by hand
 * (etl/maintenance/table-maintenance.ts; the `maintain` job runs the same on a schedule).
 */
import { TributaryError } from '../../common/errors.js';
import { createLogger } from '../../common/logger.js';
import { readLoadFile, type LoadDefinition } from '../../etl/load-file.js';
import { hourKey, HOUR_MS } from '../../etl/layout.js';
import { loadRegistryClient } from '../../etl/load-registry.js';
import type { CommandIo } from '../not-implemented.js';
import { invalidFlag, logLevel, openLoadWarehouse, openStore, parseDurationFlag, parseTimeFlag } from './etl.js';

export interface EtlCompactOptions {
  readonly load: string;
  readonly topic?: string;
  readonly targetFileSize?: string;
  readonly minInputFiles?: string;
  readonly from?: string;
  readonly to?: string;
  readonly logLevel?: string;
}

export interface EtlExpireOptions {
  readonly load: string;
  /** A duration (5d, 12h): snapshots committed longer ago may expire. */
  readonly olderThan?: string;
  readonly retainLast?: string;
  readonly zookeeper?: string;
  readonly logLevel?: string;
}

export interface EtlOrphansOptions {
  readonly load: string;
  readonly olderThan?: string;
  readonly dryRun?: boolean;
  readonly zookeeper?: string;
  readonly logLevel?: string;
}

function icebergLoad(load: LoadDefinition, command: string): void {
  if (load.iceberg === undefined) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `load ${load.name} writes ${load.format} files, not Iceberg tables: etl ${command} applies to format iceberg`, details: { load: load.name } });
  }
}

/** `etl compact`: small files of each hour rewritten near the target size, one `replace` snapshot per table; runs beside loads. */
export async function etlCompact(io: CommandIo, options: EtlCompactOptions): Promise<void> {
  const { compactLoadTables } = await import('../../etl/maintenance/table-maintenance.js');
  const { DEFAULT_COMPACTION_POLICY } = await import('../../etl/iceberg/table-compaction.js');
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel) });
  const load = await readLoadFile(options.load);
  icebergLoad(load, 'compact');
  const targetFileBytes = options.targetFileSize === undefined ? DEFAULT_COMPACTION_POLICY.targetFileBytes : parseSizeFlag('--target-file-size', options.targetFileSize);
  const minInputFiles = options.minInputFiles === undefined ? DEFAULT_COMPACTION_POLICY.minInputFiles : Number(options.minInputFiles);
  if (!Number.isSafeInteger(minInputFiles) || minInputFiles < 2) throw invalidFlag('--min-input-files', options.minInputFiles ?? '', 'must be a whole number of files, at least 2');
  if ((options.from === undefined) !== (options.to === undefined)) throw invalidFlag(options.from === undefined ? '--to' : '--from', options.from ?? options.to ?? '', 'goes with the other: give both --from and --to (whole UTC hours, --to exclusive), or neither for every hour');
  const hours = options.from === undefined || options.to === undefined ? undefined : { from: parseTimeFlag('--from', options.from).getTime() / HOUR_MS, to: parseTimeFlag('--to', options.to).getTime() / HOUR_MS };
  const warehouse = openLoadWarehouse(load, logger);
  const registry = loadRegistryClient(load, logger, process.env);
  const reports = await compactLoadTables({ load, warehouse, logger, registry, env: process.env }, { targetFileBytes, minInputFiles, hours }, { topic: options.topic });
  for (const report of reports) {
    if (report.snapshotId === undefined) {
      io.writeOut(`${report.topic}: nothing to compact (no hour has ${minInputFiles} or more files under ${formatBytes(targetFileBytes * 0.75)}); ${report.location}\n`);
      continue;
    }
    const inputs = report.hours.reduce((sum, hour) => sum + hour.inputFiles, 0);
    const outputs = report.hours.reduce((sum, hour) => sum + hour.outputFiles, 0);
    io.writeOut(
      `${report.topic}: replace snapshot ${report.snapshotId} (metadata v${report.version ?? '?'}) rewrote ${inputs} files as ${outputs} in ${report.hours.length} hour${report.hours.length === 1 ? '' : 's'}; ${report.location}\n` +
        report.hours.map((hour) => `  ${hourKey(hour.hour)}: ${hour.inputFiles} files (${formatBytes(hour.inputBytes)}) → ${hour.outputFiles} (${formatBytes(hour.outputBytes)}), ${hour.records} records\n`).join(''),
    );
  }
  if (reports.length === 0) io.writeOut(`load ${load.name} has no tables yet: nothing to compact\n`);
}

/** `etl expire`: snapshot expiry of an Iceberg load's tables, under the load's lease so no run of the load commits meanwhile. */
export async function etlExpire(io: CommandIo, options: EtlExpireOptions): Promise<void> {
  const { expireLoadTables } = await import('../../etl/maintenance/table-maintenance.js');
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel) });
  const load = await readLoadFile(options.load);
  icebergLoad(load, 'expire');
  const olderThanMs = parseDurationFlag('--older-than', options.olderThan ?? '5d');
  const retainLast = options.retainLast === undefined ? 1 : Number(options.retainLast);
  if (!Number.isSafeInteger(retainLast) || retainLast < 1) throw invalidFlag('--retain-last', options.retainLast ?? '', 'must be a whole number of snapshots, at least 1');
  const warehouse = openLoadWarehouse(load, logger);
  const { store, numberRuns } = await openStore(options.zookeeper, logger);
  try {
    for (const report of await expireLoadTables({ load, warehouse, logger, store, numberRuns, env: process.env }, { olderThanMs, retainLast })) {
      io.writeOut(`${report.topic}: ${report.expired.length} snapshot${report.expired.length === 1 ? '' : 's'} expired, ${report.kept} kept, ${report.deletedFiles} files deleted${report.version === undefined ? '' : ` (metadata v${report.version})`}; ${report.location}\n`);
    }
  } finally {
    await store.close();
  }
}

/** `etl orphans`: deletes files under an Iceberg load's tables that no snapshot reaches, under the load's lease. */
export async function etlOrphans(io: CommandIo, options: EtlOrphansOptions): Promise<void> {
  const { removeLoadOrphans } = await import('../../etl/maintenance/table-maintenance.js');
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel) });
  const load = await readLoadFile(options.load);
  icebergLoad(load, 'orphans');
  const olderThanMs = parseDurationFlag('--older-than', options.olderThan ?? '3d');
  const warehouse = openLoadWarehouse(load, logger);
  const { store, numberRuns } = await openStore(options.zookeeper, logger);
  try {
    for (const report of await removeLoadOrphans({ load, warehouse, logger, store, numberRuns, env: process.env }, { olderThanMs, dryRun: options.dryRun === true })) {
      io.writeOut(`${report.topic}: ${report.orphans.length} orphan file${report.orphans.length === 1 ? '' : 's'}${options.dryRun === true ? ' (dry run: none deleted)' : `, ${report.deleted} deleted`}${report.orphans.map((path) => `\n  ${path}`).join('')}\n`);
    }
  } finally {
    await store.close();
  }
}

/** Bytes, or a whole number with KiB, MiB or GiB. */
function parseSizeFlag(flag: string, text: string): number {
  const match = /^(\d+)\s*(KiB|MiB|GiB)?$/.exec(text.trim());
  const units: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };
  const bytes = match === null ? Number.NaN : Number(match[1]) * (units[match[2] ?? ''] ?? Number.NaN);
  if (!Number.isSafeInteger(bytes) || bytes < 1024 * 1024) throw invalidFlag(flag, text, 'must be bytes or a whole number of KiB, MiB or GiB, at least 1 MiB (e.g. 128MiB)');
  return bytes;
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}
