/**
 * The operator's view of a run (issue #32), through real `tributary etl` processes against a
 * broker process, a registry server and a local-folder warehouse:
 *
 * - `etl run --no-progress` logs progress lines (at least the one closing the read: records,
 *   bytes, rate), names the load once on every line, and ends on a line giving the run's duration,
 *   records/s and the bytes of the data files it committed (as its manifest lists them).
 * - `etl ddl` with the registry unreachable prints the same DDL, built from the committed files'
 *   schema, and says so in one line on stderr.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/network.js';
import {
  createTopic,
  makeWarehouse,
  messagesOf,
  producePageViews,
  publishedManifests,
  registerPageViews,
  runEtl,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type TestWarehouse,
} from './loader-support.js';

const SLOW = 300_000;
const NAME = 'ops-view';
const TOPIC = 'ops-view-views';

let env: LoaderEnvironment;
let warehouse: TestWarehouse;
let loadFile: string;
let produced = 0;

beforeAll(async () => {
  env = await startLoaderEnvironment();
  warehouse = makeWarehouse('local folder', env, NAME);
  await createTopic(env.broker.bootstrap, TOPIC, 2);
  await registerPageViews(env.registryClient, TOPIC);
  produced = (await producePageViews(env, TOPIC, { count: 3_000, partitions: 2, hours: 3 })).length;
  loadFile = await writeLoadFile(env, { name: NAME, topic: TOPIC, warehouse, format: 'parquet', codec: 'snappy' });
}, SLOW);

afterAll(async () => {
  await warehouse?.cleanup().catch(() => undefined);
  await env?.close();
}, 60_000);

function jsonLines(stderr: string): { raw: string; line: Record<string, unknown> }[] {
  return stderr
    .split('\n')
    .filter((raw) => raw.startsWith('{'))
    .map((raw) => ({ raw, line: JSON.parse(raw) as Record<string, unknown> }));
}

describe('etl run --no-progress', () => {
  it(
    'logs its progress, names the load once per line, and ends with duration, records/s and bytes written',
    async () => {
      const result = await runEtl(['run', '--load', loadFile, '--no-progress', '--progress-interval', '0.2']);
      expect(result.status, messagesOf(result)).toBe(0);
      const lines = jsonLines(result.stderr);

      for (const { raw } of lines) expect(raw.split('"load":').length - 1, raw).toBeLessThanOrEqual(1);
      for (const message of ['commit claimed', 'files in place', 'commit published']) {
        const line = lines.find((entry) => entry.line['msg'] === message);
        expect(line?.raw.split('"load":').length, message).toBe(2);
      }

      const readDone = lines.find((entry) => entry.line['event'] === 'progress' && entry.line['stage'] === 'committing')?.line;
      expect(readDone).toMatchObject({ load: NAME, records: produced, planned: produced, partitions: 2, partitionsDone: 2, recordsPerSecond: expect.any(Number) as unknown });
      expect(readDone?.['bytes']).toBeGreaterThan(0);
      for (const { line } of lines.filter((entry) => entry.line['event'] === 'task-progress')) {
        expect(line).toMatchObject({ load: NAME, topic: TOPIC, records: expect.any(Number) as unknown, planned: expect.any(Number) as unknown, bytes: expect.any(Number) as unknown });
      }

      const [manifest] = await publishedManifests(warehouse.warehouse, warehouse.root, NAME);
      const last = lines.at(-1)?.line;
      expect(last).toMatchObject({
        event: 'run-finished',
        load: NAME,
        outcome: 'committed',
        seq: 1,
        attempt: manifest?.attempt,
        records: produced,
        files: manifest?.files.length,
        bytesWritten: manifest?.files.reduce((sum, file) => sum + file.bytes, 0),
      });
      const durationMs = last?.['durationMs'] as number;
      expect(durationMs).toBeGreaterThan(0);
      expect(last?.['recordsPerSecond']).toBe(Math.round((produced * 1000) / durationMs));
      expect(last?.['msg']).toMatch(new RegExp(`^run finished: commit 1, ${produced} records in \\d+ files \\([\\d.]+ [KM]iB written\\) from 2 partitions in [\\d.]+ s: \\d+ records/s$`));
    },
    SLOW,
  );

  it('refuses a progress interval that is not a number of seconds', async () => {
    const result = await runEtl(['run', '--load', loadFile, '--progress-interval', 'soon']);
    expect(result.status).toBe(1);
    expect(messagesOf(result)).toContain('--progress-interval "soon" must be a number of seconds from 0.1 to 3600');
  });
});

describe('etl ddl with the registry unreachable', () => {
  it(
    'prints the DDL it prints with the registry, from the committed files, and says so on stderr',
    async () => {
      const online = await runEtl(['ddl', '--load', loadFile]);
      expect(online.status, messagesOf(online)).toBe(0);
      expect(online.stderr).toBe('');

      // The same load, its registry an address nothing listens on.
      const away = `http://127.0.0.1:${await freePort()}`;
      const offlineFile = join(env.folder, `${NAME}-registry-away.yaml`);
      await writeFile(offlineFile, (await readFile(loadFile, 'utf8')).replace(`registry: ${env.registry.url}`, `registry: ${away}`));
      const offline = await runEtl(['ddl', '--load', offlineFile]);
      expect(offline.status, messagesOf(offline)).toBe(0);
      expect(offline.stdout).toBe(online.stdout.replace(loadFile, offlineFile));
      const [manifest] = await publishedManifests(warehouse.warehouse, warehouse.root, NAME);
      const reader = manifest?.readerSchemas[TOPIC];
      expect(offline.stderr).toMatch(
        new RegExp(`^tributary: registry unreachable at ${away.replace(/[.]/g, '\\.')}: the DDL of topic ${TOPIC} is built from the schema in \\S+\\.parquet \\(commit 1\\), schema id ${reader?.id} \\(${TOPIC}-value version 2\\)\\n$`),
      );
    },
    SLOW,
  );
});
