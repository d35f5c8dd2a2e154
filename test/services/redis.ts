/** Redis 7 (Debian's redis-server) for BullMQ: loopback, its own port, no persistence, `noeviction`. */
import { join } from 'node:path';
import { freePort, LOOPBACK, tcpExchange } from './network.js';
import { startDaemon, waitUntil, type Daemon } from './process.js';
import { serviceDir, type ServiceRun } from './run-dir.js';

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly daemon: Daemon;
  stop(): Promise<void>;
}

export async function startRedis(run: ServiceRun): Promise<RedisServer> {
  const dir = serviceDir(run, 'redis');
  const port = await freePort();
  const daemon = startDaemon({
    run,
    name: 'redis',
    command: 'redis-server',
    args: [
      '--port', String(port), '--bind', LOOPBACK, '--dir', dir,
      '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', '--daemonize', 'no',
    ],
    logFile: join(dir, 'redis.log'),
    cwd: dir,
  });
  try {
    await waitUntil(async () => (await tcpExchange(port, 'PING\r\n', { firstLineOnly: true })).startsWith('+PONG'), {
      what: `Redis on ${LOOPBACK}:${port} to answer PING (is redis-server installed? apt-get install redis-server)`,
      timeoutMs: 20_000,
      intervalMs: 50,
      daemons: [daemon],
    });
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  return { host: LOOPBACK, port, url: `redis://${LOOPBACK}:${port}`, daemon, stop: () => daemon.stop() };
}
