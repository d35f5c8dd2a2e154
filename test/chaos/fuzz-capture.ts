/**
 * Captures the requests real clients send, as the seed corpus of the protocol fuzzer's `captured`
 * frames (test/support/fuzz-captured.ts): kcat (librdkafka), kafkajs and Apache Kafka 3.9.1's Java
 * tools (kafka-console-producer, kafka-console-consumer in a group, kafka-consumer-groups) talk to
 * a broker in this process through a capturing proxy (test/support/capture-proxy.ts) on its
 * PLAINTEXT listener, and kcat, kafkajs and the Java producer and group tool log in with SCRAM and
 * PLAIN through one on its SASL_PLAINTEXT listener. The broker advertises the proxies, so every
 * connection a client opens passes through them.
 *
 * The clients use the fuzzer's topics (storm-a with 3 partitions, storm-b with 2), so a replayed
 * Produce lands in a partition the fuzz run checks byte for byte.
 *
 *   npx tsx test/chaos/fuzz-capture.ts [--out FILE] [--no-java]
 *
 * writes the corpus (default: test/support/fuzz-captured-frames.json, the committed one; the
 * Java tools take about a minute, so the fuzzer reads that file rather than capturing each run).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka, CompressionTypes, logLevel, type KafkaConfig } from 'kafkajs';
import { KafkaConnection } from '../../src/client/connection.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { freePort, LOOPBACK } from '../services/network.js';
import { ensureJars, KAFKA_SERVER_JARS, KAFKA_TOOLS_JARS } from '../services/service-jars.js';
import { startCaptureProxy, type CaptureProxy } from '../support/capture-proxy.js';
import { CAPTURED_CORPUS_FILE, CAPTURE_PASSWORD, CAPTURE_USER, type CapturedCorpus, type CorpusFrame } from '../support/fuzz-captured.js';
import { runKafkaTool, describeRun } from '../support/java.js';
import { kcat } from '../support/kcat.js';
import { startSecureBroker } from '../support/secure-broker.js';

const TOPICS = [
  { name: 'storm-a', partitions: 3 },
  { name: 'storm-b', partitions: 2 },
] as const;

/** Frames larger than this are left out of the corpus (none of the clients' requests here come near). */
const MAX_FRAME = 64 * 1024;

export interface CaptureOptions {
  readonly java: boolean;
  readonly say: (line: string) => void;
}

export async function captureClientTraffic(options: CaptureOptions): Promise<CapturedCorpus> {
  const say = options.say;
  const [plainPort, saslPort, sslPort, plainProxyPort, saslProxyPort, sslProxyPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const secure = await startSecureBroker({
    users: { [CAPTURE_USER]: CAPTURE_PASSWORD },
    settings: {
      listeners: `PLAINTEXT://${LOOPBACK}:${plainPort},SASL_PLAINTEXT://${LOOPBACK}:${saslPort},SASL_SSL://${LOOPBACK}:${sslPort}`,
      'advertised.listeners': `PLAINTEXT://${LOOPBACK}:${plainProxyPort},SASL_PLAINTEXT://${LOOPBACK}:${saslProxyPort},SASL_SSL://${LOOPBACK}:${sslProxyPort}`,
      'ssl.client.auth': 'none',
      'group.initial.rebalance.delay.ms': '0',
      'log.visible.on.append': 'true',
    },
  });
  const plain = await startCaptureProxy({ host: LOOPBACK, port: plainPort }, plainProxyPort);
  const sasl = await startCaptureProxy({ host: LOOPBACK, port: saslPort }, saslProxyPort);
  const { certificates } = secure;
  const saslSsl = await startCaptureProxy({ host: LOOPBACK, port: sslPort }, sslProxyPort, { key: certificates.brokerKey, cert: certificates.brokerCert, ca: certificates.ca });
  const work = mkdtempSync(join(tmpdir(), 'tributary-capture-'));
  const clients: string[] = [];
  try {
    const admin = await KafkaConnection.open(LOOPBACK, plainPort, { requestTimeoutMs: 30_000 });
    try {
      await admin.request(CreateTopicsApi, 4, { topics: TOPICS.map((topic) => ({ name: topic.name, numPartitions: topic.partitions, replicationFactor: 1, assignments: [], configs: [] })), timeoutMs: 30_000, validateOnly: false });
    } finally {
      admin.close();
    }
    const plainBootstrap = `${LOOPBACK}:${plainProxyPort}`;
    const saslBootstrap = `${LOOPBACK}:${saslProxyPort}`;
    const sslBootstrap = `${LOOPBACK}:${sslProxyPort}`;
    const step = async (proxy: CaptureProxy, name: string, action: () => Promise<void>): Promise<void> => {
      proxy.label(name);
      const before = proxy.frames.length;
      const started = Date.now();
      await action();
      clients.push(name);
      say(`  ${name}: ${proxy.frames.length - before} frames in ${Date.now() - started} ms`);
    };
    const checkedKcat = async (args: string[], input?: string): Promise<void> => {
      const result = await kcat(args, input, 60_000);
      if (result.status !== 0) throw new Error(`kcat ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    };
    const lines = (prefix: string, count: number): string => Array.from({ length: count }, (_, i) => `k${i}:${prefix} record ${i} ${'v'.repeat(i * 3)}\n`).join('');

    // kcat (librdkafka 2.0.2) on PLAINTEXT.
    await step(plain, 'kcat-metadata', () => checkedKcat(['-b', plainBootstrap, '-L']));
    for (const [codec, topic, partition] of [['none', 'storm-a', 0], ['snappy', 'storm-a', 1], ['gzip', 'storm-b', 0], ['lz4', 'storm-a', 2], ['zstd', 'storm-a', 2]] as const) {
      await step(plain, `kcat-produce-${codec}`, () => checkedKcat(['-b', plainBootstrap, '-P', '-t', topic, '-p', String(partition), '-K', ':', '-z', codec, '-X', 'linger.ms=5'], lines(`kcat ${codec}`, 12)));
    }
    await step(plain, 'kcat-consume', () => checkedKcat(['-b', plainBootstrap, '-C', '-t', 'storm-a', '-p', '0', '-o', 'beginning', '-e', '-q']));
    await step(plain, 'kcat-query-offsets', () => checkedKcat(['-b', plainBootstrap, '-Q', '-t', 'storm-a:0:-1', '-t', 'storm-b:1:-2']));
    await step(plain, 'kcat-group', () => checkedKcat(['-b', plainBootstrap, '-G', 'capture-kcat', '-e', '-q', '-X', 'auto.offset.reset=earliest', '-X', 'enable.auto.commit=true', '-X', 'auto.commit.interval.ms=100', 'storm-b']));

    // kafkajs 2 on PLAINTEXT: admin, producer (acks -1 and 1, gzip), a consumer group (of storm-b,
    // which holds no codec kafkajs lacks: it reads none and gzip only).
    const kafkajs = (bootstrap: string, extra: Partial<KafkaConfig> = {}): Kafka => new Kafka({ clientId: 'kafkajs-capture', brokers: [bootstrap], logLevel: logLevel.NOTHING, ...extra });
    await step(plain, 'kafkajs-admin', async () => {
      const adminClient = kafkajs(plainBootstrap).admin();
      await adminClient.connect();
      try {
        await adminClient.listTopics();
        await adminClient.fetchTopicMetadata({ topics: ['storm-a', 'storm-b'] });
        await adminClient.fetchTopicOffsets('storm-a');
        await adminClient.listGroups();
        await adminClient.describeGroups(['capture-kcat']);
        await adminClient.fetchOffsets({ groupId: 'capture-kcat', topics: ['storm-b'] });
        await adminClient.describeConfigs({ resources: [{ type: 2, name: 'storm-a' }], includeSynonyms: false });
        await adminClient.createTopics({ topics: [{ topic: 'capture-scratch', numPartitions: 1 }] });
        await adminClient.deleteTopics({ topics: ['capture-scratch'] });
      } finally {
        await adminClient.disconnect();
      }
    });
    await step(plain, 'kafkajs-produce', async () => {
      const producer = kafkajs(plainBootstrap).producer();
      await producer.connect();
      try {
        for (let i = 0; i < 6; i += 1) {
          await producer.send({
            topic: i % 2 === 0 ? 'storm-a' : 'storm-b',
            acks: i % 3 === 0 ? 1 : -1,
            compression: i % 2 === 0 ? CompressionTypes.GZIP : CompressionTypes.None,
            messages: Array.from({ length: 1 + i }, (_, j) => ({ key: `kj${j}`, value: `kafkajs record ${i}/${j}`, partition: j % 2, headers: j % 2 === 0 ? { trace: `t-${i}-${j}` } : {} })),
          });
        }
      } finally {
        await producer.disconnect();
      }
    });
    await step(plain, 'kafkajs-consumer-group', async () => {
      const consumer = kafkajs(plainBootstrap).consumer({ groupId: 'capture-kafkajs', sessionTimeout: 10_000, rebalanceTimeout: 10_000, heartbeatInterval: 500 });
      await consumer.connect();
      try {
        await consumer.subscribe({ topics: ['storm-b'], fromBeginning: true });
        let seen = 0;
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`the kafkajs consumer read ${seen} records in 30 s`)), 30_000);
          void consumer
            .run({
              eachMessage: async () => {
                seen += 1;
                if (seen === 20) {
                  clearTimeout(timer);
                  resolve();
                }
              },
            })
            .catch(reject);
        });
        await new Promise((resolve) => setTimeout(resolve, 1500)); // a heartbeat or two, and a commit
      } finally {
        await consumer.disconnect();
      }
    });

    // The Java tools on PLAINTEXT.
    if (options.java) {
      const toolsDir = await ensureJars(KAFKA_TOOLS_JARS, say);
      const serverDir = await ensureJars(KAFKA_SERVER_JARS, say);
      const java = async (jars: string, mainClass: string, args: string[], input?: string): Promise<void> => {
        const result = await runKafkaTool(mainClass, args, { kafkaToolsDir: jars, runDir: work, timeoutMs: 120_000, ...(input === undefined ? {} : { input }) });
        if (result.status !== 0) throw new Error(`${mainClass}: ${describeRun(result)}`);
      };
      await step(plain, 'java-console-producer', () => java(serverDir, 'kafka.tools.ConsoleProducer', ['--bootstrap-server', plainBootstrap, '--topic', 'storm-a', '--property', 'parse.key=true', '--property', 'key.separator=:'], lines('java', 15)));
      await step(plain, 'java-console-consumer-group', () => java(toolsDir, 'org.apache.kafka.tools.consumer.ConsoleConsumer', ['--bootstrap-server', plainBootstrap, '--topic', 'storm-a', '--group', 'capture-java', '--from-beginning', '--max-messages', '20', '--consumer-property', 'auto.commit.interval.ms=200']));
      await step(plain, 'java-consumer-groups', async () => {
        await java(toolsDir, 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', plainBootstrap, '--list']);
        await java(toolsDir, 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', plainBootstrap, '--describe', '--group', 'capture-java']);
        await java(toolsDir, 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', plainBootstrap, '--describe', '--group', 'capture-java', '--members', '--verbose']);
      });
      const jaas = (mechanism: 'PLAIN' | 'SCRAM-SHA-512' | 'SCRAM-SHA-256'): string => {
        const module = mechanism === 'PLAIN' ? 'org.apache.kafka.common.security.plain.PlainLoginModule' : 'org.apache.kafka.common.security.scram.ScramLoginModule';
        const file = join(work, `${mechanism}.properties`);
        const protocol = mechanism === 'PLAIN' ? `security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=${certificates.ca}\n` : 'security.protocol=SASL_PLAINTEXT\n';
        writeFileSync(file, `${protocol}sasl.mechanism=${mechanism}\nsasl.jaas.config=${module} required username="${CAPTURE_USER}" password="${CAPTURE_PASSWORD}";\n`, { mode: 0o600 });
        return file;
      };
      await step(sasl, 'java-sasl-scram-producer', () => java(serverDir, 'kafka.tools.ConsoleProducer', ['--bootstrap-server', saslBootstrap, '--topic', 'storm-b', '--producer.config', jaas('SCRAM-SHA-512')], lines('java sasl', 5)));
      await step(sasl, 'java-sasl-scram256-consumer-groups', () => java(toolsDir, 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', saslBootstrap, '--list', '--command-config', jaas('SCRAM-SHA-256')]));
      await step(saslSsl, 'java-sasl-ssl-plain-consumer-groups', () => java(toolsDir, 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand', ['--bootstrap-server', sslBootstrap, '--list', '--command-config', jaas('PLAIN')]));
    }

    // kcat and kafkajs log in: SCRAM on SASL_PLAINTEXT, PLAIN on SASL_SSL (a broker offers PLAIN
    // over TLS only).
    const login = (mechanism: 'SCRAM-SHA-512' | 'SCRAM-SHA-256' | 'PLAIN'): string[] => [
      '-X', `security.protocol=${mechanism === 'PLAIN' ? 'SASL_SSL' : 'SASL_PLAINTEXT'}`, '-X', `sasl.mechanisms=${mechanism}`, '-X', `sasl.username=${CAPTURE_USER}`, '-X', `sasl.password=${CAPTURE_PASSWORD}`,
      ...(mechanism === 'PLAIN' ? ['-X', `ssl.ca.location=${certificates.ca}`] : []),
    ];
    for (const mechanism of ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'] as const) {
      const proxy = mechanism === 'PLAIN' ? saslSsl : sasl;
      const bootstrap = mechanism === 'PLAIN' ? sslBootstrap : saslBootstrap;
      await step(proxy, `kcat-sasl-${mechanism.toLowerCase()}-produce`, () => checkedKcat(['-b', bootstrap, ...login(mechanism), '-P', '-t', 'storm-a', '-p', '1', '-K', ':'], lines(`kcat ${mechanism}`, 4)));
    }
    await step(saslSsl, 'kcat-sasl-plain-metadata', () => checkedKcat(['-b', sslBootstrap, ...login('PLAIN'), '-L']));
    for (const mechanism of ['scram-sha-512', 'scram-sha-256', 'plain'] as const) {
      const proxy = mechanism === 'plain' ? saslSsl : sasl;
      const bootstrap = mechanism === 'plain' ? sslBootstrap : saslBootstrap;
      await step(proxy, `kafkajs-sasl-${mechanism}-produce`, async () => {
        const tls = mechanism === 'plain' ? { ssl: { ca: [readFileSync(certificates.ca)] } } : {};
        const producer = kafkajs(bootstrap, { ...tls, sasl: { mechanism, username: CAPTURE_USER, password: CAPTURE_PASSWORD } as NonNullable<KafkaConfig['sasl']> }).producer();
        await producer.connect();
        try {
          await producer.send({ topic: 'storm-b', messages: [{ key: 'sasl', value: `kafkajs ${mechanism}` }] });
        } finally {
          await producer.disconnect();
        }
      });
    }
  } finally {
    await plain.close();
    await sasl.close();
    await saslSsl.close();
    await secure.stop();
    rmSync(secure.dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
  const frames: CorpusFrame[] = [];
  for (const [listener, proxy, tls] of [['plaintext', plain, false], ['sasl', sasl, false], ['sasl', saslSsl, true]] as const) {
    for (const frame of proxy.frames) {
      if (frame.bytes.length > MAX_FRAME) continue;
      frames.push({ client: frame.client, listener, tls, connection: frame.connection + (tls ? 100_000 : 0), index: frame.index, hex: frame.bytes.toString('hex') });
    }
  }
  return { capturedAt: new Date().toISOString(), user: CAPTURE_USER, password: CAPTURE_PASSWORD, clients, frames };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, 'no-java': { type: 'boolean' } }, strict: true });
  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  const corpus = await captureClientTraffic({ java: values['no-java'] !== true, say });
  const out = values.out ?? CAPTURED_CORPUS_FILE;
  writeFileSync(out, `${JSON.stringify(corpus, null, 0).replaceAll('},{', '},\n{')}\n`);
  say(`${corpus.frames.length} frames of ${corpus.clients.length} client runs written to ${out}`);
}

if (process.argv[1]?.endsWith('fuzz-capture.ts') === true) await main();
