/** Redis 7 (Debian's redis-server) for BullMQ: loopback, its own port, no persistence, `noeviction`. */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, LOOPBACK, tcpExchange } from './network.js';
import { startDaemon, stopProcessGroup, waitUntil, type Daemon } from './process.js';
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
  const daemon = startRedisDaemon(run, dir, port);
  try {
    await waitForPing(port, daemon);
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  return { host: LOOPBACK, port, url: `redis://${LOOPBACK}:${port}`, daemon, stop: () => daemon.stop() };
}

function startRedisDaemon(run: ServiceRun, dir: string, port: number): Daemon {
  return startDaemon({
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
}

async function waitForPing(port: number, daemon: Daemon): Promise<void> {
  await waitUntil(async () => (await tcpExchange(port, 'PING\r\n', { firstLineOnly: true })).startsWith('+PONG'), {
    what: `Redis on ${LOOPBACK}:${port} to answer PING (is redis-server installed? apt-get install redis-server)`,
    timeoutMs: 20_000,
    intervalMs: 50,
    daemons: [daemon],
  });
}

/**
 * Stop and start of the run's Redis, for fault tests, on the same port: a restart loses every key
 * (no persistence, as configured above), which is what a Redis restart without AOF does to BullMQ.
 * Works on a Redis started by this process or another one (found by its pid file); the
 * replacement is recorded in the run, so stopping the run stops it.
 */
export interface RedisControl {
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again and waits until it answers PING. */
  start(): Promise<void>;
}

export function controlRedis(run: ServiceRun, port: number): RedisControl {
  const pidFile = join(run.pidDir, 'redis.pid');
  let current: Daemon | undefined;
  return {
    async stop(signal) {
      if (!existsSync(pidFile)) return;
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      if (signal === 'SIGKILL') {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await stopProcessGroup(pid, { ...(current === undefined ? {} : { exited: current.exited }), graceMs: 10_000 });
      rmSync(pidFile, { force: true });
      current = undefined;
    },
    async start() {
      if (existsSync(pidFile)) throw new Error(`the Redis of ${run.dir} still runs; stop it first`);
      current = startRedisDaemon(run, join(run.dir, 'redis'), port);
      await waitForPing(port, current);
    },
  };
}
