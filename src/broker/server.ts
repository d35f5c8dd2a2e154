/**
 * One listener: accepts connections (plain TCP, or TLS for SSL and SASL_SSL) and stops cleanly (no
 * new connections, in-flight requests finish). A TLS listener's certificates can be reloaded
 * while it runs: new handshakes use the new ones, open connections keep theirs.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { RefusalLog } from './connection-limits.js';
import { BrokerConnection, type ConnectionOptions } from './connection.js';
import type { RequestRouter } from './router.js';
import { loadSecureContextOptions, tlsServerOptions, type TlsSettings } from './security/tls-context.js';

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

export interface TlsListenerOptions {
  readonly settings: TlsSettings;
  /** Counts a TLS handshake that failed (plaintext client, expired or missing client certificate). */
  readonly onHandshakeFailed?: () => void;
  /** Counts a client certificate the truststore vouched for. */
  readonly onClientAuthenticated?: () => void;
}

/** Connection ids are unique in the process: the listeners of a broker share one router, which keys state by them. */
let nextConnectionId = 1;

export class BrokerServer {
  private readonly connections = new Map<number, BrokerConnection>();
  private readonly refusalLog: RefusalLog;

  private constructor(
    private readonly server: Server,
    readonly address: ListenAddress,
    private readonly router: RequestRouter,
    private readonly options: ConnectionOptions,
    private readonly tls: TlsListenerOptions | undefined,
  ) {
    this.refusalLog = new RefusalLog(options.logger);
  }

  /**
   * Listens on `listen` ('' host: every interface). With `tls`, connections are TLS (1.2 or 1.3)
   * and the request stream starts after the handshake.
   */
  static async listen(listen: ListenAddress, router: RequestRouter, options: ConnectionOptions, tls?: TlsListenerOptions): Promise<BrokerServer> {
    const tlsServer = tls === undefined ? undefined : createTlsServer({ ...tlsServerOptions(tls.settings, await loadSecureContextOptions(tls.settings)), noDelay: true });
    const server: Server = tlsServer ?? createServer({ noDelay: true });
    const address = await new Promise<ListenAddress>((resolve, reject) => {
      server.once('error', reject);
      const onListening = (): void => {
        const bound = server.address();
        if (bound === null || typeof bound === 'string') reject(new Error('listener has no TCP address'));
        else resolve({ host: listen.host, port: bound.port });
      };
      if (listen.host === '') server.listen(listen.port, onListening);
      else server.listen(listen.port, listen.host, onListening);
    });
    const broker = new BrokerServer(server, address, router, options, tls);
    const listenerName = options.listener?.name ?? 'PLAINTEXT';
    if (tls === undefined || tlsServer === undefined) {
      server.on('connection', (socket: Socket) => broker.accept(socket));
    } else {
      tlsServer.on('secureConnection', (socket: TLSSocket) => {
        // ssl.client.auth=requested lets a client without a certificate in; one whose certificate
        // the truststore does not vouch for is refused, as Java's TLS engine does.
        if (tls.settings.clientAuth === 'requested' && !socket.authorized && socket.getPeerX509Certificate() !== undefined) {
          options.logger.info({ listener: listenerName, remote: socket.remoteAddress, reason: socket.authorizationError?.toString() }, 'client certificate refused');
          tls.onHandshakeFailed?.();
          socket.destroy();
          return;
        }
        if (tls.settings.clientAuth !== 'none' && socket.authorized) tls.onClientAuthenticated?.();
        broker.accept(socket);
      });
      tlsServer.on('tlsClientError', (error: Error & { code?: string }, socket: TLSSocket) => {
        tls.onHandshakeFailed?.();
        options.logger.info({ listener: listenerName, remote: socket.remoteAddress, reason: error.code ?? error.message }, 'TLS handshake failed');
      });
    }
    server.on('error', (error) => options.logger.error({ err: error, listener: listenerName }, 'listener error'));
    return broker;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Reads the keystore and truststore again and serves them to new handshakes. A file that does
   * not read or does not match leaves the running certificates in place (and throws).
   */
  async reloadCertificates(): Promise<void> {
    if (this.tls === undefined) return;
    const context = await loadSecureContextOptions(this.tls.settings);
    (this.server as TlsServer).setSecureContext(context);
  }

  get usesTls(): boolean {
    return this.tls !== undefined;
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

  private accept(socket: Socket): void {
    const limits = this.options.limits;
    if (limits !== undefined) {
      const address = socket.remoteAddress ?? '';
      const refused = limits.admit(address);
      if (refused !== undefined) {
        const listener = this.options.listener?.name ?? 'PLAINTEXT';
        this.options.onConnectionRefused?.(listener, refused);
        this.refusalLog.note(listener, address, refused);
        socket.destroy();
        return;
      }
      socket.once('close', () => limits.release(address));
    }
    const id = nextConnectionId++;
    const connection = new BrokerConnection(id, socket, this.router, this.options);
    this.connections.set(id, connection);
    socket.once('close', () => this.connections.delete(id));
  }
}
