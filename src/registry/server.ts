/**
 * The schema registry service: Confluent Schema Registry's REST API (the routes real clients
 * call; reference/schema-registry.md §1) over a RegistryState, served by fastify.
 *
 * Optionally over HTTPS (registry-tls.ts) and behind HTTP basic authentication with roles
 * (auth/): `reload()` re-reads the certificates and the users file without dropping connections.
 */
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RawServerDefault } from 'fastify';
import { TributaryError } from '../common/errors.js';
import { createLogger, type Logger } from '../common/logger.js';
import { installAccessControl } from './auth/access-hook.js';
import { RegistryAuthenticator } from './auth/authenticator.js';
import { readRegistryTls, type RegistryTlsFiles } from './registry-tls.js';
import { compatibilityRoutes } from './routes/compatibility.js';
import { configRoutes } from './routes/config.js';
import { answerClientError, answerFrameworkError } from './routes/framework-errors.js';
import { installHttpConventions } from './routes/http.js';
import { schemaRoutes } from './routes/schemas.js';
import { subjectRoutes } from './routes/subjects.js';
import { openRegistryStorage } from './store/open-storage.js';
import type { RegistryState } from './store/registry-state.js';

/** Room for a schema near the store's 1 MB node limit, JSON-escaped inside a request body. */
const BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/**
 * A request whose body stops arriving (a Content-Length that lies, a slow client) is answered 408
 * and closed after this long; fastify's default waits forever and holds the connection.
 */
const REQUEST_TIMEOUT_MS = 60_000;
/** Subjects are path parameters; find-my-way's default cap (100) would turn long ones into 404s. */
const MAX_PARAM_LENGTH = 16_384;

export interface RunningRegistry {
  readonly url: string;
  /** Re-reads the TLS files and the users file (SIGHUP); false when one of them failed (logged, old kept). */
  reload(): Promise<boolean>;
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
  /** Serve HTTPS with these PEM files instead of HTTP. */
  readonly tls?: RegistryTlsFiles | undefined;
  /** Require HTTP basic authentication of the users in this file (auth/users-file.ts). */
  readonly usersFile?: string | undefined;
}

export interface RegistryAppSecurity {
  readonly https?: HttpsServerOptions;
  readonly authenticator?: RegistryAuthenticator;
}

/** The REST API over `state`, not yet listening (tests use `inject`). */
export function createRegistryApp(state: RegistryState, logger: Logger, security: RegistryAppSecurity = {}): FastifyInstance {
  // Typed as the default instance: pino's Logger is a FastifyBaseLogger with other generic parameters;
  // an HTTPS server is used through the same interface (fastify only calls what both have).
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: logger,
    // Failures are logged by the error handler; a line per request would drown them.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Bad URLs and unparsable requests get Confluent bodies too (framework-errors.ts).
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    requestTimeout: REQUEST_TIMEOUT_MS,
    // Node answers an HTTP/1.1 request without Host with a bare 400 of its own, no hook in
    // between: serve it instead, as a Confluent answer is owed to every request.
    http: { requireHostHeader: false },
    ...(security.https === undefined ? {} : ({ https: { ...security.https, requireHostHeader: false } } as object)),
  });
  installHttpConventions(app);
  if (security.authenticator !== undefined) installAccessControl(app, security.authenticator);
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
  // Bad certificates or users fail the start before any state is opened.
  const tls = options.tls === undefined ? undefined : await readRegistryTls(options.tls);
  const authenticator = options.usersFile === undefined ? undefined : new RegistryAuthenticator(options.usersFile, logger);
  const storage = await openRegistryStorage({ zookeeper: options.zookeeper, dataDir: options.dataDir, logger });
  const app = createRegistryApp(storage.state, logger, { ...(tls === undefined ? {} : { https: tls }), ...(authenticator === undefined ? {} : { authenticator }) });
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await app.close();
    await storage.close();
    authenticator?.close();
    throw new TributaryError({
      code: 'LISTEN_FAILED',
      message: `the registry cannot listen on ${options.host}:${options.port} (${(error as Error).message}); choose another --listen address`,
      cause: error,
    });
  }
  const { port } = app.server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `${tls === undefined ? 'http' : 'https'}://${host}:${port}`;
  authenticator?.watch();
  logger.info({ url, state: storage.location, users: authenticator?.userCount ?? 'no authentication' }, 'schema registry listening');
  let closing: Promise<void> | undefined;
  return {
    url,
    reload: async () => {
      let ok = (await authenticator?.reload()) ?? true;
      if (options.tls !== undefined) {
        try {
          (app.server as unknown as TlsServer).setSecureContext(await readRegistryTls(options.tls));
          logger.info({ cert: options.tls.certFile }, 'registry certificates reloaded');
        } catch (error) {
          ok = false;
          logger.error({ err: error }, 'registry certificates unreadable; keeping the ones loaded before');
        }
      }
      return ok;
    },
    close: () => {
      authenticator?.close();
      closing ??= app.close().then(() => storage.close());
      return closing;
    },
  };
}
