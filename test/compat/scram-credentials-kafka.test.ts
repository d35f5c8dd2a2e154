/**
 * SCRAM users shared with Apache Kafka 3.9.1's own tool: kafka-configs.sh (kafka.admin.ConfigCommand
 * with --zookeeper, which 3.9 still offers for SCRAM credentials) writes users that our store reads
 * and whose keys check the password, and it reads back the users we write, at the same
 * URL-encoded node. Proves the node path, the name encoding and the credential format are Kafka's.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { listUsers, putUserCredential, readUserCredentials } from '../../src/coordination/user-credentials.js';
import { ZooKeeperStore } from '../../src/coordination/zookeeper-store.js';
import { scramCredential, verifyPassword } from '../../src/protocol/sasl/scram.js';
import { ensureJars, KAFKA_SERVER_JARS } from '../services/service-jars.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../support/java.js';

const { runDir, zookeeper } = inject('compat');
const chroot = `/scram-compat-${process.pid}-${randomBytes(4).toString('hex')}`;
const silent = createLogger({ name: 'scram-compat-test', level: 'silent' });
let store: ZooKeeperStore;
let kafkaServerDir: string;

beforeAll(async () => {
  kafkaServerDir = await ensureJars(KAFKA_SERVER_JARS);
  store = await ZooKeeperStore.connect(`${zookeeper}${chroot}`, { logger: silent });
  await store.ensurePath('/config/users');
});

afterAll(async () => {
  await store?.close();
  const root = await ZooKeeperStore.connect(zookeeper, { logger: silent });
  try {
    await root.deleteRecursive(chroot);
  } finally {
    await root.close();
  }
});

/** kafka-configs.sh --zookeeper <our chroot> … */
function kafkaConfigs(args: readonly string[]): Promise<JavaToolResult> {
  return runKafkaTool('kafka.admin.ConfigCommand', ['--zookeeper', `${zookeeper}${chroot}`, ...args], { kafkaToolsDir: kafkaServerDir, runDir, timeoutMs: 100_000 });
}

describe("SCRAM credentials in Kafka's ZooKeeper format", () => {
  it('users that kafka-configs.sh adds are read by us, and their keys check the password', async () => {
    const added = await kafkaConfigs([
      '--alter', '--entity-type', 'users', '--entity-name', 'CN=kafka,O=acme',
      '--add-config', 'SCRAM-SHA-512=[iterations=8192,password=kafka-secret],SCRAM-SHA-256=[password=kafka-secret]',
    ]);
    expect(added.status, describeRun(added)).toBe(0);
    const credentials = await readUserCredentials(store, 'CN=kafka,O=acme');
    const sha512 = credentials.get('SCRAM-SHA-512');
    const sha256 = credentials.get('SCRAM-SHA-256');
    expect([sha512?.iterations, sha256?.iterations]).toEqual([8192, 4096]);
    expect(sha512 !== undefined && verifyPassword('SCRAM-SHA-512', sha512, 'kafka-secret')).toBe(true);
    expect(sha256 !== undefined && verifyPassword('SCRAM-SHA-256', sha256, 'kafka-secret')).toBe(true);
    expect(sha512 !== undefined && verifyPassword('SCRAM-SHA-512', sha512, 'other')).toBe(false);
    const listed = await listUsers(store);
    expect(listed.map(({ user }) => user)).toContain('CN=kafka,O=acme');
  });

  it('users that we add are found and described by kafka-configs.sh', async () => {
    await putUserCredential(store, 'ours@EXAMPLE', 'SCRAM-SHA-256', scramCredential('SCRAM-SHA-256', 'our-secret', { iterations: 4096 }));
    const described = await kafkaConfigs(['--describe', '--entity-type', 'users', '--entity-name', 'ours@EXAMPLE']);
    expect(described.status, describeRun(described)).toBe(0);
    expect(described.stdout, describeRun(described)).toMatch(/ours@EXAMPLE/);
    expect(described.stdout, describeRun(described)).toMatch(/SCRAM-SHA-256=.*iterations=4096/);
  });
});
