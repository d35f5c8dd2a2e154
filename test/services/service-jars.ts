/**
 * Jars of the Java services that Debian does not package (HDFS), gathered from Maven Central by
 * `maven/pom.xml` into a per-user cache, once: `~/.cache/tributary/jars/<name>` (or
 * `$TRIBUTARY_CACHE_DIR/jars/<name>`). A `.complete` marker is written last, so an interrupted
 * download is redone instead of trusted.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { javaEnvironment } from './java.js';

const run = promisify(execFile);

export const HADOOP_VERSION = '3.5.0';

export interface JarSet {
  /** Folder name under the cache, e.g. `hadoop-3.5.0`. */
  readonly name: string;
  /** Profile of maven/pom.xml that lists the set's dependencies. */
  readonly profile: string;
}

export const HADOOP_JARS: JarSet = { name: `hadoop-${HADOOP_VERSION}`, profile: 'hdfs' };

/**
 * Apache Iceberg's REST catalog test server (RESTCatalogServer of iceberg-open-api 1.10.0's test
 * fixtures) with what it runs on (Jetty 11, a JDBC catalog on sqlite, the Hadoop client), and the
 * Iceberg Java API's RESTCatalog client and generic reader that check its tables (iceberg-rest.ts).
 */
export const ICEBERG_REST_FIXTURE_JARS: JarSet = { name: 'iceberg-rest-fixture-1.10.0', profile: 'iceberg-rest-fixture' };

export const KAFKA_VERSION = '3.9.1';

/** Apache Kafka's Java clients and tools, for the compatibility tests. */
export const KAFKA_TOOLS_JARS: JarSet = { name: `kafka-tools-${KAFKA_VERSION}`, profile: 'kafka-tools' };

/** Apache Kafka's broker (core, Scala 2.13), for the side-by-side benchmark (bench:vs-kafka). */
export const KAFKA_SERVER_JARS: JarSet = { name: `kafka-server-${KAFKA_VERSION}`, profile: 'kafka-server' };

/**
 * Kafka Connect 3.9.1's runtime (ConnectDistributed, its REST server) with the FileStreamSource
 * connector and the JSON converter on the class path: the Connect compatibility test.
 */
export const KAFKA_CONNECT_JARS: JarSet = { name: `kafka-connect-${KAFKA_VERSION}`, profile: 'kafka-connect' };

/**
 * Kafka Streams 3.9.1 with RocksDB and the WordCountDemo of kafka-streams-examples (3.8.0, the
 * newest 3.x on Central, same demo code): the Streams compatibility test. About 80 MB, most of it
 * RocksDB's native libraries.
 */
export const KAFKA_STREAMS_JARS: JarSet = { name: `kafka-streams-${KAFKA_VERSION}`, profile: 'kafka-streams' };

export const KAFKA_4_VERSION = '4.1.1';

/** Apache Kafka 4.x's Java clients alone (with slf4j-simple), for the idempotent-producer test. */
export const KAFKA_CLIENTS_4_JARS: JarSet = { name: `kafka-clients-${KAFKA_4_VERSION}`, profile: 'kafka-clients-4' };

export const AVRO_VERSION = '1.12.2';
export const PARQUET_VERSION = '1.18.1';

/** Apache's readers of the loader's data files: avro-tools and parquet-avro (etl-java-readers test). */
export const ETL_READERS_JARS: JarSet = { name: `etl-readers-avro-${AVRO_VERSION}-parquet-${PARQUET_VERSION}`, profile: 'etl-readers' };

export const SPARK_VERSION = '4.0.1';

/** Apache Spark's SQL parser (spark-catalyst, Scala 2.13), which reads Hive DDL: checks what `etl ddl` prints (loader-hive test). */
export const SPARK_SQL_PARSER_JARS: JarSet = { name: `spark-catalyst-${SPARK_VERSION}`, profile: 'spark-sql-parser' };

export const ICEBERG_VERSION = '1.10.0';

/**
 * The Apache Iceberg Java API (core, data, parquet) with the Hadoop client (file:, hdfs://,
 * webhdfs://) and slf4j-simple: the checker of the loader's Iceberg tables (support/iceberg-java.ts).
 */
export const ICEBERG_READERS_JARS: JarSet = { name: `iceberg-readers-${ICEBERG_VERSION}-hadoop-${HADOOP_VERSION}`, profile: 'iceberg-readers' };

/**
 * Apache Spark 4.0 (spark-sql, local mode, with its Hadoop 3.4 client) and Iceberg's Spark 4.0
 * runtime: a real engine querying the loader's Iceberg tables through a Hadoop catalog
 * (support/spark-iceberg.ts). About 260 MB, 168 jars.
 */
export const SPARK_ICEBERG_JARS: JarSet = { name: `spark-${SPARK_VERSION}-iceberg-${ICEBERG_VERSION}`, profile: 'spark-iceberg' };

export function cacheDir(): string {
  return process.env['TRIBUTARY_CACHE_DIR'] ?? join(homedir(), '.cache', 'tributary');
}

export function jarDir(set: JarSet): string {
  return join(cacheDir(), 'jars', set.name);
}

/** Returns the folder holding the set's jars, downloading them first if they are not cached. */
export async function ensureJars(set: JarSet, log: (line: string) => void = () => {}): Promise<string> {
  const target = jarDir(set);
  if (existsSync(join(target, '.complete'))) return target;
  const pom = join(dirname(fileURLToPath(import.meta.url)), 'maven', 'pom.xml');
  const staging = `${target}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(dirname(target), { recursive: true });
  log(`fetching ${set.name} jars from Maven Central into ${target} (once; later runs use the cache)`);
  try {
    await run(
      'mvn',
      ['-q', '-B', '-f', pom, '-P', set.profile, 'dependency:copy-dependencies', `-DoutputDirectory=${staging}`],
      { env: javaEnvironment(), maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const output = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `could not fetch the ${set.name} jars with Maven (needs Maven and access to Maven Central): ` +
        `${output.message}\n${output.stdout ?? ''}${output.stderr ?? ''}`,
      { cause: error },
    );
  }
  writeFileSync(join(staging, '.complete'), `${new Date().toISOString()}\n`);
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  return target;
}
