/**
 * The REST catalog commit (src/etl/iceberg/rest-updates.ts, rest-catalog.ts) without a server:
 * the difference between the metadata the loader builds and the catalog's, as the REST spec's
 * requirements and updates, for each kind of change the loader makes (append, first snapshot,
 * rollback, schema evolution, expiry, properties) and the ones it refuses; then the client's
 * requests and how it reads the answers (prefix, namespace encoding, OAuth2 token and its renewal,
 * 409 → conflict, 5xx and lost answers → state unknown, refused connections → nothing sent),
 * over a scripted fetch; and table-versions.ts reading and committing through a catalog.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTributaryError } from '../../../src/common/errors.js';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { parseIcebergJson, stringifyIcebergJson } from '../../../src/etl/iceberg/iceberg-json.js';
import { hourSpecOf, rowSchemaOf } from '../../../src/etl/iceberg/load-tables.js';
import { metadataVersion, RestCatalog, type RestCatalogOptions } from '../../../src/etl/iceberg/rest-catalog.js';
import { tableChanges } from '../../../src/etl/iceberg/rest-updates.js';
import { newTableMetadata, withMain, withSnapshot, type Snapshot, type TableMetadata } from '../../../src/etl/iceberg/table-metadata.js';
import { highestFieldId, type IcebergSchema } from '../../../src/etl/iceberg/table-schema.js';
import { commitMetadata, loadTable, publishVersion, writeHint, type IcebergTable, type LoadedTable, type TableCatalog } from '../../../src/etl/iceberg/table-versions.js';
import { evolveSchema } from '../../../src/etl/iceberg/schema-evolution.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';
import type { RegistryFetch, RegistryRequestInit } from '../../../src/registry/https-transport.js';

const schema = rowSchemaOf(parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }] }));
const LOCATION = 'file:///warehouse/db/events';
/** Beyond 2^53: JSON.parse would round it. */
const BIG_ID = 9_007_199_254_740_993n;

function emptyTable(): TableMetadata {
  return newTableMetadata({ uuid: '6b1f5a4e-0000-4000-8000-000000000001', location: LOCATION, schema: { ...schema, 'schema-id': 0 }, lastColumnId: highestFieldId(schema), spec: hourSpecOf(schema), properties: { 'write.format.default': 'parquet' }, nowMs: 1_000 });
}

function snapshotOn(metadata: TableMetadata, id: bigint, commitId: string): Snapshot {
  const parent = metadata.refs?.['main']?.['snapshot-id'];
  return {
    'snapshot-id': id,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
    'sequence-number': metadata['last-sequence-number'] + 1,
    'timestamp-ms': 2_000 + metadata['last-sequence-number'],
    'manifest-list': `${LOCATION}/metadata/snap-${id}-1-x.avro`,
    summary: { operation: 'append', 'tributary.commit-id': commitId },
    'schema-id': metadata['current-schema-id'],
  };
}

function appended(metadata: TableMetadata, id: bigint, commitId: string): TableMetadata {
  return withSnapshot(metadata, snapshotOn(metadata, id, commitId), undefined, 3_000);
}

describe('the difference between the catalog metadata and the next one', () => {
  it('says an append as add-snapshot and set-snapshot-ref, asserting the uuid and main where it was', () => {
    const base = appended(emptyTable(), 11n, 'load/1');
    const next = appended(base, BIG_ID, 'load/2');
    const changes = tableChanges(base, next, 'db.events');
    expect(changes.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 11n },
    ]);
    expect(changes.updates).toEqual([
      { action: 'add-snapshot', snapshot: next.snapshots?.[1] },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': BIG_ID },
    ]);
    // What goes on the wire keeps the 63-bit ids exact.
    const wire = stringifyIcebergJson(changes);
    expect(wire).toContain('"snapshot-id": 9007199254740993');
    expect(wire).toContain('"parent-snapshot-id": 11');
    expect(parseIcebergJson(wire)).toMatchObject({ updates: [{ snapshot: { 'snapshot-id': BIG_ID } }, {}] });
  });

  it("asserts that main does not exist yet for a table's first snapshot", () => {
    const base = emptyTable();
    const changes = tableChanges(base, appended(base, 7n, 'load/1'), 'db.events');
    expect(changes.requirements).toContainEqual({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null });
    expect(changes.updates.map((update) => update.action)).toEqual(['add-snapshot', 'set-snapshot-ref']);
  });

  it('says a rollback as set-snapshot-ref alone (the logs are the catalog’s)', () => {
    const base = appended(appended(emptyTable(), 1n, 'load/1'), 2n, 'load/2');
    const next = withMain(base, 1n, `${LOCATION}/metadata/v2.metadata.json`, 9_000);
    const changes = tableChanges(base, next, 'db.events');
    expect(changes.updates).toEqual([{ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 1n }]);
    expect(changes.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 2n },
    ]);
  });

  it('says a schema evolution as add-schema then set-current-schema -1 before the snapshot that uses it, asserting the ids it builds on', () => {
    const base = appended(emptyTable(), 1n, 'load/1');
    const wider = rowSchemaOf(parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }, { name: 'page', type: ['null', 'string'], default: null }] }));
    const evolved = evolveSchema({ schema: base.schemas[0]!, lastColumnId: base['last-column-id'], schemaIds: [0] }, wider, 'db.events');
    const added: IcebergSchema = { ...evolved.schema, 'schema-id': 1 };
    const evolvedBase: TableMetadata = { ...base, schemas: [...base.schemas, added], 'current-schema-id': 1, 'last-column-id': evolved.lastColumnId };
    const next = appended(evolvedBase, 2n, 'load/2');
    const changes = tableChanges(base, next, 'db.events');
    expect(evolved.lastColumnId).toBeGreaterThan(base['last-column-id']);
    expect(changes.updates.map((update) => update.action)).toEqual(['add-schema', 'set-current-schema', 'add-snapshot', 'set-snapshot-ref']);
    expect(changes.updates[0]).toEqual({ action: 'add-schema', schema: added, 'last-column-id': evolved.lastColumnId });
    expect(changes.updates[1]).toEqual({ action: 'set-current-schema', 'schema-id': -1 });
    expect(changes.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': base['last-column-id'] },
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 1n },
    ]);
  });

  it('names an earlier schema by its id when the current one goes back to it', () => {
    const table = appended(emptyTable(), 1n, 'load/1');
    const base: TableMetadata = { ...table, schemas: [...table.schemas, { ...table.schemas[0]!, 'schema-id': 1, fields: table.schemas[0]!.fields.slice(0, 1) }], 'current-schema-id': 1 };
    const changes = tableChanges(base, { ...base, 'current-schema-id': 0 }, 'db.events');
    expect(changes.updates).toEqual([{ action: 'set-current-schema', 'schema-id': 0 }]);
    expect(changes.requirements).toContainEqual({ type: 'assert-current-schema-id', 'current-schema-id': 1 });
  });

  it('says an expiry as remove-snapshots, asserting main, without touching the refs', () => {
    const base = appended(appended(appended(emptyTable(), 1n, 'a'), 2n, 'b'), 3n, 'c');
    const next: TableMetadata = { ...base, snapshots: (base.snapshots ?? []).filter((snapshot) => snapshot['snapshot-id'] === 3n), 'snapshot-log': (base['snapshot-log'] ?? []).slice(2) };
    const changes = tableChanges(base, next, 'db.events');
    expect(changes.updates).toEqual([{ action: 'remove-snapshots', 'snapshot-ids': [1n, 2n] }]);
    expect(changes.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 3n },
    ]);
  });

  it('sets changed and new properties and removes dropped ones', () => {
    const base: TableMetadata = { ...emptyTable(), properties: { keep: '1', change: 'old', drop: 'x' } };
    const changes = tableChanges(base, { ...base, properties: { keep: '1', change: 'new', added: 'y' } }, 'db.events');
    expect(changes.updates).toEqual([
      { action: 'set-properties', updates: { change: 'new', added: 'y' } },
      { action: 'remove-properties', removals: ['drop'] },
    ]);
    expect(changes.requirements).toEqual([{ type: 'assert-table-uuid', uuid: base['table-uuid'] }]);
  });

  it('has nothing to commit when only what the catalog keeps itself differs', () => {
    const base = appended(emptyTable(), 1n, 'load/1');
    expect(tableChanges(base, { ...base, 'last-updated-ms': 99_999, 'metadata-log': [{ 'timestamp-ms': 5, 'metadata-file': 'x' }] }, 'db.events')).toEqual({ requirements: [], updates: [] });
  });

  it('refuses, naming them, changes no update here expresses', () => {
    const base = appended(emptyTable(), 1n, 'load/1');
    const spec = { 'spec-id': 1, fields: [] };
    const cases: [TableMetadata, string][] = [
      [{ ...base, location: 'file:///elsewhere' }, 'location'],
      [{ ...base, 'partition-specs': [...base['partition-specs'], spec], 'default-spec-id': 1 }, 'partition-specs'],
      [{ ...base, schemas: [{ ...base.schemas[0]!, fields: [] }] }, 'schema 0 changed in place'],
      [{ ...base, snapshots: [{ ...base.snapshots![0]!, summary: {} }] }, 'snapshot 1 changed in place'],
      [{ ...base, refs: { main: { 'snapshot-id': 42n, type: 'branch' } }, 'current-snapshot-id': 42n }, 'does not hold'],
      [{ ...base, 'current-snapshot-id': -1n }, 'is not main'],
    ];
    for (const [next, named] of cases) {
      let caught: unknown;
      try {
        tableChanges(base, next, 'db.events');
      } catch (error) {
        caught = error;
      }
      expect(isTributaryError(caught) ? [caught.code, caught.message] : caught).toEqual(['ETL_ICEBERG_METADATA_INVALID', expect.stringContaining(named)]);
    }
  });
});

interface Exchange {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | undefined;
}

type Reply = { readonly status: number; readonly body?: unknown } | Error;

/**
 * A fetch answering from a script of (method path → replies, used in turn, the last repeated),
 * recording each request; paths in the script leave out `basePath`, the catalog URI's own path.
 */
function scriptedFetch(script: Record<string, Reply[]>, basePath = ''): { fetch: RegistryFetch; exchanges: Exchange[] } {
  const exchanges: Exchange[] = [];
  const used = new Map<string, number>();
  const fetchImpl: RegistryFetch = async (url: URL, init: RegistryRequestInit) => {
    exchanges.push({ method: init.method, url: url.toString(), headers: init.headers, body: init.body });
    const key = `${init.method} ${url.pathname.startsWith(basePath) ? url.pathname.slice(basePath.length) : url.pathname}${url.search}`;
    const replies = script[key];
    if (replies === undefined || replies.length === 0) return { status: 404, text: async () => JSON.stringify({ error: { message: `no route ${key}`, type: 'NoSuchRoute', code: 404 } }) };
    const index = used.get(key) ?? 0;
    used.set(key, index + 1);
    const reply = replies[Math.min(index, replies.length - 1)]!;
    if (reply instanceof Error) throw reply;
    return { status: reply.status, text: async () => (typeof reply.body === 'string' ? reply.body : stringifyIcebergJson(reply.body ?? {})) };
  };
  return { fetch: fetchImpl, exchanges };
}

const socketError = (code: string): TypeError => new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code}`), { code }) });

const TABLE_PATH = '/v1/cat/prod/namespaces/analytics%1Fweb/tables/page-views';

async function connect(script: Record<string, Reply[]>, options: Partial<RestCatalogOptions> = {}): Promise<{ catalog: RestCatalog; exchanges: Exchange[] }> {
  const { fetch, exchanges } = scriptedFetch({ 'GET /v1/config?warehouse=prod': [{ status: 200, body: { defaults: { prefix: 'ignored' }, overrides: { prefix: 'cat/prod' } } }], ...script }, '/api');
  const catalog = await RestCatalog.connect({ uri: 'https://catalog.example/api/', warehouse: 'prod', fetch, ...options });
  return { catalog, exchanges };
}

async function failureOf(promise: Promise<unknown>): Promise<{ code: string; message: string; retriable: boolean }> {
  try {
    await promise;
  } catch (error) {
    if (isTributaryError(error)) return { code: error.code, message: error.message, retriable: error.retriable };
    throw error;
  }
  throw new Error('expected a failure');
}

const id = { namespace: ['analytics', 'web'], name: 'page-views' };

describe('the REST catalog client', () => {
  it("reads the config's prefix (overrides over defaults) and encodes multi-level namespaces with 0x1F", async () => {
    const base = appended(emptyTable(), BIG_ID, 'load/1');
    const { catalog, exchanges } = await connect({ [`GET ${TABLE_PATH}`]: [{ status: 200, body: { 'metadata-location': `${LOCATION}/metadata/00001-abc.metadata.json`, metadata: base } }] });
    expect(catalog.prefix).toBe('cat/prod');
    const loaded = await catalog.loadTable(id);
    expect(exchanges.map((exchange) => `${exchange.method} ${exchange.url}`)).toEqual(['GET https://catalog.example/api/v1/config?warehouse=prod', `GET https://catalog.example/api${TABLE_PATH}`]);
    expect(loaded?.metadata['current-snapshot-id']).toBe(BIG_ID);
    expect(loaded?.metadataLocation).toBe(`${LOCATION}/metadata/00001-abc.metadata.json`);
  });

  it('answers undefined for a table the catalog does not have', async () => {
    const { catalog } = await connect({ [`GET ${TABLE_PATH}`]: [{ status: 404, body: { error: { message: 'Table does not exist', type: 'NoSuchTableException', code: 404 } } }] });
    expect(await catalog.loadTable(id)).toBeUndefined();
  });

  it('gets an OAuth2 token with the client credential before the config, sends it, and renews it once on a 401', async () => {
    const { fetch, exchanges } = scriptedFetch({
      'POST /v1/oauth/tokens': [{ status: 200, body: { access_token: 'first', token_type: 'bearer', expires_in: 3600 } }, { status: 200, body: { access_token: 'second', token_type: 'bearer' } }],
      'GET /v1/config': [{ status: 200, body: { defaults: {}, overrides: {} } }],
      'GET /v1/namespaces/db/tables/t': [{ status: 401, body: { error: { message: 'expired', type: 'NotAuthorizedException', code: 401 } } }, { status: 404 }],
    });
    const catalog = await RestCatalog.connect({ uri: 'http://127.0.0.1:8181', credential: 'etl:s3cret', scope: 'PRINCIPAL_ROLE:ALL', fetch });
    expect(await catalog.loadTable({ namespace: ['db'], name: 't' })).toBeUndefined();
    expect(exchanges.map((exchange) => [exchange.method, new URL(exchange.url).pathname, exchange.headers['authorization']])).toEqual([
      ['POST', '/v1/oauth/tokens', undefined],
      ['GET', '/v1/config', 'Bearer first'],
      ['GET', '/v1/namespaces/db/tables/t', 'Bearer first'],
      ['POST', '/v1/oauth/tokens', undefined],
      ['GET', '/v1/namespaces/db/tables/t', 'Bearer second'],
    ]);
    expect(Object.fromEntries(new URLSearchParams(exchanges[0]!.body))).toEqual({ grant_type: 'client_credentials', client_id: 'etl', client_secret: 's3cret', scope: 'PRINCIPAL_ROLE:ALL' });
  });

  it('says what to do when the token endpoint refuses the credential', async () => {
    const { fetch } = scriptedFetch({ 'POST /v1/oauth/tokens': [{ status: 401, body: { error: 'invalid_client', error_description: 'unknown client' } }] });
    const failure = await failureOf(RestCatalog.connect({ uri: 'http://127.0.0.1:8181', credential: 'etl:wrong', fetch }));
    expect(failure).toEqual({ code: 'ETL_ICEBERG_CATALOG_FAILED', retriable: false, message: expect.stringContaining('invalid_client: unknown client') as unknown });
    expect(failure.message).toContain('check the credential');
  });

  it('sends a bearer token as given', async () => {
    const { fetch, exchanges } = scriptedFetch({ 'GET /v1/config': [{ status: 200, body: {} }] });
    await RestCatalog.connect({ uri: 'http://127.0.0.1:8181', token: 'tok', fetch });
    expect(exchanges[0]?.headers['authorization']).toBe('Bearer tok');
  });

  it('asks for credentials when the catalog answers 401 and none were given', async () => {
    const { fetch } = scriptedFetch({ 'GET /v1/config': [{ status: 401, body: { error: { message: 'Not authorized', type: 'NotAuthorizedException', code: 401 } } }] });
    const failure = await failureOf(RestCatalog.connect({ uri: 'http://127.0.0.1:8181', fetch }));
    expect(failure.code).toBe('ETL_ICEBERG_CATALOG_FAILED');
    expect(failure.message).toContain('wants credentials');
  });

  it('refuses a URI that is not http(s) before sending anything', async () => {
    const { fetch, exchanges } = scriptedFetch({});
    expect((await failureOf(RestCatalog.connect({ uri: 'thrift://metastore:9083', fetch }))).code).toBe('ETL_ICEBERG_CATALOG_FAILED');
    expect(exchanges).toEqual([]);
  });

  describe('commits', () => {
    const base = appended(emptyTable(), 1n, 'load/1');
    const next = appended(base, 2n, 'load/2');
    const changes = tableChanges(base, next, 'db.events');
    const committed = { status: 200, body: { 'metadata-location': `${LOCATION}/metadata/00002-def.metadata.json`, metadata: next } };

    it('posts the identifier, requirements and updates, and answers the metadata the catalog now holds', async () => {
      const { catalog, exchanges } = await connect({ [`POST ${TABLE_PATH}`]: [committed] });
      const answer = await catalog.commitTable(id, changes);
      expect(answer.outcome).toBe('committed');
      expect(answer.outcome === 'committed' && answer.result.metadata['current-snapshot-id']).toBe(2n);
      const sent = parseIcebergJson(exchanges.at(-1)!.body!) as Record<string, unknown>;
      expect(sent).toEqual({ identifier: { namespace: ['analytics', 'web'], name: 'page-views' }, requirements: changes.requirements.map((requirement) => ({ ...requirement, ...(requirement.type === 'assert-ref-snapshot-id' ? { 'snapshot-id': 1 } : {}) })), updates: expect.any(Array) as unknown });
      expect(exchanges.at(-1)?.headers['content-type']).toBe('application/json');
    });

    it('answers conflict on 409 (CommitFailedException), with the server’s reason', async () => {
      const { catalog } = await connect({ [`POST ${TABLE_PATH}`]: [{ status: 409, body: { error: { message: 'Requirement failed: branch main has changed: expected id 1 != 5', type: 'CommitFailedException', code: 409 } } }] });
      expect(await catalog.commitTable(id, changes)).toEqual({ outcome: 'conflict', reason: 'Requirement failed: branch main has changed: expected id 1 != 5' });
    });

    for (const status of [500, 502, 503, 504]) {
      it(`says the state is unknown on HTTP ${status}, retriable, and how the next run finds out`, async () => {
        const { catalog } = await connect({ [`POST ${TABLE_PATH}`]: [{ status, body: { error: { message: 'boom', type: 'CommitStateUnknownException', code: status } } }] });
        const failure = await failureOf(catalog.commitTable(id, changes));
        expect(failure).toMatchObject({ code: 'ETL_ICEBERG_COMMIT_STATE_UNKNOWN', retriable: true });
        expect(failure.message).toContain('finds the commit by its commit id');
      });
    }

    it('says the state is unknown when the answer is lost, but nothing was sent when the connection was refused', async () => {
      const lost = await connect({ [`POST ${TABLE_PATH}`]: [socketError('ECONNRESET')] });
      expect((await failureOf(lost.catalog.commitTable(id, changes))).code).toBe('ETL_ICEBERG_COMMIT_STATE_UNKNOWN');
      const refused = await connect({ [`POST ${TABLE_PATH}`]: [socketError('ECONNREFUSED')] });
      const failure = await failureOf(refused.catalog.commitTable(id, changes));
      expect(failure).toMatchObject({ code: 'ETL_ICEBERG_CATALOG_FAILED', retriable: true });
      expect(failure.message).toContain('nothing was changed');
    });

    it('refuses a malformed commit (400) as the catalog said, not retriable', async () => {
      const { catalog } = await connect({ [`POST ${TABLE_PATH}`]: [{ status: 400, body: { error: { message: 'Cannot parse update action: frobnicate', type: 'BadRequestException', code: 400 } } }] });
      expect(await failureOf(catalog.commitTable(id, changes))).toEqual({ code: 'ETL_ICEBERG_CATALOG_FAILED', retriable: false, message: expect.stringContaining('BadRequestException: Cannot parse update action: frobnicate') as unknown });
    });

    it('refuses a 200 whose body is not a table', async () => {
      const { catalog } = await connect({ [`POST ${TABLE_PATH}`]: [{ status: 200, body: '<html>proxy</html>' }] });
      expect((await failureOf(catalog.commitTable(id, changes))).message).toContain('Is https://catalog.example/api an Iceberg REST catalog?');
    });
  });
});

describe('a table kept by a catalog, through table-versions.ts', () => {
  const namespacesPath = '/v1/cat/prod/namespaces';
  const tablesPath = '/v1/cat/prod/namespaces/analytics%1Fweb/tables';

  it('creates a new table with the next metadata’s schema, spec and properties, then commits its snapshot', async () => {
    const first = emptyTable();
    const next = appended(first, 5n, 'load/1');
    // The catalog's table: its own uuid, a property of its own, version 0.
    const created: TableMetadata = { ...first, 'table-uuid': 'c0ffee00-0000-4000-8000-000000000000', properties: { ...first.properties, 'write.parquet.compression-codec': 'zstd' } };
    const { catalog, exchanges } = await connect({
      [`POST ${namespacesPath}`]: [{ status: 200, body: { namespace: ['analytics'] } }, { status: 409, body: { error: { message: 'exists', type: 'AlreadyExistsException', code: 409 } } }],
      [`POST ${tablesPath}`]: [{ status: 200, body: { 'metadata-location': `${LOCATION}/metadata/00000-a.metadata.json`, metadata: created } }],
      // Java prints the file:/// location of the table's folder as file:/ in the metadata file's: the same folder.
      [`POST ${TABLE_PATH}`]: [{ status: 200, body: { 'metadata-location': 'file:/warehouse/db/events/metadata/00001-b.metadata.json', metadata: { ...appended(created, 5n, 'load/1') } } }],
    });
    const table: IcebergTable = { warehouse: openWarehouse('/tmp/unused'), dir: 'db/events', location: LOCATION, catalog: catalog.table(id, 'db/events') };
    const outcome = await commitMetadata(table, undefined, next);
    expect(outcome).toMatchObject({ outcome: 'committed', loaded: { version: 1, path: 'db/events/metadata/00001-b.metadata.json', metadataLocation: 'file:/warehouse/db/events/metadata/00001-b.metadata.json' } });
    const requests = exchanges.slice(1).map((exchange) => ({ what: `${exchange.method} ${new URL(exchange.url).pathname.slice('/api'.length)}`, body: parseIcebergJson(exchange.body ?? 'null') as Record<string, unknown> }));
    expect(requests.map((request) => request.what)).toEqual([`POST ${namespacesPath}`, `POST ${namespacesPath}`, `POST ${tablesPath}`, `POST ${TABLE_PATH}`]);
    expect(requests[0]?.body).toEqual({ namespace: ['analytics'], properties: {} });
    expect(requests[1]?.body).toEqual({ namespace: ['analytics', 'web'], properties: {} });
    expect(requests[2]?.body).toEqual({ name: 'page-views', location: LOCATION, schema: JSON.parse(JSON.stringify(first.schemas[0])) as unknown, 'partition-spec': first['partition-specs'][0], properties: first.properties, 'stage-create': false });
    // The commit builds on the table as created: its uuid, main absent; the catalog's own property left alone.
    expect(requests[3]?.body).toMatchObject({
      requirements: [
        { type: 'assert-table-uuid', uuid: created['table-uuid'] },
        { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null },
      ],
      updates: [{ action: 'add-snapshot' }, { action: 'set-snapshot-ref', 'snapshot-id': 5 }],
    });
  });

  it('answers conflict when another writer created the table first', async () => {
    const { catalog } = await connect({
      [`POST ${namespacesPath}`]: [{ status: 409, body: { error: { message: 'exists', type: 'AlreadyExistsException', code: 409 } } }],
      [`POST ${tablesPath}`]: [{ status: 409, body: { error: { message: 'Table already exists', type: 'AlreadyExistsException', code: 409 } } }],
    });
    const outcome = await catalog.table(id, 'db/events').commit(undefined, appended(emptyTable(), 5n, 'load/1'));
    expect(outcome.outcome).toBe('conflict');
  });

  it('refuses to commit into a table the catalog made with other column ids than the files carry', async () => {
    const first = emptyTable();
    const renumbered: TableMetadata = { ...first, schemas: [{ ...first.schemas[0]!, fields: first.schemas[0]!.fields.map((field, index) => ({ ...field, id: first.schemas[0]!.fields.length - index })) }] };
    const { catalog, exchanges } = await connect({
      [`POST ${namespacesPath}`]: [{ status: 200, body: {} }],
      [`POST ${tablesPath}`]: [{ status: 200, body: { 'metadata-location': `${LOCATION}/metadata/00000-a.metadata.json`, metadata: renumbered } }],
    });
    const failure = await failureOf(catalog.table(id, 'db/events').commit(undefined, appended(first, 5n, 'load/1')));
    expect(failure).toMatchObject({ code: 'ETL_ICEBERG_SCHEMA_CHANGED', retriable: true });
    expect(exchanges.some((exchange) => exchange.method === 'POST' && new URL(exchange.url).pathname === `/api${TABLE_PATH}`)).toBe(false);
  });

  it('does not post a commit that changes nothing', async () => {
    const base = appended(emptyTable(), 1n, 'load/1');
    const { catalog, exchanges } = await connect({});
    const loaded: LoadedTable = { version: 3, metadata: base, path: 'db/events/metadata/00003-x.metadata.json' };
    expect(await catalog.table(id, 'db/events').commit(loaded, { ...base, 'last-updated-ms': 5 })).toEqual({ outcome: 'committed', loaded });
    expect(exchanges).toHaveLength(1);
  });

  describe('on a local warehouse', () => {
    let folder: string;
    beforeEach(async () => {
      folder = await mkdtemp(join(tmpdir(), 'tributary-rest-catalog-'));
    });
    afterEach(async () => {
      await rm(folder, { recursive: true, force: true });
    });

    it('loads, publishes and writes no hint through the catalog, never touching metadata files', async () => {
      const calls: string[] = [];
      const base = appended(emptyTable(), 1n, 'load/1');
      const loaded: LoadedTable = { version: 4, metadata: base, path: 'db/events/metadata/00004-x.metadata.json' };
      const catalog: TableCatalog = {
        name: 'fake',
        load: async () => {
          calls.push('load');
          return loaded;
        },
        commit: async (from, next) => {
          calls.push(`commit ${String(from?.version)} → ${String(next['current-snapshot-id'])}`);
          return { outcome: 'conflict', reason: 'moved' };
        },
      };
      const warehouse = openWarehouse(folder);
      const table: IcebergTable = { warehouse, dir: 'db/events', location: warehouse.describe('db/events'), catalog };
      expect(await loadTable(table)).toBe(loaded);
      expect(await publishVersion(table, loaded, appended(base, 2n, 'load/2'))).toBe(false);
      expect(await commitMetadata(table, loaded, appended(base, 3n, 'load/3'))).toEqual({ outcome: 'conflict', reason: 'moved' });
      await writeHint(table, 4);
      expect(calls).toEqual(['load', 'commit 4 → 2', 'commit 4 → 3']);
      expect(await readdir(folder)).toEqual([]);
    });

    it('without a catalog, commits v1 then v2 as files, and answers conflict for a version taken', async () => {
      const warehouse = openWarehouse(folder);
      const table: IcebergTable = { warehouse, dir: 'db/events', location: warehouse.describe('db/events') };
      const first = appended(emptyTable(), 1n, 'load/1');
      const made = await commitMetadata(table, undefined, first);
      expect(made).toMatchObject({ outcome: 'committed', loaded: { version: 1, path: 'db/events/metadata/v1.metadata.json' } });
      expect((await commitMetadata(table, undefined, first)).outcome).toBe('conflict');
      const second = await commitMetadata(table, await loadTable(table), appended(first, 2n, 'load/2'));
      expect(second).toMatchObject({ outcome: 'committed', loaded: { version: 2 } });
      expect((await loadTable(table))?.metadata['current-snapshot-id']).toBe(2n);
      expect((await readdir(join(folder, 'db', 'events', 'metadata'))).sort()).toEqual(['v1.metadata.json', 'v2.metadata.json', 'version-hint.text']);
    });
  });
});

describe('the version a metadata file names', () => {
  it('reads catalog and file-system names', () => {
    expect(metadataVersion('file:///w/t/metadata/00012-6d28d808-2f29-4fe7-b77f-3840a5f9b4bd.metadata.json')).toBe(12);
    expect(metadataVersion('s3://b/t/metadata/00003-x.gz.metadata.json')).toBe(3);
    expect(metadataVersion('hdfs://nn/t/metadata/v7.metadata.json')).toBe(7);
    expect(metadataVersion('hdfs://nn/t/metadata/custom.json')).toBe(0);
  });
});
