/**
 * A loopback TCP proxy that records what clients send: every byte is passed on unchanged both
 * ways, and the client-to-server stream is cut into frames at its 4-byte size prefixes (Kafka
 * requests, and the raw SASL tokens of a v0 handshake, which are framed the same way). Each frame
 * is kept with its connection number and its position on that connection, so a conversation —
 * ApiVersions, SaslHandshake, SaslAuthenticate, then the requests — can be replayed in order.
 *
 * A broker behind it must advertise the proxy's address (advertised.listeners), or the clients
 * would follow the Metadata answer past the proxy after their first request.
 */
import { readFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { connect as connectTls, createServer as createTlsServer } from 'node:tls';
import { LOOPBACK } from '../services/network.js';

export interface CapturedFrame {
  /** Which client made it, e.g. `kcat-produce`, set by `label` when the connection opened. */
  readonly client: string;
  /** The connection it came on (numbered from 0 per proxy) and its place there (from 0). */
  readonly connection: number;
  readonly index: number;
  /** The frame as sent, size prefix included. */
  readonly bytes: Buffer;
}

export interface CaptureProxy {
  readonly port: number;
  readonly frames: CapturedFrame[];
  /** Names the client of the connections opened from now on. */
  label(client: string): void;
  close(): Promise<void>;
}

/** Refuses to keep a frame larger than this (a capture is of ordinary client traffic). */
const MAX_CAPTURED_FRAME = 16 * 1024 * 1024;

/**
 * TLS on both sides (a SASL_SSL listener): the proxy serves `cert`/`key` (PEM files) to the
 * clients, reads their requests in clear, and connects to the broker over TLS trusting `ca`.
 */
export interface CaptureTls {
  readonly key: string;
  readonly cert: string;
  readonly ca: string;
}

export async function startCaptureProxy(target: { readonly host: string; readonly port: number }, port = 0, tls?: CaptureTls): Promise<CaptureProxy> {
  const frames: CapturedFrame[] = [];
  const sockets = new Set<Socket>();
  let client = 'unlabelled';
  let connections = 0;
  const accept = (downstream: Socket): void => {
    const connection = connections++;
    const owner = client;
    let index = 0;
    let pending = Buffer.alloc(0);
    const upstream: Socket =
      tls === undefined ? createConnection({ host: target.host, port: target.port }) : connectTls({ host: target.host, port: target.port, ca: readFileSync(tls.ca), servername: 'localhost' });
    const drop = (): void => {
      downstream.destroy();
      upstream.destroy();
      sockets.delete(downstream);
      sockets.delete(upstream);
    };
    for (const socket of [downstream, upstream]) {
      sockets.add(socket);
      socket.on('error', drop);
      socket.on('close', drop);
    }
    downstream.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4) {
        const size = pending.readInt32BE(0);
        if (size < 0 || size > MAX_CAPTURED_FRAME) {
          pending = Buffer.alloc(0); // not a client we capture: stop cutting this stream
          break;
        }
        if (pending.length < 4 + size) break;
        frames.push({ client: owner, connection, index: index++, bytes: Buffer.from(pending.subarray(0, 4 + size)) });
        pending = pending.subarray(4 + size);
      }
    });
    downstream.pipe(upstream);
    upstream.pipe(downstream);
  };
  const server: Server = tls === undefined ? createServer(accept) : createTlsServer({ key: readFileSync(tls.key), cert: readFileSync(tls.cert) }, accept);
  const listening = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, LOOPBACK, () => {
      const address = server.address();
      if (address !== null && typeof address === 'object') resolve(address.port);
      else reject(new Error('the capture proxy got no port'));
    });
  });
  return {
    port: listening,
    frames,
    label: (name) => {
      client = name;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
