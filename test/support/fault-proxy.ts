/**
 * A Kafka-aware loopback TCP proxy that injects connection faults where they hurt a producer most.
 * It reads the Kafka framing (a 4-byte size, then the request header: api key, api version,
 * correlation id; responses start with the correlation id) on both directions, so it can:
 *
 * - drop the connection instead of forwarding a Produce **response**: the broker has already
 *   appended the batch (and with acks=all, synced it), the client never learns it and retries —
 *   without idempotence that stores the batch twice;
 * - forward half of a Produce **request** and then drop the connection: the broker sees a torn
 *   frame, which it must discard.
 *
 * Faults are counted over every connection the proxy carried (every Nth Produce response or
 * request), so a run is reproducible given the same client behaviour, and they can be switched
 * on and off while clients are connected. While the target is down the proxy still accepts
 * connections and closes them once the upstream connect fails, as a dead broker behind a load
 * balancer would look to the client.
 */
import { createConnection, createServer, type Socket } from 'node:net';

export interface FaultRules {
  /** Drop the connection instead of forwarding every Nth Produce response (0: never). */
  readonly dropProduceResponseEvery: number;
  /** Forward only the first half of every Nth Produce request, then drop the connection (0: never). */
  readonly cutProduceRequestEvery: number;
}

export const NO_FAULTS: FaultRules = { dropProduceResponseEvery: 0, cutProduceRequestEvery: 0 };

export interface FaultStats {
  /** Client connections accepted. */
  connections: number;
  /** Connections closed because the upstream (the broker) could not be reached or went away. */
  upstreamFailures: number;
  produceRequests: number;
  produceResponses: number;
  /** Connections dropped in place of a Produce response (the request had reached the broker). */
  droppedProduceResponses: number;
  /** Connections dropped in the middle of a Produce request. */
  cutProduceRequests: number;
}

export interface FaultProxy {
  /** `host:port` the proxy listens on. */
  readonly address: string;
  readonly stats: Readonly<FaultStats>;
  setRules(rules: FaultRules): void;
  close(): Promise<void>;
}

const PRODUCE = 0;

export interface FaultProxyOptions {
  readonly listen: { readonly host: string; readonly port: number };
  readonly target: { readonly host: string; readonly port: number };
  readonly rules?: FaultRules;
}

/** Splits a byte stream into Kafka frames (size-prefixed), keeping a partial tail for later. */
class Framer {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Buffer[] = [];
    let at = 0;
    while (this.pending.length - at >= 4) {
      const size = this.pending.readInt32BE(at);
      if (size < 0 || this.pending.length - at < 4 + size) break;
      frames.push(this.pending.subarray(at, at + 4 + size));
      at += 4 + size;
    }
    this.pending = this.pending.subarray(at);
    return frames;
  }
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  let rules = options.rules ?? NO_FAULTS;
  const stats: FaultStats = { connections: 0, upstreamFailures: 0, produceRequests: 0, produceResponses: 0, droppedProduceResponses: 0, cutProduceRequests: 0 };
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    stats.connections += 1;
    const upstream = createConnection({ host: options.target.host, port: options.target.port });
    let closed = false;
    const drop = (): void => {
      if (closed) return;
      closed = true;
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    sockets.add(client);
    sockets.add(upstream);
    client.on('error', drop);
    client.on('close', drop);
    upstream.on('error', () => {
      if (!closed) stats.upstreamFailures += 1;
      drop();
    });
    upstream.on('close', () => {
      if (!closed) stats.upstreamFailures += 1;
      drop();
    });

    // Api key of each request still waiting for its response, by correlation id.
    const waiting = new Map<number, number>();
    const requests = new Framer();
    const responses = new Framer();
    client.on('data', (chunk: Buffer) => {
      for (const frame of requests.push(chunk)) {
        if (closed) return;
        if (frame.length < 12) {
          upstream.write(frame);
          continue;
        }
        const apiKey = frame.readInt16BE(4);
        const correlationId = frame.readInt32BE(8);
        if (apiKey === PRODUCE) {
          stats.produceRequests += 1;
          const every = rules.cutProduceRequestEvery;
          if (every > 0 && stats.produceRequests % every === 0) {
            stats.cutProduceRequests += 1;
            closed = true; // nothing more is forwarded either way
            upstream.write(frame.subarray(0, Math.floor(frame.length / 2)), () => {
              closed = false;
              drop();
            });
            return;
          }
        }
        waiting.set(correlationId, apiKey);
        upstream.write(frame);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      for (const frame of responses.push(chunk)) {
        if (closed) return;
        const correlationId = frame.length >= 8 ? frame.readInt32BE(4) : -1;
        const apiKey = waiting.get(correlationId);
        waiting.delete(correlationId);
        if (apiKey === PRODUCE) {
          stats.produceResponses += 1;
          const every = rules.dropProduceResponseEvery;
          if (every > 0 && stats.produceResponses % every === 0) {
            stats.droppedProduceResponses += 1;
            drop();
            return;
          }
        }
        client.write(frame);
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : options.listen.port;
  return {
    address: `${options.listen.host}:${port}`,
    stats,
    setRules: (next) => {
      rules = next;
    },
    close: () => {
      for (const socket of [...sockets]) socket.destroy();
      sockets.clear();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
