/**
 * `tributary etl run|plan|status|replay|rollback|ddl --load FILE`: the loader from the terminal.
 * Results go to stdout, logs (pino JSON) to stderr. A run that committed but left partitions out
 * (offsets lost to retention) still exits 1, after printing what it committed. `run` and `replay`
 * draw a progress bar on stderr when it is a terminal (--progress/--no-progress decide otherwise;
 * with the bar, logs default to warn so they do not tear it); without the bar they log progress
 * lines every --progress-interval seconds (progress-log.ts). A run's last log line sums it up
 * (run-summary.ts).
 *
 * TRIBUTARY_ETL_FAILPOINT=<name>[:<n>] (src/etl/load/failpoints.ts, src/etl/replay/failpoints.ts) makes
 * `etl run`, `etl replay` or `etl rollback` kill itself with SIGKILL at that moment: for crash tests only.
 *
 * What only status, ddl, replay or rollback use (and the ZooKeeper client, only with --zookeeper) is
 * imported when needed, so that `etl run` does not load it: its peak memory is a budget (issue 32).
 */
import { TributaryError } from '../../common/errors.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { logLevelSchema, parseConfig, zookeeperConnectSchema, type LogLevel } from '../../common/config.js';
import { MemoryCoordination } from '../../coordination/memory-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { failpointHook, parseFailpoint, type FailpointName } from '../../etl/load/failpoints.js';
import { openLoadAudit } from '../../etl/completeness/load-audit.js';
import { loadClientSecurity, readLoadFile, type LoadDefinition } from '../../etl/load-file.js';
import { securityOption, type ClientSecurity } from '../../client/security-config.js';
import { HOUR_MS } from '../../etl/layout.js';
import { formatPlan } from '../../etl/load/plan.js';
import type { LoadProgress } from '../../etl/status/progress.js';
import { progressBar, shouldShowProgress } from '../../etl/status/progress-bar.js';
import { DEFAULT_PROGRESS_INTERVAL_MS, progressLog } from '../../etl/status/progress-log.js';
import { summarizeRun } from '../../etl/status/run-summary.js';
import { parseSwapFailpoint, swapFailpointHook, type SwapFailpointName } from '../../etl/replay/failpoints.js';
import { previewPlan, runLoad, type LoadServices, type RunReport } from '../../etl/load/run.js';
import { KafkaLoadSource } from '../../etl/load/source.js';
import { checkLayoutUnchanged } from '../../etl/load/layout-check.js';
import { openWarehouse } from '../../etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../etl/warehouse/warehouse.js';
import { loadRegistryClient } from '../../etl/load-registry.js';
import { FAILPOINT_VARIABLE } from '../command-constants.js';
import type { CommandIo } from '../not-implemented.js';

export interface EtlRunOptions {
  readonly load: string;
  readonly acceptGap?: boolean;
  readonly zookeeper?: string;
  /** --concurrency: tasks extracted at once. */
  readonly concurrency?: string;
  readonly logLevel?: string;
  /** --progress (true) / --no-progress (false); neither: a bar when stderr is a terminal. */
  readonly progress?: boolean;
  /** --progress-interval: seconds between progress lines when no bar is drawn. */
  readonly progressInterval?: string;
}

export interface EtlReplayOptions {
  readonly load: string;
  readonly from: string;
  readonly to: string;
  readonly topic?: string;
  readonly reason?: string;
  readonly zookeeper?: string;
  readonly logLevel?: string;
  readonly progress?: boolean;
  readonly progressInterval?: string;
}

export interface EtlRollbackOptions {
  readonly load: string;
  /** One hour; or the hours [--from, --to). */
  readonly hour?: string;
  readonly from?: string;
  readonly to?: string;
  readonly topic?: string;
  /** Restore this version (the one before the live one) instead of undoing the last replay once. */
  readonly toVersion?: string;
  readonly reason?: string;
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
  readonly watch?: boolean;
  /** Seconds between refreshes with --watch. */
  readonly interval?: string;
}

export interface EtlDdlOptions {
  readonly load: string;
}

/** ZooKeeper when given (the lease then fences other processes), else an in-process store. */
export async function openStore(zookeeper: string | undefined, logger: Logger): Promise<{ store: CoordinationStore; numberRuns: boolean }> {
  if (zookeeper === undefined) return { store: new MemoryCoordination({ logger }).session(), numberRuns: false };
  const { ZooKeeperStore } = await import('../../coordination/zookeeper-store.js');
  return { store: await ZooKeeperStore.connect(parseConfig(zookeeperConnectSchema, zookeeper, '--zookeeper'), { logger }), numberRuns: true };
}

/** The bar when `show`, else progress lines in `logger`'s log; stopped however `work` ends. */
async function withProgress<T>(show: boolean, label: string, logger: Logger, intervalMs: number, work: (progress: LoadProgress) => Promise<T>): Promise<T> {
  const display = show ? progressBar(label, process.stderr) : progressLog({ logger, intervalMs });
  try {
    return await work(display);
  } finally {
    display.stop();
  }
}

function progressIntervalMs(value: string | undefined): number {
  if (value === undefined) return DEFAULT_PROGRESS_INTERVAL_MS;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0.1 || seconds > 3600) throw invalidFlag('--progress-interval', value, 'must be a number of seconds from 0.1 to 3600');
  return seconds * 1000;
}

export function logLevel(value: string | undefined): LogLevel {
  return parseConfig(logLevelSchema, value ?? 'info', '--log-level');
}

export function openLoadWarehouse(load: LoadDefinition, logger: Logger): WarehouseFileSystem {
  return openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger });
}

/** The TLS and SASL of the load's audit cluster, from its security block (secrets from files or this environment). */
function auditSecurity(load: LoadDefinition): { security?: ClientSecurity } {
  return securityOption(loadClientSecurity(load, 'audit', process.env));
}

/** The load's connections; with `audit`, also its audit connections when the load has an audit section. */
async function withServices<T>(load: LoadDefinition, logger: Logger, work: (services: LoadServices) => Promise<T>, options: { readonly audit?: boolean } = {}): Promise<T> {
  const warehouse = openLoadWarehouse(load, logger);
  const registry = loadRegistryClient(load, logger, process.env);
  const audit = options.audit === true ? openLoadAudit(load, registry, logger, auditSecurity(load)) : undefined;
  const source = await KafkaLoadSource.connect(load.source.bootstrap, logger, loadClientSecurity(load, 'source', process.env));
  try {
    return await work({ load, warehouse, source, registry, logger, audit, env: process.env });
  } finally {
    source.close();
    await audit?.close().catch((error: unknown) => logger.warn({ err: error }, 'the audit connections did not close cleanly'));
  }
}

export async function etlRun(io: CommandIo, options: EtlRunOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const showProgress = shouldShowProgress(options.progress, process.stderr);
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel ?? (showProgress ? 'warn' : 'info')) });
  const failpointSpec = env[FAILPOINT_VARIABLE];
  let failpoint: ((point: FailpointName) => void) | undefined;
  if (failpointSpec !== undefined && failpointSpec !== '') {
    failpoint = failpointHook(parseFailpoint(failpointSpec), () => process.kill(process.pid, 'SIGKILL'));
  }
  const intervalMs = progressIntervalMs(options.progressInterval);
  const concurrency = options.concurrency === undefined ? 4 : Number(options.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `--concurrency ${JSON.stringify(options.concurrency)} is not a whole number from 1 to 64; give how many partitions to extract at once, e.g. --concurrency 4` });
  }
  const load = await readLoadFile(options.load);
  const runLog = logger.child({ load: load.name });
  const { store, numberRuns } = await openStore(options.zookeeper, logger);
  try {
    const startedAt = performance.now();
    const report = await withProgress(showProgress, `run ${load.name}`, runLog, intervalMs, (progress) =>
      withServices(load, logger, (services) =>
        runLoad({ ...services, acceptGap: options.acceptGap === true, store, numberRuns, progress, concurrency, ...(failpoint === undefined ? {} : { failpoint }) }),
        { audit: true },
      ),
    );
    const summary = summarizeRun(report, performance.now() - startedAt);
    runLog.info(summary.fields, summary.message);
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
  lines.push(...describeAudit(report));
  return `${lines.join('\n')}\n`;
}

/** What the audit steps did (loads with an audit section); their failures are warnings, not the run's. */
function describeAudit(report: RunReport): string[] {
  const audit = report.audit;
  if (audit === undefined) return [];
  const lines: string[] = [];
  for (const counted of report.auditCatchUp?.audited ?? []) lines.push(`audit: commit ${counted.seq} (left unaudited by an earlier run): ${counted.records} records counted at the LOADER tier (${counted.counterId})`);
  if (report.auditCatchUp?.failed !== undefined) lines.push(`audit: warning: ${report.auditCatchUp.failed.error.message}`);
  for (const counted of audit.tier.audited) lines.push(`audit: commit ${counted.seq}: ${counted.records} records counted at the LOADER tier (${counted.counterId})`);
  if (audit.tier.failed !== undefined) lines.push(`audit: warning: ${audit.tier.failed.error.message}`);
  for (const hour of audit.markers?.written ?? []) lines.push(`hour complete: ${hour} (_COMPLETE written)`);
  for (const hour of audit.markers?.removed ?? []) lines.push(`hour no longer complete: ${hour} (_COMPLETE removed)`);
  if (audit.markersFailed !== undefined) lines.push(`audit: warning: ${audit.markersFailed.message}`);
  return lines;
}

export async function etlPlan(io: CommandIo, options: EtlPlanOptions): Promise<void> {
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel ?? 'warn') });
  const load = await readLoadFile(options.load);
  const { plan, pending } = await withServices(load, logger, (services) => previewPlan(services, options.acceptGap === true));
  if (pending.length > 0) io.writeOut(`commit${pending.length > 1 ? 's' : ''} ${pending.join(', ')} claimed but not published: the next run rolls ${pending.length > 1 ? 'them' : 'it'} forward first\n`);
  io.writeOut(formatPlan(plan, load.name));
}

export async function etlStatus(io: CommandIo, options: EtlStatusOptions): Promise<void> {
  const { formatStatus, readCompleteness, readLoadStatus } = await import('../../etl/status/status.js');
  const { readLoadHistory } = await import('../../etl/replay/history.js');
  const { formatReplayHistory } = await import('../../etl/replay/report.js');
  const { findIcebergTables, formatIcebergSnapshots } = await import('../../etl/tables/iceberg-registration.js');
  const load = await readLoadFile(options.load);
  const logger = createLogger({ name: 'etl', level: 'warn' });
  const warehouse = openLoadWarehouse(load, logger);
  // With an audit section: per hour its completeness, from the markers and the PRODUCER counts.
  const audit = openLoadAudit(load, loadRegistryClient(load, logger, process.env), logger, auditSecurity(load));
  const render = async (): Promise<string> => {
    await checkLayoutUnchanged(warehouse, load);
    const status = await readLoadStatus(warehouse, load.warehouse.root, load.name);
    const completeness = load.audit === undefined ? undefined : await readCompleteness(warehouse, load.warehouse.root, load, status, audit === undefined ? undefined : (topic) => audit.readEvents(topic));
    const tables = load.iceberg === undefined ? '' : formatIcebergSnapshots(await findIcebergTables(load, warehouse, process.env));
    return formatStatus(status, completeness) + tables + formatReplayHistory(await readLoadHistory(warehouse, load.warehouse.root, load.name));
  };
  try {
    await showStatus(io, options, render);
  } finally {
    await audit?.close().catch(() => undefined);
  }
}

/**
 * `etl ddl`: the Hive tables of the load and one partition per committed hour, as HiveQL on stdout.
 * With the registry unreachable, from the schema in the committed files, said in one line on stderr.
 * For a `format: iceberg` load: how Spark, Trino, Java and DuckDB find its tables.
 */
export async function etlDdl(io: CommandIo, options: EtlDdlOptions): Promise<void> {
  const load = await readLoadFile(options.load);
  const logger = createLogger({ name: 'etl', level: 'warn' });
  if (load.iceberg !== undefined) {
    // An Iceberg table carries its own schema: what engines need is where it is.
    const { findIcebergTables, formatIcebergRegistration } = await import('../../etl/tables/iceberg-registration.js');
    io.writeOut(formatIcebergRegistration(load, await findIcebergTables(load, openLoadWarehouse(load, logger), process.env)));
    return;
  }
  const { formatHiveDdl, readHiveTables } = await import('../../etl/tables/hive-tables.js');
  // The registry client's retry warnings would only repeat what the fallback line (or the error) says.
  const registry = loadRegistryClient(load, logger.child({}, { level: 'error' }), process.env);
  const definitions = await readHiveTables(load, openLoadWarehouse(load, logger), registry, { notice: (line) => io.writeErr(`tributary: ${line}\n`) });
  io.writeOut(formatHiveDdl(load, definitions));
}

async function showStatus(io: CommandIo, options: EtlStatusOptions, render: () => Promise<string>): Promise<void> {
  if (options.watch !== true) {
    if (options.interval !== undefined) throw invalidFlag('--interval', options.interval, 'is only meaningful with --watch');
    io.writeOut(await render());
    return;
  }
  const seconds = Number(options.interval ?? '5');
  if (!Number.isFinite(seconds) || seconds < 0.5 || seconds > 3600) throw invalidFlag('--interval', options.interval ?? '', 'must be a number of seconds from 0.5 to 3600');
  const { watchStatus } = await import('../../etl/status/status.js');
  const stop = new AbortController();
  const abort = (): void => stop.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  try {
    await watchStatus(render, io.writeOut, { intervalMs: seconds * 1000, signal: stop.signal, clearScreen: process.stdout.isTTY === true });
  } finally {
    process.off('SIGINT', abort);
    process.off('SIGTERM', abort);
  }
}

export async function etlReplay(io: CommandIo, options: EtlReplayOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const { replayWindow } = await import('../../etl/replay/replay.js');
  const { formatSwapReport } = await import('../../etl/replay/report.js');
  const showProgress = shouldShowProgress(options.progress, process.stderr);
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel ?? (showProgress ? 'warn' : 'info')) });
  const from = parseTimeFlag('--from', options.from);
  const to = parseTimeFlag('--to', options.to);
  const failpoint = swapFailpoint(env);
  const intervalMs = progressIntervalMs(options.progressInterval);
  const load = await readLoadFile(options.load);
  const { store, numberRuns } = await openStore(options.zookeeper, logger);
  try {
    if (load.iceberg !== undefined) {
      // An Iceberg load's replay is an overwrite snapshot per table (etl/replay/iceberg-replay.ts).
      const { formatIcebergChanges, replayIcebergWindow } = await import('../../etl/replay/iceberg-replay.js');
      const changes = await withServices(load, logger, (services) => replayIcebergWindow({ ...services, store, numberRuns, from, to, topic: options.topic, reason: options.reason }));
      io.writeOut(formatIcebergChanges(changes, 'replay', options.load));
      return;
    }
    const report = await withProgress(showProgress, `replay ${load.name}`, logger.child({ load: load.name }), intervalMs, (progress) =>
      withServices(load, logger, (services) =>
        replayWindow({ ...services, store, numberRuns, from, to, topic: options.topic, reason: options.reason, failpoint, progress }),
      ),
    );
    io.writeOut(formatSwapReport(report, options.load));
  } finally {
    await store.close();
  }
}

export async function etlRollback(io: CommandIo, options: EtlRollbackOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const { rollbackHours } = await import('../../etl/replay/rollback.js');
  const { formatSwapReport } = await import('../../etl/replay/report.js');
  const logger = createLogger({ name: 'etl', level: logLevel(options.logLevel) });
  const { from, to } = rollbackHoursOf(options);
  const toVersion = options.toVersion === undefined ? undefined : parseVersionFlag(options.toVersion);
  const failpoint = swapFailpoint(env);
  const load = await readLoadFile(options.load);
  const { store, numberRuns } = await openStore(options.zookeeper, logger);
  try {
    if (load.iceberg !== undefined) {
      if (toVersion !== undefined) throw invalidFlag('--to-version', options.toVersion ?? '', 'is for hour-folder loads; an Iceberg load rolls back its last replay of the window (older versions: time travel)');
      const { formatIcebergChanges, rollbackIcebergWindow } = await import('../../etl/replay/iceberg-replay.js');
      const changes = await rollbackIcebergWindow({ load, warehouse: openLoadWarehouse(load, logger), logger, store, numberRuns, from, to, topic: options.topic, env: process.env });
      io.writeOut(formatIcebergChanges(changes, 'rollback', options.load));
      return;
    }
    const report = await rollbackHours({ load, warehouse: openLoadWarehouse(load, logger), logger, store, numberRuns, from, to, topic: options.topic, toVersion, reason: options.reason, failpoint });
    io.writeOut(formatSwapReport(report, options.load));
  } finally {
    await store.close();
  }
}

export function parseDurationFlag(flag: string, text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  if (match === null) throw invalidFlag(flag, text, 'must be a whole number and a unit, e.g. 90m, 12h, 5d (units ms, s, m, h, d)');
  return Number(match[1]) * (units[match[2] ?? ''] ?? 0);
}

/** --hour H (the hour [H, H+1h)) or --from/--to, not both. */
function rollbackHoursOf(options: EtlRollbackOptions): { from: Date; to: Date } {
  if (options.hour !== undefined) {
    if (options.from !== undefined || options.to !== undefined) throw invalidFlag('--hour', options.hour, 'goes without --from and --to: give one hour with --hour, or the hours [--from, --to)');
    const hour = parseTimeFlag('--hour', options.hour);
    return { from: hour, to: new Date(hour.getTime() + HOUR_MS) };
  }
  if (options.from === undefined || options.to === undefined) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: 'etl rollback needs the hours to roll back: --hour H, or --from and --to (whole UTC hours, --to exclusive)', details: {} });
  }
  return { from: parseTimeFlag('--from', options.from), to: parseTimeFlag('--to', options.to) };
}

function parseVersionFlag(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) throw invalidFlag('--to-version', text, 'is not a version number: 1 is what runs loaded, each replay made the next (etl status lists them)');
  return Number(text);
}

function swapFailpoint(env: NodeJS.ProcessEnv): ((point: SwapFailpointName) => void) | undefined {
  const spec = env[FAILPOINT_VARIABLE];
  if (spec === undefined || spec === '') return undefined;
  return swapFailpointHook(parseSwapFailpoint(spec), () => process.kill(process.pid, 'SIGKILL'));
}

/**
 * An ISO time in UTC (`2026-11-29T10:00Z`, `2026-11-29T10:00:00+00:00`), or an hour key as `etl
 * status` prints it (`2026-11-29T10`, taken as UTC). A time without a zone is refused: it would be
 * read in the local zone of whichever machine runs the command.
 */
export function parseTimeFlag(flag: string, text: string): Date {
  const trimmed = text.trim();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(trimmed)) return new Date(`${trimmed}:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(trimmed)) {
    throw invalidFlag(flag, text, 'is not an ISO time with a zone; write e.g. 2026-11-29T10:00Z (UTC) or the hour as etl status prints it, 2026-11-29T10');
  }
  const time = new Date(trimmed);
  if (Number.isNaN(time.getTime())) throw invalidFlag(flag, text, 'is not a valid date and time');
  return time;
}

export function invalidFlag(flag: string, value: string, why: string): TributaryError {
  return new TributaryError({ code: 'CONFIG_INVALID', message: `${flag} ${JSON.stringify(value)} ${why}`, details: { flag, value } });
}
