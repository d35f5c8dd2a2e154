/**
 * The Iceberg tables of a load (`format: iceberg`): one table per topic, at `<root>/<topic>/`
 * (its `metadata/` and `data/`), partitioned by `hour(_event_time)`, its rows the records plus
 * the loader's columns (table-row.ts).
 *
 * Where exactly-once lives: in the loader's commit log, as for every format. The claim
 * `<seq>.pending` is the one decision that a commit happens (load/commit.ts); it records, per
 * topic, the table, its location and its schema, and the data files with their metrics, so the
 * snapshot is a function of the claim alone. The snapshot is made after the files are in place
 * and before the claim is published; a crash anywhere in between is finished by the next run's
 * roll-forward, which finds a snapshot already made by its `tributary.commit-id` in `main`'s
 * history. So the table and the log never disagree about a commit: a published commit has its
 * snapshot, and a snapshot exists only for a claimed commit. (Offsets are also in each snapshot's
 * summary, for readers; plans never read them from there.)
 */
import type { Type } from 'avsc';
import { planParquetRecord } from '../files/parquet-schema.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import type { Logger } from '../../common/logger.js';
import { etlError } from '../errors.js';
import { HOUR_MS, ICEBERG_HOUR_PARTITION, topicDir } from '../layout.js';
import type { Manifest, ManifestDataFile } from '../load/manifest.js';
import type { PartitionFieldSchema } from './manifest-avro.js';
import { appendSnapshot, loadTable, NAME_MAPPING_KEY, type AppendOutcome } from './table-commit.js';
import { currentSchema, type PartitionSpec } from './table-metadata.js';
import { evolveSchema } from './schema-evolution.js';
import type { LoadDefinition } from '../load-file.js';
import type { ReaderSchema } from '../load-types.js';
import { compileTransform } from '../records/transform.js';
import { EVENT_TIME_COLUMN, tableRowType } from './table-row.js';
import { catalogRefOf, icebergTableOf, type CatalogEnvironment, type CatalogRef, type TablePlace } from './load-catalog.js';
import { icebergSchemaOf, nameMappingOf, topLevelField, type IcebergSchema } from './table-schema.js';

/** What the claim records of one topic's table. */
export interface TableEntry {
  /** The table's folder in the warehouse. */
  readonly dir: string;
  /** The URI naming the folder in a new table's metadata. */
  readonly location: string;
  /** The Iceberg schema of the rows this commit wrote. */
  readonly schema: IcebergSchema;
  /** The REST catalog table that keeps its metadata (load-catalog.ts); absent: a file-system table. */
  readonly catalog?: CatalogRef;
}

/** Java's first partition field id. */
const FIRST_PARTITION_FIELD_ID = 1000;

export const HOUR_PARTITION_FIELDS: readonly PartitionFieldSchema[] = [{ name: ICEBERG_HOUR_PARTITION, fieldId: FIRST_PARTITION_FIELD_ID, avroType: 'int' }];

/** The Iceberg schema of rows of records of `recordType` (ids as the Parquet files carry them). */
export function rowSchemaOf(recordType: Type): IcebergSchema {
  return icebergSchemaOf(planParquetRecord(tableRowType(recordType)).schema, 0);
}

/** `hour(_event_time)`, spec 0. */
export function hourSpecOf(schema: IcebergSchema): PartitionSpec {
  const source = topLevelField(schema, EVENT_TIME_COLUMN);
  if (source === undefined) throw new Error(`the row schema lacks ${EVENT_TIME_COLUMN}`);
  return { 'spec-id': 0, fields: [{ name: ICEBERG_HOUR_PARTITION, transform: 'hour', 'source-id': source.id, 'field-id': FIRST_PARTITION_FIELD_ID }] };
}

/** The URI of a table folder: the warehouse's own (file:///…, webhdfs://…), or `fileSystem` (hdfs://nn:8020) for a WebHDFS one. */
export function tableLocation(warehouse: WarehouseFileSystem, dir: string, fileSystem: string | undefined): string {
  const uri = warehouse.describe(dir);
  if (fileSystem === undefined) return uri;
  const match = /^webhdfs:\/\/[^/]*(\/.*)?$/.exec(uri);
  return match === null ? uri : `${fileSystem.replace(/\/+$/, '')}${match[1] ?? ''}`;
}

/**
 * The table of each topic that has files in this commit, with the schema its rows were written in
 * (the plan's, in the table's ids; a plan without one, as from an older version: the rows' own).
 */
export function tableEntries(
  root: string,
  files: readonly ManifestDataFile[],
  recordTypes: ReadonlyMap<string, Type>,
  locate: (dir: string) => string,
  tableSchemas: ReadonlyMap<string, IcebergSchema> | undefined,
  catalogOf: (topic: string) => CatalogRef | undefined = () => undefined,
): Record<string, TableEntry> {
  const entries: Record<string, TableEntry> = {};
  for (const topic of [...new Set(files.map((file) => file.topic))].sort()) {
    const recordType = recordTypes.get(topic);
    if (recordType === undefined) throw new Error(`no record type for topic ${topic}`);
    const dir = topicDir(root, topic);
    const catalog = catalogOf(topic);
    entries[topic] = { dir, location: locate(dir), schema: tableSchemas?.get(topic) ?? rowSchemaOf(recordType), ...(catalog === undefined ? {} : { catalog }) };
  }
  return entries;
}

/** Where the load keeps a topic's table: its folder, the URI naming it, its catalog table if the load has a catalog. */
export function topicTablePlace(load: LoadDefinition, warehouse: WarehouseFileSystem, topic: string): TablePlace {
  const dir = topicDir(load.warehouse.root, topic);
  const catalog = catalogRefOf(load, { topic });
  return { dir, location: tableLocation(warehouse, dir, load.iceberg?.fileSystem), ...(catalog === undefined ? {} : { catalog }) };
}

/**
 * Per topic of the plan, the rows' schema in its table's ids (schema-evolution.ts): what the
 * files are written with. A reader schema the table cannot evolve to fails here, before anything
 * is read or written.
 */
export async function planTableSchemas(
  load: LoadDefinition,
  warehouse: WarehouseFileSystem,
  readerSchemas: ReadonlyMap<string, ReaderSchema>,
  logger: Logger,
  env: CatalogEnvironment = {},
): Promise<Map<string, IcebergSchema>> {
  const schemas = new Map<string, IcebergSchema>();
  for (const [topic, reader] of readerSchemas) {
    const recordType = load.transform === undefined ? reader.fileType : compileTransform(load.transform, reader, topic).outputType;
    const dir = topicDir(load.warehouse.root, topic);
    const place = { ...topicTablePlace(load, warehouse, topic), location: warehouse.describe(dir) };
    const loaded = await loadTable(await icebergTableOf(warehouse, place, env));
    if (loaded === undefined && place.catalog !== undefined) await refuseFolderTable(warehouse, place);
    const current = loaded === undefined ? undefined : currentSchema(loaded.metadata);
    const table = loaded === undefined || current === undefined ? undefined : { schema: current, lastColumnId: loaded.metadata['last-column-id'], schemaIds: loaded.metadata.schemas.map((schema) => schema['schema-id']) };
    const evolved = evolveSchema(table, rowSchemaOf(recordType), warehouse.describe(dir));
    if (evolved.changes.length > 0) logger.info({ topic, changes: evolved.changes, schemaId: evolved.schema['schema-id'], event: 'table-schema-evolves' }, `Iceberg table schema evolves: ${evolved.changes.join(', ')}`);
    schemas.set(topic, evolved.schema);
  }
  return schemas;
}

/**
 * A catalog load whose catalog has no table yet, over a folder that holds a file-system table
 * (committed before the load named a catalog): creating the catalog's table there would give the
 * folder two sources of truth. Refused; registering the table in the catalog is the way over.
 */
async function refuseFolderTable(warehouse: WarehouseFileSystem, place: TablePlace): Promise<void> {
  const folderTable = await loadTable({ warehouse, dir: place.dir, location: place.location });
  if (folderTable === undefined || place.catalog === undefined) return;
  const name = [...place.catalog.namespace, place.catalog.name].join('.');
  throw etlError(
    'ETL_ICEBERG_METADATA_INVALID',
    `Iceberg table ${warehouse.describe(place.dir)} is a file-system table (metadata v${folderTable.version}), and the catalog ${place.catalog.uri} has no table ${name}: ` +
      `the load would make a second table over the same files. Register it in the catalog first (POST …/namespaces/{ns}/register with metadata-location ${warehouse.describe(folderTable.path)}), or leave iceberg.catalog out; nothing was read or written`,
    { details: { table: place.dir, catalog: place.catalog.uri, name, version: folderTable.version } },
  );
}

/**
 * Makes the snapshot of each table of a claimed commit (or finds it made), in the table the claim
 * names: a claim's `catalog` commits through that catalog (opened with `env` for secrets the files
 * do not hold), never to the folder; a claim without one to the folder, never to a catalog.
 */
export async function publishSnapshots(
  warehouse: WarehouseFileSystem,
  manifest: Manifest,
  logger: Logger,
  hooks: { readonly afterEach?: () => void; readonly nowMs?: () => number; readonly env?: CatalogEnvironment | undefined } = {},
): Promise<AppendOutcome[]> {
  const nowMs = hooks.nowMs ?? Date.now;
  const outcomes: AppendOutcome[] = [];
  for (const [topic, entry] of Object.entries(manifest.iceberg ?? {})) {
    const files = manifest.files.filter((file) => file.topic === topic);
    const offsets: Record<string, [number, number]> = {};
    for (const range of manifest.ranges) if (range.topic === topic) offsets[String(range.partition)] = [range.start, range.end];
    const commitId = `${manifest.load}/${manifest.seq}`;
    let outcome: AppendOutcome;
    try {
      outcome = await appendSnapshot(
        await icebergTableOf(warehouse, entry, hooks.env),
        {
          commitId,
          schema: entry.schema,
          spec: hourSpecOf(entry.schema),
          partitionFields: HOUR_PARTITION_FIELDS,
          properties: {
            'write.format.default': 'parquet',
            'write.parquet.compression-codec': manifest.output.codec === 'null' ? 'uncompressed' : manifest.output.codec,
            [NAME_MAPPING_KEY]: JSON.stringify(nameMappingOf(entry.schema)),
            'tributary.load': manifest.load,
            'tributary.topic': topic,
          },
          files: files.map((file) => ({ path: file.path, hour: Date.parse(`${file.hour}:00:00.000Z`) / HOUR_MS, records: file.records, bytes: file.bytes, metrics: file.metrics })),
          summary: {
            'tributary.load': manifest.load,
            'tributary.seq': String(manifest.seq),
            'tributary.topic': topic,
            // Per partition, the offsets [start, end) this commit read (records quarantined or filtered included).
            'tributary.offsets': JSON.stringify(offsets),
          },
          nowMs,
        },
      );
    } catch (error) {
      if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) {
        throw etlError('ETL_WAREHOUSE_DAMAGED', `commit ${manifest.seq} of load ${manifest.load}: the Iceberg table ${warehouse.describe(entry.dir)} lacks a file its metadata names; restore it, then run the load again`, {
          cause: error,
          details: { load: manifest.load, seq: manifest.seq, table: entry.dir },
        });
      }
      throw error;
    }
    logger.info({ seq: manifest.seq, topic, snapshot: String(outcome.snapshotId), version: outcome.version, outcome: outcome.outcome, ...(entry.catalog === undefined ? {} : { catalog: entry.catalog.uri, table: [...entry.catalog.namespace, entry.catalog.name].join('.') }), event: 'table-committed' }, 'Iceberg snapshot made');
    outcomes.push(outcome);
    hooks.afterEach?.();
  }
  return outcomes;
}
