/**
 * `tributary etl ddl` with the registry away (src/etl/tables/committed-schema.ts): when it cannot
 * be reached, the tables are built from the schema the committed data files carry — the same DDL
 * as with the registry, for Avro and Parquet — and one line says so; a registry that answers no is
 * not papered over; without a commit the error says what to do.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { readClaim } from '../../../src/etl/load/commit-log.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { formatHiveDdl, readHiveTables } from '../../../src/etl/tables/hive-tables.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { FakeSource, MemoryWarehouse, quietLogger } from './loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from './loader-world.js';

const TOPIC = 'views';
const T0 = Date.UTC(2026, 10, 29, 13, 0, 0);
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  doc: 'a page view',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
});

const world = useLoaderRegistry(`${TOPIC}-value`, [SCHEMA]);

/** A registry whose every request fails as a refused connection does. */
const down = new RegistryClient({
  url: 'http://registry.test:8081',
  retries: 0,
  fetch: () => Promise.reject(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:8081'), { code: 'ECONNREFUSED' }) })),
});

/** A registry that answers, but no longer holds any schema (40403). */
const emptied = new RegistryClient({
  url: 'http://registry.test:8081',
  retries: 0,
  fetch: () => Promise.resolve(new Response(JSON.stringify({ error_code: 40403, message: 'Schema not found' }), { status: 404 })),
});

function load(overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  return memoryLoad(TOPIC, world.url, { layout: 'hive', ...overrides });
}

/** A load of 40 records over 2 partitions and 3 hours, committed once. */
async function loaded(definition: LoadDefinition): Promise<MemoryWarehouse> {
  const warehouse = new MemoryWarehouse();
  const source = new FakeSource();
  source.addTopic(TOPIC, 2);
  for (let id = 0; id < 40; id += 1) {
    const time = T0 + (id % 3) * 3_600_000 + id;
    source.append(TOPIC, id % 2, await world.serializer.encode(`${TOPIC}-value`, { id, time, tags: [`t${id}`], note: null }, SCHEMA), time);
  }
  await runLoad({ load: definition, warehouse, source, registry: world.client, logger: quietLogger, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false });
  return warehouse;
}

describe('etl ddl with the registry unreachable', () => {
  for (const format of ['avro', 'parquet'] as const) {
    it(`builds the same ${format} DDL from the committed files' schema, and says so in one line`, async () => {
      const definition = load({ format, codec: format === 'avro' ? 'deflate' : 'snappy' });
      const warehouse = await loaded(definition);
      const expected = formatHiveDdl(definition, await readHiveTables(definition, warehouse, world.client));
      const notices: string[] = [];
      const offline = formatHiveDdl(definition, await readHiveTables(definition, warehouse, down, { notice: (line) => notices.push(line) }));
      expect(offline).toBe(expected);
      const { manifest } = await readClaim(warehouse, 'wh', 'views', 1);
      const smallest = [...manifest.files].sort((a, b) => a.bytes - b.bytes)[0]!;
      expect(notices).toEqual([
        `registry unreachable at http://registry.test:8081: the DDL of topic views is built from the schema in ${warehouse.describe(smallest.path)} (commit 1), schema id ${manifest.readerSchemas[TOPIC]?.id} (views-value version 1)`,
      ]);
    });
  }

  it('skips files no longer there (a replay moved their hour away), and fails precisely when none is left', async () => {
    const definition = load();
    const warehouse = await loaded(definition);
    const { manifest } = await readClaim(warehouse, 'wh', 'views', 1);
    const bySize = [...manifest.files].sort((a, b) => a.bytes - b.bytes);
    for (const file of bySize.slice(0, -1)) await warehouse.delete(file.path);
    const notices: string[] = [];
    await readHiveTables(definition, warehouse, down, { notice: (line) => notices.push(line) });
    expect(notices[0]).toContain(`the schema in ${warehouse.describe(bySize.at(-1)!.path)} (commit 1)`);

    await warehouse.delete(bySize.at(-1)!.path);
    await expect(readHiveTables(definition, warehouse, down)).rejects.toMatchObject({
      code: 'ETL_SCHEMA_UNAVAILABLE',
      retriable: true,
      message: expect.stringContaining(`none of the ${bySize.length} data files its commits name is in the warehouse any more`) as unknown,
    });
  });

  it('fails, saying what to do, when the load has no commit to read a schema from', async () => {
    await expect(readHiveTables(load(), new MemoryWarehouse(), down)).rejects.toMatchObject({
      code: 'ETL_SCHEMA_UNAVAILABLE',
      retriable: true,
      message: expect.stringMatching(/schema registry http:\/\/registry\.test:8081 is unreachable .* load views has no published commit yet.* Start the registry \(or correct registry: in \/jobs\/views\.yaml\) and run etl ddl again/) as unknown,
      cause: { code: 'REGISTRY_UNAVAILABLE' },
    });
  });

  it('does not fall back when the registry answers: a schema it no longer holds is reported', async () => {
    const definition = load();
    const warehouse = await loaded(definition);
    await expect(readHiveTables(definition, warehouse, emptied, { notice: () => expect.fail('no fallback for an answer') })).rejects.toMatchObject({ code: 'REGISTRY_SCHEMA_NOT_FOUND' });
  });
});
