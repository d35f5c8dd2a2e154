/**
 * `tributary dashboard`: Bull Board for the BullMQ queues plus Tributary's own pages (loads, last
 * runs, records per hour with completeness, audit completeness, consumer-group lag) in one HTTP
 * server. Prints its URL on stdout (logs go to stderr) and runs until SIGTERM or SIGINT.
 */
import { z } from 'zod';
import { hostPortSchema, logLevelSchema, parseConfig, zookeeperConnectSchema } from '../../common/config.js';
import { createLogger } from '../../common/logger.js';
import { securityOption } from '../../client/security-config.js';
import { commandSecurity } from '../command-security.js';
import type { CommandIo } from '../not-implemented.js';

export interface DashboardCommandOptions {
  readonly listen: string;
  readonly redis: string;
  readonly prefix?: string;
  readonly queue: string[];
  readonly loads?: string;
  readonly zookeeper?: string;
  readonly bootstrapServer?: string;
  readonly registry?: string;
  readonly commandConfig?: string;
  readonly readOnly?: boolean;
  readonly logLevel: string;
}

const flagsSchema = z.object({
  listen: hostPortSchema,
  redis: z.string().min(1),
  prefix: z.string().regex(/^[^:\s]+$/, 'a BullMQ prefix has no spaces or ":"').optional(),
  queue: z.array(z.string().regex(/^[^:\s]+$/, 'a BullMQ queue name has no spaces or ":"')),
  loads: z.string().min(1).optional(),
  zookeeper: zookeeperConnectSchema.optional(),
  bootstrapServer: z.string().refine((text) => text.split(',').every((part) => hostPortSchema.safeParse(part.trim()).success), 'expected HOST:PORT[,HOST:PORT…]').optional(),
  registry: z.url({ protocol: /^https?$/, error: 'expected the registry URL, e.g. http://127.0.0.1:8081' }).optional(),
  readOnly: z.boolean().optional(),
  logLevel: logLevelSchema,
});

export async function startDashboardCommand(io: CommandIo, options: DashboardCommandOptions): Promise<void> {
  const flags = parseConfig(flagsSchema, options, 'the command line');
  const at = flags.listen.lastIndexOf(':');
  const logger = createLogger({ name: 'dashboard', level: flags.logLevel });
  // Loaded here, not at the top: fastify, Bull Board and BullMQ would slow every other command's start.
  const { startDashboard } = await import('../../dashboard/server.js');
  const dashboard = await startDashboard({
    host: flags.listen.slice(0, at).replace(/^\[|\]$/g, ''),
    port: Number(flags.listen.slice(at + 1)),
    redis: flags.redis,
    queues: flags.queue,
    ...(flags.prefix === undefined ? {} : { prefix: flags.prefix }),
    ...(flags.loads === undefined ? {} : { loads: flags.loads }),
    ...(flags.zookeeper === undefined ? {} : { zookeeper: flags.zookeeper }),
    ...(flags.bootstrapServer === undefined ? {} : { bootstrapServers: flags.bootstrapServer.split(',').map((part) => part.trim()) }),
    ...(flags.registry === undefined ? {} : { registry: flags.registry }),
    readOnly: flags.readOnly === true,
    ...securityOption(commandSecurity(options.commandConfig)),
    logger,
  });
  io.writeOut(`${dashboard.url}\n`);
  // A failed close rejects, so the command ends with status 1 and says why.
  await new Promise<void>((resolve, reject) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'signal received; stopping');
      dashboard
        .close()
        .then(() => logger.flush())
        .then(resolve, reject);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
