/**
 * One TCP connection to a broker: requests are framed with the header their version calls for (v1,
 * or v2 for a flexible version; responses alike, headers.ts) and a correlation id, may be
 * pipelined, and are matched to responses by id (brokers answer in order). A request that gets no
 * answer within its timeout fails with a retriable error and the connection is closed, since the
 * stream can no longer be trusted to stay in step.
 */
import { connect, type Socket } from 'node:net';
import { TributaryError } from '../common/errors.js';
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
    socket.on('error', (error) => this.fail(this.connectionError(`connection to ${address} failed: ${error.message}`, error)));
    socket.on('close', () => this.fail(this.connectionError(`connection to ${address} closed`)));
  }

  static open(host: string, port: number, options: ConnectionOptions = {}): Promise<KafkaConnection> {
    const address = `${host}:${port}`;
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new TributaryError({ code: 'BROKER_UNREACHABLE', retriable: true, message: `no connection to broker ${address} within ${options.connectTimeoutMs ?? 10_000} ms` }));
      }, options.connectTimeoutMs ?? 10_000);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new KafkaConnection(socket, address, options));
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(new TributaryError({ code: 'BROKER_UNREACHABLE', retriable: true, message: `cannot connect to broker ${address}: ${error.message}; is it running?`, cause: error }));
      });
    });
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
