/**
 * The two brokers under test, each started as its own process on loopback with its data in the
 * benchmark's run folder (one disk), and never both at once:
 *
 *   kafka      Apache Kafka 3.9.1, single-node KRaft (broker + controller in one JVM), storage
 *              formatted with kafka.tools.StorageTool, then kafka.Kafka; -Xms/-Xmx as given and the
 *              JVM options of kafka-run-class.sh.
 *   tributary  `tributary broker start` standalone (bin/tributary.js through tsx), node
 *              --max-old-space-size set to the same heap, optionally with --cpu-prof. The
 *              bin/tributary.js of SystemOptions.tributaryDir (BENCH_TRIBUTARY_DIR, default this
 *              checkout), run with that folder as its working directory.
 *
 * Flush settings (BENCH_FLUSH): `paper` (default) gives both the same fsync policy, the paper's
 * and Tributary's default — flush after 10,000 messages or 100 ms, whichever comes first. Kafka
 * needs log.flush.scheduler.interval.ms for the time rule (its default never runs it). Tributary
 * gets log.visible.on.append=true: with one replica Kafka's high watermark moves on append, so
 * consumers on both see a record once it is written, not once it is fsynced. `os` leaves fsync to
 * the OS on both (Kafka's default; Tributary with flush thresholds at their maximum).
 *
 * With `saslSsl` (the security scenario) each also gets a SASL_SSL listener on a second port:
 * Kafka through listeners / advertised.listeners / listener.security.protocol.map and its SCRAM
 * user added by `kafka-storage format --add-scram`; Tributary through the same setting names
 * (`listeners` instead of --listen) and its user added to the data dir's store before the start.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { javaCommand, javaEnvironment } from '../../services/java.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { startDaemon, waitUntil, type Daemon } from '../../services/process.js';
import type { ServiceRun } from '../../services/run-dir.js';
import { processCpuSeconds } from './machine.js';
import { expectSuccess, KAFKA_JVM_PERFORMANCE_OPTS, runJava } from './process.js';

export type SystemName = 'kafka' | 'tributary';
export const SYSTEMS: readonly SystemName[] = ['kafka', 'tributary'];
export type FlushPolicy = 'paper' | 'os';

export interface RunningSystem {
  readonly name: SystemName;
  readonly bootstrap: string;
  readonly dataDir: string;
  /** The SASL_SSL listener's `host:port` (security scenario: started with `SystemOptions.saslSsl`). */
  readonly secureBootstrap?: string;
  /** Seconds from launch until it answered metadata. */
  readonly startSeconds: number;
  readonly logFile: string;
  /** The broker's process id (the JVM or node itself, not a wrapper). */
  readonly pid: number;
  /** CPU seconds (user + system) the broker process has used since it started. */
  cpuSeconds(): number;
  /** Clean stop (SIGTERM, then SIGKILL after the grace period). */
  stop(): Promise<void>;
}

export interface SystemOptions {
  readonly run: ServiceRun;
  /** The session's folder; the broker's data go to `<dir>/data`. */
  readonly dir: string;
  readonly heapMb: number;
  readonly flush: FlushPolicy;
  readonly kafkaServerJars: string;
  /** Tributary only: the checkout whose bin/tributary.js is started (its own sources and node_modules). */
  readonly tributaryDir: string;
  /** Tributary only: write a V8 CPU profile into this folder (node --cpu-prof). */
  readonly cpuProfileDir?: string | undefined;
  /** A second listener, SASL_SSL on its own port, beside the PLAINTEXT one (security scenario, vs-kafka/security.ts). */
  readonly saslSsl?: SaslSslListener | undefined;
  /** Broker settings beyond brokerSettings() (the same names on both systems; compaction scenario). */
  readonly extraSettings?: Readonly<Record<string, string>> | undefined;
  /** Kafka only: loggers written at INFO into the broker's log (e.g. kafka.log.LogCleaner's per-pass stats). */
  readonly kafkaInfoLoggers?: readonly string[] | undefined;
}

/** What a SASL_SSL listener needs on each system (built by vs-kafka/security.ts). */
export interface SaslSslListener {
  /** Kafka settings beyond the listener names: keystores, mechanisms, the login module. */
  readonly kafkaSettings: Readonly<Record<string, string>>;
  /** Extra arguments of `kafka-storage format` (the SCRAM user: KRaft keeps it in the metadata log). */
  readonly kafkaFormatArgs: readonly string[];
  readonly tributarySettings: Readonly<Record<string, string>>;
  /** Runs on the Tributary broker's data dir before it starts (its users; it reads them at start). */
  prepareTributary(dataDir: string, tributaryDir: string): Promise<void>;
}

export const STOP_GRACE_MS = 60_000;
export const START_TIMEOUT_MS = 180_000;

/** The settings each broker gets, as printed in the report. */
export function brokerSettings(name: SystemName, flush: FlushPolicy): Record<string, string> {
  if (name === 'kafka') {
    return flush === 'paper'
      ? { 'log.flush.interval.messages': '10000', 'log.flush.interval.ms': '100', 'log.flush.scheduler.interval.ms': '100' }
      : {};
  }
  return {
    'auto.create.topics.enable': 'false',
    'log.visible.on.append': 'true',
    // As the Kafka broker here: the first join of a group is not held back.
    'group.initial.rebalance.delay.ms': '0',
    ...(flush === 'paper'
      ? { 'log.flush.interval.messages': '10000', 'log.flush.interval.ms': '100' }
      : { 'log.flush.interval.messages': '2147483647', 'log.flush.interval.ms': '2147483647' }),
  };
}

export async function startSystem(name: SystemName, options: SystemOptions): Promise<RunningSystem> {
  return name === 'kafka' ? startKafka(options) : startTributary(options);
}

// ---- Apache Kafka -------------------------------------------------------------------------

/** A KRaft cluster id: 16 random bytes, base64url (as Uuid.randomUuid, never starting with '-'). */
export function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

async function startKafka(options: SystemOptions): Promise<RunningSystem> {
  const dir = join(options.dir, 'kafka');
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const controllerPort = await freePort();
  const securePort = options.saslSsl === undefined ? undefined : await freePort();
  const secure = securePort === undefined ? '' : `,SASL_SSL://${LOOPBACK}:${securePort}`;
  const properties = join(dir, 'server.properties');
  const settings: Record<string, string> = {
    'process.roles': 'broker,controller',
    'node.id': '1',
    'controller.quorum.voters': `1@${LOOPBACK}:${controllerPort}`,
    listeners: `PLAINTEXT://${LOOPBACK}:${port}${secure},CONTROLLER://${LOOPBACK}:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${LOOPBACK}:${port}${secure}`,
    'listener.security.protocol.map': `CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${securePort === undefined ? '' : ',SASL_SSL:SASL_SSL'}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': dataDir,
    'num.partitions': '1',
    'offsets.topic.replication.factor': '1',
    'offsets.topic.num.partitions': '1',
    'transaction.state.log.replication.factor': '1',
    'transaction.state.log.min.isr': '1',
    'group.initial.rebalance.delay.ms': '0',
    'auto.create.topics.enable': 'false',
    ...brokerSettings('kafka', options.flush),
    ...options.extraSettings,
    ...options.saslSsl?.kafkaSettings,
  };
  writeFileSync(properties, `${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join('\n')}\n`);
  const log4j = writeKafkaLog4j(dir, options.kafkaInfoLoggers);
  const launchedAt = performance.now();
  const heap = `${options.heapMb}m`;
  expectSuccess('kafka-storage format', await runJava('kafka.tools.StorageTool', ['format', '-t', clusterId(), '-c', properties, ...(options.saslSsl?.kafkaFormatArgs ?? [])], {
    run: options.run, label: 'kafka-storage format', timeoutMs: 120_000, classpathDir: options.kafkaServerJars, heap: '256m', log4jFile: log4j,
    // --add-scram carries a password: the command line goes through a file.
    ...(options.saslSsl === undefined ? {} : { argFile: join(dir, 'storage-format.args') }),
  }));
  const logFile = join(dir, 'kafka.log');
  const daemon = startDaemon({
    run: options.run,
    name: `kafka-${port}`,
    command: javaCommand(),
    args: [`-Xms${heap}`, `-Xmx${heap}`, ...KAFKA_JVM_PERFORMANCE_OPTS, `-Dlog4j.configuration=file:${log4j}`,
      '-cp', `${options.kafkaServerJars}/*`, 'kafka.Kafka', properties],
    logFile,
    cwd: dir,
    env: javaEnvironment(),
  });
  const bootstrap = `${LOOPBACK}:${port}`;
  await waitForMetadata(bootstrap, 1, daemon, 'Apache Kafka');
  return running('kafka', bootstrap, dataDir, logFile, daemon, launchedAt, securePort);
}

/** The Kafka broker's log4j 1 configuration (`<dir>/log4j.properties`): INFO from start-up, WARN from the rest. */
export function writeKafkaLog4j(dir: string, extraInfoLoggers: readonly string[] = []): string {
  const log4j = join(dir, 'log4j.properties');
  writeFileSync(log4j, [
    'log4j.rootLogger=INFO, stdout',
    'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
    'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
    // Per-request and per-segment INFO lines are not wanted in a benchmark's log.
    'log4j.logger.kafka=WARN', 'log4j.logger.org.apache.kafka=WARN', 'log4j.logger.kafka.server.KafkaRaftServer=INFO',
    ...extraInfoLoggers.map((logger) => `log4j.logger.${logger}=INFO`),
    '',
  ].join('\n'));
  return log4j;
}

// ---- Tributary ----------------------------------------------------------------------------

async function startTributary(options: SystemOptions): Promise<RunningSystem> {
  const dir = join(options.dir, 'tributary');
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const logFile = join(dir, 'broker.log');
  const nodeFlags = [`--max-old-space-size=${options.heapMb}`];
  if (options.cpuProfileDir !== undefined) {
    mkdirSync(options.cpuProfileDir, { recursive: true });
    nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`);
  }
  const securePort = options.saslSsl === undefined ? undefined : await freePort();
  const settings: Record<string, string> = { ...brokerSettings('tributary', options.flush), ...options.extraSettings };
  // Two listeners instead of --listen (which makes the one PLAINTEXT listener).
  const listen = securePort === undefined ? ['--listen', `${LOOPBACK}:${port}`] : [];
  if (options.saslSsl !== undefined && securePort !== undefined) {
    const listeners = `PLAINTEXT://${LOOPBACK}:${port},SASL_SSL://${LOOPBACK}:${securePort}`;
    Object.assign(settings, { listeners, 'advertised.listeners': listeners, ...options.saslSsl.tributarySettings });
    await options.saslSsl.prepareTributary(dataDir, options.tributaryDir);
  }
  const launchedAt = performance.now();
  const daemon = startDaemon({
    run: options.run,
    name: `tributary-${port}`,
    command: process.execPath,
    args: [...nodeFlags, join(options.tributaryDir, 'bin', 'tributary.js'), 'broker', 'start', '--id', '0', ...listen,
      '--data-dir', dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['--set', `${k}=${v}`])],
    logFile,
    cwd: options.tributaryDir,
  });
  const bootstrap = `${LOOPBACK}:${port}`;
  await waitForMetadata(bootstrap, 0, daemon, 'Tributary');
  return running('tributary', bootstrap, dataDir, logFile, daemon, launchedAt, securePort);
}

// ---- shared -------------------------------------------------------------------------------

function running(name: SystemName, bootstrap: string, dataDir: string, logFile: string, daemon: Daemon, launchedAt: number, securePort?: number): RunningSystem {
  return {
    name,
    bootstrap,
    ...(securePort === undefined ? {} : { secureBootstrap: `${LOOPBACK}:${securePort}` }),
    dataDir,
    logFile,
    pid: daemon.pid,
    startSeconds: (performance.now() - launchedAt) / 1000,
    cpuSeconds: () => processCpuSeconds(daemon.pid),
    stop: () => daemon.stop(STOP_GRACE_MS),
  };
}

/** Ready = it answers Metadata and lists itself (broker id `id`). */
export async function waitForMetadata(bootstrap: string, id: number, daemon: Daemon, what: string): Promise<void> {
  await waitUntil(async () => {
    const client = await ClusterClient.connect({ bootstrap: [bootstrap], connectTimeoutMs: 2000, requestTimeoutMs: 5000, allowAutoTopicCreation: false });
    try {
      return client.knownBrokers().some((broker) => broker.nodeId === id);
    } finally {
      client.close();
    }
  }, { what: `${what} on ${bootstrap} to answer Metadata`, timeoutMs: START_TIMEOUT_MS, intervalMs: 500, daemons: [daemon] });
}
