/**
 * `tributary mirror start`: the offline mirror as its own process. Pulls the whitelisted topics
 * of every `--source` cluster through a ZooKeeper consumer group and writes them into the target
 * (offline) cluster, until SIGTERM or SIGINT, which stop it cleanly: acknowledged records are
 * committed and the partitions released to the group (exit 0). A failure after which it cannot go
 * on safely ends it with status 1; nothing unacknowledged was committed, so a restart resumes.
 * While the offline cluster is unreachable a stop waits for its acknowledgements; SIGKILL is safe
 * then too (the uncommitted records are delivered again). Logs are JSON lines on stderr.
 */
import { createServer, type Server } from 'node:http';
import { z } from 'zod';
import { hostPortSchema, logLevelSchema, parseConfig, zookeeperConnectSchema } from '../../common/config.js';
import { TributaryError } from '../../common/errors.js';
import { createLogger } from '../../common/logger.js';
import { renderMetrics } from '../../common/metrics.js';
import { readCommandConfig } from '../../client/command-config.js';
import { parseMirrorSettings, readMirrorConfigFile, parseSourceFlag, resolveMirrorSecurity, type MirrorTargetAddress } from '../../mirror/config.js';
import { Mirror } from '../../mirror/mirror.js';
import type { CommandIo } from '../not-implemented.js';

export interface MirrorStartOptions {
  readonly source: readonly string[];
  readonly targetZookeeper?: string;
  readonly targetBootstrap?: string;
  readonly whitelist?: string;
  readonly blacklist?: string;
  readonly group?: string;
  readonly registry?: string;
  readonly config?: string;
  /** Client properties (security.protocol, sasl.*, ssl.*) for the target cluster's connections. */
  readonly commandConfig?: string;
  readonly set: readonly string[];
  readonly metrics?: string;
  readonly logLevel: string;
}

const flagsSchema = z.object({
  targetZookeeper: zookeeperConnectSchema.optional(),
  targetBootstrap: z.string().regex(/^[^,\s]+:\d{1,5}(,[^,\s]+:\d{1,5})*$/, 'expected HOST:PORT[,HOST:PORT…]').optional(),
  metrics: hostPortSchema.optional(),
  logLevel: logLevelSchema,
});

export async function startMirror(io: CommandIo, options: MirrorStartOptions): Promise<void> {
  const flags = parseConfig(flagsSchema, options, 'the command line');
  const target = targetAddress(flags.targetZookeeper, flags.targetBootstrap);
  const settings = parseMirrorSettings(settingsInput(options), options.config === undefined ? 'the command line' : `${options.config} and the command line`);
  const security = resolveMirrorSecurity(settings, process.env, options.commandConfig === undefined ? undefined : readCommandConfig(options.commandConfig, process.env));
  const logger = createLogger({ name: 'mirror', level: flags.logLevel });

  let failure: Error | undefined;
  let wake: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (wake = resolve));
  // Serving first: a start that waits for the group (a predecessor's partitions) is visible in the metrics.
  const metricsServer = flags.metrics === undefined ? undefined : await serveMetrics(flags.metrics);
  const mirror = await Mirror.start({
    settings,
    security,
    target,
    logger,
    onFatal: (error) => {
      failure ??= error;
      wake();
    },
  });
  io.writeOut(`mirroring ${JSON.stringify(mirror.topics())} in group ${settings.group}\n`);
  const onSignal = (signal: string): void => {
    logger.info({ signal }, 'signal received; stopping');
    wake();
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  await finished;
  await mirror.stop();
  await new Promise<void>((resolve) => (metricsServer === undefined ? resolve() : metricsServer.close(() => resolve())));
  logger.flush();
  if (failure !== undefined) {
    throw new TributaryError({ code: 'MIRROR_FAILED', message: `the mirror stopped after a failure: ${failure.message}`, cause: failure });
  }
}

/** The settings file (if any) overlaid with the flags given. */
function settingsInput(options: MirrorStartOptions): Record<string, unknown> {
  const input: Record<string, unknown> = options.config === undefined ? {} : readMirrorConfigFile(options.config);
  if (options.source.length > 0) input['sources'] = options.source.map(parseSourceFlag);
  if (options.whitelist !== undefined) input['whitelist'] = options.whitelist;
  if (options.blacklist !== undefined) input['blacklist'] = options.blacklist;
  if (options.group !== undefined) input['group'] = options.group;
  if (options.registry !== undefined) input['registry'] = options.registry;
  for (const entry of options.set) {
    const at = entry.indexOf('=');
    if (at <= 0) throw new TributaryError({ code: 'CONFIG_INVALID', message: `--set takes name=value (e.g. commitIntervalMs=500), not "${entry}"` });
    input[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return input;
}

function targetAddress(zookeeper: string | undefined, bootstrap: string | undefined): MirrorTargetAddress {
  if ((zookeeper === undefined) === (bootstrap === undefined)) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: 'name the offline cluster with exactly one of --target-zookeeper HOST:PORT/chroot or --target-bootstrap HOST:PORT[,…]' });
  }
  return zookeeper !== undefined ? { zookeeper } : { bootstrap: (bootstrap ?? '').split(',') };
}

async function serveMetrics(address: string): Promise<Server> {
  const at = address.lastIndexOf(':');
  const server = createServer((request, response) => {
    if (request.url !== '/metrics') {
      response.writeHead(404).end('see /metrics\n');
      return;
    }
    renderMetrics()
      .then(({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body))
      .catch(() => response.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(Number(address.slice(at + 1)), address.slice(0, at).replace(/^\[|\]$/g, ''), resolve));
  return server;
}
