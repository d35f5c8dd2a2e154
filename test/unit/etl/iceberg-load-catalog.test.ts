/**
 * Where a load's Iceberg tables are kept (src/etl/iceberg/load-catalog.ts): the catalog table each
 * topic and the dead-letter table get, what a claim records of it (nothing secret), and the
 * file-system load untouched by any of it.
 */
import { describe, expect, it } from 'vitest';
import { catalogRefOf, defaultCatalogTableName, icebergTableOf } from '../../../src/etl/iceberg/load-catalog.js';
import { topicTablePlace } from '../../../src/etl/iceberg/load-tables.js';
import { pathUnderLocation } from '../../../src/etl/iceberg/table-versions.js';
import { parseLoadFile } from '../../../src/etl/load-file.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';

const LOAD = `
name: web.views-2
source: { bootstrap: "127.0.0.1:9092" }
topics: [page-views, clicks]
registry: http://127.0.0.1:8081
warehouse: { url: /tmp/tributary-unit-warehouse, root: data }
format: iceberg
codec: zstd
`;

describe('the catalog table of a load\'s table', () => {
  const load = parseLoadFile(`${LOAD}iceberg:\n  catalog: { type: rest, uri: 'https://cat:8181', warehouse: wh, namespace: db.web, tables: { clicks: click_events }, credential.file: cred }\n`, '/jobs/web.yaml');

  it('is the tables entry, else the topic made a name; the dead-letter table is <load>_dead_letters', () => {
    expect(defaultCatalogTableName('page-views.v2')).toBe('page_views_v2');
    expect(catalogRefOf(load, { topic: 'page-views' })).toEqual({ type: 'rest', uri: 'https://cat:8181', warehouse: 'wh', namespace: ['db', 'web'], name: 'page_views', credentialFile: '/jobs/cred' });
    expect(catalogRefOf(load, { topic: 'clicks' })?.name).toBe('click_events');
    expect(catalogRefOf(load, { deadLetters: true })?.name).toBe('web_views_2_dead_letters');
  });

  it('keeps the table\'s files in the warehouse folder, as a file-system table\'s', () => {
    const warehouse = openWarehouse('/tmp/tributary-unit-warehouse');
    const place = topicTablePlace(load, warehouse, 'page-views');
    expect(place).toEqual({ dir: 'data/page-views', location: 'file:///tmp/tributary-unit-warehouse/data/page-views', catalog: catalogRefOf(load, { topic: 'page-views' }) });
  });

  it('is absent for a load without a catalog, whose table is never bound to one', async () => {
    const plain = parseLoadFile(LOAD, '/jobs/web.yaml');
    const warehouse = openWarehouse('/tmp/tributary-unit-warehouse');
    expect(catalogRefOf(plain, { topic: 'page-views' })).toBeUndefined();
    const place = topicTablePlace(plain, warehouse, 'page-views');
    expect(place).toEqual({ dir: 'data/page-views', location: 'file:///tmp/tributary-unit-warehouse/data/page-views' });
    const table = await icebergTableOf(warehouse, place, { TRIBUTARY_ICEBERG_TOKEN: 'unused' });
    expect(table.catalog).toBeUndefined();
  });
});

describe('paths under a table location', () => {
  it('takes file:/x, file:///x and file://localhost/x as one folder, and nothing outside it', () => {
    expect(pathUnderLocation('file:///w/t', 'file:/w/t/metadata/a.avro')).toBe('metadata/a.avro');
    expect(pathUnderLocation('file:/w/t/', 'file:///w/t/data/x.parquet')).toBe('data/x.parquet');
    expect(pathUnderLocation('file://localhost/w/t', 'file:/w/t/data/x.parquet')).toBe('data/x.parquet');
    expect(pathUnderLocation('hdfs://nn:8020/w/t', 'hdfs://nn:8020/w/t/data/x.parquet')).toBe('data/x.parquet');
    expect(pathUnderLocation('file:///w/t', 'file:///w/t2/data/x.parquet')).toBeUndefined();
    expect(pathUnderLocation('hdfs://nn:8020/w/t', 'hdfs://other:8020/w/t/data/x.parquet')).toBeUndefined();
  });
});
