/**
 * `tributary demo`, the embedded default (issue #10): the whole pipeline in this process with no
 * external service, on the real components —
 *
 *   standalone broker + registry (file store) ▸ register PageViewEvent and AuditCount ▸ create the
 *   topic ▸ produce sample page views over 3 past hours (origin header, PRODUCER-tier counts,
 *   acks=-1) ▸ write a load file ▸ one run of the loader into a local warehouse folder (Avro,
 *   Parquet, or an Iceberg table with --format), counting the commit at the LOADER tier ▸ list the
 *   hour folders (and, for Iceberg, the table) ▸ reconcile the audit counts.
 *
 * The stack is left running for the caller, which prints the result and stops it (or keeps it up
 * with --keep-running); on a failure it is stopped here before the error goes up.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AUDIT_SUBJECT, auditCountSchema } from '../audit/audit-count.js';
import { AuditedProducer } from '../audit/audited-producer.js';
import { ORIGIN_HEADER } from '../audit/origin.js';
import { readAuditTopic } from '../audit/read-audit-topic.js';
import { reconcile, type Reconciliation } from '../audit/reconcile.js';
import { formatReport } from '../audit/report.js';
import { DEFAULT_LATENESS_MS } from '../audit/windows.js';
import { ClusterClient } from '../client/cluster-client.js';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { openLoadAudit } from '../etl/completeness/load-audit.js';
import { readLoadFile } from '../etl/load-file.js';
import type { Manifest } from '../etl/load/manifest.js';
import { runLoad } from '../etl/load/run.js';
import { KafkaLoadSource } from '../etl/load/source.js';
import { openWarehouse } from '../etl/warehouse/open-warehouse.js';
import { CreateTopicsApi } from '../protocol/apis/create-topics.js';
import { kafkaErrorName } from '../protocol/kafka-errors.js';
import { RegistryClient } from '../registry/client.js';
import { loadRegistryClient } from '../etl/load-registry.js';
import { AvroDeserializer } from '../registry/serde/deserializer.js';
import { AvroSerializer } from '../registry/serde/serializer.js';
import { startEmbeddedStack, type EmbeddedStack } from './embedded-stack.js';
import { pastHours, samplePageViews, type EventHours } from './sample-events.js';
import { listHourFolders, type HourFolder } from './hour-folders.js';
import { findIcebergTables, type IcebergTableFound } from '../etl/tables/iceberg-registration.js';

export const DEMO_TOPIC = 'page-views';
export const DEMO_LOAD = 'page-views';
export const DEMO_PARTITIONS = 4;
export const DEMO_HOURS = 3;
/** The events' last hour ends this long before now, so every audit window is closed (5 min) with room. */
const CLOSED_AFTER_MS = DEFAULT_LATENESS_MS + 60_000;

export interface DemoOptions {
  /** An empty folder that the demo fills (broker/, registry/, warehouse/, page-views.yaml). */
  readonly dir: string;
  readonly events: number;
  /** Component logs (pino JSON on stderr). */
  readonly logger: Logger;
  /** One line of progress for people. */
  readonly progress: (line: string) => void;
  readonly now?: () => number;
  /** What the load writes (default avro). */
  readonly format?: DemoFormat;
}

export type DemoFormat = 'avro' | 'parquet' | 'iceberg';
export const DEMO_FORMATS: readonly DemoFormat[] = ['avro', 'parquet', 'iceberg'];

export interface DemoResult {
  /** Still running: stop it, or keep it up for the user. */
  readonly stack: EmbeddedStack;
  readonly hours: EventHours;
  readonly produced: number;
  readonly loadFile: string;
  readonly warehouseDir: string;
  readonly manifest: Manifest;
  readonly folders: readonly HourFolder[];
  readonly reconciliation: Reconciliation;
  /** The audit report as `tributary audit report --format table` prints it. */
  readonly auditReport: string;
  /** With --format iceberg: the table the load made. */
  readonly icebergTables?: readonly IcebergTableFound[];
}

export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const now = options.now ?? Date.now;
  const { progress, logger, dir } = options;
  const stack = await startEmbeddedStack(dir, logger);
  try {
    progress(`broker 0 listening on ${stack.bootstrap} (standalone, data in ${stack.brokerDir})`);
    progress(`schema registry at ${stack.registryUrl} (file store in ${stack.registryDir})`);
    const registry = new RegistryClient({ url: stack.registryUrl, logger });
    const pageViewSchema = await readFile(new URL('../../schemas/PageViewEvent.avsc', import.meta.url), 'utf8');
    const pageViewId = (await registry.register(`${DEMO_TOPIC}-value`, pageViewSchema)).id;
    const auditId = (await registry.register(AUDIT_SUBJECT, auditCountSchema().text)).id;
    progress(`registered PageViewEvent under ${DEMO_TOPIC}-value (id ${pageViewId}) and AuditCount under ${AUDIT_SUBJECT} (id ${auditId})`);

    const cluster = await ClusterClient.connect({ bootstrap: [stack.bootstrap], clientId: 'tributary-demo', logger });
    try {
      await createTopic(cluster, DEMO_TOPIC, DEMO_PARTITIONS);
      progress(`created topic ${DEMO_TOPIC} with ${DEMO_PARTITIONS} partitions`);

      const hours = pastHours(now(), DEMO_HOURS, CLOSED_AFTER_MS);
      const produced = await produceSample(stack, registry, pageViewSchema, options.events, hours, logger);
      progress(`produced ${produced} page views created ${iso(hours.from)} – ${iso(hours.to)} (acks=-1, origin header per server); PRODUCER audit counts published`);

      const loadFile = join(dir, `${DEMO_LOAD}.yaml`);
      const warehouseDir = join(dir, 'warehouse');
      const format = options.format ?? 'avro';
      await writeFile(loadFile, loadFileText(stack, format), 'utf8');
      const manifest = await loadOnce(stack, loadFile, logger);
      progress(`loaded commit ${manifest.seq} into ${warehouseDir}: ${manifest.files.length} ${format === 'iceberg' ? 'Parquet files and a snapshot of the Iceberg table' : `${format} files`}; LOADER audit counts published`);

      const folders = await listHourFolders(openWarehouse(warehouseDir), DEMO_TOPIC, manifest);
      const icebergTables = format === 'iceberg' ? await findIcebergTables(await readLoadFile(loadFile), openWarehouse(warehouseDir)) : undefined;
      const contents = await readAuditTopic({ cluster, deserializer: new AvroDeserializer(registry), topic: DEMO_TOPIC });
      const reconciliation = reconcile(contents.events, { topic: DEMO_TOPIC, from: hours.from, to: hours.to, now: now(), latenessMs: DEFAULT_LATENESS_MS });
      const auditReport = formatReport({ reconciliation, recordsRead: contents.recordsRead, undecodable: contents.undecodable }, 'table');
      return { stack, hours, produced, loadFile, warehouseDir, manifest, folders, reconciliation, auditReport, ...(icebergTables === undefined ? {} : { icebergTables }) };
    } finally {
      cluster.close();
    }
  } catch (error) {
    await stack.stop().catch((stopError: unknown) => logger.error({ err: stopError }, 'the demo stack did not stop cleanly after a failure'));
    throw error;
  }
}

/** Windows whose LOADER tier is not complete (or not final): empty when the demo did its job. */
export function auditShortfalls(reconciliation: Reconciliation): string[] {
  const problems: string[] = [];
  if (reconciliation.windows.length === 0) problems.push('no audit windows were counted');
  for (const window of reconciliation.windows) {
    const loader = window.tiers.find((tier) => tier.tier === 'LOADER');
    const status = loader?.status ?? 'no LOADER count';
    if (status !== 'OK') problems.push(`window ${iso(window.windowStart)}: ${status} (produced ${window.produced}, loaded ${loader?.received ?? 0})`);
  }
  return problems;
}

async function createTopic(cluster: ClusterClient, topic: string, partitions: number): Promise<void> {
  const broker = cluster.knownBrokers()[0];
  if (broker === undefined) throw new TributaryError({ code: 'BROKER_NOT_AVAILABLE', message: 'the demo broker named no brokers in its metadata' });
  const connection = await cluster.connectionTo(broker.nodeId);
  const response = await connection.request(CreateTopicsApi, 4, {
    topics: [{ name: topic, numPartitions: partitions, replicationFactor: -1, assignments: [], configs: [] }],
    timeoutMs: 30_000,
    validateOnly: false,
  });
  const result = response.topics[0];
  if (result === undefined || result.errorCode !== 0) {
    const why = result === undefined ? 'no answer for the topic' : `${kafkaErrorName(result.errorCode)}${result.errorMessage === null ? '' : `: ${result.errorMessage}`}`;
    throw new TributaryError({ code: 'DEMO_FAILED', message: `the demo could not create topic ${topic} (${why})` });
  }
}

async function produceSample(stack: EmbeddedStack, registry: RegistryClient, schema: string, count: number, hours: EventHours, logger: Logger): Promise<number> {
  const serializer = new AvroSerializer(registry, { autoRegister: false });
  const producer = await AuditedProducer.connect({ bootstrap: [stack.bootstrap], registry, acks: -1, clientId: 'tributary-demo-producer', logger, audit: { publishIntervalMs: 0 } });
  try {
    const records = [];
    for (const event of samplePageViews(count, hours)) {
      records.push({
        // Keyed by member, so one member's views stay in order on one partition; visitors spread round-robin.
        key: event.memberId === null ? null : Buffer.from(String(event.memberId)),
        value: await serializer.encode(`${DEMO_TOPIC}-value`, event, schema),
        timestamp: event.header.time,
        headers: [{ key: ORIGIN_HEADER, value: Buffer.from(event.header.server) }],
      });
    }
    const acknowledged = await producer.send(DEMO_TOPIC, records);
    await producer.flush();
    return acknowledged.length;
  } finally {
    await producer.close();
  }
}

function loadFileText(stack: EmbeddedStack, format: DemoFormat): string {
  return [
    '# Written by `tributary demo`: the page-view load of jobs/page-views.yaml, into a local folder.',
    `# Try: npx tributary etl status --load ${DEMO_LOAD}.yaml (from this folder)`,
    `name: ${DEMO_LOAD}`,
    `source: { bootstrap: [${stack.bootstrap}] }`,
    `topics: [${DEMO_TOPIC}]`,
    `registry: ${stack.registryUrl}`,
    '# A plain path is a local folder, relative to this file.',
    "warehouse: { url: warehouse, root: '' }",
    ...(format === 'iceberg' ? ['# An Iceberg v2 table per topic: warehouse/page-views/{metadata,data}; `etl ddl` says how engines find it.'] : []),
    `format: ${format}`,
    `codec: ${format === 'avro' ? 'deflate' : 'zstd'}`,
    'timeField: header.time',
    'maxRecordsPerRun: 1000000',
    'quarantine: { maxRecords: 0 }',
    'latenessHorizon: 2h',
    '# Count each commit at the LOADER tier of the audit, into _audit of the source cluster.',
    'audit: { topic: _audit }',
    '',
  ].join('\n');
}

async function loadOnce(stack: EmbeddedStack, loadFile: string, logger: Logger): Promise<Manifest> {
  const load = await readLoadFile(loadFile);
  const warehouse = openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger });
  const registry = loadRegistryClient(load, logger, {});
  // The load file's audit section: the run counts its commit at the LOADER tier (etl/audit-tier.ts).
  const audit = openLoadAudit(load, registry, logger, { cluster: 'demo' });
  const source = await KafkaLoadSource.connect(load.source.bootstrap, logger);
  try {
    const report = await runLoad({
      load,
      warehouse,
      source,
      registry,
      logger,
      audit,
      acceptGap: false,
      store: stack.coordinationSession(),
      // The standalone store is kept in a file, so run numbers outlive this process.
      numberRuns: true,
    });
    if (report.manifest === undefined || report.problems.length > 0) {
      const why = report.problems.map((problem) => problem.message).join('; ') || 'the loader found nothing to load';
      throw new TributaryError({ code: 'DEMO_FAILED', message: `the demo's load did not commit everything: ${why}` });
    }
    const failed = report.audit?.tier.failed;
    if (failed !== undefined) throw new TributaryError({ code: 'DEMO_FAILED', message: `the demo's LOADER audit counts were not published: ${failed.error.message}`, cause: failed.error });
    return report.manifest;
  } finally {
    source.close();
    await audit?.close();
  }
}

function iso(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace(':00.000Z', 'Z');
}
