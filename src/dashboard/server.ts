/**
 * The dashboard service: Bull Board at /queues for the BullMQ queues, and pages of ours (loads,
 * last runs, records per hour with completeness, audit completeness per window, consumer-group
 * lag), each with the JSON behind it under /api/. Server-rendered HTML: no frontend build.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type RawServerDefault } from 'fastify';
import { Redis } from 'ioredis';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { auditView, type AuditQuery } from './audit-view.js';
import { mountBullBoard } from './bull-board.js';
import { groupsView } from './groups-view.js';
import { loadsView } from './loads-view.js';
import { queuesView } from './queues-view.js';
import type { DashboardSources } from './sources.js';
import { securityOption, type ClientSecurity } from '../client/security-config.js';
import { AuditSource } from './sources/audit-source.js';
import { GroupSource } from './sources/group-source.js';
import { DEFAULT_PREFIX, QueueSource } from './sources/queue-source.js';
import { auditPage } from './views/audit-page.js';
import { groupsPage } from './views/groups-page.js';
import type { Html } from './views/html.js';
import { loadsPage } from './views/loads-page.js';

export interface DashboardOptions {
  readonly host: string;
  /** 0 = any free port (see `url`). */
  readonly port: number;
  /** redis://[user:password@]host:port[/db] of the BullMQ queues. */
  readonly redis: string;
  /** BullMQ key prefix; default `bull`, BullMQ's. */
  readonly prefix?: string;
  /** Queues to show even before Redis holds them; the others are found in Redis. */
  readonly queues?: readonly string[];
  /** Folder of the load files. */
  readonly loads?: string;
  /** ZooKeeper of the cluster whose consumer groups to show. */
  readonly zookeeper?: string;
  /** Brokers of the cluster whose `_audit` topic to read; needs `registry`. */
  readonly bootstrapServers?: readonly string[];
  readonly registry?: string;
  /** TLS and SASL of every broker connection (audit counts, group lag). */
  readonly security?: ClientSecurity;
  /** Bull Board without its buttons that change jobs and queues. */
  readonly readOnly?: boolean;
  /** How long one source may take before its panel says so. Default 20 s. */
  readonly sourceTimeoutMs?: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface RunningDashboard {
  readonly url: string;
  close(): Promise<void>;
}

const DEFAULT_SOURCE_TIMEOUT_MS = 20_000;

export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  if ((options.bootstrapServers === undefined) !== (options.registry === undefined)) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message: 'the audit panels need both --bootstrap-server (the cluster holding _audit) and --registry (its schema registry); give both or neither',
    });
  }
  const logger = options.logger;
  const redis = connectRedis(options.redis, logger);
  const queues = new QueueSource(redis, options.prefix ?? DEFAULT_PREFIX, options.queues ?? [], logger);
  const groups = options.zookeeper === undefined ? undefined : new GroupSource(options.zookeeper, logger, options.security);
  const sources: DashboardSources = {
    loadsDirectory: options.loads,
    audit: options.bootstrapServers === undefined || options.registry === undefined ? undefined : new AuditSource({ bootstrap: options.bootstrapServers, registry: options.registry, logger, ...securityOption(options.security) }),
    groups,
    queues,
    timeoutMs: options.sourceTimeoutMs ?? DEFAULT_SOURCE_TIMEOUT_MS,
    now: options.now ?? Date.now,
    logger,
  };
  const closeSources = async (): Promise<void> => {
    await queues.close();
    await groups?.close();
    redis.disconnect();
  };

  let app: FastifyInstance | undefined;
  try {
    app = await createDashboardApp(sources, { readOnly: options.readOnly === true });
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await app?.close();
    await closeSources();
    throw new TributaryError({
      code: 'LISTEN_FAILED',
      message: `the dashboard cannot listen on ${options.host}:${options.port} (${(error as Error).message}); choose another --listen address`,
      cause: error,
    });
  }
  const { port } = app.server.address() as AddressInfo;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  logger.info({ url }, 'dashboard listening');
  const running = app;
  let closing: Promise<void> | undefined;
  return {
    url,
    close: () => {
      closing ??= running.close().then(closeSources);
      return closing;
    },
  };
}

/** The routes over `sources`, not yet listening (tests may `inject`). */
export async function createDashboardApp(sources: DashboardSources, options: { readonly readOnly: boolean }): Promise<FastifyInstance> {
  // Typed as the default instance: pino's Logger is a FastifyBaseLogger with other generic parameters.
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: sources.logger,
    // Bull Board polls every few seconds; a log line per request would drown everything else.
    logController: new LogController({ disableRequestLogging: true }),
  });
  const sendPage = (reply: FastifyReply, page: Html): FastifyReply => reply.type('text/html; charset=utf-8').send(page.text);

  app.get('/api/health', async () => ({ ok: true }));
  app.get('/api/loads', async () => loadsView(sources));
  app.get('/api/queues', async () => queuesView(sources));
  app.get('/api/groups', async () => groupsView(sources));
  app.get('/api/audit', async (request, reply) => {
    const view = await auditView(sources, auditQuery(request.query));
    return reply.status(!view.ok && view.error.source === 'the requested range' ? 400 : 200).send(view);
  });

  app.get('/', async (_request, reply) => {
    const [loads, queues] = await Promise.all([loadsView(sources), queuesView(sources)]);
    return sendPage(reply, loadsPage(loads, queues));
  });
  app.get('/audit', async (request, reply) => {
    const query = auditQuery(request.query);
    return sendPage(reply, auditPage(await auditView(sources, query), query));
  });
  app.get('/groups', async (_request, reply) => sendPage(reply, groupsPage(await groupsView(sources))));

  await mountBullBoard(app, sources.queues, { readOnly: options.readOnly, logger: sources.logger });
  return app;
}

/** `?topic=a&topic=b` or `?topic=a,b`, and the range. */
function auditQuery(query: unknown): AuditQuery {
  const fields = (query ?? {}) as Record<string, string | string[] | undefined>;
  const list = (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat());
  const single = (value: string | string[] | undefined): string | undefined => list(value)[0];
  const from = single(fields['from']);
  const to = single(fields['to']);
  return {
    topics: list(fields['topic']).flatMap((value) => value.split(',')).map((topic) => topic.trim()).filter((topic) => topic !== ''),
    ...(from === undefined ? {} : { from }),
    ...(to === undefined ? {} : { to }),
  };
}

function connectRedis(url: string, logger: Logger): Redis {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `--redis must be a Redis URL such as redis://127.0.0.1:6379 (or rediss:// for TLS), not "${url}"` });
  }
  // One retry per command: with Redis down a panel fails in seconds instead of waiting for it.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 10_000 });
  let down = false;
  redis.on('error', (error: Error) => {
    if (!down) logger.warn({ err: error, redis: `${parsed.host}` }, 'Redis connection failed; retrying');
    down = true;
  });
  redis.on('ready', () => {
    if (down) logger.info({ redis: `${parsed.host}` }, 'Redis connection back');
    down = false;
  });
  return redis;
}
