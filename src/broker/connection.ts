/**
 * One client connection: splits the byte stream into frames (size checked before allocation),
 * runs its requests in arrival order and writes their responses strictly in request order, as
 * Kafka's clients require, and closes on malformed input, on an idle timeout, or when the broker
 * stops. Reading pauses while too many requests wait, which bounds the memory a client can pin.
 *
 * Requests are pipelined only past their order-sensitive work: the next request starts once the
 * previous one is *admitted* — its handler called `admitted()` (Produce does, once every append
 * is numbered) — or, for handlers that never call it, once its response is written. So up to
 * MAX_IN_FLIGHT produce requests wait for their fsyncs at once instead of one after another.
 *
 * On a SASL listener the connection first belongs to its authenticator (security/authenticator.ts):
 * frames are limited to `sasl.server.max.receive.size` and only the SASL exchange is served; once
 * it succeeds, the identity becomes `User:<name>` and requests go to the router. On a TLS listener
 * with client certificates, a verified certificate's subject is the identity from the start.
 */
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Logger } from '../common/logger.js';
import type { ConnectionLimits, ConnectionRefusal } from './connection-limits.js';
import { ProduceApi } from '../protocol/apis/produce.js';
import { FrameDecoder } from '../protocol/framing.js';
import { brokerBuffers } from './buffers.js';
import { writeFramedResponse, type FetchSendMode } from './response-writer.js';
import type { RequestRouter, RouteOutcome } from './router.js';
import { SaslAuthenticator, type AuthenticatorSettings } from './security/authenticator.js';
import { certificatePrincipal } from './security/certificate-principal.js';
import { anonymousIdentity, type ConnectionIdentity, type SecurityProtocol } from './security/identity.js';

const MAX_QUEUED_REQUESTS = 32;
/** Requests started and not yet answered, at most: the Java producer's max.in.flight.requests.per.connection. */
const MAX_IN_FLIGHT = 5;
/** How long a closed connection may take to hand its last responses to a peer that reads slowly. */
const CLOSE_GRACE_MS = 2_000;

export interface ConnectionOptions {
  readonly maxRequestBytes: number;
  readonly idleTimeoutMs: number;
  readonly logger: Logger;
  readonly onRequestDone?: (apiKey: number, milliseconds: number) => void;
  readonly fetchSendMode?: FetchSendMode;
  /** The listener the connection came in on; PLAINTEXT when absent. */
  readonly listener?: ConnectionListener;
  /** The broker's connection limits, shared by its listeners. */
  readonly limits?: ConnectionLimits;
  /** Counts a connection a limit refused. */
  readonly onConnectionRefused?: (listener: string, limit: ConnectionRefusal) => void;
}

export interface ConnectionListener {
  readonly name: string;
  readonly securityProtocol: SecurityProtocol;
  /** SASL listeners: how clients authenticate, and the frame limit until they have. */
  readonly sasl?: AuthenticatorSettings & { readonly maxReceiveBytes: number };
}

export class BrokerConnection {
  private readonly decoder: FrameDecoder;
  /** Settles once every request received so far has been answered (or dropped at a close). */
  private chain: Promise<void> = Promise.resolve();
  /** Settles once the last request received may let the next one start. */
  private lastAdmitted: Promise<void> = Promise.resolve();
  /** When each of the last MAX_IN_FLIGHT requests is answered, oldest first. */
  private readonly answered: Promise<void>[] = [];
  private queued = 0;
  private closed = false;
  readonly remoteAddress: string;
  /** Who is asking: ANONYMOUS until a SASL exchange or a client certificate says otherwise. */
  private identity: ConnectionIdentity;
  /** Present while a SASL listener's client has yet to authenticate. */
  private authenticator: SaslAuthenticator | undefined;

  constructor(
    readonly id: number,
    private readonly socket: Socket,
    private readonly router: RequestRouter,
    private readonly options: ConnectionOptions,
  ) {
    const listener: ConnectionListener = options.listener ?? { name: 'PLAINTEXT', securityProtocol: 'PLAINTEXT' };
    this.decoder = new FrameDecoder(listener.sasl?.maxReceiveBytes ?? options.maxRequestBytes, (size) => brokerBuffers.take(size));
    this.remoteAddress = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    this.identity = anonymousIdentity(this.remoteAddress, listener.name, listener.securityProtocol);
    if (listener.sasl !== undefined) {
      this.authenticator = new SaslAuthenticator(listener.sasl, this.remoteAddress);
    } else if (socket instanceof TLSSocket && socket.authorized) {
      // ssl.client.auth=required|requested: a certificate the truststore vouches for names the client.
      const certificate = socket.getPeerX509Certificate();
      if (certificate !== undefined) this.identity = { ...this.identity, principal: certificatePrincipal(certificate) };
    }
    socket.setNoDelay(true);
    socket.setTimeout(options.idleTimeoutMs, () => this.close('idle timeout'));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => this.close('socket error', { flush: false }));
    socket.on('close', () => this.close('closed by peer', { flush: false }));
  }

  /** Resolves once every request received so far has been answered. */
  drained(): Promise<void> {
    return this.chain;
  }

  /**
   * Closes the connection. Responses already written may still sit in the socket's buffer (a write
   * resolves once buffered), so unless the socket is already broken it is ended — they go out
   * first — and destroyed only if the peer has not gone within a grace period.
   */
  close(reason: string, { flush = true }: { flush?: boolean } = {}): void {
    if (this.closed) return;
    this.closed = true;
    this.options.logger.debug({ connection: this.id, remote: this.remoteAddress, reason }, 'connection closed');
    if (flush && this.socket.writable) {
      this.socket.pause();
      this.socket.end();
      setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
    } else {
      this.socket.destroy();
    }
    this.router.connectionClosed(this.id);
  }

  /** Stops reading new requests; in-flight ones finish, then the socket ends. */
  async shutdown(): Promise<void> {
    this.socket.pause();
    await this.chain;
    this.socket.end();
  }

  /** The SASL exchange succeeded: requests go to the router as `principal`, with the full frame limit. */
  private authenticated(principal: string): void {
    this.authenticator = undefined;
    this.identity = { ...this.identity, principal };
    this.decoder.setMaxFrameBytes(this.options.maxRequestBytes);
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    const frames = this.decoder.push(chunk);
    for (const frame of frames) {
      this.queued += 1;
      if (this.queued >= MAX_QUEUED_REQUESTS) this.socket.pause();
      this.enqueue(frame);
    }
    const failure = this.decoder.failure;
    if (failure !== undefined) {
      // Answer the requests that arrived whole before the bad bytes, then hang up.
      this.socket.pause();
      this.chain = this.chain.then(() => this.close(`bad frame: ${failure.message}`));
    }
  }

  /**
   * Starts `frame` once its predecessor is admitted and at most MAX_IN_FLIGHT − 1 earlier
   * requests are unanswered; writes its response after every earlier response.
   */
  private enqueue(frame: Buffer): void {
    let admit: () => void = () => {};
    const admitted = new Promise<void>((resolve) => {
      admit = resolve;
    });
    const oldestAnswered = this.answered.length >= MAX_IN_FLIGHT ? this.answered.shift() : undefined;
    const routed = Promise.all([this.lastAdmitted, oldestAnswered]).then(() => this.route(frame, admit));
    const answered = Promise.all([this.chain, routed])
      .then(([, routing]) => this.respond(frame, routing))
      .catch((error: unknown) => {
        this.options.logger.error({ err: error, connection: this.id }, 'answering a request failed; closing the connection');
        this.close('request failed');
      })
      .finally(() => {
        // A handler that never called admitted() lets the next request start only now.
        admit();
        this.queued -= 1;
        if (this.queued < MAX_QUEUED_REQUESTS && !this.closed) this.socket.resume();
      });
    this.lastAdmitted = admitted;
    this.answered.push(answered);
    this.chain = answered;
  }

  /** Runs the handler; undefined when the request was not run or closed the connection. */
  private async route(frame: Buffer, admitted: () => void): Promise<{ readonly outcome: RouteOutcome; readonly started: number } | undefined> {
    if (this.closed) return undefined;
    const started = performance.now();
    try {
      const authenticator = this.authenticator;
      if (authenticator !== undefined) {
        const step = await authenticator.step(frame);
        const principal = authenticator.authenticatedPrincipal;
        if (principal !== undefined) this.authenticated(principal);
        if (step.kind === 'close') return { outcome: step, started };
        if (step.kind === 'respond') return { outcome: { kind: 'respond', parts: step.parts, apiKey: step.apiKey, ...(step.closeAfter === undefined ? {} : { closeAfter: step.closeAfter }) }, started };
      }
      return { outcome: await this.router.route(frame, this.id, this.remoteAddress, admitted, this.identity), started };
    } catch (error) {
      this.options.logger.error({ err: error, connection: this.id }, 'request failed; closing the connection');
      this.close('request failed');
      return undefined;
    }
  }

  private async respond(frame: Buffer, routing: { readonly outcome: RouteOutcome; readonly started: number } | undefined): Promise<void> {
    if (routing === undefined) return;
    const { outcome, started } = routing;
    if (outcome.kind === 'close') {
      this.options.logger.warn({ connection: this.id, remote: this.remoteAddress, reason: outcome.reason }, 'closing connection');
      this.close(outcome.reason);
      return;
    }
    if (outcome.kind === 'respond') {
      try {
        if (!this.closed) await writeFramedResponse(this.socket, outcome.parts, this.options.fetchSendMode);
      } catch (error) {
        this.close(`write failed: ${(error as Error).message}`, { flush: false });
      } finally {
        outcome.after?.();
      }
      if (outcome.closeAfter !== undefined) {
        this.options.logger.info({ connection: this.id, remote: this.remoteAddress, reason: outcome.closeAfter }, 'closing connection');
        this.close(outcome.closeAfter);
      }
    }
    // A produce request's bytes are in the log file once its handler has returned (every append
    // resolved after its write), so its frame can be lent again; other requests may keep views of theirs.
    if (outcome.apiKey === ProduceApi.apiKey) brokerBuffers.give(frame);
    this.options.onRequestDone?.(outcome.apiKey, performance.now() - started);
  }
}
