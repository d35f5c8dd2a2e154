/**
 * A client for the Confluent Schema Registry REST API (ours or Confluent's), over Node's fetch.
 *
 * Every attempt has a deadline (AbortSignal.timeout). Reads (GETs, and the POSTs that only look
 * things up or test compatibility) are retried with exponential backoff when the registry is
 * unreachable or answers 5xx; a 4xx is the caller's mistake and is never retried; writes
 * (register, setConfig) are tried once so the caller decides whether to repeat them. Failures are
 * TributaryErrors whose code is mapped from Confluent's `error_code`, whose message carries the
 * server's own message, and whose details hold the HTTP status and `error_code`.
 *
 * Security: HTTP basic credentials (`basicAuth`, or the user info of the URL, which is then
 * dropped from every message), and TLS settings for HTTPS with a private CA or a client
 * certificate (`tls`; client-config.ts reads both from Confluent's property names). The
 * credentials go only into the Authorization header, never into messages or logs.
 */
import { z } from 'zod';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { httpsTransport, type RegistryClientTls, type RegistryFetch } from './https-transport.js';

export interface RegistryBasicAuth {
  readonly username: string;
  readonly password: string;
}

/** How to reach a registry securely; spread into RegistryClientOptions. */
export interface RegistryClientSecurity {
  readonly basicAuth?: RegistryBasicAuth | undefined;
  readonly tls?: RegistryClientTls | undefined;
}

export interface RegistryClientOptions extends RegistryClientSecurity {
  /** Base URL of the registry, e.g. `http://127.0.0.1:8081` (a path prefix is kept). */
  readonly url: string;
  /** Deadline of one HTTP attempt, including reading the body. Default 10 s. */
  readonly timeoutMs?: number;
  /** Further attempts of a read after a network error or a 5xx. Default 3. */
  readonly retries?: number;
  /** First backoff before a retry; doubles each time, with jitter, up to 2 s. Default 100 ms. */
  readonly backoffMs?: number;
  /** The fetch to use; tests pass a counting wrapper. Default: the global fetch, or node:https with `tls`. */
  readonly fetch?: RegistryFetch;
  readonly logger?: Logger;
}

export interface RegisteredSchema {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  readonly schema: string;
  /** Absent for Avro: Confluent servers before 8.0 omit it. */
  readonly schemaType?: string;
}

export interface SchemaById {
  readonly schema: string;
  readonly schemaType?: string;
}

export interface CompatibilityResult {
  readonly isCompatible: boolean;
  /** One line per incompatibility (with verbose); empty when compatible. */
  readonly messages: readonly string[];
}

export type VersionSpec = number | 'latest';

/** Confluent `error_code` → our code. A 5xx without a known code is REGISTRY_UNAVAILABLE. */
const ERROR_CODES: ReadonlyMap<number, string> = new Map([
  [40401, 'REGISTRY_SUBJECT_NOT_FOUND'],
  [40402, 'REGISTRY_VERSION_NOT_FOUND'],
  [40403, 'REGISTRY_SCHEMA_NOT_FOUND'],
  [40404, 'REGISTRY_SUBJECT_SOFT_DELETED'],
  [40405, 'REGISTRY_SUBJECT_NOT_SOFT_DELETED'],
  [40406, 'REGISTRY_VERSION_SOFT_DELETED'],
  [40407, 'REGISTRY_VERSION_NOT_SOFT_DELETED'],
  [40408, 'REGISTRY_SUBJECT_CONFIG_NOT_FOUND'],
  [40409, 'REGISTRY_SUBJECT_MODE_NOT_FOUND'],
  // Confluent answered incompatibility with error_code 409 until late 2025, 40901 since.
  [409, 'REGISTRY_INCOMPATIBLE_SCHEMA'],
  [40901, 'REGISTRY_INCOMPATIBLE_SCHEMA'],
  [42201, 'REGISTRY_INVALID_SCHEMA'],
  [42202, 'REGISTRY_INVALID_VERSION'],
  [42203, 'REGISTRY_INVALID_COMPATIBILITY_LEVEL'],
  [42204, 'REGISTRY_INVALID_MODE'],
  [42205, 'REGISTRY_OPERATION_NOT_PERMITTED'],
  [42206, 'REGISTRY_REFERENCE_EXISTS'],
  [42208, 'REGISTRY_INVALID_SUBJECT'],
  [40101, 'REGISTRY_UNAUTHORIZED'],
  [40301, 'REGISTRY_FORBIDDEN'],
]);

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';
const MAX_BACKOFF_MS = 2_000;

const errorBody = z.object({ error_code: z.number().int(), message: z.string() });
const idBody = z.object({ id: z.number().int(), version: z.number().int().optional() });
const schemaByIdBody = z.object({ schema: z.string(), schemaType: z.string().optional() });
const registeredBody = z.object({
  subject: z.string(),
  version: z.number().int(),
  id: z.number().int(),
  schema: z.string(),
  schemaType: z.string().optional(),
});
const subjectsBody = z.array(z.string());
const versionsBody = z.array(z.number().int());
const compatibilityBody = z.object({
  is_compatible: z.boolean(),
  // Confluent sends strings; other registries have sent objects, which we print as JSON.
  messages: z.array(z.unknown()).optional(),
});
const getConfigBody = z.object({ compatibilityLevel: z.string() });
const putConfigBody = z.object({ compatibility: z.string() });

interface Call {
  readonly method: 'GET' | 'POST' | 'PUT';
  readonly path: string;
  readonly body?: unknown;
  /** Only reads are retried. */
  readonly read: boolean;
}

export class RegistryClient {
  readonly url: string;
  private readonly base: URL;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly fetchImpl: RegistryFetch;
  private readonly logger: Logger | undefined;
  private readonly authorization: string | undefined;

  constructor(options: RegistryClientOptions) {
    this.base = parseRegistryUrl(options.url);
    const fromUrl = this.base.username === '' ? undefined : { username: decodeURIComponent(this.base.username), password: decodeURIComponent(this.base.password) };
    this.base.username = '';
    this.base.password = '';
    const basicAuth = options.basicAuth ?? fromUrl;
    this.authorization = basicAuth === undefined ? undefined : `Basic ${Buffer.from(`${basicAuth.username}:${basicAuth.password}`, 'utf8').toString('base64')}`;
    this.url = this.base.href.replace(/\/$/, '');
    this.timeoutMs = positiveNumber('timeoutMs', options.timeoutMs ?? 10_000);
    this.retries = nonNegativeInteger('retries', options.retries ?? 3);
    this.backoffMs = nonNegativeInteger('backoffMs', options.backoffMs ?? 100);
    this.fetchImpl = options.fetch ?? (options.tls === undefined ? fetch : httpsTransport(options.tls));
    this.logger = options.logger;
  }

  /** Registers a schema under a subject (or finds it there already); answers its global id. */
  async register(subject: string, schemaText: string, schemaType?: string): Promise<{ id: number; version?: number }> {
    const body = await this.call({ method: 'POST', path: `/subjects/${subjectPath(subject)}/versions`, body: schemaRequest(schemaText, schemaType), read: false }, idBody);
    return body.version === undefined ? { id: body.id } : { id: body.id, version: body.version };
  }

  /** The version and id of a schema already registered under a subject; 40401/40403 when not. */
  async lookup(subject: string, schemaText: string, schemaType?: string): Promise<RegisteredSchema> {
    const body = await this.call({ method: 'POST', path: `/subjects/${subjectPath(subject)}`, body: schemaRequest(schemaText, schemaType), read: true }, registeredBody);
    return registered(body);
  }

  async schemaById(id: number): Promise<SchemaById> {
    if (!Number.isSafeInteger(id) || id <= 0) throw badArgument(`schema id must be a positive integer, not ${String(id)}`);
    const body = await this.call({ method: 'GET', path: `/schemas/ids/${id}`, read: true }, schemaByIdBody);
    return body.schemaType === undefined ? { schema: body.schema } : { schema: body.schema, schemaType: body.schemaType };
  }

  async subjects(): Promise<string[]> {
    return this.call({ method: 'GET', path: '/subjects', read: true }, subjectsBody);
  }

  /** A subject's versions, ascending. */
  async versions(subject: string): Promise<number[]> {
    return this.call({ method: 'GET', path: `/subjects/${subjectPath(subject)}/versions`, read: true }, versionsBody);
  }

  async version(subject: string, version: VersionSpec): Promise<RegisteredSchema> {
    const body = await this.call({ method: 'GET', path: `/subjects/${subjectPath(subject)}/versions/${versionPath(version)}`, read: true }, registeredBody);
    return registered(body);
  }

  /**
   * Whether `schemaText` is compatible, under the subject's level, with one version of a subject
   * (`latest` by default), or with every version registration would check (`'all'`: under a
   * transitive level that is all of them). A subject with no versions is compatible with anything.
   */
  async testCompatibility(subject: string, schemaText: string, version: VersionSpec | 'all' = 'latest', verbose = true, schemaType?: string): Promise<CompatibilityResult> {
    const versions = version === 'all' ? 'versions' : `versions/${versionPath(version)}`;
    const body = await this.call(
      {
        method: 'POST',
        path: `/compatibility/subjects/${subjectPath(subject)}/${versions}${verbose ? '?verbose=true' : ''}`,
        body: schemaRequest(schemaText, schemaType),
        read: true,
      },
      compatibilityBody,
    );
    const messages = (body.messages ?? []).map((message) => (typeof message === 'string' ? message : JSON.stringify(message)));
    return { isCompatible: body.is_compatible, messages };
  }

  /**
   * The compatibility level, global or of one subject. A subject without a level of its own is
   * REGISTRY_SUBJECT_CONFIG_NOT_FOUND unless `defaultToGlobal` asks for the global one instead.
   */
  async getConfig(subject?: string, options: { defaultToGlobal?: boolean } = {}): Promise<string> {
    const path = subject === undefined ? '/config' : `/config/${subjectPath(subject)}${options.defaultToGlobal === true ? '?defaultToGlobal=true' : ''}`;
    const body = await this.call({ method: 'GET', path, read: true }, getConfigBody);
    return body.compatibilityLevel;
  }

  /** Sets the compatibility level, global or of one subject (which need not exist yet). */
  async setConfig(level: string, subject?: string): Promise<string> {
    if (level.trim() === '') throw badArgument('the compatibility level must not be empty');
    const path = subject === undefined ? '/config' : `/config/${subjectPath(subject)}`;
    const body = await this.call({ method: 'PUT', path, body: { compatibility: level }, read: false }, putConfigBody);
    return body.compatibility;
  }

  private async call<T>(call: Call, shape: z.ZodType<T>): Promise<T> {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + call.path, this.base);
    const attempts = call.read ? this.retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(call, url, shape);
      } catch (error) {
        const retry = error instanceof TributaryError && error.retriable && attempt < attempts;
        if (!retry) throw error;
        const delay = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        this.logger?.warn({ err: error, attempt, delayMs: Math.round(delay) }, 'registry request failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  private async attempt<T>(call: Call, url: URL, shape: z.ZodType<T>): Promise<T> {
    const where = `${call.method} ${url.pathname}${url.search}`;
    let status: number;
    let text: string;
    try {
      const response = await this.fetchImpl(url, {
        method: call.method,
        headers: {
          accept: `${CONTENT_TYPE}, application/json`,
          ...(call.body === undefined ? {} : { 'content-type': CONTENT_TYPE }),
          ...(this.authorization === undefined ? {} : { authorization: this.authorization }),
        },
        ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      throw new TributaryError({
        code: 'REGISTRY_UNAVAILABLE',
        retriable: true,
        message: timedOut
          ? `schema registry ${this.url} did not answer ${where} within ${this.timeoutMs} ms`
          : `cannot reach schema registry ${this.url} (${where}): ${describeNetworkError(error)}. Check the URL and that the registry is running.`,
        cause: error,
        details: { url: this.url, request: where },
      });
    }
    if (status >= 200 && status < 300) {
      const parsed = parseJson(text);
      const result = parsed === undefined ? undefined : shape.safeParse(parsed.value);
      if (result?.success === true) return result.data;
      throw new TributaryError({
        code: 'REGISTRY_BAD_RESPONSE',
        message: `schema registry ${this.url} answered ${where} with an unexpected body (HTTP ${status}): ${abbreviate(text)}. Is this URL a Confluent-compatible schema registry?`,
        details: { url: this.url, request: where, status },
      });
    }
    throw this.failure(where, status, text);
  }

  private failure(where: string, status: number, text: string): TributaryError {
    const parsed = parseJson(text);
    const body = parsed === undefined ? undefined : errorBody.safeParse(parsed.value);
    const errorCode = body?.success === true ? body.data.error_code : undefined;
    const serverMessage = body?.success === true ? body.data.message : abbreviate(text) || `HTTP ${status}`;
    const mapped = errorCode === undefined ? undefined : ERROR_CODES.get(errorCode);
    const unavailable = status >= 500;
    // Any registry's 401/403 (Confluent's is not always JSON) means the same thing.
    const denied = status === 401 ? 'REGISTRY_UNAUTHORIZED' : status === 403 ? 'REGISTRY_FORBIDDEN' : undefined;
    const code = mapped ?? denied ?? (unavailable ? 'REGISTRY_UNAVAILABLE' : 'REGISTRY_REQUEST_REJECTED');
    const hint =
      code === 'REGISTRY_UNAUTHORIZED'
        ? this.authorization === undefined
          ? '; the registry wants credentials: set basic.auth.credentials.source=USER_INFO and basic.auth.user.info.file (or TRIBUTARY_REGISTRY_USER_INFO)'
          : '; the registry refused these credentials'
        : code === 'REGISTRY_FORBIDDEN'
          ? "; the user's role does not allow this request"
          : '';
    return new TributaryError({
      code,
      retriable: unavailable,
      message: `${serverMessage} (schema registry ${this.url}: ${where} → HTTP ${status}${errorCode === undefined ? '' : `, error_code ${errorCode}`})${hint}`,
      details: { url: this.url, request: where, status, ...(errorCode === undefined ? {} : { errorCode }), serverMessage },
    });
  }
}

function registered(body: z.infer<typeof registeredBody>): RegisteredSchema {
  const { subject, version, id, schema, schemaType } = body;
  return schemaType === undefined ? { subject, version, id, schema } : { subject, version, id, schema, schemaType };
}

/** Avro goes without `schemaType`, as older Confluent servers expect. */
function schemaRequest(schemaText: string, schemaType: string | undefined): Record<string, string> {
  if (schemaText.trim() === '') throw badArgument('the schema text is empty; pass the JSON of an Avro schema');
  return schemaType === undefined || schemaType.toUpperCase() === 'AVRO' ? { schema: schemaText } : { schema: schemaText, schemaType };
}

function subjectPath(subject: string): string {
  if (subject === '') throw badArgument('the subject name is empty; pass a subject such as "PageViewEvent-value"');
  return encodeURIComponent(subject);
}

function versionPath(version: VersionSpec): string {
  if (version === 'latest') return 'latest';
  if (!Number.isSafeInteger(version) || version < 1 || version > 2 ** 31 - 1) {
    throw badArgument(`version must be "latest" or an integer from 1 to 2^31-1, not ${String(version)}`);
  }
  return String(version);
}

function parseRegistryUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw badArgument(`"${redactUserInfo(url)}" is not a URL; give the registry as http://HOST:PORT, e.g. http://127.0.0.1:8081`, error);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw badArgument(`"${redactUserInfo(url)}" is not an http:// or https:// URL; give the registry as http://HOST:PORT`);
  }
  // The URL itself is not repeated: it may carry credentials.
  if (parsed.search !== '' || parsed.hash !== '') throw badArgument(`the registry URL has a query or fragment; give only the registry's base URL`);
  return parsed;
}

function redactUserInfo(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//…@');
}

function positiveNumber(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) throw badArgument(`${name} must be a positive number of milliseconds, not ${value}`);
  return value;
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw badArgument(`${name} must be an integer ≥ 0, not ${value}`);
  return value;
}

function badArgument(message: string, cause?: unknown): TributaryError {
  return new TributaryError({ code: 'REGISTRY_BAD_ARGUMENT', message, cause });
}

function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

function abbreviate(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** undici hides the socket error (ECONNREFUSED …) in `cause`. */
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) return `${error.message}: ${'code' in cause && typeof cause.code === 'string' ? `${cause.code} ` : ''}${cause.message}`;
  return error.message;
}
