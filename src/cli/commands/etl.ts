/**
 * `tributary etl run|plan|status --load FILE`: the loader from the terminal. Results go to stdout,
 * logs (pino JSON) to stderr. A run that committed but left partitions out (offsets lost to
 * retention) still exits 1, after printing what it committed.
 *
 * TRIBUTARY_ETL_FAILPOINT=<name>[:<n>] (src/etl/failpoints.ts) makes `etl run` kill itself with
 * SIGKILL at that moment: for crash tests only.
 */
import { TributaryError } from '../../common/errors.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { logLevelSchema, parseConfig, zookeeperConnectSchema, type LogLevel } from '../../common/config.js';
import { MemoryCoordination } from '../../coordination/memory-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { failpointHook, parseFailpoint, type FailpointName } from '../../etl/failpoints.js';
import { readLoadFile, type LoadDefinition } from '../../etl/load-file.js';
import { formatPlan } from '../../etl/plan.js';
import { previewPlan, runLoad, type LoadServices, type RunReport } from '../../etl/run.js';
import { KafkaLoadSource } from '../../etl/source.js';
import { formatStatus, readLoadStatus } from '../../etl/status.js';
import { openWarehouse } from '../../etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../etl/warehouse/warehouse.js';
import { RegistryClient } from '../../registry/client.js';
import type { CommandIo } from '../not-implemented.js';

export interface EtlRunOptions {
  readonly load: string;
  readonly acceptGap?: boolean;
  readonly zookeeper?: string;
  readonly logLevel?: string;
}

export interface EtlPlanOptions {
  readonly load: string;
  readonly acceptGap?: boolean;
  readonly logLevel?: string;
}

export interface EtlStatusOptions {
  readonly load: string;
}

export const FAILPOINT_VARIABLE = 'TRIBUTARY_ETL_FAILPOINT';

function logLevel(value: string | undefined): LogLevel {
  return parseConfig(logLevelSchema, value ?? 'info', '--log-level');
}

function openLoadWarehouse(load: LoadDefinition, logger: Logger): WarehouseFileSystem {
  return openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger });
}

async function withServices<T>(load: LoadDefinition, logger: Logger, work: (services: LoadServices) => Promise<T>): Promise<T> {
  const warehouse = openLoadWarehouse(load, logger);
  const source = await KafkaLoadSource.connect(load.source.bootstrap, logger);
  try {
    return await work({ load, warehouse, source, registry: new RegistryClient({ url: load.registry, logger }), logger });
  } finally {
    source.close();
  }
}

export async function etlRun(io: CommandIo, options: EtlRunOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel) });
  const failpointSpec = env[FAILPOINT_VARIABLE];
  let failpoint: ((point: FailpointName) => void) | undefined;
  if (failpointSpec !== undefined && failpointSpec !== '') {
    failpoint = failpointHook(parseFailpoint(failpointSpec), () => process.kill(process.pid, 'SIGKILL'));
  }
  const load = await readLoadFile(options.load);
  let store: CoordinationStore;
  let numberRuns: boolean;
  if (options.zookeeper !== undefined) {
    store = await ZooKeeperStore.connect(parseConfig(zookeeperConnectSchema, options.zookeeper, '--zookeeper'), { logger });
    numberRuns = true;
  } else {
    store = new MemoryCoordination({ logger }).session();
    numberRuns = false;
  }
  try {
    const report = await withServices(load, logger, (services) =>
      runLoad({ ...services, acceptGap: options.acceptGap === true, store, numberRuns, ...(failpoint === undefined ? {} : { failpoint }) }),
    );
    io.writeOut(describeRun(load, report));
    if (report.problems.length > 0) {
      const [first] = report.problems;
      throw new TributaryError({
        code: first?.code ?? 'ETL_OFFSETS_LOST',
        message: report.problems.map((problem) => problem.message).join('\n'),
        details: { problems: report.problems.map((problem) => ({ code: problem.code, ...problem.details })) },
      });
    }
  } finally {
    await store.close();
  }
}

function describeRun(load: LoadDefinition, report: RunReport): string {
  const lines: string[] = [];
  if (report.recovery.rolledForward.length > 0) lines.push(`rolled forward commit${report.recovery.rolledForward.length > 1 ? 's' : ''} ${report.recovery.rolledForward.join(', ')} left by an earlier run`);
  const manifest = report.manifest;
  if (manifest === undefined) {
    lines.push(`load ${load.name}: nothing new to load (next commit would be ${report.plan.seq})`);
  } else {
    const records = manifest.ranges.reduce((sum, range) => sum + range.records, 0);
    const gaps = manifest.ranges.filter((range) => range.gap !== undefined);
    lines.push(
      `load ${load.name}: commit ${manifest.seq}: ${records} records in ${manifest.files.length} files from ${manifest.ranges.length} partitions` +
        `, ${manifest.quarantine.records} quarantined${gaps.length === 0 ? '' : `, ${gaps.length} accepted gap${gaps.length > 1 ? 's' : ''}`}`,
    );
    for (const range of gaps) lines.push(`  gap accepted: ${range.topic}-${range.partition} [${range.gap?.from}, ${range.gap?.to}) was lost to retention`);
  }
  return `${lines.join('\n')}\n`;
}

export async function etlPlan(io: CommandIo, options: EtlPlanOptions): Promise<void> {
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel ?? 'warn') });
  const load = await readLoadFile(options.load);
  const { plan, pending } = await withServices(load, logger, (services) => previewPlan(services, options.acceptGap === true));
  if (pending.length > 0) io.writeOut(`commit${pending.length > 1 ? 's' : ''} ${pending.join(', ')} claimed but not published: the next run rolls ${pending.length > 1 ? 'them' : 'it'} forward first\n`);
  io.writeOut(formatPlan(plan, load.name));
}

export async function etlStatus(io: CommandIo, options: EtlStatusOptions): Promise<void> {
  const load = await readLoadFile(options.load);
  const logger = createLogger({ name: 'etl', level: 'warn' });
  const status = await readLoadStatus(openLoadWarehouse(load, logger), load.warehouse.root, load.name);
  io.writeOut(formatStatus(status));
}
