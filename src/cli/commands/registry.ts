/**
 * `tributary registry start`: one schema registry instance (Confluent-compatible REST) in the
 * foreground. Prints its URL on stdout (logs go to stderr) and runs until SIGTERM or SIGINT,
 * which close it cleanly (exit 0).
 */
import { z } from 'zod';
import { hostPortSchema, logLevelSchema, parseConfig, zookeeperConnectSchema } from '../../common/config.js';
import { createLogger } from '../../common/logger.js';
import type { CommandIo } from '../not-implemented.js';

export interface RegistryStartOptions {
  readonly listen: string;
  readonly zookeeper?: string;
  readonly dataDir?: string;
  readonly logLevel: string;
}

const flagsSchema = z.object({
  listen: hostPortSchema,
  zookeeper: zookeeperConnectSchema.optional(),
  dataDir: z.string().min(1).optional(),
  logLevel: logLevelSchema,
});

export async function startRegistry(io: CommandIo, options: RegistryStartOptions): Promise<void> {
  const flags = parseConfig(flagsSchema, options, 'the command line');
  const at = flags.listen.lastIndexOf(':');
  const logger = createLogger({ name: 'registry', level: flags.logLevel });
  // Loaded here, not at the top: fastify and avsc would slow every other tributary command's start.
  const { startRegistryServer } = await import('../../registry/server.js');
  const registry = await startRegistryServer({
    host: flags.listen.slice(0, at).replace(/^\[|\]$/g, ''),
    port: Number(flags.listen.slice(at + 1)),
    zookeeper: flags.zookeeper,
    dataDir: flags.dataDir,
    logger,
  });
  io.writeOut(`${registry.url}\n`);
  // A failed close rejects, so the command ends with status 1 and says why.
  await new Promise<void>((resolve, reject) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'signal received; stopping');
      registry
        .close()
        .then(() => logger.flush())
        .then(resolve, reject);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
