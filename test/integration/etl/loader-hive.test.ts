/**
 * Query engines find the loader's data (issue #19): a `layout: hive` load with an audit section,
 * run as `tributary etl` processes against a real broker process, a real registry server and each
 * warehouse (a local folder, and real HDFS through WebHDFS), for a topic whose name starts with `_`.
 *
 * - The data lands in `<topic>/dt=YYYY-MM-DD/hr=HH/`, under names Hadoop does not hide (`part-_…`),
 *   and Apache's own readers (avro-tools 1.12.2, parquet-avro 1.18.1) read every file back as the
 *   records we decode from it.
 * - `_SUCCESS` (empty) stands in exactly the hour folders that hold `_COMPLETE`.
 * - `tributary etl ddl` names only the hours of published commits: an hour a crashed run renamed
 *   into place but did not publish is not among its partitions until the next run publishes it.
 *   Apache Spark's SQL parser (spark-catalyst 4.0.1, CatalystSqlParser) parses every statement, and
 *   what it read back (table, partitions, locations, the Avro schema literal) is what we meant.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditedProducer } from '../../../src/audit/audited-producer.js';
import { ORIGIN_HEADER } from '../../../src/audit/origin.js';
import { decodeDataFile, parseDataFileSchema, type DataFileFormat } from '../../../src/etl/files/data-files.js';
import { hourKey, hourOf, isHiddenName, topicDir, topicHourDir } from '../../../src/etl/layout.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { parseWarehouseUrl } from '../../../src/etl/warehouse/open-warehouse.js';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { ensureJars, ETL_READERS_JARS, SPARK_SQL_PARSER_JARS } from '../../services/service-jars.js';
import { describeRun, runKafkaTool, type JavaToolResult } from '../../support/java.js';
import { services } from '../services.js';
import {
  FIRST_HOUR,
  HOUR,
  PAGE_VIEW_V1,
  createTopic,
  dataFilesOf,
  makeWarehouse,
  manifestsPerHour,
  messagesOf,
  publishedManifests,
  readWarehouse,
  registerPageViews,
  removeHdfsBase,
  runEtl,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const SLOW = 600_000;
const HERE = dirname(fileURLToPath(import.meta.url));
const PARQUET_DUMP = join(HERE, '..', '..', 'compat', 'etl-java-readers', 'ParquetAvroDump.java');
const DDL_PARSER = join(HERE, 'hive-ddl-parser', 'ParseHiveDdl.java');

let env: LoaderEnvironment;
let readersDir: string;
let sparkDir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
  const log = (line: string): void => void process.stderr.write(`[loader-hive] ${line}\n`);
  readersDir = await ensureJars(ETL_READERS_JARS, log);
  sparkDir = await ensureJars(SPARK_SQL_PARSER_JARS, log);
}, SLOW);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await env?.close();
}, 60_000);

async function java(jars: string, source: string, args: readonly string[], input?: string): Promise<JavaToolResult> {
  const result = await runKafkaTool(source, args, { kafkaToolsDir: jars, runDir: services().runDir, timeoutMs: 300_000, ...(input === undefined ? {} : { input }) });
  expect(result.status, describeRun(result)).toBe(0);
  return result;
}

/** Page views at `times` (event time = record timestamp = header.time), counted at the PRODUCER tier. */
async function produceAudited(topic: string, times: readonly number[], partitions: number): Promise<void> {
  const serializer = new AvroSerializer(env.registryClient);
  const producer = await AuditedProducer.connect({ bootstrap: [env.broker.bootstrap], registry: env.registryClient, acks: -1, audit: { publishIntervalMs: 0 } });
  try {
    const records = [];
    for (const [index, time] of times.entries()) {
      const server = `web-${index % 3}`;
      const value = { header: { eventId: randomUUID(), time, server, service: 'frontend' }, memberId: index, pageKey: `page-${index % 7}`, url: `/p/${randomBytes(3).toString('hex')}`, referrer: null, userAgent: null };
      records.push({ value: await serializer.encode(`${topic}-value`, value, PAGE_VIEW_V1), timestamp: time, partition: index % partitions, headers: [{ key: ORIGIN_HEADER, value: Buffer.from(server) }] });
    }
    await producer.send(topic, records);
    await producer.flush();
  } finally {
    await producer.close();
  }
}

/** The hour folders of the topic holding `name`, as paths relative to the warehouse. */
async function foldersWith(warehouse: TestWarehouse, topic: string, name: string): Promise<string[]> {
  const folders: string[] = [];
  for (const day of await warehouse.warehouse.list(topicDir(warehouse.root, topic))) {
    for (const hour of await warehouse.warehouse.list(day.path)) {
      if ((await warehouse.warehouse.stat(`${hour.path}/${name}`)) !== undefined) folders.push(hour.path);
    }
  }
  return folders.sort();
}

/** Every data file read by Apache's reader for its format must be the records we decode from it. */
async function expectJavaReadsEveryFile(warehouse: TestWarehouse, topic: string, format: DataFileFormat, folder: string): Promise<number> {
  let records = 0;
  for (const { path } of await dataFilesOf(warehouse.warehouse, warehouse.root, topic, 'hive')) {
    const bytes = await warehouse.warehouse.open(path);
    const local = join(folder, path.slice(path.lastIndexOf('/') + 1));
    await writeFile(local, bytes);
    const decoded = await decodeDataFile(bytes, format);
    const type = parseDataFileSchema(decoded.schemaJson);
    const expected = decoded.records.map((record) => JSON.parse(type.toString(record)) as unknown);
    const lines = format === 'avro' ? (await java(readersDir, 'org.apache.avro.tool.Main', ['tojson', local])).stdout : (await java(readersDir, PARQUET_DUMP, [local])).stdout;
    const read = lines
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as unknown);
    expect(format === 'avro' ? read : read.slice(1), path).toEqual(expected); // ParquetAvroDump prints the footer first
    records += expected.length;
  }
  return records;
}

let names = 0;
describe.each<[WarehouseKind, DataFileFormat]>([
  ['local folder', 'parquet'],
  ['HDFS', 'avro'],
])('a layout: hive load into %s as %s', (kind, format) => {
  it(
    'writes dt=/hr= folders of visible files that Apache readers read back, _SUCCESS exactly beside _COMPLETE, and DDL of the published hours that Spark parses',
    async () => {
      names += 1;
      const name = `hive-${kind === 'HDFS' ? 'hdfs' : 'local'}-${names}`;
      const topic = `_t-${name}`; // Kafka allows it; Hadoop would hide files named after it
      const warehouse = makeWarehouse(kind, env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 2);
      await registerPageViews(env.registryClient, topic);
      const times = Array.from({ length: 300 }, (_, index) => FIRST_HOUR + ((index * 2_654_435) % (3 * HOUR)));
      await produceAudited(topic, times, 2);
      const file = await writeLoadFile(env, { name, topic, warehouse, format, codec: format === 'avro' ? 'deflate' : 'snappy' });
      await appendFile(file, ['layout: hive', 'audit: { topic: _audit }', 'hive: { table: page_views, database: default }', ''].join('\n'));

      const first = await runEtl(['run', '--load', file]);
      expect(first.status, messagesOf(first)).toBe(0);

      // Data in partition folders, named visibly; nothing in the hourly layout.
      const hours = [0, 1, 2].map((offset) => hourOf(FIRST_HOUR) + offset);
      const files = await dataFilesOf(warehouse.warehouse, warehouse.root, topic, 'hive');
      expect([...new Set(files.map((found) => found.hour))].sort()).toEqual(hours);
      for (const found of files) {
        expect(found.path.startsWith(`${topicHourDir(warehouse.root, topic, found.hour, 'hive')}/part-${topic}+`), found.path).toBe(true);
        expect(found.path.endsWith(`.${format}`)).toBe(true);
      }
      expect(await warehouse.warehouse.stat(`${topicDir(warehouse.root, topic)}/hourly`)).toBeUndefined();
      expect((await readWarehouse(warehouse.warehouse, warehouse.root, topic, 'hive', format)).size).toBe(300);
      const [manifest] = await publishedManifests(warehouse.warehouse, warehouse.root, name);
      expect(manifest?.output.layout).toBe('hive');

      // Apache's readers see exactly our records in every file.
      const javaFolder = join(env.folder, `java-${name}`);
      await mkdir(javaFolder, { recursive: true });
      expect(await expectJavaReadsEveryFile(warehouse, topic, format, javaFolder)).toBe(300);

      // The three hours are closed (read to the high watermark days after them) and match the audit.
      const completed = await foldersWith(warehouse, topic, '_COMPLETE');
      expect(completed).toEqual(hours.map((hour) => topicHourDir(warehouse.root, topic, hour, 'hive')));
      expect(await foldersWith(warehouse, topic, '_SUCCESS')).toEqual(completed);
      for (const folder of completed) {
        expect(await warehouse.warehouse.open(`${folder}/_SUCCESS`)).toEqual(Buffer.alloc(0));
        expect((await warehouse.warehouse.list(folder)).filter((entry) => isHiddenName(entry.name)).map((entry) => entry.name)).toEqual(['_COMPLETE', '_SUCCESS']);
      }

      // A run killed before publishing has renamed a late hour's file into place: committed it is not.
      const lateHour = hourOf(FIRST_HOUR) + 5;
      await produceAudited(topic, [lateHour * HOUR + 1_000, lateHour * HOUR + 2_000], 2);
      const crashed = await runEtl(['run', '--load', file], { TRIBUTARY_ETL_FAILPOINT: 'before-publish' });
      expect(crashed.signal, messagesOf(crashed)).toBe('SIGKILL');
      expect((await readCommitLog(warehouse.warehouse, warehouse.root, name)).pending).toEqual([2]);
      expect((await warehouse.warehouse.list(topicHourDir(warehouse.root, topic, lateHour, 'hive'))).length).toBeGreaterThan(0);

      const ddl = await runEtl(['ddl', '--load', file]);
      expect(ddl.status, messagesOf(ddl)).toBe(0);
      const committedHours = Object.keys(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic));
      expect(committedHours).toEqual(hours.map(hourKey));
      const location = (relative: string): string => {
        const parsed = parseWarehouseUrl(warehouse.url);
        return parsed.kind === 'local' ? `file://${parsed.root}/${relative}` : `${parsed.root}/${relative}`;
      };
      expect(ddl.stdout).toContain(`CREATE EXTERNAL TABLE IF NOT EXISTS \`default\`.\`page_views\` (`);
      expect(ddl.stdout).toContain(`STORED AS ${format.toUpperCase()}`);
      expect(ddl.stdout.match(/^ALTER TABLE `default`\.`page_views` ADD IF NOT EXISTS PARTITION/gm)).toHaveLength(3);
      expect(ddl.stdout).not.toContain(`hr=${hourKey(lateHour).slice(11)}`);

      // Spark's SQL parser reads every statement as we meant it.
      const parsed = (await java(sparkDir, DDL_PARSER, [], ddl.stdout)).stdout.split('\n').filter((line) => line !== '');
      expect(parsed.map((line) => line.slice(0, line.indexOf('\t')))).toEqual(['CreateTable', 'AddPartitions', 'AddPartitions', 'AddPartitions']);
      const create = parsed[0] ?? '';
      expect(create).toContain('UnresolvedIdentifier [default, page_views]');
      expect(create).toContain('[identity(dt), identity(hr)]');
      expect(create).toContain(`Some(${location(topicDir(warehouse.root, topic))})`);
      expect(create).toContain(`SerdeInfo(Some(${format.toUpperCase()})`);
      expect(create).toContain('columndefinition(header, StructField(eventId,StringType,true), StructField(time,TimestampType,true)');
      if (format === 'avro') {
        // The literal as Spark unescaped it is the schema the data files hold (docs with quotes and all).
        const literal = /\(avro\.schema\.literal,(.*?)\), None, optionlist\(\)/.exec(create)?.[1];
        const inFiles = (await decodeDataFile(await warehouse.warehouse.open(files[0]!.path), 'avro')).schemaJson;
        expect(JSON.stringify(inFiles)).toContain("paper's");
        expect(JSON.parse(literal ?? 'null')).toEqual(inFiles);
      }
      hours.forEach((hour, index) => {
        const key = hourKey(hour);
        expect(parsed[index + 1]).toContain(`unresolvedpartitionspec((dt,${key.slice(0, 10)}), (hr,${key.slice(11)}), Some(${location(topicHourDir(warehouse.root, topic, hour, 'hive'))}))`);
      });

      // Published by the next run, the late hour is a partition too.
      const next = await runEtl(['run', '--load', file]);
      expect(next.status, messagesOf(next)).toBe(0);
      const after = await runEtl(['ddl', '--load', file]);
      expect(after.stdout.match(/^ALTER TABLE/gm)).toHaveLength(4);
      expect(after.stdout).toContain(`PARTITION (\`dt\`='${hourKey(lateHour).slice(0, 10)}', \`hr\`='${hourKey(lateHour).slice(11)}')`);

      // And the layout cannot change now.
      await writeFile(file, (await readFile(file, 'utf8')).replace('layout: hive', 'layout: hourly'));
      const refused = await runEtl(['run', '--load', file]);
      expect(refused.status).not.toBe(0);
      expect(messagesOf(refused)).toContain('cannot change once it has commits');
    },
    SLOW,
  );
});
