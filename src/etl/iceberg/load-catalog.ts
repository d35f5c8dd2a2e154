/**
 * Where a load's Iceberg tables keep their metadata: in `metadata/v<N>.metadata.json` files of
 * their folders (file-system tables, the default), or in the REST catalog of the load file's
 * `iceberg.catalog` (rest-catalog.ts). One place decides it for every command that touches a
 * table (runs, roll-forward, replay, rollback, status, ddl, compaction, expiry, orphans):
 * `icebergTableOf` turns a table's place into the IcebergTable table-versions.ts works on.
 *
 * A table's place — its folder, its location URI and, for a catalog table, its CatalogRef — is
 * recorded in every claim (manifest.ts `iceberg[topic]`, `deadLetters`), so a claimed commit is
 * finished against the table it was planned against by whoever rolls it forward, from the claim
 * alone (load/commit.ts: later runs, replays, orphan removal), even after the load file changed
 * its catalog. A CatalogRef holds only what is not secret: the catalog's URI and warehouse name,
 * the namespace and table name, the scope, and the absolute paths of the credential, token and CA
 * files. The secrets are read when the catalog is opened, from those files or from the process
 * environment (TRIBUTARY_ICEBERG_CREDENTIAL, TRIBUTARY_ICEBERG_TOKEN) the composition root passes
 * in: a roll-forward on another machine uses that machine's files and environment.
 *
 * A claim without a CatalogRef is a file-system table (every claim written before catalogs were
 * supported is one), and a claim with one is committed through the catalog only, or not at all:
 * the two are never mixed, so a table never has two sources of truth.
 *
 * Connections are opened once per process and catalog (GET /v1/config, and an OAuth2 token).
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../../common/logger.js';
import type { IcebergCatalogSettings, LoadDefinition } from '../load-file.js';
import { TributaryError } from '../../common/errors.js';
import { RestCatalog, type RestCatalogOptions } from './rest-catalog.js';
import type { IcebergTable } from './table-versions.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export const ICEBERG_CREDENTIAL_ENV = 'TRIBUTARY_ICEBERG_CREDENTIAL';
export const ICEBERG_TOKEN_ENV = 'TRIBUTARY_ICEBERG_TOKEN';

export type CatalogEnvironment = Readonly<Record<string, string | undefined>>;

/** A table of a REST catalog as a claim records it: nothing secret. */
export interface CatalogRef {
  readonly type: 'rest';
  readonly uri: string;
  readonly warehouse?: string;
  readonly namespace: readonly string[];
  readonly name: string;
  readonly credentialFile?: string;
  readonly tokenFile?: string;
  readonly scope?: string;
  readonly caFile?: string;
}

/** A table's folder, the URI naming it in metadata, and its catalog table if it has one. */
export interface TablePlace {
  readonly dir: string;
  readonly location: string;
  readonly catalog?: CatalogRef | undefined;
}

/** Which table of a load: a topic's, or the load's dead-letter table. */
export type LoadTable = { readonly topic: string } | { readonly deadLetters: true };

/** A topic's table name in a catalog by default: the characters other than A–Z a–z 0–9 _ made `_`. */
export function defaultCatalogTableName(topic: string): string {
  return topic.replace(/[^A-Za-z0-9_]/g, '_');
}

/** The catalog table of one of the load's tables, or undefined for a file-system load. */
export function catalogRefOf(load: LoadDefinition, table: LoadTable): CatalogRef | undefined {
  const catalog = load.iceberg?.catalog;
  if (catalog === undefined) return undefined;
  const name = 'topic' in table ? (catalog.tables[table.topic] ?? defaultCatalogTableName(table.topic)) : `${defaultCatalogTableName(load.name)}_dead_letters`;
  return {
    type: 'rest',
    uri: catalog.uri,
    ...(catalog.warehouse === undefined ? {} : { warehouse: catalog.warehouse }),
    namespace: [...catalog.namespace],
    name,
    ...(catalog.credentialFile === undefined ? {} : { credentialFile: catalog.credentialFile }),
    ...(catalog.tokenFile === undefined ? {} : { tokenFile: catalog.tokenFile }),
    ...(catalog.scope === undefined ? {} : { scope: catalog.scope }),
    ...(catalog.caFile === undefined ? {} : { caFile: catalog.caFile }),
  };
}

type Connection = Omit<CatalogRef, 'namespace' | 'name'>;

const connections = new Map<string, Promise<RestCatalog>>();

/** The catalog of `connection`, connected once per process (a failed connection is tried again next time). */
export function openCatalog(connection: Connection, env: CatalogEnvironment, logger?: Logger): Promise<RestCatalog> {
  const key = JSON.stringify([connection.uri, connection.warehouse, connection.credentialFile, connection.tokenFile, connection.scope, connection.caFile]);
  let opened = connections.get(key);
  if (opened === undefined) {
    opened = RestCatalog.connect(restOptions(connection, env));
    connections.set(key, opened);
    opened.then(
      (catalog) => logger?.info({ catalog: catalog.uri, prefix: catalog.prefix, event: 'catalog-connected' }, 'Iceberg REST catalog connected'),
      () => connections.delete(key),
    );
  }
  return opened;
}

/** The load's REST catalog, or undefined when its tables are file-system tables. */
export async function openLoadCatalog(load: LoadDefinition, logger: Logger | undefined, env: CatalogEnvironment): Promise<RestCatalog | undefined> {
  const catalog = load.iceberg?.catalog;
  return catalog === undefined ? undefined : openCatalog(connectionOf(catalog), env, logger);
}

/** The IcebergTable of a table's place: bound to its catalog table when it has one. */
export async function icebergTableOf(warehouse: WarehouseFileSystem, place: TablePlace, env: CatalogEnvironment = {}): Promise<IcebergTable> {
  const { dir, location, catalog } = place;
  if (catalog === undefined) return { warehouse, dir, location };
  const rest = await openCatalog(catalog, env);
  return { warehouse, dir, location, catalog: rest.table({ namespace: catalog.namespace, name: catalog.name }, dir) };
}

function connectionOf(catalog: IcebergCatalogSettings): Connection {
  return {
    type: 'rest',
    uri: catalog.uri,
    ...(catalog.warehouse === undefined ? {} : { warehouse: catalog.warehouse }),
    ...(catalog.credentialFile === undefined ? {} : { credentialFile: catalog.credentialFile }),
    ...(catalog.tokenFile === undefined ? {} : { tokenFile: catalog.tokenFile }),
    ...(catalog.scope === undefined ? {} : { scope: catalog.scope }),
    ...(catalog.caFile === undefined ? {} : { caFile: catalog.caFile }),
  };
}

/** The client's options: the secrets from the named files, else from the environment. */
function restOptions(connection: Connection, env: CatalogEnvironment): RestCatalogOptions {
  const credential = connection.credentialFile !== undefined ? firstLine(connection.credentialFile, 'credential.file') : connection.tokenFile === undefined ? nonEmpty(env[ICEBERG_CREDENTIAL_ENV]) : undefined;
  const token = connection.tokenFile !== undefined ? firstLine(connection.tokenFile, 'token.file') : credential === undefined ? nonEmpty(env[ICEBERG_TOKEN_ENV]) : undefined;
  return {
    uri: connection.uri,
    ...(connection.warehouse === undefined ? {} : { warehouse: connection.warehouse }),
    ...(credential === undefined ? {} : { credential }),
    ...(token === undefined ? {} : { token }),
    ...(connection.scope === undefined ? {} : { scope: connection.scope }),
    ...(connection.caFile === undefined ? {} : { tls: { ca: readSecretFile(connection.caFile, 'ssl.ca.location') } }),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function firstLine(path: string, property: string): string {
  const line = readSecretFile(path, property).toString('utf8').split(/\r?\n/)[0]?.trim() ?? '';
  if (line === '') throw new TributaryError({ code: 'CONFIG_INVALID', message: `iceberg.catalog.${property} names ${path}, which is empty; write the secret on its first line`, details: { property, path } });
  return line;
}

function readSecretFile(path: string, property: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new TributaryError({ code: 'CONFIG_INVALID', message: `iceberg.catalog.${property} names ${path}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, cause: error, details: { property, path } });
  }
}
