/**
 * The Apache Iceberg Java API (1.10) as the checker of a REST catalog's tables: runs
 * iceberg/RestTableCheck.java on the iceberg-rest-fixture jars, which loads the table through
 * Iceberg's own RESTCatalog client, and returns what Java sees, as typed JSON. Each call starts one
 * JVM (a few seconds).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureJars, ICEBERG_REST_FIXTURE_JARS } from '../services/service-jars.js';
import type { IcebergJsonPartitionSpec, IcebergJsonSchema } from './iceberg-java.js';
import { describeRun, runKafkaTool } from './java.js';

export const REST_TABLE_CHECK = join(dirname(fileURLToPath(import.meta.url)), 'iceberg', 'RestTableCheck.java');

/** A value as the check prints it: structs and string-keyed maps as objects, timestamps as ISO text. */
export type RestCheckValue = null | boolean | number | string | readonly RestCheckValue[] | { readonly [name: string]: RestCheckValue };

export interface RestTableView {
  readonly metadataFileLocation: string;
  readonly uuid: string;
  readonly location: string;
  readonly formatVersion: number;
  readonly currentSchemaId: number;
  readonly schemas: readonly IcebergJsonSchema[];
  readonly spec: IcebergJsonPartitionSpec;
  readonly properties: Readonly<Record<string, string>>;
  /** Snapshot ids are 63-bit: strings throughout. */
  readonly currentSnapshotId: string | null;
  readonly snapshots: readonly {
    readonly snapshotId: string;
    readonly parentId: string | null;
    readonly sequenceNumber: number;
    readonly operation: string;
    readonly schemaId: number | null;
    readonly manifestListLocation: string;
    readonly summary: Readonly<Record<string, string>>;
  }[];
  readonly refs: Readonly<Record<string, { readonly snapshotId: string; readonly type: string }>>;
  /** The current snapshot's planned data files; the partition as its values in spec order. */
  readonly files: readonly { readonly path: string; readonly recordCount: number; readonly specId: number; readonly partition: readonly RestCheckValue[] }[];
  readonly records: readonly { readonly [column: string]: RestCheckValue }[];
}

/** What Iceberg's Java RESTCatalog client sees of `namespace.table` in the catalog at `uri`. */
export async function checkRestTable(uri: string, namespace: readonly string[], table: string, options: { readonly runDir: string; readonly timeoutMs?: number }): Promise<RestTableView> {
  const jars = await ensureJars(ICEBERG_REST_FIXTURE_JARS);
  const args = [uri, namespace.join('.'), table];
  const result = await runKafkaTool(REST_TABLE_CHECK, args, { kafkaToolsDir: jars, runDir: options.runDir, timeoutMs: options.timeoutMs ?? 180_000 });
  if (result.status !== 0) throw new Error(`RestTableCheck ${args.join(' ')} failed: ${describeRun(result)}`);
  return JSON.parse(result.stdout) as RestTableView;
}
