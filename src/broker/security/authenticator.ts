/**
 * SASL authentication of one connection on a SASL_PLAINTEXT or SASL_SSL listener, before any
 * request reaches a handler (kafka-clients.md §4.1):
 *
 *   [ApiVersions]  →  SaslHandshake v1 (mechanism)  →  SaslAuthenticate × n  →  authenticated
 *                     SaslHandshake v0 (mechanism)  →  raw tokens × n        →  authenticated
 *
 * Only these are served before authentication; anything else closes the connection. A mechanism
 * that is not enabled is answered UNSUPPORTED_SASL_MECHANISM with the enabled list, a SASL
 * request out of sequence ILLEGAL_SASL_STATE; a failed exchange is answered
 * SASL_AUTHENTICATION_FAILED after `connection.failed.authentication.delay.ms` (password guessing
 * gets slow), and each of these closes the connection. Sessions never expire
 * (session_lifetime_ms 0: clients do not re-authenticate, as with Kafka's default
 * connections.max.reauth.ms = 0). The frame-size limit before authentication is the
 * connection's business (sasl.server.max.receive.size).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../common/logger.js';
import { ApiVersionsApi } from '../../protocol/apis/api-versions.js';
import { SaslAuthenticateApi, type SaslAuthenticateResponse } from '../../protocol/apis/sasl-authenticate.js';
import { SaslHandshakeApi, type SaslHandshakeResponse } from '../../protocol/apis/sasl-handshake.js';
import { decodeRequestHeader, encodeResponseHeader, responseHeaderVersion, type RequestHeader } from '../../protocol/headers.js';
import { KafkaErrorCode, KafkaProtocolError } from '../../protocol/kafka-errors.js';
import { decodeRequestBody, encodeResponseBody, type ApiSchema } from '../../protocol/schema.js';
import { WireReader, WireWriter, type MessagePart } from '../../protocol/wire.js';
import { isSaslMechanism, serverMechanism, type CredentialSource, type SaslMechanism, type ServerMechanism } from './sasl-mechanisms.js';

export interface AuthenticationMetrics {
  succeeded(listener: string, mechanism: string): void;
  failed(listener: string, mechanism: string): void;
}

export interface AuthenticatorSettings {
  readonly listenerName: string;
  /** Mechanisms offered on this listener, in the order the handshake lists them. */
  readonly mechanisms: readonly SaslMechanism[];
  readonly credentials: CredentialSource;
  readonly failedAuthenticationDelayMs: number;
  readonly metrics?: AuthenticationMetrics;
  readonly logger: Logger;
}

export type AuthenticationStep =
  /** ApiVersions before the handshake: the router answers it as for any client. */
  | { readonly kind: 'route' }
  | { readonly kind: 'respond'; readonly parts: MessagePart[]; readonly apiKey: number; readonly closeAfter?: string }
  | { readonly kind: 'close'; readonly reason: string };

type State = 'versions-or-handshake' | 'handshake' | 'authenticate' | 'raw-tokens' | 'authenticated' | 'failed';

const SESSION_NEVER_EXPIRES = 0n;

export class SaslAuthenticator {
  private state: State = 'versions-or-handshake';
  private mechanism: ServerMechanism | undefined;
  private principal: string | undefined;

  constructor(
    private readonly settings: AuthenticatorSettings,
    private readonly remoteAddress: string,
  ) {}

  /** `User:<name>` once authenticated. */
  get authenticatedPrincipal(): string | undefined {
    return this.principal;
  }

  /** Whether the next frame is a raw token (after a v0 handshake) rather than a Kafka request. */
  get expectsRawToken(): boolean {
    return this.state === 'raw-tokens';
  }

  async step(frame: Buffer): Promise<AuthenticationStep> {
    if (this.state === 'authenticated' || this.state === 'failed') return { kind: 'close', reason: `authenticator used in state ${this.state}` };
    if (this.state === 'raw-tokens') return this.rawToken(frame);
    const reader = new WireReader(frame);
    let header: RequestHeader;
    try {
      header = decodeRequestHeader(reader);
    } catch (error) {
      return this.refuse(`unreadable request header during SASL authentication: ${(error as Error).message}`);
    }
    switch (header.apiKey) {
      case ApiVersionsApi.apiKey:
        if (this.state !== 'versions-or-handshake') return this.refuse('unexpected ApiVersions request during SASL authentication');
        // A version the broker does not serve gets the v0 fallback answer; the client asks again.
        if (header.apiVersion <= ApiVersionsApi.maxVersion) this.state = 'handshake';
        return { kind: 'route' };
      case SaslHandshakeApi.apiKey:
        return this.handshake(header, reader);
      case SaslAuthenticateApi.apiKey:
        return this.authenticate(header, reader);
      default:
        return this.refuse(`unexpected request (API key ${header.apiKey}) before SASL authentication`);
    }
  }

  private async handshake(header: RequestHeader, reader: WireReader): Promise<AuthenticationStep> {
    const request = this.decode(SaslHandshakeApi, header, reader);
    if (request === undefined) return this.refuse(`malformed SaslHandshake v${header.apiVersion}`);
    const offered = [...this.settings.mechanisms];
    if (this.state !== 'versions-or-handshake' && this.state !== 'handshake') {
      this.state = 'failed';
      return this.answer(SaslHandshakeApi, header, { errorCode: KafkaErrorCode.ILLEGAL_SASL_STATE, mechanisms: offered }, 'SaslHandshake out of sequence');
    }
    const name = request.mechanism;
    if (!isSaslMechanism(name) || !this.settings.mechanisms.includes(name)) {
      // A client-chosen string must not become a metric label: unknown mechanisms count as one.
      return this.failed('unsupported', `mechanism ${JSON.stringify(name.slice(0, 64))} is not enabled on this listener`, () =>
        this.encode(SaslHandshakeApi, header, { errorCode: KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: offered }),
        header.apiKey);
    }
    this.mechanism = serverMechanism(name, this.settings.credentials);
    this.state = header.apiVersion === 0 ? 'raw-tokens' : 'authenticate';
    return { kind: 'respond', parts: this.encode(SaslHandshakeApi, header, { errorCode: KafkaErrorCode.NONE, mechanisms: offered }), apiKey: header.apiKey };
  }

  private async authenticate(header: RequestHeader, reader: WireReader): Promise<AuthenticationStep> {
    const request = this.decode(SaslAuthenticateApi, header, reader);
    if (request === undefined) return this.refuse(`malformed SaslAuthenticate v${header.apiVersion}`);
    const mechanism = this.mechanism;
    if (this.state !== 'authenticate' || mechanism === undefined) {
      this.state = 'failed';
      return this.answer(SaslAuthenticateApi, header, authenticateError(KafkaErrorCode.ILLEGAL_SASL_STATE, 'SaslAuthenticate before a SaslHandshake'), 'SaslAuthenticate out of sequence');
    }
    try {
      const step = await mechanism.evaluate(request.authBytes);
      if (step.authenticatedUser !== undefined) this.succeed(mechanism.name, step.authenticatedUser);
      return {
        kind: 'respond',
        parts: this.encode(SaslAuthenticateApi, header, { errorCode: KafkaErrorCode.NONE, errorMessage: null, authBytes: step.response, sessionLifetimeMs: SESSION_NEVER_EXPIRES }),
        apiKey: header.apiKey,
      };
    } catch (error) {
      const { code, message } = clientFacing(error, mechanism.name);
      return this.failed(mechanism.name, reasonOf(error), () => this.encode(SaslAuthenticateApi, header, authenticateError(code, message)), header.apiKey);
    }
  }

  /** A token after a v0 handshake: answered raw; a failure can only be told by closing. */
  private async rawToken(token: Buffer): Promise<AuthenticationStep> {
    const mechanism = this.mechanism;
    if (mechanism === undefined) return this.refuse('raw SASL token without a mechanism');
    try {
      const step = await mechanism.evaluate(token);
      if (step.authenticatedUser !== undefined) this.succeed(mechanism.name, step.authenticatedUser);
      return { kind: 'respond', parts: [step.response], apiKey: SaslAuthenticateApi.apiKey };
    } catch (error) {
      const failed = await this.failed(mechanism.name, reasonOf(error), () => [], SaslAuthenticateApi.apiKey);
      return failed.kind === 'respond' ? { kind: 'close', reason: failed.closeAfter ?? 'authentication failed' } : failed;
    }
  }

  private succeed(mechanism: SaslMechanism, username: string): void {
    this.state = 'authenticated';
    this.principal = `User:${username}`;
    this.mechanism = undefined;
    this.settings.metrics?.succeeded(this.settings.listenerName, mechanism);
    this.settings.logger.debug({ listener: this.settings.listenerName, remote: this.remoteAddress, mechanism, principal: this.principal }, 'authenticated');
  }

  /** Counts and logs a failure, waits the failed-authentication delay, then answers and closes. */
  private async failed(mechanism: string, reason: string, answer: () => MessagePart[], apiKey: number): Promise<AuthenticationStep> {
    this.state = 'failed';
    this.mechanism = undefined;
    this.settings.metrics?.failed(this.settings.listenerName, mechanism);
    // Never the username or a token: a password typed into the wrong field would end up in logs.
    this.settings.logger.info({ listener: this.settings.listenerName, remote: this.remoteAddress, mechanism, reason }, 'failed authentication');
    if (this.settings.failedAuthenticationDelayMs > 0) await sleep(this.settings.failedAuthenticationDelayMs);
    return { kind: 'respond', parts: answer(), apiKey, closeAfter: `failed authentication (${reason})` };
  }

  private refuse(reason: string): AuthenticationStep {
    this.state = 'failed';
    return { kind: 'close', reason };
  }

  private answer<Response>(api: ApiSchema<unknown, Response>, header: RequestHeader, response: Response, reason: string): AuthenticationStep {
    return { kind: 'respond', parts: this.encode(api, header, response), apiKey: header.apiKey, closeAfter: reason };
  }

  private decode<Request>(api: ApiSchema<Request, unknown>, header: RequestHeader, reader: WireReader): Request | undefined {
    if (header.apiVersion < api.minVersion || header.apiVersion > api.maxVersion) return undefined;
    try {
      return decodeRequestBody(api, header.apiVersion, reader);
    } catch {
      return undefined;
    }
  }

  private encode<Response>(api: ApiSchema<unknown, Response>, header: RequestHeader, response: Response): MessagePart[] {
    const writer = new WireWriter();
    encodeResponseHeader(writer, header.correlationId, responseHeaderVersion(header.apiKey, header.apiVersion));
    encodeResponseBody(api, header.apiVersion, response, writer);
    return writer.finish();
  }
}

export function authenticateError(errorCode: number, errorMessage: string): SaslAuthenticateResponse {
  return { errorCode, errorMessage, authBytes: Buffer.alloc(0), sessionLifetimeMs: SESSION_NEVER_EXPIRES };
}

export function handshakeError(errorCode: number, mechanisms: readonly string[]): SaslHandshakeResponse {
  return { errorCode, mechanisms: [...mechanisms] };
}

/** The code and message a failed exchange is answered with: SaslError's own, else a plain failure. */
function clientFacing(error: unknown, mechanism: string): { code: number; message: string } {
  if (error instanceof KafkaProtocolError && (error.kafkaCode === KafkaErrorCode.SASL_AUTHENTICATION_FAILED || error.kafkaCode === KafkaErrorCode.ILLEGAL_SASL_STATE)) {
    return { code: error.kafkaCode, message: error.message };
  }
  return { code: KafkaErrorCode.SASL_AUTHENTICATION_FAILED, message: `Authentication failed with SASL mechanism ${mechanism}` };
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
