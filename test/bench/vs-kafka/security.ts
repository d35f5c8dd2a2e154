/**
 * The `security` scenario (issue #21): each system — Kafka single-node KRaft and a standalone
 * Tributary broker, one after the other as in the other sessions — started with TWO listeners,
 * `PLAINTEXT://127.0.0.1:P1,SASL_SSL://127.0.0.1:P2`, and the same clients run over each:
 *
 *   produce b50        Java ProducerPerformance with the batch-50 settings (acks=1, no idempotence)
 *   produce default    Java ProducerPerformance with the Java producer's defaults (idempotent, acks=all)
 *   consume kcat       kcat -C -e, ~200 KB fetches
 *   consume java       Java ConsoleConsumer (assign), the same fetch size
 *
 * Both consumers read the same topic (the PLAINTEXT batch-50 one) over each listener, so the pair
 * differs only by the listener. Beside the figures, the TLS cost of each system: SASL_SSL ÷
 * PLAINTEXT records/s of the same client in the same session (recorded as its own figure, so the
 * report shows Kafka's and Tributary's side by side, and their ratio).
 *
 * SASL_SSL: TLS from PEM files (ssl.keystore.location = key + chain, ssl.truststore.location = CA)
 * and SCRAM-SHA-512 for one user, `bench`, with a random password made for the run (4096
 * iterations on both). Certificates: the repository's scripts/make-certificates.sh (CA, broker
 * certificate with SAN localhost and 127.0.0.1), or the same made here with openssl when the
 * script is missing. The user: Kafka — `kafka-storage format --add-scram` (KRaft keeps SCRAM
 * credentials in its metadata log; that tool takes the password as an argument, so its command
 * line goes through a java @argument file of mode 0600 and stays off the process list);
 * Tributary — `tributary users add --password-file` on the stopped broker's data dir before it
 * starts (it reads its users at start).
 *
 * Clients get the secrets from files (0600), never from argv: Java `--producer.config` /
 * `--consumer.config` (security.protocol=SASL_SSL, sasl.mechanism, sasl.jaas.config with the
 * ScramLoginModule, ssl.truststore.type=PEM), kcat `-F` (librdkafka's security.protocol,
 * sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location). Hostname verification stays on
 * (Java's and librdkafka's default): the certificate names 127.0.0.1.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type { ServiceRun } from '../../services/run-dir.js';
import { expectStored, createTopic } from './admin.js';
import { consoleConsume, kcatConsume, producerPerformance, producerPerformanceDefaults, type ClientContext, type ProducerPerformanceResult } from './clients.js';
import { currentLoad } from './machine.js';
import { THIS_CHECKOUT, type BenchOptions } from './options.js';
import type { Figure, Results } from './results.js';
import { startSystem, type RunningSystem, type SaslSslListener, type SystemName } from './systems.js';

const exec = promisify(execFile);

export const BENCH_USER = 'bench';
export const SASL_MECHANISM = 'SCRAM-SHA-512';

export interface SecurityMaterial {
  /** PEM CA certificate: the truststore of both brokers and of every client. */
  readonly ca: string;
  /** PEM private key + certificate chain of the brokers (ssl.keystore.location). */
  readonly keystore: string;
  /** Where the certificates came from (said in the report). */
  readonly certificatesFrom: string;
  readonly username: string;
  /** The password, alone in a 0600 file (tributary users add --password-file). */
  readonly passwordFile: string;
  /** Java client properties for SASL_SSL (0600). */
  readonly javaConfig: string;
  /** librdkafka properties for SASL_SSL (0600, kcat -F). */
  readonly kcatConfig: string;
  /** Held in memory for Kafka's storage format; never printed. */
  readonly password: string;
}

function writeSecret(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** CA + broker certificate (SAN localhost, 127.0.0.1) with openssl, when scripts/make-certificates.sh is not there. */
async function opensslCertificates(dir: string): Promise<void> {
  const openssl = (...args: string[]): Promise<unknown> => exec('openssl', args, { cwd: dir });
  await openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'ca.key');
  await openssl('req', '-x509', '-new', '-key', 'ca.key', '-subj', '/O=Tributary/CN=Tributary bench CA', '-days', '30', '-sha256',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', 'ca.pem');
  await openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'broker.key');
  await openssl('req', '-new', '-key', 'broker.key', '-subj', '/O=Tributary/CN=localhost', '-out', 'broker.csr');
  writeFileSync(join(dir, 'broker.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await openssl('x509', '-req', '-in', 'broker.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', `0x${randomBytes(16).toString('hex')}`,
    '-days', '30', '-sha256', '-extfile', 'broker.ext', '-out', 'broker.crt');
  await exec('sh', ['-c', 'cat broker.key broker.crt ca.pem > broker.pem && chmod 600 broker.pem broker.key ca.key'], { cwd: dir });
}

/** Certificates, the user's password and the clients' config files, once per run, in `<run>/security`. */
export async function prepareSecurity(run: ServiceRun): Promise<SecurityMaterial> {
  const dir = join(run.dir, 'security');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const script = join(THIS_CHECKOUT, 'scripts', 'make-certificates.sh');
  let certificatesFrom: string;
  if (existsSync(script)) {
    await exec('bash', [script, dir]);
    certificatesFrom = 'scripts/make-certificates.sh';
  } else {
    await opensslCertificates(dir);
    certificatesFrom = 'openssl, in the bench (no scripts/make-certificates.sh in this checkout)';
  }
  const ca = join(dir, 'ca.pem');
  const keystore = join(dir, 'broker.pem');
  // Hex: nothing in it needs quoting in JAAS, properties or Kafka's [name=…,password=…] syntax.
  const password = randomBytes(18).toString('hex');
  const passwordFile = join(dir, 'bench.password');
  writeSecret(passwordFile, password);
  const javaConfig = join(dir, 'client-sasl-ssl.properties');
  writeSecret(javaConfig, [
    'security.protocol=SASL_SSL',
    `sasl.mechanism=${SASL_MECHANISM}`,
    `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${BENCH_USER}" password="${password}";`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${ca}`,
    '',
  ].join('\n'));
  const kcatConfig = join(dir, 'kcat-sasl-ssl.properties');
  writeSecret(kcatConfig, [
    'security.protocol=SASL_SSL',
    `sasl.mechanisms=${SASL_MECHANISM}`,
    `sasl.username=${BENCH_USER}`,
    `sasl.password=${password}`,
    `ssl.ca.location=${ca}`,
    '',
  ].join('\n'));
  return { ca, keystore, certificatesFrom, username: BENCH_USER, passwordFile, javaConfig, kcatConfig, password };
}

/** The broker-side setup of the SASL_SSL listener for startSystem (systems.ts). */
export function saslSslListener(material: SecurityMaterial): SaslSslListener {
  return {
    kafkaSettings: {
      'sasl.enabled.mechanisms': SASL_MECHANISM,
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': material.keystore,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': material.ca,
      // Kafka wants a server-side login module per SASL mechanism of a listener (no credentials in it: those are in the metadata log).
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    },
    kafkaFormatArgs: ['--add-scram', `${SASL_MECHANISM}=[name=${material.username},iterations=4096,password=${material.password}]`],
    tributarySettings: {
      'sasl.enabled.mechanisms': SASL_MECHANISM,
      'ssl.keystore.location': material.keystore,
      'ssl.truststore.location': material.ca,
    },
    prepareTributary: async (dataDir, tributaryDir) => {
      try {
        await exec(process.execPath, [join(tributaryDir, 'bin', 'tributary.js'), 'users', 'add', material.username, '--mechanism', SASL_MECHANISM,
          '--password-file', material.passwordFile, '--data-dir', dataDir], { cwd: tributaryDir });
      } catch (error) {
        const e = error as { stderr?: string; message: string };
        throw new Error(`tributary users add ${material.username} --data-dir failed (does ${tributaryDir} have the users command?): ${((e.stderr ?? '').trim() || e.message).split('\n')[0] ?? ''}`);
      }
    },
  };
}

/** The settings of the security sessions beyond the single-broker ones (for the report; no secret in them). */
export function securitySettings(certificatesFrom: string): Record<SystemName, Record<string, string>> {
  const listeners = 'PLAINTEXT://127.0.0.1:P1,SASL_SSL://127.0.0.1:P2';
  return {
    kafka: {
      listeners: `${listeners},CONTROLLER://127.0.0.1:P3`,
      'sasl.enabled.mechanisms': SASL_MECHANISM,
      'ssl.keystore.type': 'PEM',
      'ssl.truststore.type': 'PEM',
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': 'ScramLoginModule required;',
      user: `${BENCH_USER}: kafka-storage format --add-scram (4096 iterations)`,
      certificates: certificatesFrom,
    },
    tributary: {
      listeners,
      'sasl.enabled.mechanisms': SASL_MECHANISM,
      user: `${BENCH_USER}: tributary users add --data-dir (4096 iterations)`,
      certificates: certificatesFrom,
    },
  };
}

/** The client context of the SASL_SSL listener: every client reads the security settings from its config file. */
export function securedContext(context: ClientContext, material: SecurityMaterial): ClientContext {
  return { ...context, security: { javaConfig: material.javaConfig, kcatConfig: material.kcatConfig } };
}

// ---- the session ----------------------------------------------------------------------------

export type FigureSpec = Omit<Figure, 'samples' | 'id'>;
export type Listener = 'PLAINTEXT' | 'SASL_SSL';
export const LISTENERS: readonly Listener[] = ['PLAINTEXT', 'SASL_SSL'];

export interface SecuritySessionIo {
  readonly say: (line: string) => void;
  /** Adds this session's sample of figure `id` (and prints it). */
  readonly record: (id: string, spec: FigureSpec, value: number, detail?: Record<string, number | string>) => void;
  /** A step that failed: noted, and the next step still runs. */
  readonly fail: (what: string, error: unknown) => void;
}

const spec = (label: string, unit = 'records/s'): FigureSpec => ({ scenario: 'security', label, unit, better: 'higher', chart: 'security' });
const key = (listener: Listener): string => listener.toLowerCase();

/** The unit of the TLS-cost figures (SASL_SSL ÷ PLAINTEXT records/s of a client; the label says so). */
export const TLS_COST_UNIT = '×';

/**
 * Measures the running `broker` (started with both listeners) over each listener. Topics are
 * created and checked over PLAINTEXT (Tributary's own client); the timed clients use the listener.
 * Each client runs over both listeners back to back, PLAINTEXT first in odd rounds and SASL_SSL
 * first in even ones, so a drift of the machine's load within a pair does not always favour one.
 */
export async function measureSecurity(round: number, broker: RunningSystem, options: BenchOptions, context: ClientContext, material: SecurityMaterial, io: SecuritySessionIo): Promise<void> {
  const order: readonly Listener[] = round % 2 === 1 ? LISTENERS : [...LISTENERS].reverse();
  const plain = broker.bootstrap;
  const secure = broker.secureBootstrap;
  if (secure === undefined) throw new Error(`${broker.name} was started without a SASL_SSL listener`);
  const on = (listener: Listener): { b: string; ctx: ClientContext } => (listener === 'PLAINTEXT' ? { b: plain, ctx: context } : { b: secure, ctx: securedContext(context, material) });
  const N = options.records;
  const measured = async <T>(body: () => Promise<T>): Promise<[T, Record<string, number>]> => {
    const before = broker.cpuSeconds();
    const result = await body();
    const spent = broker.cpuSeconds() - before;
    return [result, Number.isFinite(spent) ? { 'broker CPU s per 1M records': Math.round((spent / N) * 1e8) / 100 } : {}];
  };
  const step = async (what: string, body: () => Promise<void>): Promise<void> => {
    try {
      await body();
    } catch (error) {
      io.fail(what, error);
    }
  };
  /** Both listeners' figure of one client (`what` it is), then their ratio (when both ran). */
  const pair = async (client: string, what: string, run: (listener: Listener) => Promise<[number, Record<string, number | string>]>): Promise<void> => {
    const values: Partial<Record<Listener, number>> = {};
    for (const listener of order) {
      await step(`${client} over ${listener}`, async () => {
        const [value, detail] = await run(listener);
        values[listener] = value;
        io.record(`security.${key(listener)}.${client}`, spec(`${what} over ${listener}`), value, detail);
      });
    }
    const [p, s] = [values.PLAINTEXT, values.SASL_SSL];
    if (p !== undefined && s !== undefined && p > 0) {
      io.record(`security.tls-cost.${client}`, spec(`TLS cost: SASL_SSL ÷ PLAINTEXT, ${what}`, TLS_COST_UNIT), s / p);
    }
  };

  if (options.warmupRecords > 0) {
    await step('warm-up', async () => {
      for (const listener of LISTENERS) {
        const { b, ctx } = on(listener);
        const t = `warmup-${key(listener)}`;
        await createTopic(plain, t, 1);
        await producerPerformance(ctx, b, t, options.warmupRecords, 50);
        await kcatConsume(ctx, b, t, options.warmupRecords);
      }
      io.say(`  warm-up: ${options.warmupRecords.toLocaleString('en-US')} records produced and consumed over each listener, untimed`);
    });
  }
  let source: string | undefined;
  const produced = (r: ProducerPerformanceResult, cpu: Record<string, number>): [number, Record<string, number | string>] =>
    [r.recordsPerSecond, { 'MB/s': r.mbPerSecond, 'avg latency ms': r.avgLatencyMs, 'p99 latency ms': r.p99LatencyMs, ...cpu }];
  await pair('produce.b50', 'produce b50 (ProducerPerformance)', async (listener) => {
    const { b, ctx } = on(listener);
    const t = `sec-b50-${key(listener)}`;
    await createTopic(plain, t, 1);
    const [r, cpu] = await measured(() => producerPerformance(ctx, b, t, N, 50));
    await expectStored(plain, t, 1, N);
    if (listener === 'PLAINTEXT') source = t;
    return produced(r, cpu);
  });
  await pair('produce.default', 'produce, Java defaults (ProducerPerformance)', async (listener) => {
    const { b, ctx } = on(listener);
    const t = `sec-default-${key(listener)}`;
    await createTopic(plain, t, 1);
    const [r, cpu] = await measured(() => producerPerformanceDefaults(ctx, b, t, N, true));
    await expectStored(plain, t, 1, N);
    return produced(r, cpu);
  });
  if (source === undefined) {
    // The batch-50 run over PLAINTEXT failed: the consumers still need a topic.
    await step('consume source', async () => {
      const t = 'sec-consume-source';
      await createTopic(plain, t, 1);
      await producerPerformance(context, plain, t, N, 50);
      await expectStored(plain, t, 1, N);
      source = t;
    });
  }
  const from = source;
  if (from === undefined) return;
  await pair('consume.kcat', 'consume (kcat -C)', async (listener) => {
    const { b, ctx } = on(listener);
    const [r, cpu] = await measured(() => kcatConsume(ctx, b, from, N));
    return [r.recordsPerSecond, { 'MB/s': r.mbPerSecond, seconds: r.seconds, ...cpu }];
  });
  await pair('consume.java', 'consume (Java ConsoleConsumer)', async (listener) => {
    const { b, ctx } = on(listener);
    const [r, cpu] = await measured(() => consoleConsume(ctx, b, from, N));
    return [r.recordsPerSecond, { 'MB/s': r.mbPerSecond, seconds: r.seconds, ...cpu }];
  });
}

/**
 * One security session: `system` started with both listeners (fresh data folder in `<run>/round-N-<system>-security`),
 * measured, stopped. A start that fails is noted and the round goes on.
 */
export async function securitySession(round: number, system: SystemName, options: BenchOptions, run: ServiceRun, context: ClientContext, kafkaServerJars: string,
  material: SecurityMaterial, results: Results, io: SecuritySessionIo): Promise<void> {
  const dir = join(run.dir, `round-${round}-${system}-security`);
  mkdirSync(dir, { recursive: true });
  io.say(`\n== round ${round}/${options.rounds}: ${system}, PLAINTEXT and SASL_SSL listeners (security) — load ${currentLoad().join(' ')}`);
  const started = performance.now();
  let broker: RunningSystem;
  try {
    broker = await startSystem(system, {
      run, dir, heapMb: options.heapMb, flush: options.flush, kafkaServerJars, tributaryDir: options.tributaryDir, saslSsl: saslSslListener(material),
    });
  } catch (error) {
    io.fail(`start with a SASL_SSL listener`, error);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
    return;
  }
  results.startSeconds.push({ system, round, seconds: Math.round(broker.startSeconds * 10) / 10, setup: 'SASL_SSL' });
  io.say(`${system} up in ${broker.startSeconds.toFixed(1)} s: PLAINTEXT ${broker.bootstrap}, SASL_SSL ${broker.secureBootstrap ?? '?'} (${SASL_MECHANISM}, user ${material.username}; log ${broker.logFile})`);
  try {
    await measureSecurity(round, broker, options, context, material, io);
  } finally {
    await broker.stop();
    io.say(`${system} stopped; security scenario ${((performance.now() - started) / 1000).toFixed(1)} s in all`);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  }
}
