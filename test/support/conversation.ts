/**
 * A plain Kafka-protocol client connection for deterministic broker tests: send raw frames (size
 * prefix included), read whole response frames in order, decode them with the protocol layer.
 */
import { createConnection, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { ProduceApi, type ProduceRequest, type ProduceResponse, type ProducePartitionResponse } from '../../src/protocol/apis/index.js';
import { decodeResponseHeader, encodeRequestHeader, responseHeaderVersion } from '../../src/protocol/headers.js';
import { decodeResponseBody, encodeRequestBody, type ApiSchema } from '../../src/protocol/schema.js';
import { WireReader, WireWriter } from '../../src/protocol/wire.js';
import { LOOPBACK } from '../services/network.js';

export class Conversation {
  private buffered = Buffer.alloc(0);
  private readonly frames: Buffer[] = [];
  private waiter: (() => void) | undefined;
  private correlation = 1000;
  /** Bytes the broker sent on this connection. */
  receivedBytes = 0;
  closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.receivedBytes += chunk.length;
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= 4) {
        const size = this.buffered.readInt32BE(0);
        if (this.buffered.length < 4 + size) break;
        this.frames.push(this.buffered.subarray(0, 4 + size));
        this.buffered = this.buffered.subarray(4 + size);
      }
      this.waiter?.();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static open(port: number, host = LOOPBACK): Promise<Conversation> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host, port });
      socket.setNoDelay(true);
      socket.once('connect', () => resolve(new Conversation(socket)));
      socket.once('error', reject);
    });
  }

  /** Over TLS: resolves once the handshake is done, rejects when it fails (e.g. the certificate is refused). */
  static openTls(port: number, options: TlsConnectionOptions, host = LOOPBACK): Promise<Conversation> {
    return new Promise((resolve, reject) => {
      const socket = connectTls({ host, port, ...options });
      socket.setNoDelay(true);
      socket.once('secureConnect', () => resolve(new Conversation(socket)));
      socket.once('error', reject);
    });
  }

  nextCorrelationId(): number {
    this.correlation += 1;
    return this.correlation;
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** The next whole response frame, size prefix included. */
  async response(timeoutMs = 30_000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = this.frames.shift();
      if (frame !== undefined) return frame;
      if (this.closed) throw new Error('connection closed before a response arrived');
      if (Date.now() > deadline) throw new Error(`no response within ${timeoutMs} ms`);
      await this.next(deadline - Date.now());
    }
  }

  /** Whether the broker closed the connection within `timeoutMs`. */
  async closedWithin(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) await this.next(deadline - Date.now());
    return this.closed;
  }

  /** Resolves on the next data or close, or after `timeoutMs`. */
  private next(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve();
      }, Math.max(timeoutMs, 1));
      this.waiter = () => {
        clearTimeout(timer);
        this.waiter = undefined;
        resolve();
      };
    });
  }

  /** Sends a request and decodes its answer (which must carry `correlationId` and nothing after the body). */
  async request<Req, Res>(api: ApiSchema<Req, Res>, version: number, request: Req): Promise<Res> {
    const correlationId = this.nextCorrelationId();
    this.send(requestFrame(api, version, correlationId, request));
    return decodeResponse(api, version, await this.response(), correlationId);
  }

  /** Sends a raw frame (e.g. an issue's hex) and decodes the answer as `api` v`version`. */
  async raw<Req, Res>(api: ApiSchema<Req, Res>, version: number, frame: Buffer): Promise<Res> {
    this.send(frame);
    return decodeResponse(api, version, await this.response(), frame.readInt32BE(8));
  }

  /** One batch to one partition; the partition's answer. */
  async produce(topic: string, partition: number, records: Buffer, options: { version?: number; acks?: number } = {}): Promise<ProducePartitionResponse> {
    const request: ProduceRequest = { transactionalId: null, acks: options.acks ?? -1, timeoutMs: 30_000, topicData: [{ name: topic, partitionData: [{ index: partition, records }] }] };
    const response: ProduceResponse = await this.request(ProduceApi, options.version ?? 8, request);
    const answer = response.responses[0]?.partitionResponses[0];
    if (answer === undefined) throw new Error('Produce response without a partition');
    return answer;
  }

  close(): void {
    this.socket.destroy();
  }
}

export function requestFrame<Req, Res>(api: ApiSchema<Req, Res>, version: number, correlationId: number, request: Req, clientId: string | null = 'issue-16'): Buffer {
  const writer = new WireWriter();
  encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId });
  encodeRequestBody(api, version, request, writer);
  const body = writer.toBuffer();
  const prefix = Buffer.alloc(4);
  prefix.writeInt32BE(body.length);
  return Buffer.concat([prefix, body]);
}

export function decodeResponse<Req, Res>(api: ApiSchema<Req, Res>, version: number, frame: Buffer, correlationId: number): Res {
  if (frame.readInt32BE(0) !== frame.length - 4) throw new Error('response size prefix does not match');
  const reader = new WireReader(frame, 4);
  const answered = decodeResponseHeader(reader, responseHeaderVersion(api.apiKey, version));
  if (answered !== correlationId) throw new Error(`response to correlation id ${answered}, expected ${correlationId}`);
  const body = decodeResponseBody(api, version, reader);
  if (reader.remaining() !== 0) throw new Error(`${api.name} v${version} response has ${reader.remaining()} trailing bytes`);
  return body;
}
