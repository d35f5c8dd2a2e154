/** The TCP listener: accepts connections and stops cleanly (no new connections, in-flight requests finish). */
import { createServer, type Server } from 'node:net';
import { BrokerConnection, type ConnectionOptions } from './connection.js';
import type { RequestRouter } from './router.js';

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

export class BrokerServer {
  private readonly connections = new Map<number, BrokerConnection>();
  private nextConnectionId = 1;

  private constructor(
    private readonly server: Server,
    readonly address: ListenAddress,
  ) {}

  static async listen(
    listen: ListenAddress,
    router: RequestRouter,
    options: ConnectionOptions,
  ): Promise<BrokerServer> {
    const server = createServer({ noDelay: true });
    const address = await new Promise<ListenAddress>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.port, listen.host, () => {
        const bound = server.address();
        if (bound === null || typeof bound === 'string') reject(new Error('listener has no TCP address'));
        else resolve({ host: listen.host, port: bound.port });
      });
    });
    const broker = new BrokerServer(server, address);
    server.on('connection', (socket) => {
      const id = broker.nextConnectionId++;
      const connection = new BrokerConnection(id, socket, router, options);
      broker.connections.set(id, connection);
      socket.once('close', () => broker.connections.delete(id));
    });
    server.on('error', (error) => options.logger.error({ err: error }, 'listener error'));
    return broker;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Stops accepting, lets in-flight requests finish (bounded by `graceMs`), then closes every connection. */
  async stop(graceMs = 10_000): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const connections = [...this.connections.values()];
    const drained = Promise.all(connections.map((connection) => connection.shutdown()));
    await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    for (const connection of connections) connection.close('broker stopping', { flush: false });
    await closed;
  }
}
