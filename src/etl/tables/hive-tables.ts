/**
 * What `tributary etl ddl --load FILE` prints: the Hive tables of a load (hive-ddl.ts), one per
 * topic, from the load file (names, format, layout), the warehouse (the committed hours: the
 * hours of published commits only, never a claimed or staged one) and the registry (the schema).
 *
 * - Topics: the load's listed topics, and every topic its commits loaded (topicPattern loads).
 * - Table names: the load file's hive.table / hive.tables, else the topic lowercased with every
 *   character other than a-z, 0-9 and `_` made `_` (page-views → page_views). Two topics with
 *   one name are refused: name them in hive.tables.
 * - Schema: the reader schema of the last published commit that read the topic (the registry's
 *   latest `<topic>-value` for a topic not loaded yet), through the load file's transform when it
 *   has one: the schema of the files the load writes. When the registry cannot be reached, the
 *   schema its committed data files carry (committed-schema.ts), and `notice` is told so.
 * - LOCATION: `file:///…` for a local warehouse. For a webhdfs:// warehouse the HDFS path, after
 *   hive.fileSystem (e.g. hdfs://namenode:8020) when the load file gives it; the NameNode's RPC
 *   address cannot be derived from its WebHDFS address, so without it the path has no scheme and
 *   Hive takes it on its default file system (fs.defaultFS), which is right when Hive runs
 *   against the same cluster.
 */
import { TributaryError } from '../../common/errors.js';
import type { Type } from 'avsc';
import { parseAvroSchema } from '../../registry/avro-schema.js';
import type { RegistryClient } from '../../registry/client.js';
import { parseDataFileSchema } from '../files/data-files.js';
import { planParquetRecord } from '../files/parquet-schema.js';
import { HOUR_MS, topicDir, topicHourDir } from '../layout.js';
import type { LoadDefinition } from '../load-file.js';
import { readClaim, readCommitLog } from '../load/commit-log.js';
import { checkLayoutUnchanged } from '../load/layout-check.js';
import type { ReaderSchemaRef } from '../load/manifest.js';
import type { ReaderSchema } from '../load-types.js';
import { registryReaderSchemas } from '../load/run.js';
import { compileTransform } from '../records/transform.js';
import { parseWarehouseUrl } from '../warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { registryUnreachable, schemaFromCommittedFiles, type CommittedFile } from './committed-schema.js';
import { hiveTableDdl, type HiveTableDefinition } from './hive-ddl.js';

/** What the committed manifests say of one topic. */
interface CommittedTopic {
  readonly hours: Set<number>;
  /** The reader schema of the last published commit that read the topic. */
  reader?: ReaderSchemaRef;
  /** Its data files in every published commit (the schema's source when the registry is away). */
  readonly files: CommittedFile[];
}

export interface HiveTablesOptions {
  /** Told, in one line per topic, when its schema came from the committed files because the registry was unreachable. */
  readonly notice?: (line: string) => void;
}

/** `page-views` → `page_views`: what Hive's metastore accepts, lowercased as it stores names. */
export function defaultHiveTableName(topic: string): string {
  return topic.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** The table definitions of every topic of the load, in topic order. */
export async function readHiveTables(load: LoadDefinition, warehouse: WarehouseFileSystem, registry: RegistryClient, options: HiveTablesOptions = {}): Promise<HiveTableDefinition[]> {
  await checkLayoutUnchanged(warehouse, load);
  const { topics: committed, commits } = await committedTopics(load, warehouse);
  const topics = [...new Set([...(load.topics.kind === 'list' ? load.topics.names : []), ...committed.keys()])].sort();
  const names = tableNames(load, topics);
  const definitions: HiveTableDefinition[] = [];
  // Once unreachable, the registry is not waited for again topic after topic.
  let unreachable: TributaryError | undefined;
  for (const topic of topics) {
    const found = committed.get(topic);
    let schema: Type | undefined;
    if (unreachable === undefined) {
      try {
        schema = await registrySchema(load, registry, topic, found?.reader);
      } catch (error) {
        if (!registryUnreachable(error)) throw error;
        unreachable = error;
      }
    }
    if (schema === undefined) {
      const fromFiles = await schemaFromCommittedFiles({ warehouse, format: load.format, load, topic, files: found?.files ?? [], commits, registryUrl: registry.url, registryError: unreachable! });
      options.notice?.(fromFiles.notice);
      schema = fromFiles.schema;
    }
    // The Parquet writer's own check: a schema it cannot write gets no table either.
    if (load.format === 'parquet') planParquetRecord(schema);
    definitions.push({
      database: load.hive?.database ?? 'default',
      table: names.get(topic)!,
      topic,
      format: load.format,
      layout: load.layout,
      schema,
      location: locationOf(load, topicDir(load.warehouse.root, topic)),
      partitions: [...(found?.hours ?? [])].sort((a, b) => a - b).map((hour) => ({ hour, location: locationOf(load, topicHourDir(load.warehouse.root, topic, hour, load.layout)) })),
    });
  }
  return definitions;
}

/** The whole text `etl ddl` prints. */
export function formatHiveDdl(load: LoadDefinition, definitions: readonly HiveTableDefinition[]): string {
  const header = `-- Hive tables of load ${load.name} (${load.file}): layout ${load.layout}, format ${load.format}; partitions are the hours of published commits\n`;
  return [header, ...definitions.map((definition) => hiveTableDdl(definition))].join('\n');
}

async function committedTopics(load: LoadDefinition, warehouse: WarehouseFileSystem): Promise<{ topics: Map<string, CommittedTopic>; commits: number }> {
  const root = load.warehouse.root;
  const log = await readCommitLog(warehouse, root, load.name);
  const topics = new Map<string, CommittedTopic>();
  const topicOf = (topic: string): CommittedTopic => {
    let found = topics.get(topic);
    if (found === undefined) topics.set(topic, (found = { hours: new Set(), files: [] }));
    return found;
  };
  for (const seq of log.claimed) {
    if (!log.published.has(seq)) continue; // claimed, not yet published: not committed
    const { manifest } = await readClaim(warehouse, root, load.name, seq);
    for (const [topic, hours] of Object.entries(manifest.hours)) {
      for (const [hour, records] of Object.entries(hours)) if (records > 0) topicOf(topic).hours.add(Date.parse(`${hour}:00:00.000Z`) / HOUR_MS);
    }
    for (const [topic, reader] of Object.entries(manifest.readerSchemas)) topicOf(topic).reader = reader;
    for (const file of manifest.files) topicOf(file.topic).files.push({ path: file.path, bytes: file.bytes, seq, reader: manifest.readerSchemas[file.topic] });
  }
  return { topics, commits: log.published.size };
}

/** The schema of the files the load writes, from the registry: the committed reader (or the latest) through today's transform. */
async function registrySchema(load: LoadDefinition, registry: RegistryClient, topic: string, committed: ReaderSchemaRef | undefined): Promise<Type> {
  const reader = committed === undefined ? await registryReaderSchemas(registry)(topic) : await readerById(registry, committed);
  return load.transform === undefined ? reader.fileType : compileTransform(load.transform, reader, topic).outputType;
}

async function readerById(registry: RegistryClient, ref: ReaderSchemaRef): Promise<ReaderSchema> {
  const found = await registry.schemaById(ref.id);
  const schema = parseAvroSchema(found.schema, found.schemaType);
  return { ref, schema, fileType: parseDataFileSchema(schema.json) };
}

function tableNames(load: LoadDefinition, topics: readonly string[]): Map<string, string> {
  const names = new Map<string, string>();
  const byName = new Map<string, string>();
  for (const topic of topics) {
    const name = load.hive?.tables[topic] ?? defaultHiveTableName(topic);
    const other = byName.get(name.toLowerCase());
    if (other !== undefined) {
      throw new TributaryError({
        code: 'CONFIG_INVALID',
        message: `load file ${load.file}: topics ${other} and ${topic} would both be Hive table ${name}; name their tables in hive.tables, e.g. hive: { tables: { ${topic}: ${name}_2 } }`,
        details: { topics: [other, topic], table: name },
      });
    }
    byName.set(name.toLowerCase(), topic);
    names.set(topic, name);
  }
  return names;
}

/** Where Hive finds a warehouse path (relative to the warehouse), as LOCATION takes it. */
function locationOf(load: LoadDefinition, relative: string): string {
  const location = parseWarehouseUrl(load.warehouse.url, load.warehouse.baseDirectory);
  const fileSystem = load.hive?.fileSystem;
  if (location.kind === 'local') {
    if (fileSystem !== undefined) {
      throw new TributaryError({
        code: 'CONFIG_INVALID',
        message: `load file ${load.file}: hive.fileSystem (${fileSystem}) is for webhdfs:// warehouses; this load's warehouse is the local folder ${location.root}, which Hive reads as file://. Remove hive.fileSystem`,
        details: { fileSystem },
      });
    }
    return `file://${joinPath(location.root, relative)}`;
  }
  const path = joinPath(location.root, relative);
  return fileSystem === undefined ? path : `${fileSystem}${path}`;
}

function joinPath(base: string, relative: string): string {
  return `/${[...base.split('/'), ...relative.split('/')].filter((part) => part !== '').join('/')}`;
}
