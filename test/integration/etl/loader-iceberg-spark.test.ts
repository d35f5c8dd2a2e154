/**
 * A real engine on a `format: iceberg` table (issue #33): Apache Spark 4.0.1 in local mode with
 * Iceberg's Spark runtime 1.10.0, both from Maven Central (test/support/spark-iceberg.ts), reads
 * the table two real `tributary etl run`s wrote from a real broker, through the Hadoop catalog
 * whose settings `tributary etl ddl` prints (parsed from its output, not restated here).
 *
 * Spark must count every record produced (`SELECT count(*)`, and the path read ddl also prints;
 * Iceberg answers a bare count from the manifests' record counts, so the rows are compared too),
 * return every row with its offset, event id and event time; filter one hour to exactly that
 * hour's records while its Iceberg scan plans only that hour's files; list the two append
 * snapshots (ids, parents, times and our summary keys as the table metadata holds them); and
 * travel back to the first snapshot with `VERSION AS OF` and `TIMESTAMP AS OF`, finding the
 * first run's records only. The table's primitive columns, read by Iceberg's row reader and by
 * Spark's own vectorized Parquet reader (the files are Parquet data pages v2), are the records
 * produced, and so are they through Iceberg's vectorized reader: the files hold timestamps as
 * MICROS, the spec's unit for timestamptz (Iceberg 1.10's vectorized reader fails on MILLIS with a
 * ClassCastException in VectorizedArrowReader, fixed only in 1.11.0 by apache/iceberg#14499).
 */
import { fileURLToPath } from 'node:url';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTable } from '../../../src/etl/iceberg/table-commit.js';
import { mainAncestry } from '../../../src/etl/iceberg/table-metadata.js';
import type { WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import { openRun } from '../../services/run-dir.js';
import { ICEBERG_VERSION, SPARK_VERSION } from '../../services/service-jars.js';
import { querySparkIceberg, sparkRegistrationOf, type SparkPosition, type SparkPrimitiveRow } from '../../support/spark-iceberg.js';
import { services } from '../services.js';
import {
  createTopic,
  HOUR,
  makeWarehouse,
  messagesOf,
  producedPerHour,
  producePageViews,
  registerPageViews,
  runEtl,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
} from './loader-support.js';

const SLOW = 600_000;
const PARTITIONS = 3;

let env: LoaderEnvironment;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  await env?.close();
}, 60_000);

interface PageView {
  readonly header: { readonly eventId: string; readonly time: number };
  readonly memberId: number | null;
  readonly pageKey: string;
  readonly url: string;
  readonly referrer: string | null;
  readonly userAgent: string | null;
  readonly experiment?: string | null;
}

const viewOf = (record: ProducedRecord): PageView => record.value as PageView;
const hourOf = (record: ProducedRecord): number => Math.floor(viewOf(record).header.time / HOUR);

/** A produced record as Spark's position query returns it. */
const positionOf = (record: ProducedRecord): SparkPosition => [record.partition, record.offset, viewOf(record).header.eventId, viewOf(record).header.time * 1000];

/** A produced record's top-level primitive columns as SparkIcebergQuery prints them. */
function primitiveRowOf(record: ProducedRecord): SparkPrimitiveRow {
  const view = viewOf(record);
  return {
    pageKey: view.pageKey,
    url: view.url,
    memberId: view.memberId,
    userAgent: view.userAgent,
    referrer: view.referrer,
    experiment: view.experiment ?? null,
    eventMicros: view.header.time * 1000,
  };
}

const byPosition = (a: SparkPosition, b: SparkPosition): number => a[0] - b[0] || a[1] - b[1];
const byUrl = (a: SparkPrimitiveRow, b: SparkPrimitiveRow): number => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0);
const positions = (records: readonly ProducedRecord[]): SparkPosition[] => records.map(positionOf).sort(byPosition);

/** Every data file under the table's `data/`, as the URIs its metadata names them by. */
async function dataFileUris(warehouse: WarehouseFileSystem, dir: string): Promise<string[]> {
  const uris: string[] = [];
  for (const entry of await warehouse.list(dir)) {
    if (entry.type === 'directory') uris.push(...(await dataFileUris(warehouse, entry.path)));
    else uris.push(warehouse.describe(entry.path));
  }
  return uris;
}

/** The Parquet unit of `_event_time` in each file (`MILLIS`, `MICROS`), from its footer. */
async function eventTimeUnits(files: readonly string[]): Promise<Set<string>> {
  const units = new Set<string>();
  for (const file of files) {
    const metadata = await parquetMetadataAsync(await asyncBufferFromFile(fileURLToPath(file)));
    const element = metadata.schema.find((candidate) => candidate.name === '_event_time');
    const logical = element?.logical_type;
    units.add(logical?.type === 'TIMESTAMP' ? logical.unit : `not a timestamp: ${JSON.stringify(logical)}`);
  }
  return units;
}

describe(`format: iceberg read by Spark ${SPARK_VERSION} with Iceberg ${ICEBERG_VERSION}'s runtime`, () => {
  it(
    "counts every record, filters an hour to its records and files, and travels back to the first snapshot, through the Hadoop catalog etl ddl prints; Iceberg's row reader and Spark's vectorized Parquet reader read every column value",
    async () => {
      const name = 'iceberg-spark';
      const topic = `t-${name}`;
      const warehouse: TestWarehouse = makeWarehouse('local folder', env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, PARTITIONS);
      await registerPageViews(env.registryClient, topic);
      const loadFile = await writeLoadFile(env, { name, topic, warehouse, format: 'iceberg', codec: 'zstd' });

      // Two runs, two append snapshots.
      const first = await producePageViews(env, topic, { count: 240, partitions: PARTITIONS, hours: 4 });
      const firstRun = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(firstRun.status, messagesOf(firstRun)).toBe(0);
      const second = await producePageViews(env, topic, { count: 90, partitions: PARTITIONS, hours: 4, firstId: first.length });
      const secondRun = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(secondRun.status, messagesOf(secondRun)).toBe(0);
      const produced = [...first, ...second];

      const ddl = await runEtl(['ddl', '--load', loadFile]);
      expect(ddl.status, messagesOf(ddl)).toBe(0);
      const printed = sparkRegistrationOf(ddl.stdout, topic);
      const dir = `${warehouse.root}/${topic}`;
      expect(printed.location).toBe(warehouse.warehouse.describe(dir));
      const registration = printed;

      const hours = [...new Set(produced.map(hourOf))].sort((a, b) => a - b);
      const oneHour = hours[1]!;
      const { result } = await querySparkIceberg({ run: openRun(services().runDir), registration, hour: { fromMicros: oneHour * HOUR * 1000, toMicros: (oneHour + 1) * HOUR * 1000 } });
      expect([result.sparkVersion, result.icebergVersion]).toEqual([SPARK_VERSION, ICEBERG_VERSION]);

      // count(*), by catalog name and by path; every row with its offset, event id and event time.
      expect(result.count).toBe(produced.length);
      expect(result.pathCount).toBe(produced.length);
      expect([...result.rows].sort(byPosition)).toEqual(positions(produced));

      // The hour: exactly its records, and only its files planned (the others pruned by partition).
      const files = await dataFileUris(warehouse.warehouse, `${dir}/data`);
      const hourLabel = new Date(oneHour * HOUR).toISOString().slice(0, 13).replace('T', '-');
      const hourFiles = files.filter((file) => file.includes(`/data/_event_time_hour=${hourLabel}/`));
      expect(hourFiles.length).toBeGreaterThan(0);
      const inHour = produced.filter((record) => hourOf(record) === oneHour);
      expect(result.hour.count).toBe(inHour.length);
      expect([...result.hour.rows].sort(byPosition)).toEqual(positions(inHour));
      expect([result.hour.scan['resultDataFiles'], result.hour.scan['skippedDataFiles']]).toEqual([hourFiles.length, files.length - hourFiles.length]);
      const perHour = producedPerHour(produced);
      expect(result.partitions.map((partition) => [new Date(partition.hour * HOUR).toISOString().slice(0, 13), partition.records])).toEqual(Object.entries(perHour));
      expect(result.partitions.reduce((sum, partition) => sum + partition.files, 0)).toBe(files.length);

      // Snapshots as the table metadata holds them.
      const loaded = await loadTable({ warehouse: warehouse.warehouse, dir, location: printed.location });
      const history = mainAncestry(loaded!.metadata).reverse();
      expect(result.snapshots).toEqual(
        history.map((snapshot) => ({
          snapshotId: String(snapshot['snapshot-id']),
          parentId: snapshot['parent-snapshot-id'] === undefined ? null : String(snapshot['parent-snapshot-id']),
          committedAtMillis: snapshot['timestamp-ms'],
          operation: snapshot.summary['operation'],
          commitId: snapshot.summary['tributary.commit-id'],
          addedRecords: snapshot.summary['added-records'],
        })),
      );
      expect(result.snapshots.map((snapshot) => [snapshot.commitId, snapshot.addedRecords])).toEqual([
        [`${name}/1`, String(first.length)],
        [`${name}/2`, String(second.length)],
      ]);
      expect(result.main).toBe(String(history[1]!['snapshot-id']));

      // Time travel to main's parent: the first run's records only.
      expect(result.versionAsOf?.snapshotId).toBe(String(history[0]!['snapshot-id']));
      expect(result.versionAsOf?.count).toBe(first.length);
      expect([...(result.versionAsOf?.rows ?? [])].sort(byPosition)).toEqual(positions(first));
      expect(result.timestampAsOf).toEqual({ millis: history[0]!['timestamp-ms'], count: first.length });

      // The same columns through each Parquet reader.
      const expectedRows = produced.map(primitiveRowOf).sort(byUrl);
      const { icebergRows, icebergVectorized, sparkParquet, sparkParquetFiles } = result.readers;
      expect([...sparkParquetFiles].sort()).toEqual([...files].sort());
      expect(icebergRows.error, icebergRows.plan).toBeUndefined();
      expect(icebergRows.columnar).toBe(false);
      expect([...(icebergRows.rows ?? [])].sort(byUrl)).toEqual(expectedRows);
      expect(sparkParquet.error, sparkParquet.plan).toBeUndefined();
      expect(sparkParquet.columnar, sparkParquet.plan).toBe(true);
      expect([...(sparkParquet.rows ?? [])].sort(byUrl)).toEqual(expectedRows);
      expect(icebergVectorized.columnar, icebergVectorized.plan).toBe(true);
      const units = await eventTimeUnits(files);
      expect([...units]).toEqual(['MICROS']);
      expect(icebergVectorized.error).toBeUndefined();
      expect([...(icebergVectorized.rows ?? [])].sort(byUrl)).toEqual(expectedRows);
    },
    SLOW,
  );
});
