/** Loopback ports and plain-TCP probes (ZooKeeper four-letter words, Redis PING). */
import { createConnection, createServer } from 'node:net';

export const LOOPBACK = '127.0.0.1';

/** Ports handed out by this process, so two services asking at once never get the same one. */
const handedOut = new Set<number>();

/** A loopback port that was free a moment ago (the kernel's pick; collisions stay possible but rare). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, LOOPBACK, () => {
        const address = server.address();
        server.close(() => {
          if (address !== null && typeof address === 'object') resolve(address.port);
          else reject(new Error('listen(0) returned no port'));
        });
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('could not find a free loopback port in 20 attempts');
}

export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i += 1) ports.push(await freePort());
  return ports;
}

/**
 * Sends `request` on a fresh TCP connection and returns what comes back: everything until the peer
 * closes, or only the first line with `firstLineOnly` (for servers that keep the connection open).
 */
export function tcpExchange(
  port: number,
  request: string,
  { timeoutMs = 2_000, firstLineOnly = false }: { timeoutMs?: number; firstLineOnly?: boolean } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: LOOPBACK, port });
    const chunks: Buffer[] = [];
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer from ${LOOPBACK}:${port} in ${timeoutMs} ms`)));
    socket.once('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (firstLineOnly && chunk.includes('\n')) socket.end();
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
