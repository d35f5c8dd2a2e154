/**
 * `tributary etl ddl` (src/etl/tables/): Avro schemas as Hive column types, string literals that
 * Hive and Spark read back as written, the DDL text of both layouts and formats, LOCATIONs of local
 * and WebHDFS warehouses, table names, and partitions for the hours of published commits only.
 */
import { describe, expect, it } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { claimPath } from '../../../src/etl/layout.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { readClaim } from '../../../src/etl/load/commit-log.js';
import { serializeManifest } from '../../../src/etl/load/manifest.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { hiveString, hiveTableDdl } from '../../../src/etl/tables/hive-ddl.js';
import { defaultHiveTableName, formatHiveDdl, readHiveTables } from '../../../src/etl/tables/hive-tables.js';
import { hiveColumns } from '../../../src/etl/tables/hive-types.js';
import { FakeSource, MemoryWarehouse, quietLogger } from './loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from './loader-world.js';

const TOPIC = 'views';
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 29, 13, 0, 0);
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  doc: "a page view; it's \\ \"quoted\"; with a semicolon",
  fields: [
    { name: 'id', type: 'long' },
    { name: 'time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
});

const world = useLoaderRegistry(`${TOPIC}-value`, [SCHEMA]);

describe('Hive column types', () => {
  it('map every Avro type the loader writes, logical types as parquet-schema.ts writes them', () => {
    const schema = parseDataFileSchema({
      type: 'record',
      name: 'All',
      fields: [
        { name: 'b', type: 'boolean' },
        { name: 'i', type: 'int' },
        { name: 'l', type: 'long' },
        { name: 'f', type: 'float' },
        { name: 'd', type: 'double' },
        { name: 's', type: 'string' },
        { name: 'raw', type: 'bytes' },
        { name: 'digest', type: { type: 'fixed', name: 'Digest', size: 4 } },
        { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['A', 'B'] } },
        { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
        { name: 'day', type: { type: 'int', logicalType: 'date' } },
        { name: 'clock', type: { type: 'int', logicalType: 'time-millis' } },
        { name: 'micros', type: { type: 'long', logicalType: 'timestamp-micros' } },
        { name: 'id', type: { type: 'string', logicalType: 'uuid' } },
        { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
        { name: 'amount', type: { type: 'fixed', name: 'Amount', size: 8, logicalType: 'decimal', precision: 18 } },
        { name: 'odd', type: { type: 'string', logicalType: 'decimal', precision: 4 } },
        { name: 'header', type: { type: 'record', name: 'Header', fields: [{ name: 'time', type: 'long' }, { name: 'server', type: ['null', 'string'] }] } },
        { name: 'tags', type: { type: 'array', items: 'string' } },
        { name: 'scores', type: { type: 'map', values: ['null', 'double'] } },
        { name: 'maybe', type: ['null', { type: 'array', items: 'Header' }] },
        { name: 'either', type: ['null', 'int', 'string'] },
      ],
    });
    expect(hiveColumns(schema, 'test').map((column) => `${column.name} ${column.type}`)).toEqual([
      'b BOOLEAN',
      'i INT',
      'l BIGINT',
      'f FLOAT',
      'd DOUBLE',
      's STRING',
      'raw BINARY',
      'digest BINARY',
      'kind STRING',
      'at TIMESTAMP',
      'day DATE',
      'clock INT',
      'micros BIGINT',
      'id STRING',
      'price DECIMAL(10,2)',
      'amount DECIMAL(18,0)',
      'odd STRING',
      'header STRUCT<`time`: BIGINT, `server`: STRING>',
      'tags ARRAY<STRING>',
      'scores MAP<STRING, DOUBLE>',
      'maybe ARRAY<STRUCT<`time`: BIGINT, `server`: STRING>>',
      'either UNIONTYPE<INT, STRING>',
    ]);
  });

  it('refuse what Hive cannot express, naming the field', () => {
    const refused = (fields: unknown[]): TributaryError => {
      try {
        hiveColumns(parseDataFileSchema({ type: 'record', name: 'R', fields }), 'the table of t');
      } catch (error) {
        return error as TributaryError;
      }
      throw new Error('accepted');
    };
    expect(refused([{ name: 'next', type: ['null', 'R'] }]).message).toContain('field next refers back to its enclosing record R');
    expect(refused([{ name: 'nothing', type: 'null' }]).message).toContain('field nothing is null alone');
    expect(refused([{ name: 'wide', type: { type: 'bytes', logicalType: 'decimal', precision: 40, scale: 2 } }])).toMatchObject({ code: 'ETL_SCHEMA_PROBLEM', details: { field: 'wide' } });
  });
});

describe('Hive string literals', () => {
  it('escape backslash, quote, semicolon and control characters', () => {
    expect(hiveString('plain /a/b=c')).toBe("'plain /a/b=c'");
    expect(hiveString('it\'s \\ ; "x"\n\t')).toBe("'it\\'s \\\\ \\; \"x\"\\n\\t'");
  });
});

describe('the DDL text', () => {
  const schema = parseDataFileSchema(SCHEMA);
  const hour = T0 / HOUR;

  it('hive layout, Avro: partitioned by dt and hr, the schema literal escaped, one ADD PARTITION per hour in hour order', () => {
    const text = hiveTableDdl({
      database: 'web',
      table: 'page_views',
      topic: 'page-views',
      format: 'avro',
      layout: 'hive',
      schema,
      location: 'hdfs://nn:8020/w/page-views',
      partitions: [
        { hour: hour + 1, location: 'hdfs://nn:8020/w/page-views/dt=2026-11-29/hr=14' },
        { hour, location: 'hdfs://nn:8020/w/page-views/dt=2026-11-29/hr=13' },
      ],
    });
    const literal = JSON.stringify(schema.schema({ exportAttrs: true })).replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll(';', '\\;');
    expect(text).toBe(
      [
        '-- topic page-views: 2 committed hours',
        'CREATE EXTERNAL TABLE IF NOT EXISTS `web`.`page_views` (',
        '  `id` BIGINT,',
        '  `time` TIMESTAMP,',
        '  `note` STRING',
        ')',
        'PARTITIONED BY (`dt` STRING, `hr` STRING)',
        'STORED AS AVRO',
        "LOCATION 'hdfs://nn:8020/w/page-views'",
        `TBLPROPERTIES ('avro.schema.literal'='${literal}');`,
        "ALTER TABLE `web`.`page_views` ADD IF NOT EXISTS PARTITION (`dt`='2026-11-29', `hr`='13') LOCATION 'hdfs://nn:8020/w/page-views/dt=2026-11-29/hr=13';",
        "ALTER TABLE `web`.`page_views` ADD IF NOT EXISTS PARTITION (`dt`='2026-11-29', `hr`='14') LOCATION 'hdfs://nn:8020/w/page-views/dt=2026-11-29/hr=14';",
        '',
      ].join('\n'),
    );
    expect(literal).toContain("it\\'s \\\\\\\\ \\\\\"quoted\\\\\"\\; with");
  });

  it('hourly layout, Parquet: partitioned by year, month, day, hour at the hourly folders; no schema literal', () => {
    const text = hiveTableDdl({ database: 'default', table: 'v', topic: 'v', format: 'parquet', layout: 'hourly', schema, location: '/w/v', partitions: [{ hour, location: '/w/v/hourly/2026/11/29/13' }] });
    expect(text).toContain('PARTITIONED BY (`year` STRING, `month` STRING, `day` STRING, `hour` STRING)\nSTORED AS PARQUET\nLOCATION \'/w/v\';\n');
    expect(text).not.toContain('TBLPROPERTIES');
    expect(text).toContain("ALTER TABLE `default`.`v` ADD IF NOT EXISTS PARTITION (`year`='2026', `month`='11', `day`='29', `hour`='13') LOCATION '/w/v/hourly/2026/11/29/13';");
  });

  it('refuses a record field named like a partition column of the layout', () => {
    const clash = parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'DT', type: 'string' }] });
    expect(() => hiveTableDdl({ database: 'd', table: 't', topic: 't', format: 'avro', layout: 'hive', schema: clash, location: '/t', partitions: [] })).toThrow(/field DT, which is also a partition column of the hive layout/);
    expect(() => hiveTableDdl({ database: 'd', table: 't', topic: 't', format: 'avro', layout: 'hourly', schema: clash, location: '/t', partitions: [] })).not.toThrow();
  });
});

describe('the tables of a load', () => {
  function load(overrides: Partial<LoadDefinition> = {}): LoadDefinition {
    return memoryLoad(TOPIC, world.url, { layout: 'hive', ...overrides });
  }

  async function loaded(): Promise<MemoryWarehouse> {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 2);
    for (let id = 0; id < 40; id += 1) {
      const time = T0 + (id % 3) * HOUR + id;
      source.append(TOPIC, id % 2, await world.serializer.encode(`${TOPIC}-value`, { id, time, note: null }, SCHEMA), time);
    }
    await runLoad({ load: load(), warehouse, source, registry: world.client, logger: quietLogger, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false });
    return warehouse;
  }

  it('names only the hours of published commits: a claimed, unpublished commit adds none', async () => {
    const warehouse = await loaded();
    const { manifest } = await readClaim(warehouse, 'wh', 'views', 1);
    // Commit 2 claimed, not published (a crashed run's, to be rolled forward): its hour is not committed yet.
    await warehouse.create(claimPath('wh', 'views', 2), serializeManifest({ ...manifest, seq: 2, hours: { [TOPIC]: { '2026-11-30T08': 5 } } }));
    const [table, ...others] = await readHiveTables(load(), warehouse, world.client);
    expect(others).toEqual([]);
    expect(table).toMatchObject({ database: 'default', table: 'views', topic: TOPIC, format: 'avro', layout: 'hive', location: 'file:///jobs/memory/wh/views' });
    expect(table?.partitions).toEqual([13, 14, 15].map((hour) => ({ hour: Date.UTC(2026, 10, 29, hour) / HOUR, location: `file:///jobs/memory/wh/views/dt=2026-11-29/hr=${hour}` })));
    const text = formatHiveDdl(load(), [table!]);
    expect(text.match(/^ALTER TABLE/gm)).toHaveLength(3);
    expect(text).not.toContain('2026-11-30');
  });

  it('places tables on HDFS after hive.fileSystem, or as bare paths; names them from the load file or the topic', async () => {
    const warehouse = await loaded();
    const webhdfs = { url: 'webhdfs://nn:9870/base?user=etl', root: 'wh', baseDirectory: '/jobs' };
    const [named] = await readHiveTables(load({ warehouse: webhdfs, hive: { database: 'web', tables: { [TOPIC]: 'page_views' }, fileSystem: 'hdfs://nn:8020' } }), warehouse, world.client);
    expect(named).toMatchObject({ database: 'web', table: 'page_views', location: 'hdfs://nn:8020/base/wh/views' });
    expect(named?.partitions[0]?.location).toBe('hdfs://nn:8020/base/wh/views/dt=2026-11-29/hr=13');
    const [bare] = await readHiveTables(load({ warehouse: webhdfs }), warehouse, world.client);
    expect(bare?.location).toBe('/base/wh/views');
    await expect(readHiveTables(load({ hive: { database: 'default', tables: {}, fileSystem: 'hdfs://nn:8020' } }), warehouse, world.client)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    expect(defaultHiveTableName('Page-Views.v2')).toBe('page_views_v2');
    await expect(readHiveTables(load({ topics: { kind: 'list', names: ['a.b', 'a-b'] } }), new MemoryWarehouse(), world.client)).rejects.toThrow(/topics a-b and a\.b would both be Hive table a_b/);
  });

  it('refuses a load file whose layout is not the one the load committed in', async () => {
    const warehouse = await loaded();
    await expect(readHiveTables(load({ layout: 'hourly' }), warehouse, world.client)).rejects.toMatchObject({ code: 'CONFIG_INVALID', details: { committed: 'hive' } });
  });
});
