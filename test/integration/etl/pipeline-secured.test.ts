/**
 * The whole pipeline with every connection authenticated (issue #21's last acceptance item):
 *
 *   producer ─SASL_SSL─▶ online broker ─SASL_SSL─▶ mirror process ─SASL_SSL─▶ offline broker ─SASL_SSL─▶ `etl run` process ─▶ HDFS
 *
 * Both brokers (processes, each in its own ZooKeeper chroot) have one listener, SASL_SSL, so no
 * connection can reach them any other way; each part logs in as its own SCRAM-SHA-512 user (made
 * as `tributary users add` makes them) with the password from a file named in its config: the
 * mirror's YAML (`sources[].security`, `targetSecurity`), the load file (`source.security`), the
 * CLI's `--command-config`. The warehouse then holds every produced record exactly once, and a
 * client without credentials is refused by both brokers. Beside it, a mirror embedded in an
 * offline broker (`--mirror-config`) whose inter-broker listener is PLAINTEXT writes through the
 * broker's SASL_SSL listener, the one its targetSecurity speaks.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { clientSasl, parseClientSecurity, type ClientSecurity } from '../../../src/client/security-config.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { TributaryError } from '../../../src/common/errors.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { putUserCredential } from '../../../src/coordination/user-credentials.js';
import { scramCredential } from '../../../src/protocol/sasl/scram.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { testCertificates } from '../../support/certificates.js';
import { runTributary } from '../../support/cli.js';
import { chroot, sleep, startBrokerWithMirror, startMirrorProcess, type MirrorProcess } from '../mirror/mirror-support.js';
import { services } from '../services.js';
import { expectExactlyOnce, makeWarehouse, producePageViews, readWarehouse, registerPageViews, removeHdfsBase, runEtl, silent, type LoaderEnvironment, type ProducedRecord, type TestWarehouse } from './loader-support.js';

const TOPIC = 'secured-page-views';
const EMBEDDED_TOPIC = 'secured-embedded';
const PARTITIONS = 2;
const USERS = ['broker', 'producer', 'mirror', 'etl'] as const;
type User = (typeof USERS)[number];

let folder: string;
let online: BrokerProcess | undefined;
let offline: BrokerProcess | undefined;
let registry: RunningRegistry | undefined;
let mirror: MirrorProcess | undefined;
let warehouse: TestWarehouse | undefined;
let onlineZookeeper: string;
let offlineZookeeper: string;

const passwordFile = (user: User): string => join(folder, `${user}.password`);

/** Client properties of `user` over SASL_SSL (what a command config or a security block holds). */
function properties(user: User): Record<string, string> {
  return {
    'security.protocol': 'SASL_SSL',
    'sasl.mechanism': 'SCRAM-SHA-512',
    'sasl.username': user,
    'sasl.password.file': passwordFile(user),
    'ssl.truststore.location': testCertificates().ca,
  };
}

function securityOf(user: User): ClientSecurity {
  return parseClientSecurity(properties(user), { source: `${user} test properties`, env: {} });
}

/** A broker process in `zookeeper` whose only listener is SASL_SSL; brokers log in to each other as `broker`. */
async function startSecuredBroker(id: number, zookeeper: string): Promise<BrokerProcess> {
  const port = await freePort();
  const certificates = testCertificates();
  return startBrokerProcess({
    run: openRun(services().runDir),
    id,
    port,
    zookeeper,
    settings: {
      listeners: `SASL_SSL://${LOOPBACK}:${port}`,
      'inter.broker.listener.name': 'SASL_SSL',
      'sasl.enabled.mechanisms': 'SCRAM-SHA-512',
      'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-512',
      'inter.broker.sasl.username': 'broker',
      'inter.broker.sasl.password.file': passwordFile('broker'),
      'ssl.keystore.location': certificates.broker,
      'ssl.truststore.location': certificates.ca,
      'log.retention.ms': '-1',
      'zookeeper.session.timeout.ms': '4000',
    },
  });
}

/** Creates the users of the pipeline in a cluster's chroot, before its broker starts. */
async function createUsers(zookeeper: string): Promise<void> {
  const store = await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs: 10_000 });
  try {
    for (const user of USERS) await putUserCredential(store, user, 'SCRAM-SHA-512', scramCredential('SCRAM-SHA-512', `${user}-password`));
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'tributary-secured-pipeline-'));
  for (const user of USERS) await writeFile(passwordFile(user), `${user}-password\n`, { mode: 0o600 });
  onlineZookeeper = chroot('secured-online');
  offlineZookeeper = chroot('secured-offline');
  await Promise.all([createUsers(onlineZookeeper), createUsers(offlineZookeeper)]);
  [online, offline] = await Promise.all([startSecuredBroker(1, onlineZookeeper), startSecuredBroker(1, offlineZookeeper)]);
  registry = await startRegistryServer({ host: LOOPBACK, port: 0, dataDir: join(folder, 'registry'), logger: silent });
}, 180_000);

afterAll(async () => {
  await mirror?.daemon.stop(10_000).catch(() => undefined);
  await Promise.all([online?.stop(), offline?.stop()].map((stopping) => stopping?.catch(() => undefined)));
  await registry?.close();
  await warehouse?.cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
}, 60_000);

/** Records in every partition of `topic` at `bootstrap` (log end offsets), read as `user` over SASL_SSL. */
async function endOf(bootstrap: string, user: User, topic: string): Promise<number> {
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], security: securityOf(user), allowAutoTopicCreation: false, metadataRetries: 1 });
  try {
    const consumer = new SimpleConsumer(cluster);
    let total = 0;
    for (const partition of await cluster.partitionsFor(topic)) total += Number(await consumer.listOffset(topic, partition, 'latest'));
    return total;
  } catch (error) {
    if (error instanceof TributaryError && error.code === 'UNKNOWN_TOPIC_OR_PARTITION') return 0;
    throw error;
  } finally {
    cluster.close();
  }
}

const offlineEnd = (topic: string): Promise<number> => endOf(offline!.bootstrap, 'etl', topic);

describe('the secured pipeline', () => {
  it('carries every record exactly once from producer to HDFS over authenticated connections only', async () => {
    // The topic, through the CLI with --command-config (the password from a file, never argv).
    const commandConfig = join(folder, 'producer.properties');
    await writeFile(commandConfig, Object.entries(properties('producer')).map(([key, value]) => `${key}=${value}`).join('\n'));
    const created = await runTributary(['topics', 'create', '--bootstrap-server', online!.bootstrap, '--topic', TOPIC, '--partitions', String(PARTITIONS), '--command-config', commandConfig]);
    expect(created.output).not.toContain('producer-password');
    expect(created.status, created.output).toBe(0);

    const registryClient = new RegistryClient({ url: registry!.url });
    await registerPageViews(registryClient, TOPIC);
    const onlineEnv: LoaderEnvironment = { broker: online!, registry: registry!, registryClient, folder, close: async () => undefined };
    const produced: ProducedRecord[] = await producePageViews(onlineEnv, TOPIC, { count: 300, partitions: PARTITIONS, hours: 3, security: securityOf('producer') });

    // The mirror: its source and its target each with their own security block.
    const mirrorConfig = join(folder, 'mirror.yaml');
    await writeFile(
      mirrorConfig,
      JSON.stringify({ sources: [{ name: 'online', zookeeper: onlineZookeeper, security: properties('mirror') }], targetSecurity: properties('mirror'), whitelist: TOPIC, group: 'secured-mirror' }),
    );
    mirror = await startMirrorProcess(openRun(services().runDir), ['--config', mirrorConfig, '--target-zookeeper', offlineZookeeper, '--set', 'commitIntervalMs=500']);
    for (let waited = 0; (await offlineEnd(TOPIC)) < produced.length; waited += 1) {
      if (waited > 90) throw new Error(`the mirror copied ${await offlineEnd(TOPIC)} of ${produced.length} records in 45 s`);
      await sleep(500);
    }

    // The loader, as a process, reading the offline broker with the load file's security block.
    warehouse = makeWarehouse('HDFS', onlineEnv, 'secured');
    const loadFile = join(folder, 'secured-load.yaml');
    await writeFile(
      loadFile,
      [
        'name: secured-load',
        `source: { bootstrap: [${offline!.bootstrap}], security: ${JSON.stringify(properties('etl'))} }`,
        `topics: [${TOPIC}]`,
        `registry: ${registry!.url}`,
        `warehouse: { url: '${warehouse.url}', root: ${warehouse.root} }`,
        'format: avro',
        'codec: deflate',
        'timeField: header.time',
        'latenessHorizon: 2h',
      ].join('\n'),
    );
    const run = await runEtl(['run', '--load', loadFile]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('etl-password');
    expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, TOPIC), produced);
    // No secret in what the brokers logged (they saw every login, and the inter-broker one).
    for (const broker of [online!, offline!]) {
      const log = await readFile(broker.logFile, 'utf8');
      for (const user of USERS) expect(log).not.toContain(`${user}-password`);
    }
  });

  it('a mirror embedded in an offline broker writes through the listener its targetSecurity speaks, not the inter-broker one', async () => {
    const zookeeper = chroot('secured-embedding');
    await createUsers(zookeeper);
    const [plaintextPort, securedPort] = [await freePort(), await freePort()];
    const mirrorConfig = join(folder, 'embedded-mirror.yaml');
    await writeFile(
      mirrorConfig,
      JSON.stringify({ sources: [{ name: 'online', zookeeper: onlineZookeeper, security: properties('mirror') }], targetSecurity: properties('mirror'), whitelist: EMBEDDED_TOPIC, group: 'secured-embedded', commitIntervalMs: 500 }),
    );
    const certificates = testCertificates();
    const embedding = await startBrokerWithMirror(openRun(services().runDir), {
      id: 7,
      zookeeper,
      mirrorConfig,
      port: plaintextPort,
      settings: {
        listeners: `PLAINTEXT://${LOOPBACK}:${plaintextPort},SASL_SSL://${LOOPBACK}:${securedPort}`,
        'inter.broker.listener.name': 'PLAINTEXT',
        'ssl.keystore.location': certificates.broker,
        'ssl.truststore.location': certificates.ca,
        'log.retention.ms': '-1',
      },
    });
    try {
      const producer = await Producer.connect({ bootstrap: [online!.bootstrap], security: securityOf('producer'), logger: silent });
      try {
        await producer.send(EMBEDDED_TOPIC, Array.from({ length: 20 }, (_, index) => ({ key: null, value: Buffer.from(`embedded-${index}`) })));
      } finally {
        await producer.close();
      }
      const secured = `${LOOPBACK}:${securedPort}`;
      for (let waited = 0; (await endOf(secured, 'etl', EMBEDDED_TOPIC)) < 20; waited += 1) {
        if (waited > 90) throw new Error(`the embedded mirror copied ${await endOf(secured, 'etl', EMBEDDED_TOPIC)} of 20 records in 45 s`);
        await sleep(500);
      }
      expect(await endOf(secured, 'etl', EMBEDDED_TOPIC)).toBe(20);
    } finally {
      await embedding.daemon.stop(10_000).catch(() => undefined);
    }
  });

  it('serves nobody without credentials: a plaintext client, a TLS client without SASL, a wrong password', async () => {
    for (const broker of [online!, offline!]) {
      const tls = securityOf('etl').tls!;
      for (const security of [undefined, { tls }, { tls, sasl: clientSasl('SCRAM-SHA-512', 'etl', 'a-guess') }]) {
        const attempt = ClusterClient.connect({ bootstrap: [broker.bootstrap], ...(security === undefined ? {} : { security }), metadataRetries: 0, connectTimeoutMs: 5000, requestTimeoutMs: 5000 });
        await expect(attempt.then((client) => client.close())).rejects.toBeInstanceOf(TributaryError);
      }
    }
  });
});
