/**
 * One TCP connection to a broker: requests are framed with the header their version calls for (v1,
 * or v2 for a flexible version; responses alike, headers.ts) and a correlation id, may be
 * pipelined, and are matched to responses by id (brokers answer in order). A request that gets no
 * answer within its timeout fails with a retriable error and the connection is closed, since the
 * stream can no longer be trusted to stay in step.
 *
 * With `security`, the connection is TLS (node:tls: the broker's chain is verified against the
 * given CAs, and its name unless the check is turned off) and/or authenticated with SASL before
 * `open` hands it out (client-authenticator.ts), so no caller ever sends on an unauthenticated
 * connection. Security failures are not retriable: trying again does not change a wrong password
 * or an untrusted certificate.
 */
import { connect, isIP, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { TributaryError } from '../common/errors.js';
import { authenticate } from './client-authenticator.js';
import type { ClientSecurity, ClientTls } from './security-config.js';
import { FrameDecoder } from '../protocol/framing.js';
import { decodeResponseHeader, encodeRequestHeader, responseHeaderVersion } from '../protocol/headers.js';
import { decodeResponseBody, encodeRequestBody, type ApiSchema } from '../protocol/schema.js';
import { WireReader, WireWriter } from '../protocol/wire.js';

interface Pending {
  readonly correlationId: number;
  readonly resolve: (frame: Buffer) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export interface ConnectionOptions {
  readonly clientId?: string;
  readonly requestTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** TLS and/or SASL (security-config.ts); absent: PLAINTEXT. */
  readonly security?: ClientSecurity;
}

export class KafkaConnection {
  private readonly pending = new Map<number, Pending>();
  private readonly decoder = new FrameDecoder(0x7fffffff);
  private nextCorrelationId = 1;
  private failure: Error | undefined;

  private constructor(
    private readonly socket: Socket,
    readonly address: string,
    private readonly options: ConnectionOptions,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      // TLS 1.3 finishes the client's handshake before the broker checks the client certificate: its refusal comes as an alert afterwards.
      this.fail(error.code?.startsWith('ERR_SSL_') === true ? tlsError(address, error) : this.connectionError(`connection to ${address} failed: ${error.message}`, error)),
    );
    socket.on('close', () => this.fail(this.connectionError(`connection to ${address} closed`)));
  }

  static async open(host: string, port: number, options: ConnectionOptions = {}): Promise<KafkaConnection> {
    const address = `${host}:${port}`;
    const socket = await openSocket(host, port, options);
    const connection = new KafkaConnection(socket, address, options);
    const sasl = options.security?.sasl;
    if (sasl === undefined) return connection;
    try {
      await authenticate(connection, sasl);
    } catch (error) {
      connection.close();
      throw error;
    }
    return connection;
  }

  /** Sends a request and resolves with the decoded response. */
  async request<Request, Response>(api: ApiSchema<Request, Response>, version: number, request: Request): Promise<Response> {
    const frame = await this.send(api, version, request, true);
    const reader = new WireReader(frame);
    decodeResponseHeader(reader, responseHeaderVersion(api.apiKey, version)); // its correlation id matched already
    return decodeResponseBody(api, version, reader);
  }

  /** Sends a request that gets no response (Produce with acks=0). */
  async sendWithoutResponse<Request, Response>(api: ApiSchema<Request, Response>, version: number, request: Request): Promise<void> {
    await this.send(api, version, request, false);
  }

  close(): void {
    this.socket.destroy();
  }

  private send<Request, Response>(api: ApiSchema<Request, Response>, version: number, request: Request, expectResponse: boolean): Promise<Buffer> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const correlationId = this.nextCorrelationId++ & 0x7fffffff;
    const writer = new WireWriter();
    writer.int32(0); // size, patched below
    encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId: this.options.clientId ?? 'tributary' });
    encodeRequestBody(api, version, request, writer);
    const parts = writer.finish() as Buffer[]; // a request has no external parts
    parts[0]?.writeInt32BE(writer.length - 4, 0);
    if (!expectResponse) {
      this.write(parts);
      return Promise.resolve(Buffer.alloc(0));
    }
    return new Promise((resolve, reject) => {
      const timeoutMs = this.options.requestTimeoutMs ?? 30_000;
      const timer = setTimeout(() => {
        this.fail(new TributaryError({ code: 'REQUEST_TIMED_OUT', retriable: true, message: `${api.name} v${version} to ${this.address} got no answer in ${timeoutMs} ms` }));
      }, timeoutMs);
      this.pending.set(correlationId, { correlationId, resolve, reject, timer });
      this.write(parts);
    });
  }

  /** The parts as one writev: large byte strings (record batches) go out without a copy. */
  private write(parts: readonly Buffer[]): void {
    if (parts.length === 1 && parts[0] !== undefined) {
      this.socket.write(parts[0]);
      return;
    }
    this.socket.cork();
    for (const part of parts) this.socket.write(part);
    this.socket.uncork();
  }

  private onData(chunk: Buffer): void {
    const frames = this.decoder.push(chunk);
    for (const frame of frames) {
      const correlationId = frame.readInt32BE(0);
      const waiting = this.pending.get(correlationId);
      if (waiting === undefined) {
        this.fail(this.connectionError(`broker ${this.address} answered unknown correlation id ${correlationId}`));
        return;
      }
      this.pending.delete(correlationId);
      clearTimeout(waiting.timer);
      waiting.resolve(frame);
    }
    if (this.decoder.failure !== undefined) {
      this.fail(this.connectionError(`broker ${this.address} sent a malformed frame`, this.decoder.failure));
    }
  }

  private connectionError(message: string, cause?: unknown): TributaryError {
    return new TributaryError({ code: 'CONNECTION_LOST', retriable: true, message, cause });
  }

  private fail(error: Error): void {
    if (this.failure === undefined) this.failure = error;
    for (const waiting of this.pending.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
    this.pending.clear();
    this.socket.destroy();
  }
}

/** A TCP socket, or a TLS socket once its handshake (and the broker certificate's checks) passed. */
function openSocket(host: string, port: number, options: ConnectionOptions): Promise<Socket> {
  const address = `${host}:${port}`;
  const tls = options.security?.tls;
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const socket = tls === undefined ? connect({ host, port, noDelay: true }) : connectTls(tlsOptions(host, port, tls)).setNoDelay(true);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new TributaryError({ code: 'BROKER_UNREACHABLE', retriable: true, message: `no ${tls === undefined ? '' : 'TLS '}connection to broker ${address} within ${timeoutMs} ms` }));
    }, timeoutMs);
    const onError = (error: NodeJS.ErrnoException): void => {
      clearTimeout(timer);
      socket.destroy();
      const unreachable = tls === undefined || error.code === 'ECONNREFUSED' || error.code === 'ETIMEDOUT' || error.code === 'EHOSTUNREACH' || error.code === 'ENOTFOUND';
      reject(
        unreachable
          ? new TributaryError({ code: 'BROKER_UNREACHABLE', retriable: true, message: `cannot connect to broker ${address}: ${error.message}; is it running?`, cause: error })
          : tlsError(address, error),
      );
    };
    // A plaintext listener answers a ClientHello by closing (or with bytes that are no TLS record).
    const onClose = (): void => {
      clearTimeout(timer);
      reject(tlsError(address, Object.assign(new Error('the broker closed the connection during the TLS handshake'), { code: 'ECONNRESET' })));
    };
    socket.once('error', onError);
    if (tls !== undefined) socket.once('close', onClose);
    socket.once(tls === undefined ? 'connect' : 'secureConnect', () => {
      clearTimeout(timer);
      socket.removeListener('error', onError);
      socket.removeListener('close', onClose);
      resolve(socket);
    });
  });
}

function tlsOptions(host: string, port: number, tls: ClientTls): TlsConnectionOptions {
  return {
    host,
    port,
    // SNI takes names only; an address is checked against the certificate's IP SANs.
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    ...(tls.cert === undefined ? {} : { cert: tls.cert }),
    ...(tls.key === undefined ? {} : { key: tls.key }),
    minVersion: 'TLSv1.2',
    rejectUnauthorized: true,
    ...(tls.checkHostname ? {} : { checkServerIdentity: () => undefined }),
  };
}

/** What went wrong in a TLS handshake, and what to change: never retriable. */
function tlsError(address: string, error: NodeJS.ErrnoException): TributaryError {
  const code = error.code ?? '';
  let advice: string;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    advice = `the broker's certificate does not name "${address.slice(0, address.lastIndexOf(':'))}": connect with a name its certificate lists, or set ssl.endpoint.identification.algorithm= (empty) to skip the check`;
  } else if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    advice = "the broker's certificate is outside its validity period: the broker needs a current certificate";
  } else if (/ALERT/.test(code) || /alert/i.test(error.message)) {
    // The broker's verdict on us, e.g. "certificate required" or "unknown ca" for our client certificate.
    advice = 'the broker refused the handshake: it requires a client certificate it trusts (ssl.keystore.location)';
  } else if (/CERT|SIGNATURE|ISSUER|SELF_SIGNED/.test(code)) {
    advice = "the broker's certificate does not chain to a trusted CA: set ssl.truststore.location to the PEM of the CA that signed it";
  } else if (code === 'ECONNRESET' || code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number|packet length too long/i.test(error.message)) {
    advice = 'is that port a TLS listener (SSL or SASL_SSL)? A PLAINTEXT listener does not speak TLS';
  } else {
    advice = 'check ssl.truststore.location, ssl.keystore.location and the broker\'s listener';
  }
  return new TributaryError({ code: 'TLS_HANDSHAKE_FAILED', message: `TLS with broker ${address} failed (${error.message.trim()}); ${advice}`, cause: error, details: { address, tlsCode: code } });
}
