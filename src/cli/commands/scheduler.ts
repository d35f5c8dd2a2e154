/**
 * `tributary scheduler --redis URL --loads DIR`: keeps one BullMQ job scheduler per scheduled load
 * file in step with the folder (added, changed, removed) until SIGTERM or SIGINT. A load file that
 * is not valid is refused with its reason (logged) and changes nothing.
 */
import { z } from 'zod';
import { logLevelSchema, parseConfig } from '../../common/config.js';
import { createLogger } from '../../common/logger.js';
import { DEFAULT_QUEUE_PREFIX, QUEUE_NAMES, redisConnection } from '../../../jobs/src/queues.js';
import { startLoadScheduler, type SyncReport } from '../../../jobs/src/scheduler.js';
import type { CommandIo } from '../not-implemented.js';
import { redisCredentialsFrom } from '../service-credentials.js';

export interface SchedulerCommandOptions {
  readonly redis: string;
  readonly loads: string;
  readonly prefix?: string;
  readonly intervalMs?: string;
  readonly logLevel?: string;
}

const flagsSchema = z.object({
  loads: z.string().min(1),
  prefix: z.string().regex(/^[^:\s]+$/, 'a key prefix without ":" or spaces, e.g. bull').default(DEFAULT_QUEUE_PREFIX),
  intervalMs: z.coerce.number().int().min(100).default(30_000),
  logLevel: logLevelSchema.default('info'),
});

export async function runScheduler(io: CommandIo, options: SchedulerCommandOptions): Promise<void> {
  const connection = redisConnection(options.redis, '--redis', redisCredentialsFrom(process.env));
  const flags = parseConfig(flagsSchema, options, 'the command line');
  const logger = createLogger({ name: 'scheduler', level: flags.logLevel });
  const scheduler = await startLoadScheduler({ connection, prefix: flags.prefix, directory: flags.loads, intervalMs: flags.intervalMs, logger });
  try {
    const maintained = scheduler.initial.maintenance.upserts.length + scheduler.initial.maintenance.unchanged.length;
    io.writeOut(
      `scheduler: ${summary(scheduler.initial)} in ${scheduler.directory}; queue ${QUEUE_NAMES.runs}` +
        `${maintained === 0 ? '' : `, ${maintained} Iceberg maintenance schedule${maintained === 1 ? '' : 's'} on queue ${QUEUE_NAMES.maintenance}`} (prefix ${flags.prefix}); reading the folder on change and every ${flags.intervalMs} ms\n`,
    );
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    logger.info({ signal, event: 'scheduler-stopping' }, 'stopping');
  } finally {
    await scheduler.stop();
  }
}

function summary(report: SyncReport): string {
  const scheduled = report.upserts.length + report.unchanged.length;
  const refused = report.refusals.length + report.failed.length;
  return `${scheduled} load${scheduled === 1 ? '' : 's'} scheduled, ${report.removals.length} removed, ${refused} file${refused === 1 ? '' : 's'} refused`;
}
