/**
 * Load files (src/etl/load-file.ts): the example in jobs/ is valid, and every kind of mistake is
 * refused with the file and the field named.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { parseLoadFile, readLoadFile } from '../../../src/etl/load-file.js';

const VALID = `
name: views
source: { bootstrap: "127.0.0.1:9092, 127.0.0.1:9093" }
topics: [views, clicks]
registry: http://127.0.0.1:8081
warehouse: { url: ./warehouse, root: data/etl }
format: avro
codec: deflate
`;

function refusal(text: string): TributaryError {
  try {
    parseLoadFile(text, '/jobs/bad.yaml');
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('the load file was accepted');
}

describe('load files', () => {
  it('reads the example jobs/page-views.yaml', async () => {
    const load = await readLoadFile('jobs/page-views.yaml');
    expect(load).toMatchObject({
      file: resolve('jobs/page-views.yaml'),
      name: 'page-views',
      source: { bootstrap: ['127.0.0.1:9092'] },
      topics: { kind: 'list', names: ['page-views'] },
      format: 'avro',
      codec: 'deflate',
      timeField: 'header.time',
      maxRecordsPerTask: 1_000_000,
      quarantine: { maxRecords: 100 },
      latenessHorizonMs: 2 * 3_600_000,
      schedule: '10 * * * *',
      warehouse: { url: 'webhdfs://127.0.0.1:9870/?user=etl', root: 'warehouse' },
      audit: { topic: '_audit', bootstrap: ['127.0.0.1:9092'] },
      layout: 'hourly',
      hive: { database: 'default', tables: { 'page-views': 'page_views' } },
    });
  });

  it('fills defaults and splits a comma-separated bootstrap', () => {
    const load = parseLoadFile(VALID, '/jobs/views.yaml');
    expect(load.source.bootstrap).toEqual(['127.0.0.1:9092', '127.0.0.1:9093']);
    expect(load).toMatchObject({ maxRecordsPerTask: 1_000_000, quarantine: { maxRecords: 0 }, latenessHorizonMs: 7_200_000 });
    // No cap unless the file sets one: a run reads to the high watermark at plan time.
    expect(load.maxRecordsPerRun).toBeUndefined();
    expect(load.maxFileBytes).toBeUndefined();
    expect(load.warehouse).toEqual({ url: './warehouse', root: 'data/etl', baseDirectory: '/jobs' });
    expect(load.timeField).toBeUndefined();
  });

  it('reads the memory settings: memoryBudget (default 16 MiB), rowGroupBytes (default 128 MiB), parquetEncoderThread (default off)', () => {
    expect(parseLoadFile(VALID, '/jobs/views.yaml')).toMatchObject({ memoryBudget: 16 * 1024 * 1024, rowGroupBytes: 128 * 1024 * 1024, parquetEncoderThread: false });
    const set = parseLoadFile(`${VALID}memoryBudget: 268435456\nrowGroupBytes: 1048576\nparquetEncoderThread: true\n`, '/jobs/views.yaml');
    expect(set).toMatchObject({ memoryBudget: 268_435_456, rowGroupBytes: 1_048_576, parquetEncoderThread: true });
    const error = refusal(`${VALID}memoryBudget: 1000\nrowGroupBytes: 10\nparquetEncoderThread: yes please\n`);
    expect(error.message).toMatch(/memoryBudget: a memory budget below 16777216 bytes \(16 MiB\) would spill nearly every byte to disk/);
    expect(error.message).toMatch(/rowGroupBytes: row groups below 65536 bytes \(64 KiB\) make Parquet files mostly metadata/);
    expect(error.message).toMatch(/parquetEncoderThread/);
  });

  it('matches a topic pattern against whole names', () => {
    const load = parseLoadFile(VALID.replace('topics: [views, clicks]', "topicPattern: 'page-.*'"), '/jobs/views.yaml');
    expect(load.topics.kind).toBe('pattern');
    if (load.topics.kind !== 'pattern') return;
    expect(load.topics.pattern.test('page-views')).toBe(true);
    expect(load.topics.pattern.test('old-page-views')).toBe(false);
  });

  it('names the file and every offending field at once', () => {
    const error = refusal(VALID.replace('format: avro', 'format: orc').replace('name: views', 'name: "my load"').replace('127.0.0.1:9093', 'nohost'));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('invalid configuration in load file /jobs/bad.yaml');
    expect(error.message).toMatch(/name: a load name is/);
    expect(error.message).toMatch(/format: /);
    expect(error.message).toMatch(/source\.bootstrap\.1: expected HOST:PORT/);
  });

  it('wants exactly one of topics and topicPattern', () => {
    expect(refusal(VALID.replace('topics: [views, clicks]\n', '')).message).toContain('topics: give exactly one of topics (a list) or topicPattern (a regex)');
    expect(refusal(`${VALID}topicPattern: 'x'\n`).message).toContain('topics: give exactly one of topics');
    expect(refusal(VALID.replace("topics: [views, clicks]", "topicPattern: '(unclosed'")).message).toContain('topicPattern: not a valid regular expression');
    expect(refusal(VALID.replace('[views, clicks]', '[views, "a+b"]')).message).toContain('topics.1: a topic name is');
  });

  it('refuses unknown fields, bad durations, bad cron, bad time fields and escaping roots', () => {
    expect(refusal(`${VALID}maxRecords: 5\n`).message).toContain('Unrecognized key: "maxRecords"');
    expect(refusal(`${VALID}latenessHorizon: 2 hours\n`).message).toContain('latenessHorizon: "2 hours" is not a duration');
    expect(refusal(`${VALID}schedule: 'every hour'\n`).message).toContain('schedule: expected a cron expression');
    expect(refusal(`${VALID}timeField: header..time\n`).message).toContain('timeField: expected a field name');
    expect(refusal(VALID.replace('root: data/etl', 'root: ../outside')).message).toContain('warehouse.root:');
    expect(refusal(`${VALID}quarantine: { maxRecords: -1 }\n`).message).toContain('quarantine.maxRecords');
    expect(refusal(`${VALID}maxRecordsPerRun: 0\n`).message).toContain('maxRecordsPerRun');
    expect(refusal(VALID.replace('registry: http://127.0.0.1:8081', 'registry: 127.0.0.1:8081')).message).toContain('registry: expected the registry URL');
  });

  it('reads layout (default hourly) and the hive section: one table for a one-topic list, tables per topic otherwise', () => {
    expect(parseLoadFile(VALID, '/jobs/views.yaml').layout).toBe('hourly');
    expect(parseLoadFile(VALID, '/jobs/views.yaml').hive).toBeUndefined();
    const several = parseLoadFile(`${VALID}layout: hive\nhive: { tables: { views: page_views }, fileSystem: 'hdfs://nn:8020' }\n`, '/jobs/views.yaml');
    expect(several.layout).toBe('hive');
    expect(several.hive).toEqual({ database: 'default', tables: { views: 'page_views' }, fileSystem: 'hdfs://nn:8020' });
    const one = parseLoadFile(`${VALID.replace('topics: [views, clicks]', 'topics: [views]')}hive: { table: v, database: web }\n`, '/jobs/views.yaml');
    expect(one.hive).toEqual({ database: 'web', tables: { views: 'v' } });
    expect(refusal(`${VALID}layout: daily\n`).message).toContain('layout: expected hourly');
    expect(refusal(`${VALID}hive: { table: v }\n`).message).toContain('hive.table: table names the table of a load with one topic');
    expect(refusal(`${VALID}hive: { tables: { other: v } }\n`).message).toContain('hive.tables.other: topic other is not one of the load');
    expect(refusal(`${VALID}hive: { tables: { views: page-views } }\n`).message).toContain('a Hive name is');
    expect(refusal(`${VALID}hive: { fileSystem: 'hdfs://nn:8020/base' }\n`).message).toContain('scheme and authority only');
  });

  it('reports a YAML syntax error with its line', () => {
    const error = refusal('name: views\ntopics: [a, b\nformat: avro\n');
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toMatch(/load file \/jobs\/bad\.yaml is not valid YAML at line \d+, column \d+/);
  });

  it('says which file it could not read', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tributary-load-'));
    try {
      await expect(readLoadFile(join(folder, 'missing.yaml'))).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining(`cannot read load file ${join(folder, 'missing.yaml')}: ENOENT`) as unknown });
      await writeFile(join(folder, 'empty.yaml'), '');
      await expect(readLoadFile(join(folder, 'empty.yaml'))).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe('iceberg maintenance in a load file', () => {
  const iceberg = VALID.replace('format: avro\ncodec: deflate', 'format: iceberg\ncodec: zstd');

  it('reads the schedule with Iceberg\'s and Spark\'s defaults, and leaves out a step set to false', () => {
    const load = parseLoadFile(`${iceberg}iceberg:\n  maintenance:\n    schedule: '30 2 * * *'\n`, '/jobs/t.yaml');
    expect(load.iceberg?.maintenance).toEqual({
      schedule: '30 2 * * *',
      compaction: { targetFileBytes: 128 * 1024 * 1024, minInputFiles: 5 },
      expiry: { olderThanMs: 5 * 86_400_000, retainLast: 1 },
      orphans: { olderThanMs: 3 * 86_400_000 },
    });
    const partial = parseLoadFile(`${iceberg}iceberg:\n  maintenance:\n    schedule: '0 * * * *'\n    compaction: false\n    expiry: { olderThan: 12h }\n    orphans: false\n`, '/jobs/t.yaml');
    expect(partial.iceberg?.maintenance).toEqual({ schedule: '0 * * * *', expiry: { olderThanMs: 12 * 3_600_000, retainLast: 1 } });
  });

  it('refuses orphan removal younger than an hour and a compaction of fewer than 2 files, naming the field', () => {
    const orphans = refusal(`${iceberg}iceberg:\n  maintenance:\n    schedule: '0 * * * *'\n    orphans: { olderThan: 10m }\n`);
    expect(orphans.message).toContain('iceberg.maintenance.orphans.olderThan');
    expect(orphans.message).toContain('may belong to a commit in progress');
    const compaction = refusal(`${iceberg}iceberg:\n  maintenance:\n    schedule: '0 * * * *'\n    compaction: { minInputFiles: 1 }\n`);
    expect(compaction.message).toContain('iceberg.maintenance.compaction.minInputFiles');
  });
});

describe('an Iceberg REST catalog in a load file', () => {
  const iceberg = VALID.replace('format: avro\ncodec: deflate', 'format: iceberg\ncodec: zstd');
  const withCatalog = (lines: string): string => `${iceberg}iceberg:\n  catalog:\n${lines
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `    ${line}`)
    .join('\n')}\n`;

  it('reads the catalog, its namespace as a list or dotted, and its secret files from the load file\'s folder', () => {
    const load = parseLoadFile(
      withCatalog(`type: rest\nuri: https://catalog.example:8181/api/\nwarehouse: analytics\nnamespace: db.events\ntables: { views: page_views }\ncredential.file: secrets/catalog\nscope: 'catalog sql'\nssl.ca.location: /etc/ca.pem`),
      '/jobs/t.yaml',
    );
    expect(load.iceberg?.catalog).toEqual({
      type: 'rest',
      uri: 'https://catalog.example:8181/api',
      warehouse: 'analytics',
      namespace: ['db', 'events'],
      tables: { views: 'page_views' },
      credentialFile: resolve('/jobs/secrets/catalog'),
      scope: 'catalog sql',
      caFile: '/etc/ca.pem',
    });
    const listed = parseLoadFile(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: [tributary]\ntoken.file: token`), '/jobs/t.yaml');
    expect(listed.iceberg?.catalog).toEqual({ type: 'rest', uri: 'http://127.0.0.1:8181', namespace: ['tributary'], tables: {}, tokenFile: resolve('/jobs/token') });
    // Without a catalog the tables stay file-system tables: nothing about a catalog is set.
    expect(parseLoadFile(iceberg, '/jobs/t.yaml').iceberg).toEqual({});
  });

  it('refuses a secret written into the file, naming the field and the way to give it', () => {
    const credential = refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: [db]\ncredential: 'id:secret'`));
    expect(credential.code).toBe('CONFIG_INVALID');
    expect(credential.message).toContain('iceberg.catalog.credential');
    expect(credential.message).toContain('credential.file or TRIBUTARY_ICEBERG_CREDENTIAL');
    expect(credential.message).not.toContain('id:secret');
    const token = refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: [db]\ntoken: abc`));
    expect(token.message).toContain('token.file or TRIBUTARY_ICEBERG_TOKEN');
    const both = refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: [db]\ncredential.file: a\ntoken.file: b`));
    expect(both.message).toContain('iceberg.catalog.token.file');
  });

  it('refuses other catalog types, a URI that is not http(s), a missing or odd namespace, and tables of topics not loaded', () => {
    expect(refusal(withCatalog(`type: hive\nuri: http://127.0.0.1:8181\nnamespace: [db]`)).message).toContain('iceberg.catalog.type');
    expect(refusal(withCatalog(`type: rest\nuri: thrift://metastore:9083\nnamespace: [db]`)).message).toContain('iceberg.catalog.uri');
    expect(refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181`)).message).toContain('iceberg.catalog.namespace');
    expect(refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: ['db', 'a b']`)).message).toContain('iceberg.catalog.namespace.1');
    expect(refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: [db]\ntables: { orders: orders }`)).message).toContain('iceberg.catalog.tables.orders');
    expect(refusal(withCatalog(`type: rest\nuri: http://127.0.0.1:8181\nnamespace: [db]\ntables: { views: 'page.views' }`)).message).toContain('iceberg.catalog.tables.views');
    expect(refusal(`${VALID}iceberg:\n  catalog: { type: rest, uri: 'http://127.0.0.1:8181', namespace: [db] }\n`).message).toContain('the iceberg section applies to format iceberg only');
  });
});
