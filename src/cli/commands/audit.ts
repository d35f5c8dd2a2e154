/**
 * `tributary audit report`: reads the audit topic of a cluster (normally the offline one, where the
 * mirror brings every online cluster's counts), reconciles one topic's counts per window and tier,
 * and prints the table or JSON. Windows with loss or duplicates are flagged, not an error: the
 * exit status is 0 whenever the report could be made.
 */
import { ClusterClient } from '../../client/cluster-client.js';
import { systemClock, type Clock } from '../../common/clock.js';
import { TributaryError } from '../../common/errors.js';
import { readAuditTopic } from '../../audit/read-audit-topic.js';
import { reconcile } from '../../audit/reconcile.js';
import { formatReport, REPORT_FORMATS, type ReportFormat } from '../../audit/report.js';
import { DEFAULT_LATENESS_MS } from '../../audit/windows.js';
import { RegistryClient } from '../../registry/client.js';
import { AvroDeserializer } from '../../registry/serde/deserializer.js';
import { securityOption } from '../../client/security-config.js';
import { isCompactedTopic } from '../../client/topic-configs.js';
import { commandSecurity } from '../command-security.js';
import type { CommandIo } from '../not-implemented.js';
import { registryClientOptions } from '../registry-client-options.js';

export interface AuditReportOptions {
  readonly bootstrapServer: string;
  readonly registry: string;
  readonly topic: string;
  readonly from: string;
  readonly to: string;
  readonly format: string;
  readonly latenessMs?: string;
  readonly commandConfig?: string;
}

export async function auditReport(io: CommandIo, options: AuditReportOptions, clock: Clock = systemClock): Promise<void> {
  const from = parseInstant('--from', options.from);
  const to = parseInstant('--to', options.to);
  if (from >= to) usage(`--from (${options.from}) must be before --to (${options.to})`);
  if (!(REPORT_FORMATS as readonly string[]).includes(options.format)) usage(`--format must be ${REPORT_FORMATS.join(' or ')}, not ${options.format}`);
  const latenessMs = options.latenessMs === undefined ? DEFAULT_LATENESS_MS : Number(options.latenessMs);
  if (!Number.isSafeInteger(latenessMs) || latenessMs < 0) usage(`--lateness-ms must be a whole number of milliseconds ≥ 0, not ${options.latenessMs}`);

  const deserializer = new AvroDeserializer(new RegistryClient(registryClientOptions(options.registry)));
  // Reading must not create the audit topic where it is missing.
  const cluster = await ClusterClient.connect({ bootstrap: options.bootstrapServer.split(','), clientId: 'tributary-audit-report', allowAutoTopicCreation: false, metadataRetries: 2, ...securityOption(commandSecurity(options.commandConfig)) });
  try {
    const contents = await readAuditTopic({ cluster, deserializer, topic: options.topic });
    const compacted = await isCompactedTopic(cluster, options.topic);
    const reconciliation = reconcile(contents.events, { topic: options.topic, from, to, now: clock.now(), latenessMs, compacted });
    io.writeOut(formatReport({ reconciliation, recordsRead: contents.recordsRead, undecodable: contents.undecodable }, options.format as ReportFormat));
  } finally {
    cluster.close();
  }
}

function parseInstant(flag: string, text: string): number {
  // A full date and time, so "2024-05-01" is not silently read as midnight UTC or local time.
  const instant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(instant)) usage(`${flag} must be an ISO-8601 date and time with a zone, e.g. 2024-05-01T10:00:00Z, not "${text}"`);
  return instant;
}

function usage(message: string): never {
  throw new TributaryError({ code: 'CONFIG_INVALID', message });
}
