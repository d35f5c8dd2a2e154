/**
 * Tributary brokers for tests: in the test process (fast, standalone) or as real child processes
 * running `tributary broker start` (for kill -9, restart and multi-broker clusters). Child brokers
 * are daemons of a service run, so the run's guardian stops them if the test run dies.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { Broker } from '../../src/broker/broker.js';
import { parseBrokerConfig } from '../../src/broker/config.js';
import { createLogger } from '../../src/common/logger.js';
import { MemoryCoordination } from '../../src/coordination/memory-store.js';
import { FSYNC_JOURNAL_VARIABLE } from '../../src/storage/fsync-journal.js';
import { freePort, LOOPBACK } from '../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../services/process.js';
import type { ServiceRun } from '../services/run-dir.js';
import { createConnection } from 'node:net';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface InProcessBroker {
  readonly broker: Broker;
  readonly bootstrap: string;
  readonly dataDir: string;
  /** Log lines the broker wrote (parsed JSON). */
  readonly logLines: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** A standalone broker in this process on a free port, with its own temp data dir. */
export async function startInProcessBroker(settings: Record<string, string> = {}, dataDir?: string): Promise<InProcessBroker> {
  const directory = dataDir ?? mkdtempSync(join(tmpdir(), 'tributary-broker-'));
  const logLines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').trim().split('\n')) if (line !== '') logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const broker = await Broker.start({
    id: 0,
    listen: { host: LOOPBACK, port: 0 },
    dataDir: directory,
    config: parseBrokerConfig(settings, 'test settings'),
    store: new MemoryCoordination({ file: join(directory, 'standalone-coordination.json') }).session(),
    logger: createLogger({ name: 'test-broker', level: 'info', destination }),
  });
  return { broker, bootstrap: `${LOOPBACK}:${broker.port}`, dataDir: directory, logLines, stop: () => broker.stop() };
}

export interface BrokerProcess {
  readonly id: number;
  readonly port: number;
  readonly bootstrap: string;
  readonly dataDir: string;
  readonly logFile: string;
  /** `host:port` of /metrics, when started with `metrics: true`. */
  readonly metricsAddress: string | undefined;
  /** The fsync journal (src/storage/fsync-journal.ts), when started with `fsyncJournal: true`. */
  readonly fsyncJournal: string | undefined;
  daemon: Daemon;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | string>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  /** Starts the broker again with the same id, port and data dir. */
  restart(): Promise<void>;
}

export interface BrokerProcessOptions {
  readonly run: ServiceRun;
  readonly id: number;
  readonly zookeeper?: string;
  /** Broker settings; a function gets the --listen port (to name it in `listeners`). */
  readonly settings?: Record<string, string> | ((port: number) => Record<string, string>);
  /** Serve Prometheus metrics on a free port. */
  readonly metrics?: boolean;
  /**
   * Journal every fsync to `<broker dir>/fsync-journal.jsonl` (TRIBUTARY_FSYNC_JOURNAL), so a
   * power loss can be simulated after a SIGKILL (test/support/power-loss.ts).
   */
  readonly fsyncJournal?: boolean;
  /** The --listen port; default a free one. Given when `settings` name it (a `listeners` setting). */
  readonly port?: number;
}

export async function startBrokerProcess(options: BrokerProcessOptions): Promise<BrokerProcess> {
  const port = options.port ?? (await freePort());
  const dataDir = join(options.run.dir, `broker-${options.id}-${port}`, 'data');
  mkdirSync(dataDir, { recursive: true });
  const logFile = join(dirname(dataDir), 'broker.log');
  const metricsAddress = options.metrics === true ? `${LOOPBACK}:${await freePort()}` : undefined;
  const fsyncJournal = options.fsyncJournal === true ? join(dirname(dataDir), 'fsync-journal.jsonl') : undefined;
  const env = fsyncJournal === undefined ? undefined : { ...process.env, [FSYNC_JOURNAL_VARIABLE]: fsyncJournal };
  const args = [
    join(root, 'bin', 'tributary.js'), 'broker', 'start',
    '--id', String(options.id), '--listen', `${LOOPBACK}:${port}`, '--data-dir', dataDir,
    ...(options.zookeeper === undefined ? [] : ['--zookeeper', options.zookeeper]),
    ...Object.entries((typeof options.settings === 'function' ? options.settings(port) : options.settings) ?? {}).flatMap(([key, value]) => ['--set', `${key}=${value}`]),
    ...(metricsAddress === undefined ? [] : ['--metrics', metricsAddress]),
  ];
  let generation = 0;
  const launch = async (): Promise<Daemon> => {
    generation += 1;
    const daemon = startDaemon({ run: options.run, name: `broker-${options.id}-${port}-${generation}`, command: process.execPath, args, logFile, cwd: root, ...(env === undefined ? {} : { env }) });
    await waitUntil(() => portOpen(port), { what: `broker ${options.id} on port ${port}`, timeoutMs: 60_000, daemons: [daemon] });
    return daemon;
  };
  const handle: BrokerProcess = {
    id: options.id,
    port,
    bootstrap: `${LOOPBACK}:${port}`,
    dataDir,
    logFile,
    metricsAddress,
    fsyncJournal,
    daemon: await launch(),
    async stop() {
      handle.daemon.signal('SIGTERM');
      return handle.daemon.exited;
    },
    async kill() {
      handle.daemon.signal('SIGKILL');
      await handle.daemon.exited;
    },
    async restart() {
      handle.daemon = await launch();
    },
  };
  return handle;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: LOOPBACK, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
