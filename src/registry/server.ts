/**
 * The schema registry service: Confluent Schema Registry's REST API (the routes real clients
 * call; reference/schema-registry.md §1) over a RegistryState, served by fastify.
 */
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RawServerDefault } from 'fastify';
import { TributaryError } from '../common/errors.js';
import { createLogger, type Logger } from '../common/logger.js';
import { compatibilityRoutes } from './routes/compatibility.js';
import { configRoutes } from './routes/config.js';
import { installHttpConventions } from './routes/http.js';
import { schemaRoutes } from './routes/schemas.js';
import { subjectRoutes } from './routes/subjects.js';
import { openRegistryStorage } from './store/open-storage.js';
import type { RegistryState } from './store/registry-state.js';

/** Room for a schema near the store's 1 MB node limit, JSON-escaped inside a request body. */
const BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Subjects are path parameters; find-my-way's default cap (100) would turn long ones into 404s. */
const MAX_PARAM_LENGTH = 16_384;

export interface RunningRegistry {
  readonly url: string;
  close(): Promise<void>;
}

export interface RegistryServerOptions {
  readonly host: string;
  /** 0 = any free port (see `url`). */
  readonly port: number;
  /** ZooKeeper connect string: state under /schemas, shared by any number of instances. */
  readonly zookeeper?: string | undefined;
  /** Local file store in this directory: one instance. Exactly one of zookeeper/dataDir. */
  readonly dataDir?: string | undefined;
  readonly logger?: Logger | undefined;
}

/** The REST API over `state`, not yet listening (tests use `inject`). */
export function createRegistryApp(state: RegistryState, logger: Logger): FastifyInstance {
  // Typed as the default instance: pino's Logger is a FastifyBaseLogger with other generic parameters.
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: logger,
    // Failures are logged by the error handler; a line per request would drown them.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
  });
  installHttpConventions(app);
  app.get('/', async () => ({}));
  app.post('/', async () => ({}));
  subjectRoutes(app, state);
  schemaRoutes(app, state);
  configRoutes(app, state);
  compatibilityRoutes(app, state);
  return app;
}

export async function startRegistryServer(options: RegistryServerOptions): Promise<RunningRegistry> {
  const logger = options.logger ?? createLogger({ name: 'registry' });
  const storage = await openRegistryStorage({ zookeeper: options.zookeeper, dataDir: options.dataDir, logger });
  const app = createRegistryApp(storage.state, logger);
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await app.close();
    await storage.close();
    throw new TributaryError({
      code: 'LISTEN_FAILED',
      message: `the registry cannot listen on ${options.host}:${options.port} (${(error as Error).message}); choose another --listen address`,
      cause: error,
    });
  }
  const { port } = app.server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  logger.info({ url, state: storage.location }, 'schema registry listening');
  let closing: Promise<void> | undefined;
  return {
    url,
    close: () => {
      closing ??= app.close().then(() => storage.close());
      return closing;
    },
  };
}
