/**
 * Where `etl ddl` takes a topic's schema when the registry cannot be reached: the Avro schema its
 * committed data files carry (data-file-schema.ts), from the newest commit's smallest file on; a
 * file a replay has since moved away is skipped.
 *
 * Only an unreachable registry falls back: REGISTRY_UNAVAILABLE (connection refused or reset,
 * timeout, HTTP 5xx: the registry client's retriable failures). An answer — a deleted subject or
 * schema (404), refused credentials (401/403), a body no registry sends — is reported as it is:
 * DDL from files would then hide a registry that lost or refuses what the load relies on.
 *
 * The files hold the schema they were written in, the load's transform already applied; the
 * registry path applies today's load file to the reader schema. They differ only when the
 * transform changed since the commit, and then the files' schema is the one that reads them.
 */
import type { Type } from 'avsc';
import { isTributaryError, type TributaryError } from '../../common/errors.js';
import { parseDataFileSchema, type DataFileFormat } from '../files/data-files.js';
import { etlError } from '../errors.js';
import type { ReaderSchemaRef } from '../load/manifest.js';
import { hasWarehouseCode } from '../warehouse/errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';
import { readDataFileSchema } from './data-file-schema.js';

/** A data file a published commit wrote for a topic. */
export interface CommittedFile {
  readonly path: string;
  readonly bytes: number;
  readonly seq: number;
  /** The reader schema the commit names for the topic. */
  readonly reader: ReaderSchemaRef | undefined;
}

export interface CommittedSchemaInputs {
  readonly warehouse: WarehouseFileSystem;
  readonly format: DataFileFormat;
  readonly load: { readonly name: string; readonly file: string };
  readonly topic: string;
  readonly files: readonly CommittedFile[];
  /** Published commits of the load, for the error when none wrote the topic. */
  readonly commits: number;
  readonly registryUrl: string;
  readonly registryError: TributaryError;
}

export interface CommittedSchema {
  readonly schema: Type;
  readonly file: CommittedFile;
  /** What `etl ddl` says on stderr. */
  readonly notice: string;
}

/** Whether `error` says the registry could not be reached (rather than that it answered no). */
export function registryUnreachable(error: unknown): error is TributaryError {
  return isTributaryError(error) && error.code === 'REGISTRY_UNAVAILABLE';
}

export async function schemaFromCommittedFiles(inputs: CommittedSchemaInputs): Promise<CommittedSchema> {
  const { warehouse, topic } = inputs;
  const newestFirst = [...inputs.files].sort((a, b) => b.seq - a.seq || a.bytes - b.bytes);
  for (const file of newestFirst) {
    let json: unknown;
    try {
      json = await readDataFileSchema(warehouse, file.path, inputs.format);
    } catch (error) {
      if (hasWarehouseCode(error, 'WAREHOUSE_NOT_FOUND')) continue;
      throw error;
    }
    const id = file.reader === undefined ? 'unknown' : `${file.reader.id} (${file.reader.subject} version ${file.reader.version})`;
    return {
      schema: parseDataFileSchema(json),
      file,
      notice: `registry unreachable at ${inputs.registryUrl}: the DDL of topic ${topic} is built from the schema in ${warehouse.describe(file.path)} (commit ${file.seq}), schema id ${id}`,
    };
  }
  const why =
    inputs.commits === 0
      ? `load ${inputs.load.name} has no published commit yet`
      : newestFirst.length === 0
        ? `no published commit of load ${inputs.load.name} wrote data files of topic ${topic}`
        : `none of the ${newestFirst.length} data files its commits name is in the warehouse any more (e.g. ${warehouse.describe(newestFirst[0]!.path)})`;
  throw etlError(
    'ETL_SCHEMA_UNAVAILABLE',
    `cannot build the DDL of topic ${topic}: schema registry ${inputs.registryUrl} is unreachable (${inputs.registryError.message}), and ${why}, so no committed file carries the schema. ` +
      `Start the registry (or correct registry: in ${inputs.load.file}) and run etl ddl again; once the topic has a commit, etl ddl builds from its files when the registry is away`,
    { retriable: true, cause: inputs.registryError, details: { load: inputs.load.name, topic, registry: inputs.registryUrl, filesTried: newestFirst.length } },
  );
}
