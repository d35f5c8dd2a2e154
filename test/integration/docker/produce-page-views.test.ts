/**
 * docker/produce-page-views.ts, the sample traffic of the containers' README, run as a process
 * (as `docker compose exec worker npx tsx docker/produce-page-views.ts …` runs it) against a real
 * broker and registry: the records decode as PageViewEvents with origin headers, and the
 * PRODUCER audit counts add up to what was produced.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTopic } from '../../../src/audit/read-audit-topic.js';
import { ORIGIN_HEADER } from '../../../src/audit/origin.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { createLogger } from '../../../src/common/logger.js';
import { DEMO_SERVERS } from '../../../src/demo/sample-events.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';

const repository = join(import.meta.dirname, '..', '..', '..');
let broker: InProcessBroker;
let registry: RunningRegistry;
let folder: string;

beforeAll(async () => {
  broker = await startInProcessBroker();
  folder = await mkdtemp(join(tmpdir(), 'produce-page-views-'));
  registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: folder, logger: createLogger({ name: 'registry', level: 'silent' }) });
}, 120_000);

afterAll(async () => {
  await registry?.close();
  await broker?.stop();
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
});

function run(args: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repository, 'docker', 'produce-page-views.ts'), ...args], { cwd: repository, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('docker/produce-page-views.ts', () => {
  it(
    'produces Avro page views with origin headers and PRODUCER counts that add up',
    async () => {
      const result = await run(['--bootstrap-server', broker.bootstrap, '--registry', registry.url, '--topic', 'views', '--events', '300', '--hours', '2']);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^produced 300 page views to views, created \S+ – \S+; PRODUCER audit counts published\n$/);

      const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
      try {
        const consumer = new SimpleConsumer(cluster);
        const deserializer = new AvroDeserializer(new RegistryClient({ url: registry.url }));
        let records = 0;
        for (const partition of await cluster.partitionsFor('views')) {
          const end = await consumer.listOffset('views', partition, 'latest');
          let offset = await consumer.listOffset('views', partition, 'earliest');
          while (offset < end) {
            const fetched = await consumer.fetch('views', partition, offset, { maxBytes: 4 * 1024 * 1024 });
            for (const record of fetched.records) {
              const event = await deserializer.decode<{ header: { server: string; time: number }; pageKey: string }>(record.value!);
              expect(DEMO_SERVERS).toContain(event.header.server);
              expect(record.headers?.find((header) => header.key === ORIGIN_HEADER)?.value?.toString()).toBe(event.header.server);
              records += 1;
            }
            offset = fetched.nextOffset;
          }
        }
        expect(records).toBe(300);
        const audit = await readAuditTopic({ cluster, deserializer, topic: 'views' });
        expect(audit.events.filter((event) => event.tier === 'PRODUCER').reduce((sum, event) => sum + event.count, 0)).toBe(300);
      } finally {
        cluster.close();
      }
    },
    180_000,
  );

  it(
    'refuses to run without the brokers and the registry',
    async () => {
      const result = await run(['--events', '10']);
      expect(result.status).toBe(2);
      expect(result.stderr).toContain('usage: produce-page-views.ts --bootstrap-server');
    },
    120_000,
  );
});
