/**
 * Decodes a request frame, hands it to the handler of its API, and encodes the response.
 *
 * Headers follow the API and version (headers.ts): a flexible request comes with header v2 and is
 * answered with header v1, ApiVersions always with header v0. Unsupported ApiVersions versions get
 * the v0-format UNSUPPORTED_VERSION answer that lets every client fall back (kafka-protocol.md §2.1). Any other unknown API or version, or a body that does
 * not decode, closes the connection, as Kafka does. A handler that throws unexpectedly ends the
 * connection too, never the process.
 */
import type { Logger } from '../common/logger.js';
import { ApiVersionsApi, type ApiVersionRange } from '../protocol/apis/api-versions.js';
import { decodeRequestHeader, encodeResponseHeader, responseHeaderVersion, type RequestHeader } from '../protocol/headers.js';
import { KafkaErrorCode } from '../protocol/kafka-errors.js';
import { decodeRequestBody, encodeResponseBody, type ApiSchema } from '../protocol/schema.js';
import { MalformedMessageError, WireReader, WireWriter, type MessagePart } from '../protocol/wire.js';
import { anonymousIdentity, type ConnectionIdentity } from './security/identity.js';

export const NO_RESPONSE = Symbol('no response');

/** Thrown by a handler to close the connection without logging a failure (e.g. acks=0 errors). */
export class CloseConnection extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'CloseConnection';
  }
}

export interface RequestContext {
  readonly header: RequestHeader;
  readonly connectionId: number;
  readonly remoteAddress: string;
  /** Who sent the request, as its connection authenticated (ANONYMOUS without authentication). */
  readonly identity: ConnectionIdentity;
  /**
   * Says the request's order-sensitive work is done (Produce: every append numbered), so the
   * connection may start the next request while this one waits; responses still go out in
   * order. A handler that never calls it is admitted when its response has been written.
   */
  admitted(): void;
}

export interface ApiHandler<Request = unknown, Response = unknown> {
  readonly api: ApiSchema<Request, Response>;
  /** Versions served; defaults to the schema's range. */
  readonly minVersion?: number;
  readonly maxVersion?: number;
  handle(request: Request, version: number, context: RequestContext): Promise<Response | ReplyWithCleanup<Response> | typeof NO_RESPONSE>;
  /** Called when the connection of an in-flight request closes (e.g. to drop a parked fetch). */
  readonly onConnectionClosed?: (connectionId: number) => void;
}

export type RouteOutcome =
  | { readonly kind: 'respond'; readonly parts: MessagePart[]; readonly apiKey: number; readonly after?: () => void; readonly closeAfter?: string }
  | { readonly kind: 'none'; readonly apiKey: number }
  | { readonly kind: 'close'; readonly reason: string };

/** A response with work to do once it has been written, or has failed to be (releasing file slices). */
export class ReplyWithCleanup<Response> {
  constructor(
    readonly response: Response,
    readonly afterWrite: () => void,
  ) {}
}

export class RequestRouter {
  private readonly handlers = new Map<number, ApiHandler>();
  private markReady: () => void = () => {};
  /** Requests wait here until the broker has registered and loaded the cluster state. */
  private readonly ready = new Promise<void>((resolve) => {
    this.markReady = resolve;
  });

  constructor(
    handlers: readonly ApiHandler[],
    private readonly logger: Logger,
  ) {
    this.register(handlers);
  }

  register(handlers: readonly ApiHandler<never, never>[] | readonly ApiHandler[]): void {
    for (const handler of handlers) this.handlers.set(handler.api.apiKey, handler);
  }

  /** The ApiVersions advertisement: every API with the versions served. */
  supportedVersions(): ApiVersionRange[] {
    const ranges: ApiVersionRange[] = [{ apiKey: ApiVersionsApi.apiKey, minVersion: ApiVersionsApi.minVersion, maxVersion: ApiVersionsApi.maxVersion }];
    for (const handler of this.handlers.values()) {
      if (handler.api.apiKey === ApiVersionsApi.apiKey) continue;
      ranges.push({ apiKey: handler.api.apiKey, minVersion: handler.minVersion ?? handler.api.minVersion, maxVersion: handler.maxVersion ?? handler.api.maxVersion });
    }
    return ranges.sort((a, b) => a.apiKey - b.apiKey);
  }

  /** Lets requests through; until then they wait (the listener opens before the broker is ready). */
  open(): void {
    this.markReady();
  }

  connectionClosed(connectionId: number): void {
    for (const handler of this.handlers.values()) handler.onConnectionClosed?.(connectionId);
  }

  /** `admitted` is the handler's RequestContext.admitted; the router never calls it itself. */
  async route(frame: Buffer, connectionId: number, remoteAddress: string, admitted: () => void = () => {}, identity: ConnectionIdentity = anonymousIdentity(remoteAddress)): Promise<RouteOutcome> {
    await this.ready;
    const reader = new WireReader(frame);
    let header: RequestHeader;
    try {
      header = decodeRequestHeader(reader);
    } catch (error) {
      return { kind: 'close', reason: `unreadable request header: ${(error as Error).message}` };
    }
    if (header.apiKey === ApiVersionsApi.apiKey && header.apiVersion > ApiVersionsApi.maxVersion) {
      return { kind: 'respond', parts: this.unsupportedApiVersions(header.correlationId), apiKey: header.apiKey };
    }
    const handler = header.apiKey === ApiVersionsApi.apiKey ? this.apiVersionsHandler() : this.handlers.get(header.apiKey);
    if (handler === undefined) return { kind: 'close', reason: `unsupported API key ${header.apiKey}` };
    const min = handler.minVersion ?? handler.api.minVersion;
    const max = handler.maxVersion ?? handler.api.maxVersion;
    if (header.apiVersion < min || header.apiVersion > max) {
      return { kind: 'close', reason: `${handler.api.name} v${header.apiVersion} is not served (versions ${min}–${max})` };
    }
    let request: unknown;
    try {
      request = decodeRequestBody(handler.api, header.apiVersion, reader);
    } catch (error) {
      if (error instanceof MalformedMessageError) return { kind: 'close', reason: `malformed ${handler.api.name} v${header.apiVersion}: ${error.message}` };
      throw error;
    }
    let outcome: unknown;
    try {
      outcome = await handler.handle(request, header.apiVersion, { header, connectionId, remoteAddress, identity, admitted });
    } catch (error) {
      if (error instanceof CloseConnection) return { kind: 'close', reason: error.reason };
      this.logger.error({ err: error, api: handler.api.name, version: header.apiVersion, clientId: header.clientId }, 'request handler failed; closing the connection');
      return { kind: 'close', reason: `${handler.api.name} handler failed` };
    }
    if (outcome === NO_RESPONSE) return { kind: 'none', apiKey: header.apiKey };
    const writer = new WireWriter();
    encodeResponseHeader(writer, header.correlationId, responseHeaderVersion(header.apiKey, header.apiVersion));
    if (outcome instanceof ReplyWithCleanup) {
      try {
        encodeResponseBody(handler.api, header.apiVersion, outcome.response, writer);
      } catch (error) {
        outcome.afterWrite();
        throw error;
      }
      return { kind: 'respond', parts: writer.finish(), apiKey: header.apiKey, after: outcome.afterWrite };
    }
    encodeResponseBody(handler.api, header.apiVersion, outcome, writer);
    return { kind: 'respond', parts: writer.finish(), apiKey: header.apiKey };
  }

  private apiVersionsHandler(): ApiHandler {
    return {
      api: ApiVersionsApi,
      handle: async () => ({ errorCode: KafkaErrorCode.NONE, apiKeys: this.supportedVersions(), throttleTimeMs: 0 }),
    };
  }

  /** v0 body, error 35, one entry for ApiVersions itself; response header v0. */
  private unsupportedApiVersions(correlationId: number): MessagePart[] {
    const writer = new WireWriter(32);
    encodeResponseHeader(writer, correlationId);
    encodeResponseBody(ApiVersionsApi, 0, {
      errorCode: KafkaErrorCode.UNSUPPORTED_VERSION,
      apiKeys: [{ apiKey: ApiVersionsApi.apiKey, minVersion: ApiVersionsApi.minVersion, maxVersion: ApiVersionsApi.maxVersion }],
      throttleTimeMs: 0,
    }, writer);
    return writer.finish();
  }
}
