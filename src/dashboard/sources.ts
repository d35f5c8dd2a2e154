/** What the dashboard reads, as the command line configured it; absent sources show as NOT_CONFIGURED. */
import type { Logger } from '../common/logger.js';
import type { AuditSource } from './sources/audit-source.js';
import type { GroupSource } from './sources/group-source.js';
import type { QueueSource } from './sources/queue-source.js';

export interface DashboardSources {
  /** The folder of load files (--loads). */
  readonly loadsDirectory: string | undefined;
  readonly audit: AuditSource | undefined;
  readonly groups: GroupSource | undefined;
  readonly queues: QueueSource;
  /** How long one source may take before its panel says so. */
  readonly timeoutMs: number;
  readonly now: () => number;
  readonly logger: Logger;
}
