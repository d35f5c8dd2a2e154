/**
 * Two brokers (`tributary broker start` processes on a ZooKeeper chroot) whose inter-broker
 * listener is SASL_SSL (issue #21): the registration carries both endpoints in Kafka's form, with
 * host/port naming the inter-broker listener; Metadata answers on each listener with that
 * listener's addresses; and followers replicate over SASL_SSL with SCRAM-SHA-512 as the broker
 * user, the password read from inter.broker.sasl.password.file: acks=all produce with
 * min.insync.replicas=2 completes only once the follower has fetched every record.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { putUserCredential } from '../../../src/coordination/user-credentials.js';
import { scramCredential } from '../../../src/protocol/sasl/scram.js';
import { waitUntil } from '../../services/process.js';
import { freePort, LOOPBACK } from '../../services/network.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { testCertificates } from '../../support/certificates.js';
import { kcat } from '../../support/kcat.js';
import { services, zookeeperAddress } from '../services.js';

const BROKER_USER = 'broker';
const BROKER_PASSWORD = `inter-broker-${randomBytes(6).toString('hex')}`;
const certificates = testCertificates();
const brokers: BrokerProcess[] = [];
const saslSslPorts = new Map<number, number>();
let store: ZooKeeperStore;
let kcatSaslConfig: string;

beforeAll(async () => {
  const run = openRun(services().runDir);
  const connect = `${zookeeperAddress().connectString}/secure-replication-${process.pid}-${randomBytes(3).toString('hex')}`;
  store = await ZooKeeperStore.connect(connect);
  await putUserCredential(store, BROKER_USER, 'SCRAM-SHA-512', scramCredential('SCRAM-SHA-512', BROKER_PASSWORD));
  const passwordFile = join(run.dir, `inter-broker-password-${process.pid}`);
  writeFileSync(passwordFile, `${BROKER_PASSWORD}\n`, { mode: 0o600 });
  kcatSaslConfig = join(run.dir, `kcat-sasl-${process.pid}.properties`);
  writeFileSync(
    kcatSaslConfig,
    `security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=${BROKER_USER}\nsasl.password=${BROKER_PASSWORD}\nssl.ca.location=${certificates.ca}\n`,
    { mode: 0o600 },
  );
  for (const id of [1, 2]) saslSslPorts.set(id, await freePort());
  const started = await Promise.all(
    [1, 2].map((id) =>
      startBrokerProcess({
        run,
        id,
        zookeeper: connect,
        metrics: true,
        settings: (port) => ({
          listeners: `PLAINTEXT://${LOOPBACK}:${port},SASL_SSL://${LOOPBACK}:${saslSslPorts.get(id) ?? 0}`,
          'inter.broker.listener.name': 'SASL_SSL',
          'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-512',
          'inter.broker.sasl.username': BROKER_USER,
          'inter.broker.sasl.password.file': passwordFile,
          'ssl.keystore.location': certificates.broker,
          'ssl.truststore.location': certificates.ca,
          'default.replication.factor': '2',
          'min.insync.replicas': '2',
          'zookeeper.session.timeout.ms': '6000',
        }),
      }),
    ),
  );
  brokers.push(...started);
  await waitUntil(async () => ((await store.children('/brokers/ids')) ?? []).length === 2, { what: 'both brokers registered', timeoutMs: 60_000 });
});
afterAll(async () => {
  for (const broker of brokers) expect(await broker.stop()).toBe(0);
  await store?.close();
});

describe('a SASL_SSL inter-broker listener', () => {
  it("registers Kafka's endpoints, with host/port naming the inter-broker listener", async () => {
    const node = await store.get('/brokers/ids/1');
    const registration = JSON.parse(node?.data.toString('utf8') ?? '{}') as Record<string, unknown>;
    const [first] = brokers;
    expect(registration).toMatchObject({
      host: LOOPBACK,
      port: saslSslPorts.get(1),
      endpoints: [`PLAINTEXT://${LOOPBACK}:${first?.port}`, `SASL_SSL://${LOOPBACK}:${saslSslPorts.get(1)}`],
      listener_security_protocol_map: { PLAINTEXT: 'PLAINTEXT', SASL_SSL: 'SASL_SSL' },
    });
  });

  it('replicates: acks=all with min.insync.replicas=2 completes, and both replicas stay in sync', async () => {
    const topic = 'secure-replicated';
    const values = Array.from({ length: 300 }, (_, i) => `v-${i}`);
    const produced = await kcat(['-b', brokers[0]?.bootstrap ?? '', '-P', '-t', topic, '-X', 'acks=all'], `${values.join('\n')}\n`, 90_000);
    expect(produced.status, produced.stderr).toBe(0);
    const read = await kcat(['-b', brokers[1]?.bootstrap ?? '', '-C', '-t', topic, '-o', 'beginning', '-e', '-q']);
    expect(read.status, read.stderr).toBe(0);
    expect(read.stdout.split('\n').filter((line) => line !== '').sort()).toEqual([...values].sort());
    const state = JSON.parse((await store.get(`/brokers/topics/${topic}/partitions/0/state`))?.data.toString('utf8') ?? '{}') as { leader?: number; isr?: number[] };
    expect([...(state.isr ?? [])].sort()).toEqual([1, 2]);
    // The follower came in on the leader's SASL_SSL listener, as the broker user (no client has yet).
    const leader = brokers.find((broker) => broker.id === state.leader);
    const metrics = await (await fetch(`http://${leader?.metricsAddress ?? ''}/metrics`)).text();
    const logins = /tributary_broker_authentication_successes_total\{listener="SASL_SSL",mechanism="SCRAM-SHA-512"\} (\d+)/.exec(metrics);
    expect(Number(logins?.[1] ?? 0)).toBeGreaterThan(0);
  });
  it('answers Metadata on each listener with the addresses of that listener', async () => {
    const plaintext = await kcat(['-b', brokers[0]?.bootstrap ?? '', '-L', '-J']);
    expect(plaintext.status, plaintext.stderr).toBe(0);
    expect((JSON.parse(plaintext.stdout) as { brokers: { id: number; name: string }[] }).brokers.sort((a, b) => a.id - b.id)).toEqual(
      brokers.map((broker) => ({ id: broker.id, name: broker.bootstrap })),
    );
    const secured = await kcat(['-F', kcatSaslConfig, '-b', `${LOOPBACK}:${saslSslPorts.get(2)}`, '-L', '-J']);
    expect(secured.status, secured.stderr).toBe(0);
    expect((JSON.parse(secured.stdout) as { brokers: { id: number; name: string }[] }).brokers.sort((a, b) => a.id - b.id)).toEqual(
      brokers.map((broker) => ({ id: broker.id, name: `${LOOPBACK}:${saslSslPorts.get(broker.id)}` })),
    );
  });

});
