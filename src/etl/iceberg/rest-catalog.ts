/**
 * A client of the Iceberg REST catalog (the REST spec v1, rest-catalog-open-api.yaml), for tables
 * whose engines find them through a catalog rather than by path. It speaks:
 *
 *   POST /v1/oauth/tokens      grant_type=client_credentials&client_id=…&client_secret=…&scope=…
 *                              → { access_token, token_type, expires_in? }   (only with a credential;
 *                              the token endpoint may be elsewhere: `oauth2-server-uri`)
 *   GET  /v1/config?warehouse=W
 *                              → { defaults: {…}, overrides: {…} }; the client's settings are
 *                              defaults ∪ ours ∪ overrides, of which `prefix` (`/v1/{prefix}/…`)
 *                              and `oauth2-server-uri` are used
 *   POST /v1/{prefix}/namespaces                       { namespace: [levels], properties: {} }
 *                              200 made, 409 exists already (both fine: create-if-absent)
 *   GET  /v1/{prefix}/namespaces/{ns}/tables/{table}   → { metadata-location, metadata, config? }
 *                              404: no such table
 *   POST /v1/{prefix}/namespaces/{ns}/tables           { name, location, schema, partition-spec,
 *                              write-order?, properties, stage-create: false } → as a load; the
 *                              table has format-version 2 (the spec's default for a new table)
 *   POST /v1/{prefix}/namespaces/{ns}/tables/{table}   { identifier, requirements, updates }
 *                              → { metadata-location, metadata }   (rest-updates.ts: the grammar)
 *
 * `{ns}` is the namespace's levels joined by the unit separator (0x1F), URL-encoded. Errors come
 * as `{ error: { message, type, code } }`. Commit answers: 200 made; 409 (CommitFailedException)
 * a requirement failed, nothing changed: reload and retry; 500, 502, 503, 504 or a lost answer:
 * the commit may or may not have landed (CommitStateUnknown). Then nothing may be cleaned up: the
 * next run reloads the table and looks for its commit id in main's history.
 *
 * JSON bodies are read with iceberg-json.ts so snapshot ids stay exact (BigInt). TLS: an https
 * URI; a private CA or client certificate through `tls` (node:https, the registry's transport).
 */
import { isDeepStrictEqual } from 'node:util';
import type { TributaryError } from '../../common/errors.js';
import { httpsTransport, type RegistryClientTls, type RegistryFetch } from '../../registry/https-transport.js';
import { etlError } from '../errors.js';
import { parseIcebergJson, stringifyIcebergJson } from './iceberg-json.js';
import { tableChanges, type TableChanges } from './rest-updates.js';
import { checkedTableMetadata, currentSchema, defaultSpec, type TableMetadata } from './table-metadata.js';
import { sameFileUri, type CommitOutcome, type LoadedTable, type TableCatalog } from './table-versions.js';

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** The scope Iceberg's Java client asks for when none is configured. */
export const DEFAULT_OAUTH2_SCOPE = 'catalog';
/** A token is renewed this long before it expires. */
const TOKEN_RENEW_MARGIN_MS = 60_000;

export interface RestCatalogOptions {
  /** The catalog's base URI, `http(s)://host:port[/path]`; requests go to `<uri>/v1/…`. */
  readonly uri: string;
  /** Sent to /v1/config as `?warehouse=`: which of the server's warehouses (many servers require one). */
  readonly warehouse?: string | undefined;
  /** A bearer token sent as is (no renewal). */
  readonly token?: string | undefined;
  /** OAuth2 client credentials `client_id:client_secret` (or a secret alone), exchanged for a token. */
  readonly credential?: string | undefined;
  /** The token request's scope. @defaultValue 'catalog' */
  readonly scope?: string | undefined;
  /** The token endpoint, if not the catalog's own `/v1/oauth/tokens` (or the server's `oauth2-server-uri`). */
  readonly oauth2ServerUri?: string | undefined;
  /** @defaultValue 30000 */
  readonly timeoutMs?: number | undefined;
  /** A private CA, a client certificate: requests then go through node:https. */
  readonly tls?: RegistryClientTls | undefined;
  /** The fetch to use (tests). Default: the global fetch, or node:https with `tls`. */
  readonly fetch?: RegistryFetch | undefined;
}

export interface TableIdentifier {
  readonly namespace: readonly string[];
  readonly name: string;
}

export interface LoadTableResult {
  readonly metadataLocation: string;
  readonly metadata: TableMetadata;
}

/** What a create-table request says (besides the name). */
export interface CreateTableRequest {
  readonly location: string;
  readonly schema: TableMetadata['schemas'][number];
  readonly 'partition-spec': NonNullable<ReturnType<typeof defaultSpec>>;
  readonly 'write-order'?: unknown;
  readonly properties: Readonly<Record<string, string>>;
}

export type RestCommitAnswer = { readonly outcome: 'committed'; readonly result: LoadTableResult } | { readonly outcome: 'conflict'; readonly reason: string };

interface Answer {
  readonly status: number;
  readonly text: string;
}

/** Socket errors raised before a request left this machine: nothing reached the server. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'ERR_TLS_CERT_ALTNAME_INVALID']);

export class RestCatalog {
  readonly uri: string;
  /** The `{prefix}` path segment(s) the server's config named, or '' for none. */
  readonly prefix: string;
  private readonly options: RestCatalogOptions;
  private readonly fetchImpl: RegistryFetch;
  private readonly timeoutMs: number;
  private tokenEndpoint: string;
  private token: { readonly value: string; readonly expiresAt: number } | undefined;

  private constructor(options: RestCatalogOptions, prefix: string, tokenEndpoint: string, fetchImpl: RegistryFetch) {
    this.options = options;
    this.uri = options.uri.replace(/\/+$/, '');
    this.prefix = prefix;
    this.tokenEndpoint = tokenEndpoint;
    this.fetchImpl = fetchImpl;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** Reads the catalog's configuration (GET /v1/config), after getting a token if a credential is given. */
  static async connect(options: RestCatalogOptions): Promise<RestCatalog> {
    const uri = options.uri.replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]/.test(uri)) {
      throw etlError('ETL_ICEBERG_CATALOG_FAILED', `Iceberg REST catalog URI ${JSON.stringify(options.uri)} is not an http:// or https:// URL; give the catalog's base URI (requests go to <uri>/v1/…)`, { details: { uri: options.uri } });
    }
    const fetchImpl = options.fetch ?? (options.tls === undefined ? fetch : httpsTransport(options.tls));
    const catalog = new RestCatalog(options, '', options.oauth2ServerUri ?? `${uri}/v1/oauth/tokens`, fetchImpl);
    const query = options.warehouse === undefined ? '' : `?warehouse=${encodeURIComponent(options.warehouse)}`;
    const config = await catalog.call('GET', `/v1/config${query}`, undefined, 'read its configuration');
    if (!ok(config)) throw catalog.failure(config, 'read its configuration (GET /v1/config)');
    const body = catalog.json(config, 'GET /v1/config') as { defaults?: Record<string, unknown>; overrides?: Record<string, unknown> } | undefined;
    const settings = { ...(body?.defaults ?? {}), ...(body?.overrides ?? {}) };
    const prefix = typeof settings['prefix'] === 'string' ? settings['prefix'].replace(/^\/+|\/+$/g, '') : '';
    const serverTokenEndpoint = typeof settings['oauth2-server-uri'] === 'string' ? settings['oauth2-server-uri'] : undefined;
    const configured = new RestCatalog(options, prefix, options.oauth2ServerUri ?? serverTokenEndpoint ?? catalog.tokenEndpoint, fetchImpl);
    configured.token = catalog.token;
    return configured;
  }

  /** The table's adapter for table-versions.ts: `dir` is its folder in the warehouse. */
  table(id: TableIdentifier, dir: string): TableCatalog {
    return new RestCatalogTable(this, id, dir);
  }

  describe(id: TableIdentifier): string {
    return `${this.uri} (namespace ${id.namespace.join('.')}, table ${id.name})`;
  }

  /** Creates the namespace and each level above it, those that exist already left as they are. */
  async ensureNamespace(namespace: readonly string[]): Promise<void> {
    for (let depth = 1; depth <= namespace.length; depth += 1) {
      const levels = namespace.slice(0, depth);
      const answer = await this.call('POST', `${this.base()}/namespaces`, { namespace: levels, properties: {} }, `create namespace ${levels.join('.')}`);
      if (answer.status === 409 || ok(answer)) continue;
      throw this.failure(answer, `create namespace ${levels.join('.')}`);
    }
  }

  /** The table's metadata, or undefined when the catalog has no such table. */
  async loadTable(id: TableIdentifier): Promise<LoadTableResult | undefined> {
    const answer = await this.call('GET', this.tablePath(id), undefined, `load table ${this.describe(id)}`);
    if (answer.status === 404) return undefined;
    if (!ok(answer)) throw this.failure(answer, `load table ${this.describe(id)}`);
    return this.tableResult(answer, id);
  }

  /** Creates the table (its namespace too); undefined when one of that name exists already. */
  async createTable(id: TableIdentifier, request: CreateTableRequest): Promise<LoadTableResult | undefined> {
    await this.ensureNamespace(id.namespace);
    const answer = await this.call('POST', `${this.namespacePath(id.namespace)}/tables`, { name: id.name, ...request, 'stage-create': false }, `create table ${this.describe(id)}`);
    if (answer.status === 409) return undefined;
    if (!ok(answer)) throw this.failure(answer, `create table ${this.describe(id)}`);
    return this.tableResult(answer, id);
  }

  /** Commits `changes` to the table: made, or a conflict (a requirement failed; nothing changed). */
  async commitTable(id: TableIdentifier, changes: TableChanges): Promise<RestCommitAnswer> {
    const what = `commit to table ${this.describe(id)}`;
    const body = { identifier: { namespace: id.namespace, name: id.name }, requirements: changes.requirements, updates: changes.updates };
    const answer = await this.call('POST', this.tablePath(id), body, what, { commit: true });
    if (ok(answer)) return { outcome: 'committed', result: this.tableResult(answer, id) };
    if (answer.status === 409) return { outcome: 'conflict', reason: errorOf(answer).message };
    if (answer.status >= 500) {
      throw etlError(
        'ETL_ICEBERG_COMMIT_STATE_UNKNOWN',
        `Iceberg REST catalog ${this.describe(id)} answered the commit with HTTP ${answer.status} (${errorOf(answer).message}): whether it landed is unknown. Its files are kept; run the load again: it reloads the table and finds the commit by its commit id, or makes it`,
        { retriable: true, details: { table: this.describe(id), status: answer.status, server: errorOf(answer) } },
      );
    }
    throw this.failure(answer, what);
  }

  private base(): string {
    return this.prefix === '' ? '/v1' : `/v1/${this.prefix.split('/').map(encodeURIComponent).join('/')}`;
  }

  private namespacePath(namespace: readonly string[]): string {
    return `${this.base()}/namespaces/${encodeURIComponent(namespace.join('\u001f'))}`;
  }

  private tablePath(id: TableIdentifier): string {
    return `${this.namespacePath(id.namespace)}/tables/${encodeURIComponent(id.name)}`;
  }

  private tableResult(answer: Answer, id: TableIdentifier): LoadTableResult {
    const body = this.json(answer, `table ${this.describe(id)}`) as Record<string, unknown> | undefined;
    const location = body?.['metadata-location'];
    if (typeof location !== 'string') throw this.garbled(answer, `table ${this.describe(id)}`, 'no metadata-location');
    return { metadataLocation: location, metadata: checkedTableMetadata(body?.['metadata'], `${location} (from ${this.describe(id)})`) };
  }

  private json(answer: Answer, what: string): unknown {
    try {
      return parseIcebergJson(answer.text);
    } catch (error) {
      throw this.garbled(answer, what, `not JSON: ${(error as Error).message}`);
    }
  }

  private garbled(answer: Answer, what: string, problem: string): TributaryError {
    return etlError('ETL_ICEBERG_CATALOG_FAILED', `Iceberg REST catalog ${this.uri} answered ${what} with HTTP ${answer.status} and a body this client cannot use (${problem}): ${abbreviate(answer.text)}. Is ${this.uri} an Iceberg REST catalog?`, {
      details: { uri: this.uri, status: answer.status },
    });
  }

  private failure(answer: Answer, what: string): TributaryError {
    const server = errorOf(answer);
    const hint =
      answer.status === 401
        ? this.options.token === undefined && this.options.credential === undefined
          ? ': the catalog wants credentials; give a token or an OAuth2 client credential'
          : ': the catalog refused these credentials'
        : answer.status === 403
          ? ': the credentials do not allow this'
          : answer.status === 404
            ? ': check the URI, the warehouse and the namespace'
            : '';
    return etlError('ETL_ICEBERG_CATALOG_FAILED', `Iceberg REST catalog ${this.uri} refused to ${what}: HTTP ${answer.status}, ${server.type === undefined ? '' : `${server.type}: `}${server.message}${hint}`, {
      retriable: answer.status >= 500 || answer.status === 429,
      details: { uri: this.uri, status: answer.status, server },
    });
  }

  /** One request (two when a token expired under it and a credential can renew it). */
  private async call(method: string, path: string, body: unknown, what: string, { commit = false } = {}): Promise<Answer> {
    for (let attempt = 1; ; attempt += 1) {
      const authorization = await this.authorization(attempt > 1);
      const answer = await this.send(`${this.uri}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(authorization === undefined ? {} : { authorization }),
        },
        ...(body === undefined ? {} : { body: stringifyIcebergJson(body) }),
      }, what, commit);
      // A 401 means the request was not executed: safe to repeat, commits included.
      if (answer.status === 401 && attempt === 1 && this.options.credential !== undefined) continue;
      return answer;
    }
  }

  private async send(url: string, init: { method: string; headers: Record<string, string>; body?: string }, what: string, commit: boolean): Promise<Answer> {
    try {
      const response = await this.fetchImpl(new URL(url), { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
      return { status: response.status, text: await response.text() };
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      const socketCode = socketErrorCode(error);
      const reason = timedOut ? `no answer within ${this.timeoutMs} ms` : describeNetworkError(error);
      if (commit && (socketCode === undefined || !NOT_SENT.has(socketCode))) {
        throw etlError(
          'ETL_ICEBERG_COMMIT_STATE_UNKNOWN',
          `Iceberg REST catalog ${this.uri}: the ${what} was sent but its answer was lost (${reason}): whether it landed is unknown. Its files are kept; run the load again: it reloads the table and finds the commit by its commit id, or makes it`,
          { retriable: true, cause: error, details: { uri: this.uri } },
        );
      }
      throw etlError('ETL_ICEBERG_CATALOG_FAILED', `cannot reach Iceberg REST catalog ${this.uri} to ${what} (${reason}); nothing was changed. Check the URI and that the catalog is running, then run again`, {
        retriable: true,
        cause: error,
        details: { uri: this.uri },
      });
    }
  }

  /** The Authorization header: the token given, or one from the token endpoint (renewed when near expiry or `renew`). */
  private async authorization(renew: boolean): Promise<string | undefined> {
    if (this.options.token !== undefined) return `Bearer ${this.options.token}`;
    const credential = this.options.credential;
    if (credential === undefined) return undefined;
    if (!renew && this.token !== undefined && Date.now() < this.token.expiresAt - TOKEN_RENEW_MARGIN_MS) return `Bearer ${this.token.value}`;
    const colon = credential.indexOf(':');
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      ...(colon < 0 ? {} : { client_id: credential.slice(0, colon) }),
      client_secret: colon < 0 ? credential : credential.slice(colon + 1),
      scope: this.options.scope ?? DEFAULT_OAUTH2_SCOPE,
    });
    const answer = await this.send(this.tokenEndpoint, { method: 'POST', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() }, 'get an OAuth2 token', false);
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(answer.text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    const token = parsed?.['access_token'];
    if (!ok(answer) || typeof token !== 'string') {
      const reason = typeof parsed?.['error'] === 'string' ? `${parsed['error']}${typeof parsed['error_description'] === 'string' ? `: ${parsed['error_description']}` : ''}` : abbreviate(answer.text);
      throw etlError('ETL_ICEBERG_CATALOG_FAILED', `the OAuth2 token endpoint ${this.tokenEndpoint} of Iceberg REST catalog ${this.uri} gave no token for the client credential (HTTP ${answer.status}: ${reason}); check the credential (client_id:client_secret) and the scope`, {
        retriable: answer.status >= 500,
        details: { uri: this.uri, tokenEndpoint: this.tokenEndpoint, status: answer.status },
      });
    }
    const expiresIn = typeof parsed?.['expires_in'] === 'number' ? parsed['expires_in'] : undefined;
    this.token = { value: token, expiresAt: expiresIn === undefined ? Number.POSITIVE_INFINITY : Date.now() + expiresIn * 1000 };
    return `Bearer ${token}`;
  }
}

/**
 * One table of a REST catalog as table-versions.ts sees it: loads give the catalog's metadata,
 * commits send what changed between the loaded metadata and the next (rest-updates.ts). A table
 * not yet in the catalog is created with the next metadata's schema, partition spec, sort order,
 * properties and location, then the rest of it (its snapshot) committed on top.
 */
class RestCatalogTable implements TableCatalog {
  readonly name: string;
  private readonly catalog: RestCatalog;
  private readonly id: TableIdentifier;
  private readonly dir: string;

  constructor(catalog: RestCatalog, id: TableIdentifier, dir: string) {
    this.catalog = catalog;
    this.id = id;
    this.dir = dir;
    this.name = catalog.describe(id);
  }

  async load(): Promise<LoadedTable | undefined> {
    const result = await this.catalog.loadTable(this.id);
    return result === undefined ? undefined : this.loaded(result);
  }

  async commit(base: LoadedTable | undefined, next: TableMetadata): Promise<CommitOutcome> {
    let from = base;
    let target = next;
    if (from === undefined) {
      const created = await this.create(next);
      if (created === undefined) return { outcome: 'conflict', reason: `table ${this.name} was created by another writer meanwhile` };
      from = created;
      // What the catalog made is the base now: only the schemas, snapshots, refs and properties of `next` remain to commit.
      target = {
        ...created.metadata,
        schemas: next.schemas,
        'current-schema-id': next['current-schema-id'],
        'last-column-id': next['last-column-id'],
        snapshots: next.snapshots ?? [],
        refs: next.refs ?? {},
        'current-snapshot-id': next['current-snapshot-id'] ?? -1n,
        properties: { ...(created.metadata.properties ?? {}), ...(next.properties ?? {}) },
      };
    }
    const changes = tableChanges(from.metadata, target, this.name);
    if (changes.updates.length === 0) return { outcome: 'committed', loaded: from };
    const answer = await this.catalog.commitTable(this.id, changes);
    if (answer.outcome === 'conflict') return answer;
    return { outcome: 'committed', loaded: this.loaded(answer.result) };
  }

  /**
   * Creates the table as `next` describes it. The catalog gives a new table's columns fresh ids
   * (Java's assignFreshIds: each struct's fields in order, then what they hold); the loader's
   * numbering is the same, and the files carry those ids, so a table made with others is refused.
   */
  private async create(next: TableMetadata): Promise<LoadedTable | undefined> {
    const schema = currentSchema(next);
    const spec = defaultSpec(next);
    if (schema === undefined || spec === undefined) throw etlError('ETL_ICEBERG_METADATA_INVALID', `Iceberg table ${this.name}: the metadata to create it with names a current schema or partition spec it does not hold`, { details: { table: this.name } });
    const order = (next['sort-orders'] as { 'order-id': number; fields: unknown[] }[] | undefined)?.find((candidate) => candidate['order-id'] === next['default-sort-order-id']);
    const result = await this.catalog.createTable(this.id, {
      location: next.location,
      schema,
      'partition-spec': spec,
      ...(order === undefined || order.fields.length === 0 ? {} : { 'write-order': order }),
      properties: next.properties ?? {},
    });
    if (result === undefined) return undefined;
    const made = currentSchema(result.metadata);
    const madeSpec = defaultSpec(result.metadata);
    if (!isDeepStrictEqual(made?.fields, schema.fields) || !isDeepStrictEqual(madeSpec?.fields, spec.fields)) {
      throw etlError(
        'ETL_ICEBERG_SCHEMA_CHANGED',
        `Iceberg REST catalog ${this.name} created the table with column ids other than the ones this commit's files carry; nothing was committed to it. Run the load again: it plans against the table as the catalog made it`,
        { retriable: true, details: { table: this.name, requested: schema.fields, created: made?.fields, requestedSpec: spec.fields, createdSpec: madeSpec?.fields } },
      );
    }
    return this.loaded(result);
  }

  private loaded(result: LoadTableResult): LoadedTable {
    // Java's Hadoop paths print a location given as file:///x as file:/x: the same folder.
    const location = sameFileUri(result.metadata.location.replace(/\/+$/, ''));
    const metadataLocation = sameFileUri(result.metadataLocation);
    const inside = metadataLocation.startsWith(`${location}/`);
    return {
      version: metadataVersion(result.metadataLocation),
      metadata: result.metadata,
      path: inside ? `${this.dir}/${metadataLocation.slice(location.length + 1)}` : result.metadataLocation,
      metadataLocation: result.metadataLocation,
    };
  }
}

/** The version a metadata file's name carries: `00003-<uuid>.metadata.json` (catalogs) or `v3.metadata.json`; 0 if none. */
export function metadataVersion(location: string): number {
  const name = location.slice(location.lastIndexOf('/') + 1);
  const match = /^(\d+)-.*\.metadata\.json(?:\.\w+)?$/.exec(name) ?? /^v(\d+)(?:\.\w+)?\.metadata\.json$/.exec(name);
  return match === null ? 0 : Number(match[1]);
}

function ok(answer: Answer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** The REST spec's error model `{ error: { message, type, code } }`, or the body itself when it is not that. */
function errorOf(answer: Answer): { readonly message: string; readonly type?: string } {
  try {
    const body = JSON.parse(answer.text) as { error?: { message?: unknown; type?: unknown } };
    if (typeof body.error?.message === 'string') return { message: body.error.message, ...(typeof body.error.type === 'string' ? { type: body.error.type } : {}) };
  } catch {
    // Not JSON: a proxy's page, say.
  }
  return { message: abbreviate(answer.text) || `HTTP ${answer.status}` };
}

function abbreviate(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function socketErrorCode(error: unknown): string | undefined {
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error && 'code' in cause && typeof cause.code === 'string' ? cause.code : undefined;
}

/** undici hides the socket error (ECONNREFUSED …) in `cause`. */
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) return `${error.message}: ${'code' in cause && typeof cause.code === 'string' ? `${cause.code} ` : ''}${cause.message}`;
  return error.message;
}
