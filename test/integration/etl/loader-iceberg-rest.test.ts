/**
 * A `format: iceberg` load whose table is kept in a real Iceberg REST catalog (issue #33): Apache
 * Iceberg's own REST server (test/services/iceberg-rest.ts), a real broker and registry, and
 * `tributary etl` runs as processes of their own, the load file naming the catalog
 * (`iceberg.catalog`, its OAuth2 client credential in a file beside it).
 *
 * Two runs make two append snapshots through the catalog, which Iceberg's Java RESTCatalog client
 * then reads: exactly the records produced, each once, and both snapshots with their
 * `tributary.offsets`. A third run is killed right after its snapshot landed in the catalog, its
 * claim not yet published; the next run rolls the claim forward from the claim alone and finds the
 * snapshot by its commit id, so commit 3 has one snapshot, not two. `etl compact` then commits a
 * `replace` snapshot through the catalog, which Java reads as the table's current one with the
 * same rows. The table folder never gets a `v<N>.metadata.json` or `version-hint.text`: the
 * catalog is the one source of truth. `etl ddl` prints Spark's and Trino's REST catalog settings.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestCatalog } from '../../../src/etl/iceberg/rest-catalog.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { startIcebergRestCatalog, type IcebergRestCatalogServer } from '../../services/iceberg-rest.js';
import { openRun } from '../../services/run-dir.js';
import { checkRestTable, type RestTableView } from '../../support/iceberg-rest-check.js';
import { services } from '../services.js';
import { expectExactly, expectOffsetsCovered } from './iceberg-checks.js';
import {
  createTopic,
  loadFileText,
  makeWarehouse,
  messagesOf,
  producePageViews,
  registerPageViews,
  runEtl,
  startLoaderEnvironment,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
} from './loader-support.js';

const SLOW = 300_000;
const PARTITIONS = 2;
const BATCH = 30;
const NAMESPACE = ['tributary', 'loads'];
const TABLE = 'page_views';

let env: LoaderEnvironment;
let server: IcebergRestCatalogServer;
let warehouse: TestWarehouse;
const timings: Record<string, number> = {};

async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const began = performance.now();
  try {
    return await work();
  } finally {
    timings[name] = Math.round(performance.now() - began) / 1000;
  }
}

beforeAll(async () => {
  [env, server] = await timed('start broker, registry and catalog (s)', () =>
    Promise.all([startLoaderEnvironment(), startIcebergRestCatalog(openRun(services().runDir), 'iceberg-rest-loader', (line) => void process.stderr.write(`[iceberg-rest] ${line}\n`))]),
  );
}, 180_000);

afterAll(async () => {
  await warehouse?.cleanup().catch(() => undefined);
  await server?.stop();
  await env?.close();
  process.stderr.write(`[loader-iceberg-rest] timings ${JSON.stringify(timings)}\n`);
}, 60_000);

describe('format: iceberg with a REST catalog', () => {
  it(
    'commits through the catalog (two runs, a killed run finished once, a compaction) and writes no metadata file of its own',
    async () => {
      const name = 'iceberg-rest';
      const topic = `t-${name}`;
      warehouse = makeWarehouse('local folder', env, name);
      await createTopic(env.broker.bootstrap, topic, PARTITIONS);
      await registerPageViews(env.registryClient, topic);
      // The fixture grants any client credential: what counts is that the loader reads it from the file and gets a token.
      await writeFile(join(env.folder, 'catalog.credential'), 'tributary:not-a-real-secret\n');
      const loadFile = join(env.folder, `${name}.yaml`);
      const catalogLines = ['iceberg:', '  catalog:', '    type: rest', `    uri: ${server.uri}`, `    namespace: ${NAMESPACE.join('.')}`, `    tables: { ${topic}: ${TABLE} }`, '    credential.file: catalog.credential'];
      await writeFile(loadFile, `${loadFileText({ name, topic, warehouse, format: 'iceberg', codec: 'zstd', bootstrap: [env.broker.bootstrap], registryUrl: env.registry.url })}${catalogLines.join('\n')}\n`);
      const produced: ProducedRecord[] = [];
      const produce = async (): Promise<void> => {
        produced.push(...(await producePageViews(env, topic, { count: BATCH, partitions: PARTITIONS, hours: 2, firstId: produced.length })));
      };
      let runs = 0;
      const run = (failpoint?: string): Promise<Awaited<ReturnType<typeof runEtl>>> =>
        timed(`run ${(runs += 1)}${failpoint === undefined ? '' : ` (${failpoint})`} (s)`, () => runEtl(['run', '--load', loadFile, '--no-progress'], failpoint === undefined ? {} : { TRIBUTARY_ETL_FAILPOINT: failpoint }));
      const view = (label: string): Promise<RestTableView> => timed(`java check ${label} (s)`, () => checkRestTable(server.uri, NAMESPACE, TABLE, { runDir: services().runDir }));
      const catalog = await RestCatalog.connect({ uri: server.uri });
      const snapshotsInCatalog = async (): Promise<string[]> => ((await catalog.loadTable({ namespace: NAMESPACE, name: TABLE }))?.metadata.snapshots ?? []).map((snapshot) => snapshot.summary['tributary.commit-id'] ?? '?');

      for (let batch = 0; batch < 2; batch += 1) {
        await produce();
        const result = await run();
        expect(result.status, messagesOf(result)).toBe(0);
      }
      const afterTwo = await view('after two runs');
      expectExactly(afterTwo, produced);
      expect(afterTwo.snapshots.map((snapshot) => [snapshot.operation, snapshot.summary['tributary.commit-id'], snapshot.summary['tributary.seq']])).toEqual([
        ['append', `${name}/1`, '1'],
        ['append', `${name}/2`, '2'],
      ]);
      expect(afterTwo.snapshots[1]?.parentId).toBe(afterTwo.snapshots[0]?.snapshotId);
      expectOffsetsCovered(afterTwo, produced, PARTITIONS);
      expect(afterTwo.location).toBe(warehouse.warehouse.describe(`${warehouse.root}/${topic}`));
      expect(afterTwo.properties['tributary.topic']).toBe(topic);

      // Killed right after the snapshot landed in the catalog, before the claim was published.
      await produce();
      const killed = await run('after-table-commit');
      expect(killed.signal, messagesOf(killed)).toBe('SIGKILL');
      expect((await readCommitLog(warehouse.warehouse, warehouse.root, name)).pending).toEqual([3]);
      expect(await snapshotsInCatalog()).toEqual([`${name}/1`, `${name}/2`, `${name}/3`]);
      // The next run rolls the claim forward from the claim alone: it finds the snapshot made, and loads nothing new.
      const finished = await run();
      expect(finished.status, messagesOf(finished)).toBe(0);
      expect(finished.stdout).toContain('rolled forward commit 3');
      expect((await readCommitLog(warehouse.warehouse, warehouse.root, name)).pending).toEqual([]);
      expect(await snapshotsInCatalog()).toEqual([`${name}/1`, `${name}/2`, `${name}/3`]);

      // A compaction through the catalog: one replace snapshot, the same rows.
      const compacted = await timed('compact (s)', () => runEtl(['compact', '--load', loadFile, '--min-input-files', '2']));
      expect(compacted.status, messagesOf(compacted)).toBe(0);
      expect(compacted.stdout).toMatch(/replace snapshot \d+ \(metadata v\d+\) rewrote \d+ files as 2 in 2 hours/);
      const last = await view('after compaction');
      const current = last.snapshots.find((snapshot) => snapshot.snapshotId === last.currentSnapshotId);
      expect(current?.operation).toBe('replace');
      expect(current?.summary['total-records']).toBe(String(produced.length));
      expect(last.files).toHaveLength(2);
      expectExactly(last, produced);
      expect(last.snapshots.filter((snapshot) => snapshot.operation === 'append').map((snapshot) => snapshot.summary['tributary.commit-id'])).toEqual([`${name}/1`, `${name}/2`, `${name}/3`]);
      expectOffsetsCovered(last, produced, PARTITIONS);

      // The catalog's metadata files only: no v<N>.metadata.json, no hint.
      const metadataFiles = (await warehouse.warehouse.list(`${warehouse.root}/${topic}/metadata`)).map((entry) => entry.name);
      expect(metadataFiles.filter((file) => /^v\d+\.metadata\.json$/.test(file) || file === 'version-hint.text' || file.endsWith('.tmp'))).toEqual([]);
      expect(metadataFiles.filter((file) => /^\d{5}-[0-9a-f-]+\.metadata\.json$/.test(file)).length).toBeGreaterThanOrEqual(5);
      expect(last.metadataFileLocation).toMatch(/\/metadata\/\d{5}-[0-9a-f-]+\.metadata\.json$/);

      // What engines are told: the REST catalog, not a register_table of a metadata file.
      const ddl = await timed('ddl (s)', () => runEtl(['ddl', '--load', loadFile]));
      expect(ddl.status, messagesOf(ddl)).toBe(0);
      expect(ddl.stdout).toContain('spark.sql.catalog.tributary.type=rest');
      expect(ddl.stdout).toContain(`spark.sql.catalog.tributary.uri=${server.uri}`);
      expect(ddl.stdout).toContain(`SELECT count(*) FROM tributary.tributary.loads.${TABLE};`);
      expect(ddl.stdout).toContain('iceberg.catalog.type=rest');
      expect(ddl.stdout).toContain(`iceberg.rest-catalog.uri=${server.uri}`);
      expect(ddl.stdout).not.toContain('register_table');
    },
    SLOW,
  );
});
