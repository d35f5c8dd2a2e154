/**
 * A standalone Tributary broker process (`tributary broker start`, persistent data dir) that
 * clients reach only through a fault proxy (fault-proxy.ts), and that the test can SIGKILL and
 * restart while they produce.
 *
 * The broker listens on 127.0.0.1:P and advertises 127.0.0.2:P (`--advertised-host`), where the
 * proxy listens: whatever the client learns from Metadata leads it back through the proxy, never
 * around it. The proxy outlives every broker restart, so clients see connections refused or
 * dropped while the broker is down, and then the same address serving again.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, LOOPBACK } from '../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../services/process.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startFaultProxy, type FaultProxy, type FaultRules } from './fault-proxy.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The loopback address the proxy listens on and the broker advertises. */
export const PROXY_HOST = '127.0.0.2';

export interface ProxiedBroker {
  /** The proxy's address: the only one clients are given, and the one the broker advertises. */
  readonly bootstrap: string;
  readonly proxy: FaultProxy;
  readonly dataDir: string;
  readonly logFile: string;
  /** SIGKILLs so far. */
  readonly kills: number;
  /** SIGKILL the broker process and wait until it is gone. */
  kill(): Promise<void>;
  /** Start it again on the same port and data dir; resolves once it accepts connections. */
  restart(): Promise<void>;
  /** SIGTERM the broker, close the proxy. */
  stop(): Promise<void>;
  /** The broker's log lines (JSON, over every start) at `level` or above: 40 warn, 50 error. */
  logLines(level: number): Record<string, unknown>[];
}

export interface ProxiedBrokerOptions {
  readonly run: ServiceRun;
  /** Names the broker's folder and pid files. */
  readonly name: string;
  readonly settings?: Record<string, string>;
  readonly rules?: FaultRules;
}

export async function startProxiedBroker(options: ProxiedBrokerOptions): Promise<ProxiedBroker> {
  const port = await freePort();
  const folder = join(options.run.dir, `${options.name}-${port}`);
  const dataDir = join(folder, 'data');
  mkdirSync(dataDir, { recursive: true });
  const logFile = join(folder, 'broker.log');
  const args = [
    join(root, 'bin', 'tributary.js'), 'broker', 'start',
    '--id', '0', '--listen', `${LOOPBACK}:${port}`, '--advertised-host', PROXY_HOST, '--data-dir', dataDir,
    ...Object.entries(options.settings ?? {}).flatMap(([key, value]) => ['--set', `${key}=${value}`]),
  ];
  let generation = 0;
  let kills = 0;
  const launch = async (): Promise<Daemon> => {
    generation += 1;
    const daemon = startDaemon({ run: options.run, name: `${options.name}-${port}-${generation}`, command: process.execPath, args, logFile, cwd: root });
    await waitUntil(() => portOpen(LOOPBACK, port), { what: `broker ${options.name} on port ${port}`, timeoutMs: 120_000, daemons: [daemon] });
    return daemon;
  };
  let daemon = await launch();
  const proxy = await startFaultProxy({ listen: { host: PROXY_HOST, port }, target: { host: LOOPBACK, port }, ...(options.rules === undefined ? {} : { rules: options.rules }) });
  return {
    bootstrap: proxy.address,
    proxy,
    dataDir,
    logFile,
    get kills() {
      return kills;
    },
    async kill() {
      kills += 1;
      daemon.signal('SIGKILL');
      await daemon.exited;
    },
    async restart() {
      daemon = await launch();
    },
    async stop() {
      await daemon.stop();
      await proxy.close();
    },
    logLines(level) {
      if (!existsSync(logFile)) return [];
      const lines: Record<string, unknown>[] = [];
      for (const line of readFileSync(logFile, 'utf8').split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          if (Number(parsed['level']) >= level) lines.push(parsed);
        } catch {
          // A line cut short by SIGKILL.
        }
      }
      return lines;
    },
  };
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
