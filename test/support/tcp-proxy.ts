/**
 * A loopback TCP proxy that can cut a client off from a real server: `block()` drops every
 * proxied connection and refuses new ones until `unblock()`. Cutting a ZooKeeper client off
 * for longer than its session timeout makes the server — the real one — expire the session; a
 * server restart does not (ZooKeeper restores sessions from its log with a fresh timeout).
 */
import { createConnection, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** `127.0.0.1:<port>`. */
  readonly address: string;
  block(): void;
  unblock(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { readonly host: string; readonly port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let blocked = false;
  const server = createServer((client) => {
    if (blocked) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: target.host, port: target.port });
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', drop);
      socket.on('close', drop);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address !== null && typeof address === 'object') resolve(address.port);
      else reject(new Error('the proxy got no port'));
    });
  });
  const block = (): void => {
    blocked = true;
    for (const socket of [...sockets]) socket.destroy();
    sockets.clear();
  };
  return {
    port,
    address: `127.0.0.1:${port}`,
    block,
    unblock: () => {
      blocked = false;
    },
    close: () => {
      block();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `host:port` of a single-server connect string. */
export function hostAndPort(connectString: string): { host: string; port: number } {
  const match = /^([^:,/]+):(\d+)$/.exec(connectString);
  if (match?.[1] === undefined || match[2] === undefined) throw new Error(`expected one HOST:PORT, got ${connectString}`);
  return { host: match[1], port: Number(match[2]) };
}
