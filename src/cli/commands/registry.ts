/**
 * `tributary registry start`: one schema registry instance (Confluent-compatible REST) in the
 * foreground. Prints its URL on stdout (logs go to stderr) and runs until SIGTERM or SIGINT,
 * which close it cleanly (exit 0). SIGHUP re-reads the TLS files and the users file.
 *
 * Security flags: `--tls-cert FILE` (PEM chain, may hold the key too) `--tls-key FILE`
 * `--tls-key-password-file FILE` `--tls-ca FILE` `--tls-client-auth none|requested|required`
 * serve HTTPS; `--users-file FILE` requires basic authentication (lines made by `user-line`).
 */
import { z } from 'zod';
import { hostPortSchema, logLevelSchema, parseConfig, zookeeperConnectSchema } from '../../common/config.js';
import { TributaryError } from '../../common/errors.js';
import { createLogger } from '../../common/logger.js';
import type { CommandIo } from '../not-implemented.js';

export interface RegistryStartOptions {
  readonly listen: string;
  readonly zookeeper?: string;
  readonly dataDir?: string;
  readonly logLevel: string;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly tlsKeyPasswordFile?: string;
  readonly tlsCa?: string;
  readonly tlsClientAuth?: string;
  readonly usersFile?: string;
}

const flagsSchema = z.object({
  listen: hostPortSchema,
  zookeeper: zookeeperConnectSchema.optional(),
  dataDir: z.string().min(1).optional(),
  logLevel: logLevelSchema,
  tlsCert: z.string().min(1).optional(),
  tlsKey: z.string().min(1).optional(),
  tlsKeyPasswordFile: z.string().min(1).optional(),
  tlsCa: z.string().min(1).optional(),
  tlsClientAuth: z.enum(['none', 'requested', 'required']).optional(),
  usersFile: z.string().min(1).optional(),
});

export async function startRegistry(io: CommandIo, options: RegistryStartOptions): Promise<void> {
  const flags = parseConfig(flagsSchema, options, 'the command line');
  if (flags.tlsCert === undefined && (flags.tlsKey ?? flags.tlsCa ?? flags.tlsKeyPasswordFile ?? flags.tlsClientAuth) !== undefined) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: '--tls-key, --tls-ca, --tls-key-password-file and --tls-client-auth go with --tls-cert FILE (the HTTPS certificate)' });
  }
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
    tls:
      flags.tlsCert === undefined
        ? undefined
        : { certFile: flags.tlsCert, keyFile: flags.tlsKey, keyPasswordFile: flags.tlsKeyPasswordFile, caFile: flags.tlsCa, clientAuth: flags.tlsClientAuth },
    usersFile: flags.usersFile,
  });
  if (flags.usersFile === undefined) logger.warn('no --users-file: anyone who reaches the registry may register, delete and change its configuration');
  else if (flags.tlsCert === undefined) logger.warn('--users-file without --tls-cert: clients send their passwords in clear over HTTP');
  io.writeOut(`${registry.url}\n`);
  const reload = (): void => {
    logger.info({ signal: 'SIGHUP' }, 'signal received; reloading certificates and users');
    void registry.reload();
  };
  process.on('SIGHUP', reload);
  // A failed close rejects, so the command ends with status 1 and says why.
  await new Promise<void>((resolve, reject) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'signal received; stopping');
      registry
        .close()
        .then(() => logger.flush())
        .then(resolve, reject);
    };
    process.once('SIGTERM', () => {
      process.off('SIGHUP', reload);
      stop('SIGTERM');
    });
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
