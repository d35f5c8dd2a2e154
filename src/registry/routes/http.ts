/**
 * The HTTP conventions of Confluent's REST API that every route shares: the media types it
 * consumes and produces, Accept negotiation, Confluent error bodies, and the parsing of path
 * and query parameters into the registry's types (with Confluent's error codes for bad ones).
 *
 * Consumed (request Content-Type, any charset): application/vnd.schemaregistry.v1+json,
 * application/vnd.schemaregistry+json, application/json and application/octet-stream (a generic
 * body, read as JSON). A request without a body may carry any Content-Type, as clients send one
 * on every GET and DELETE. Produced: the same JSON under the best type the Accept header allows
 * (server preference v1 1.0, vnd 0.9, json 0.5); an Accept none of them satisfies gets 406.
 */
import { TextDecoder } from 'node:util';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TributaryError } from '../../common/errors.js';
import { COORDINATION_ERROR_CODES } from '../../coordination/store.js';
import { isCompatibilityLevel, type CompatibilityLevel } from '../compatibility.js';
import { confluentErrorOf, registryError } from '../errors.js';
import type { SchemaRequest, VersionSpec } from '../store/registry-state.js';

export const CONSUMED_MEDIA_TYPES = [
  'application/vnd.schemaregistry.v1+json',
  'application/vnd.schemaregistry+json',
  'application/json',
  'application/octet-stream',
] as const;

const PRODUCED: readonly { readonly type: string; readonly quality: number }[] = [
  { type: 'application/vnd.schemaregistry.v1+json', quality: 1 },
  { type: 'application/vnd.schemaregistry+json', quality: 0.9 },
  { type: 'application/json', quality: 0.5 },
];
const DEFAULT_RESPONSE_TYPE = 'application/vnd.schemaregistry.v1+json';

export interface ConfluentErrorBody {
  readonly error_code: number;
  readonly message: string;
}

/**
 * The response type for an Accept header, or undefined when none is acceptable. `*` alone counts
 * as `*\/*` (Java's default Accept sends it).
 */
export function negotiateResponseType(accept: string | undefined): string | undefined {
  if (accept === undefined || accept.trim() === '') return DEFAULT_RESPONSE_TYPE;
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return { range: range === '*' ? '*/*' : range, quality: Number.isFinite(quality) ? quality : 0 };
  });
  let best: { type: string; score: number } | undefined;
  for (const produced of PRODUCED) {
    const [kind] = produced.type.split('/');
    const matches = ranges.filter(({ range }) => range === produced.type || range === `${kind}/*` || range === '*/*');
    // The most specific matching range decides the client's quality for this type.
    const specific = matches.sort((a, b) => specificity(b.range) - specificity(a.range))[0];
    if (specific === undefined || specific.quality <= 0) continue;
    const score = specific.quality * produced.quality;
    if (best === undefined || score > best.score) best = { type: produced.type, score };
  }
  return best?.type;
}

function specificity(range: string): number {
  if (range === '*/*') return 0;
  return range.endsWith('/*') ? 1 : 2;
}

/** Registers body parsers, negotiation, the Confluent error handler and the JSON 404. */
export function installHttpConventions(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  for (const type of CONSUMED_MEDIA_TYPES) {
    app.addContentTypeParser(type, { parseAs: 'buffer' }, (request, body: Buffer, done) => {
      try {
        done(null, decodeBody(request.headers['content-type'] ?? type, body));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
  }
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    const type = request.headers['content-type'] ?? '(none)';
    done(httpError(415, `Content-Type '${type}' is not accepted; send the body as ${CONSUMED_MEDIA_TYPES.join(', ')}`), undefined);
  });

  app.addHook('onRequest', async (request, reply) => {
    const type = negotiateResponseType(request.headers.accept);
    if (type === undefined) {
      return reply
        .code(406)
        .type('application/json')
        .send(errorBody(406, `none of the accepted types '${request.headers.accept ?? ''}' can be produced; accept ${PRODUCED.map((p) => p.type).join(', ')}`));
    }
    reply.type(type);
    return undefined;
  });

  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send(errorBody(404, `HTTP 404 Not Found: no route ${request.method} ${request.url.split('?')[0] ?? ''}`)),
  );

  app.setErrorHandler(async (error: unknown, request, reply) => {
    const { status, body } = errorResponse(error);
    if (status >= 500) request.log.error({ err: error, method: request.method, url: request.url }, 'registry request failed');
    return reply
      .code(status)
      .type(negotiateResponseType(request.headers.accept) ?? DEFAULT_RESPONSE_TYPE)
      .send(body);
  });
}

/** An error answered with a plain HTTP status as its Confluent error code (framework-level errors). */
export function httpError(status: number, message: string): TributaryError {
  return new TributaryError({ code: 'HTTP_ERROR', message, details: { status } });
}

export function errorBody(errorCode: number, message: string): ConfluentErrorBody {
  return { error_code: errorCode, message };
}

/** The status and Confluent body of any failure a route or the framework raised. */
export function errorResponse(error: unknown): { status: number; body: ConfluentErrorBody } {
  const confluent = confluentErrorOf(error);
  if (confluent !== undefined) return { status: confluent.status, body: errorBody(confluent.errorCode, (error as Error).message) };
  if (error instanceof TributaryError) {
    if (error.code === 'HTTP_ERROR' && typeof error.details['status'] === 'number') {
      return { status: error.details['status'], body: errorBody(error.details['status'], error.message) };
    }
    if ((COORDINATION_ERROR_CODES as readonly string[]).includes(error.code)) {
      const timeout = error.retriable || error.code === 'SESSION_EXPIRED';
      return { status: 500, body: errorBody(timeout ? 50002 : 50001, `the registry's store failed: ${error.message}; retry later`) };
    }
  }
  const framework = frameworkStatus(error);
  if (framework !== undefined && framework < 500) {
    return { status: framework, body: errorBody(framework, (error as Error).message) };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: errorBody(50001, `internal error of the registry: ${message}`) };
}

function frameworkStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('statusCode' in error)) return undefined;
  const status = error.statusCode;
  return typeof status === 'number' ? status : undefined;
}

function decodeBody(contentType: string, body: Buffer): unknown {
  if (body.length === 0) return undefined;
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1] ?? 'utf-8';
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset, { fatal: true });
  } catch {
    throw httpError(415, `the charset '${charset}' of the Content-Type is not supported; send UTF-8`);
  }
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    throw registryError('REQUEST_INVALID', `the request body is not valid ${charset}; send the JSON as UTF-8`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw registryError('REQUEST_INVALID', `the request body is not valid JSON (${(error as Error).message}); send a JSON object such as {"schema": "..."}`);
  }
}

// ---- parameters ------------------------------------------------------------------------------

/** Confluent's version id: an integer in [1, 2^31-1], or `latest` / -1 (case-insensitive, trimmed). */
export function parseVersionSpec(raw: string): VersionSpec {
  const value = raw.trim();
  if (value.toLowerCase() === 'latest' || value === '-1') return 'latest';
  const version = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(version) || version < 1 || version > 2 ** 31 - 1) {
    throw registryError(
      'VERSION_INVALID',
      `The specified version '${raw}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string "latest"`,
      { details: { version: raw } },
    );
  }
  return version;
}

/** A schema id from a path; anything but an integer is no such route, as in Confluent. */
export function parseSchemaId(raw: string): number {
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw httpError(404, `HTTP 404 Not Found: the schema id '${raw}' is not an integer`);
  }
  return Number(raw);
}

/** A boolean query flag: true only for `true` (any case), as Jersey reads booleans. */
export function queryFlag(request: FastifyRequest, name: string): boolean {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  const last = Array.isArray(value) ? (value.at(-1) as unknown) : value;
  return typeof last === 'string' && last.trim().toLowerCase() === 'true';
}

export function pathParam(request: FastifyRequest, name: string): string {
  const value = (request.params as Record<string, unknown>)[name];
  if (typeof value !== 'string') throw new Error(`route parameter ${name} is missing: the route table is wrong`);
  return value;
}

/** The body as a JSON object; 42201 for anything else. */
export function jsonObjectBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw registryError('REQUEST_INVALID', `the request body must be a JSON object${body === undefined ? ', and it is empty' : ''}; send e.g. {"schema": "..."}`);
  }
  return body as Record<string, unknown>;
}

/** The register/lookup/compatibility body: `schema`, optional `schemaType`, `references`, `version`. */
export function schemaRequestOf(request: FastifyRequest): SchemaRequest {
  const body = jsonObjectBody(request);
  const { schema, schemaType, references, version } = body;
  if (schema === undefined || schema === null || schema === '') {
    throw registryError('SCHEMA_INVALID', 'Empty schema: the body has no "schema"; send {"schema": "<the Avro schema as a JSON string>"}');
  }
  if (typeof schema !== 'string') {
    throw registryError('SCHEMA_INVALID', `Invalid schema: "schema" must be the schema's JSON text as a string, not a ${Array.isArray(schema) ? 'array' : typeof schema}; wrap it with JSON.stringify`);
  }
  if (schemaType !== undefined && schemaType !== null && typeof schemaType !== 'string') {
    throw registryError('SCHEMA_INVALID', 'Invalid schema: "schemaType" must be a string such as "AVRO"');
  }
  if (references !== undefined && references !== null && (!Array.isArray(references) || references.length > 0)) {
    throw registryError('SCHEMA_INVALID', 'Invalid schema: schema references are not supported by this registry; inline the referenced named types into the schema');
  }
  if (version !== undefined && version !== null && version !== -1 && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)) {
    throw registryError('SCHEMA_INVALID', `Invalid schema: "version" must be a positive integer, not ${JSON.stringify(version)}; leave it out to take the next version`);
  }
  return {
    schema,
    ...(typeof schemaType === 'string' ? { schemaType } : {}),
    ...(typeof version === 'number' && version > 0 ? { version } : {}),
  };
}

/** A compatibility level from a config body: case-insensitive; 42203 otherwise. */
export function compatibilityLevelOf(value: unknown): CompatibilityLevel {
  const level = typeof value === 'string' ? value.trim().toUpperCase() : value;
  if (!isCompatibilityLevel(level)) {
    throw registryError(
      'COMPATIBILITY_LEVEL_INVALID',
      `Invalid compatibility level${value === undefined ? ' (the body has no "compatibility")' : ` ${JSON.stringify(value)}`}. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive`,
    );
  }
  return level;
}
