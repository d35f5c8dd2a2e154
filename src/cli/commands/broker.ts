/**
 * `tributary broker start`: runs a broker in the foreground, logging JSON lines to stdout, until
 * SIGTERM or SIGINT, which stop it cleanly (exit 0). SIGHUP reloads the TLS listeners'
 * certificates (ssl.keystore.location, ssl.truststore.location) without a restart.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { Broker } from '../../broker/broker.js';
import { INTER_BROKER_PASSWORD_ENV } from '../../client/inter-broker-security.js';
import { parseBrokerConfig, parseProperties } from '../../broker/config.js';
import { hostPortSchema, parseConfig, zookeeperConnectSchema } from '../../common/config.js';
import { TributaryError } from '../../common/errors.js';
import { createLogger } from '../../common/logger.js';
import { renderMetrics } from '../../common/metrics.js';
import { MemoryCoordination } from '../../coordination/memory-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { readEmbeddedMirrorConfig, startEmbeddedMirror } from '../../mirror/embedded.js';
import { interBrokerListener, resolveListeners } from '../../broker/listeners.js';
import type { BrokerConfig } from '../../broker/config.js';
import type { SecurityProtocol } from '../../client/security-config.js';
import { z } from 'zod';
import { STANDALONE_STATE_FILE } from '../command-constants.js';

export { STANDALONE_STATE_FILE };

export interface BrokerStartOptions {
  readonly id: string;
  /** One PLAINTEXT listener; optional when the config sets `listeners`. */
  readonly listen?: string;
  readonly dataDir: string;
  readonly zookeeper?: string;
  readonly config?: string;
  readonly set: readonly string[];
  readonly metrics?: string;
  readonly advertisedHost?: string;
  readonly logLevel?: string;
  /** Run the offline mirror in this process, into this broker's cluster (YAML or JSON settings). */
  readonly mirrorConfig?: string;
}

const flagsSchema = z.object({
  id: z.coerce.number().int().min(0).max(2 ** 31 - 1),
  listen: hostPortSchema.optional(),
  dataDir: z.string().min(1),
  zookeeper: zookeeperConnectSchema.optional(),
  metrics: hostPortSchema.optional(),
});

function splitHostPort(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(':');
  return { host: value.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(value.slice(at + 1)) };
}

export async function startBroker(options: BrokerStartOptions): Promise<void> {
  const flags = parseConfig(flagsSchema, options, 'the command line');
  const properties: Record<string, string> = options.config === undefined ? {} : parseProperties(readFileSync(options.config, 'utf8'), options.config);
  for (const entry of options.set) {
    const at = entry.indexOf('=');
    if (at <= 0) throw new TributaryError({ code: 'CONFIG_INVALID', message: `--set takes key=value, not "${entry}"` });
    properties[entry.slice(0, at)] = entry.slice(at + 1);
  }
  const config = parseBrokerConfig(properties, options.config === undefined ? '--set flags' : `${options.config} and --set flags`);
  const logger = createLogger({ name: `broker-${flags.id}`, level: (options.logLevel ?? 'info') as 'info', destination: pino.destination({ fd: 1, sync: false }) });
  const mirrorSettings = options.mirrorConfig === undefined ? undefined : readEmbeddedMirrorConfig(options.mirrorConfig);

  let store: CoordinationStore;
  mkdirSync(flags.dataDir, { recursive: true });
  if (flags.zookeeper === undefined) {
    // Standalone: topics and their settings are kept beside the logs, so they survive a restart.
    store = new MemoryCoordination({ file: join(flags.dataDir, STANDALONE_STATE_FILE), logger }).session();
  } else {
    store = await ZooKeeperStore.connect(flags.zookeeper, { sessionTimeoutMs: config['zookeeper.session.timeout.ms'], logger });
  }
  if (flags.listen === undefined && (config.listeners ?? '').trim() === '') {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: 'give --listen HOST:PORT, or set listeners=NAME://host:port,… in the broker config' });
  }
  const listen = flags.listen === undefined ? undefined : splitHostPort(flags.listen);
  const interBrokerPassword = process.env[INTER_BROKER_PASSWORD_ENV];
  const broker = await Broker.start({
    id: flags.id,
    ...(listen === undefined ? {} : { listen }),
    ...(interBrokerPassword === undefined || interBrokerPassword === '' ? {} : { interBrokerSaslPassword: interBrokerPassword }),
    ...(options.advertisedHost === undefined ? {} : { advertisedHost: options.advertisedHost }),
    dataDir: flags.dataDir,
    config,
    store,
    logger,
  });
  let metricsServer: Server | undefined;
  if (flags.metrics !== undefined) {
    const address = splitHostPort(flags.metrics);
    metricsServer = createServer((request, response) => {
      if (request.url !== '/metrics') {
        response.writeHead(404).end('see /metrics\n');
        return;
      }
      renderMetrics()
        .then(({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body))
        .catch(() => response.writeHead(500).end());
    });
    await new Promise<void>((resolve) => metricsServer?.listen(address.port, address.host, resolve));
  }
  const mirror = mirrorSettings === undefined ? undefined : await startEmbeddedMirror(mirrorSettings, (protocol) => ownListener(broker, config, listen, options.advertisedHost, protocol), logger);
  // Certificate rotation: replace the PEM files, then `kill -HUP <pid>`.
  const reload = (): void => {
    logger.info({ signal: 'SIGHUP' }, 'signal received; reloading TLS certificates');
    broker.reloadCertificates().catch(() => {
      // Logged per listener by the broker; the old certificates stay in use.
    });
  };
  process.on('SIGHUP', reload);
  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'signal received; stopping');
      // The mirror first: its last commits wait for this broker's acknowledgements.
      (mirror?.stop() ?? Promise.resolve())
        .then(() => broker.stop())
        .then(() => new Promise<void>((done) => (metricsServer === undefined ? done() : metricsServer.close(() => done()))))
        .then(() => logger.flush?.())
        .then(resolve)
        .catch((error: unknown) => {
          logger.error({ err: error }, 'broker did not stop cleanly');
          process.exitCode = 1;
          resolve();
        });
    };
    process.once('SIGTERM', () => {
      process.off('SIGHUP', reload);
      stop('SIGTERM');
    });
    process.once('SIGINT', () => {
      process.off('SIGHUP', reload);
      stop('SIGINT');
    });
  });
}

/** `host:port` this broker advertises on a listener of `protocol`, the inter-broker one first: where its embedded mirror writes. */
function ownListener(broker: Broker, config: BrokerConfig, listen: { host: string; port: number } | undefined, advertisedHost: string | undefined, protocol: SecurityProtocol): string | undefined {
  const specs = resolveListeners(config, listen, advertisedHost);
  const preferred = interBrokerListener(config, specs);
  const spec = preferred.securityProtocol === protocol ? preferred : specs.find((candidate) => candidate.securityProtocol === protocol);
  const own = spec === undefined ? undefined : broker.advertisedAddress(spec.name);
  return own === undefined ? undefined : `${own.host.includes(':') ? `[${own.host}]` : own.host}:${own.port}`;
}
