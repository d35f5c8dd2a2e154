/**
 * A loopback TCP proxy in front of the real NameNode's HTTP port that can lose answers the way a
 * network does, for the WebHDFS warehouse tests:
 *
 * - `loseAnswer(op)`: the next request for `?op=<op>` reaches HDFS and is carried out, but its
 *   answer is dropped and the client's connection cut (the NameNode writes an answer only after
 *   acting, so by the time answer bytes arrive the operation has happened).
 * - `swallow(op)`: requests for `?op=<op>` never reach HDFS and are never answered (the client
 *   times out), until `release()`.
 *
 * It reads only request lines (WebHDFS requests to the NameNode have no body), and counts them
 * per op so tests can show what was sent.
 */
import { createConnection, createServer, type Socket } from 'node:net';

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`, to use as the NameNode URL. */
  readonly url: string;
  loseAnswer(op: string): void;
  swallow(op: string): void;
  release(): void;
  /** How many requests for `op` clients sent through the proxy. */
  sent(op: string): number;
  close(): Promise<void>;
}

export async function startFaultProxy(nameNodeUrl: string): Promise<FaultProxy> {
  const target = new URL(nameNodeUrl);
  const sockets = new Set<Socket>();
  const counts = new Map<string, number>();
  let loseNext: string | undefined;
  let swallowed: string | undefined;

  const server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    let dropAnswer = false;
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
    client.on('data', (chunk: Buffer) => {
      const op = /^[A-Z]+ [^ ]*[?&]op=([A-Za-z_]+)/m.exec(chunk.toString('latin1'))?.[1]?.toUpperCase();
      if (op !== undefined) counts.set(op, (counts.get(op) ?? 0) + 1);
      if (op !== undefined && op === swallowed) return;
      if (op !== undefined && op === loseNext) {
        loseNext = undefined;
        dropAnswer = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (dropAnswer) {
        drop();
        return;
      }
      client.write(chunk);
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address !== null && typeof address === 'object') resolve(address.port);
      else reject(new Error('the proxy got no port'));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    loseAnswer: (op) => {
      loseNext = op.toUpperCase();
    },
    swallow: (op) => {
      swallowed = op.toUpperCase();
    },
    release: () => {
      swallowed = undefined;
    },
    sent: (op) => counts.get(op.toUpperCase()) ?? 0,
    close: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
