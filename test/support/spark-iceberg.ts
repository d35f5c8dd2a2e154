/**
 * Apache Spark 4.0 with Iceberg's Spark runtime (1.10, from Maven Central) as a reader of the
 * loader's Iceberg tables: runs iceberg/SparkIcebergQuery.java on the spark-iceberg jars, in local
 * mode on a loopback driver without UI, with the Hadoop-catalog settings `tributary etl ddl`
 * printed, and returns what Spark answered (counts, rows, the hour filter's scan metrics, the
 * snapshots, time travel, and the same columns through three Parquet readers) as typed JSON.
 *
 * One call starts one JVM: Spark's start-up and the single-file compile take most of it (tens of
 * seconds on a busy 2-core machine). The jars (about 260 MB) are fetched from Maven Central on
 * first use.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { javaCommand, javaEnvironment } from '../services/java.js';
import type { ServiceRun } from '../services/run-dir.js';
import { ensureJars, SPARK_ICEBERG_JARS } from '../services/service-jars.js';
import { startLineProcess } from './line-process.js';

export const SPARK_ICEBERG_QUERY = join(dirname(fileURLToPath(import.meta.url)), 'iceberg', 'SparkIcebergQuery.java');

/**
 * What Spark's launcher adds on Java 17 (`JavaModuleOptions` in spark-launcher): Spark and its
 * Netty and Kryo reach into these JDK packages.
 */
export const SPARK_JAVA_OPTIONS: readonly string[] = [
  '-XX:+IgnoreUnrecognizedVMOptions',
  '--add-opens=java.base/java.lang=ALL-UNNAMED',
  '--add-opens=java.base/java.lang.invoke=ALL-UNNAMED',
  '--add-opens=java.base/java.lang.reflect=ALL-UNNAMED',
  '--add-opens=java.base/java.io=ALL-UNNAMED',
  '--add-opens=java.base/java.net=ALL-UNNAMED',
  '--add-opens=java.base/java.nio=ALL-UNNAMED',
  '--add-opens=java.base/java.util=ALL-UNNAMED',
  '--add-opens=java.base/java.util.concurrent=ALL-UNNAMED',
  '--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED',
  '--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED',
  '--add-opens=java.base/sun.nio.ch=ALL-UNNAMED',
  '--add-opens=java.base/sun.nio.cs=ALL-UNNAMED',
  '--add-opens=java.base/sun.security.action=ALL-UNNAMED',
  '--add-opens=java.base/sun.util.calendar=ALL-UNNAMED',
  '-Djdk.reflect.useDirectMethodHandle=false',
  '-Dio.netty.tryReflectionSetAccessible=true',
];

/** Spark logs through log4j 2: WARN and up to stderr, without the native-library notice. */
const SPARK_LOG4J2 = [
  'rootLogger.level = warn',
  'rootLogger.appenderRef.stderr.ref = stderr',
  'appender.stderr.type = Console',
  'appender.stderr.name = stderr',
  'appender.stderr.target = SYSTEM_ERR',
  'appender.stderr.layout.type = PatternLayout',
  'appender.stderr.layout.pattern = %d{HH:mm:ss.SSS} %p %c: %m%n',
  'logger.native.name = org.apache.hadoop.util.NativeCodeLoader',
  'logger.native.level = error',
  '',
].join('\n');

/** A row position as Spark read it: `[_kafka.partition, _kafka.offset, header.eventId, _event_time in micros]`. */
export type SparkPosition = readonly [number, number, string, number];

/** The table's top-level primitive columns of one row (`eventMicros` is `_event_time` in micros). */
export interface SparkPrimitiveRow {
  readonly pageKey: string;
  readonly url: string;
  readonly memberId: number | null;
  readonly userAgent: string | null;
  readonly referrer: string | null;
  readonly experiment: string | null;
  readonly eventMicros: number;
}

/** One reader's read of the primitive columns: its rows, or the error it failed with. */
export interface SparkRead {
  /** Whether the executed plan read columnar batches (has a ColumnarToRow node). */
  readonly columnar: boolean;
  readonly plan: string;
  readonly rows?: readonly SparkPrimitiveRow[];
  /** The innermost cause's class and message, when the read failed. */
  readonly error?: string;
}

export interface SparkSnapshot {
  /** 63-bit, so a string. */
  readonly snapshotId: string;
  readonly parentId: string | null;
  readonly committedAtMillis: number;
  readonly operation: string;
  readonly commitId: string | null;
  readonly addedRecords: string | null;
}

export interface SparkIcebergResult {
  readonly sparkVersion: string;
  readonly icebergVersion: string;
  readonly count: number;
  readonly pathCount: number;
  readonly rows: readonly SparkPosition[];
  readonly hour: {
    readonly count: number;
    readonly rows: readonly SparkPosition[];
    /** The Iceberg scan's metrics (resultDataFiles, skippedDataFiles, scannedDataManifests, …). */
    readonly scan: Readonly<Record<string, number>>;
  };
  readonly partitions: readonly { readonly hour: number; readonly records: number; readonly files: number }[];
  readonly snapshots: readonly SparkSnapshot[];
  readonly main: string;
  /** Absent when main's snapshot has no parent. */
  readonly versionAsOf?: { readonly snapshotId: string; readonly count: number; readonly rows: readonly SparkPosition[] };
  readonly timestampAsOf?: { readonly millis: number; readonly count: number };
  readonly readers: {
    readonly icebergVectorized: SparkRead;
    readonly icebergRows: SparkRead;
    /** The data files of main's snapshot (the `files` metadata table), which Spark's own reader read. */
    readonly sparkParquetFiles: readonly string[];
    readonly sparkParquet: SparkRead;
  };
}

/** The Spark part of `etl ddl`'s output for one table: its `--conf` settings, the table's name and its location. */
export interface SparkRegistration {
  readonly conf: Readonly<Record<string, string>>;
  readonly table: string;
  readonly location: string;
}

/**
 * Reads what `etl ddl` prints for Spark: the `--   --conf key=value` lines and the
 * `SELECT count(*) FROM <name>;   -- or spark.read.format("iceberg").load("<location>")` line of
 * `topic`'s table. Throws when either is missing, so a change of the printed form fails loudly.
 */
export function sparkRegistrationOf(ddl: string, topic: string): SparkRegistration {
  const conf: Record<string, string> = {};
  for (const match of ddl.matchAll(/^-- {3}--conf ([^=\s]+)=(\S+)$/gm)) conf[match[1]!] = match[2]!;
  if (Object.keys(conf).length === 0) throw new Error(`etl ddl printed no Spark --conf lines:\n${ddl}`);
  for (const match of ddl.matchAll(/^SELECT count\(\*\) FROM (\S+);\s+-- or spark\.read\.format\("iceberg"\)\.load\((".*")\)$/gm)) {
    const location = JSON.parse(match[2]!) as string;
    if (location.endsWith(`/${topic}`)) return { conf, table: match[1]!, location };
  }
  throw new Error(`etl ddl printed no Spark table for ${topic}:\n${ddl}`);
}

export interface SparkQueryOptions {
  readonly run: ServiceRun;
  readonly registration: SparkRegistration;
  /** The hour filtered on: `fromMicros <= _event_time < toMicros`. */
  readonly hour: { readonly fromMicros: number; readonly toMicros: number };
  readonly timeoutMs?: number;
  readonly log?: (line: string) => void;
}

let queries = 0;

/** Runs SparkIcebergQuery.java against the registered table; throws with Spark's stderr if it fails. */
export async function querySparkIceberg(options: SparkQueryOptions): Promise<{ readonly result: SparkIcebergResult; readonly seconds: number }> {
  const jars = await ensureJars(SPARK_ICEBERG_JARS, options.log);
  queries += 1;
  const name = `spark-iceberg-${process.pid}-${queries}`;
  const log4j2 = join(options.run.dir, 'spark-log4j2.properties');
  writeFileSync(log4j2, SPARK_LOG4J2);
  const conf = {
    ...options.registration.conf,
    // Scratch space inside the run folder: shuffle files and the (unused) session warehouse.
    'spark.local.dir': join(options.run.dir, `${name}-local`),
    'spark.sql.warehouse.dir': join(options.run.dir, `${name}-warehouse`),
  };
  const args = [
    '-Xmx1g',
    ...SPARK_JAVA_OPTIONS,
    `-Dlog4j2.configurationFile=${log4j2}`,
    '-cp',
    `${jars}/*`,
    SPARK_ICEBERG_QUERY,
    ...Object.entries(conf).flatMap(([key, value]) => ['--conf', `${key}=${value}`]),
    '--table',
    options.registration.table,
    '--location',
    options.registration.location,
    '--hour-from',
    String(options.hour.fromMicros),
    '--hour-to',
    String(options.hour.toMicros),
  ];
  const began = Date.now();
  const child = startLineProcess({ run: options.run, name, command: javaCommand(), args, env: { ...javaEnvironment(), SPARK_LOCAL_IP: '127.0.0.1' } });
  const timeoutMs = options.timeoutMs ?? 300_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const how = await Promise.race([child.exited, timedOut]);
  clearTimeout(timer);
  if (how === 'timeout') {
    await child.kill();
    throw new Error(`SparkIcebergQuery did not finish in ${timeoutMs} ms; stderr:\n${child.stderr()}`);
  }
  const seconds = (Date.now() - began) / 1000;
  if (how !== 0) throw new Error(`SparkIcebergQuery exited ${String(how)}; stderr:\n${child.stderr()}\nstdout:\n${child.lines.join('\n').slice(0, 2000)}`);
  const document = child.lines.find((line) => line.startsWith('{'));
  if (document === undefined) throw new Error(`SparkIcebergQuery printed no JSON; stdout:\n${child.lines.join('\n')}\nstderr:\n${child.stderr()}`);
  // Snapshot ids are strings and every other number is small: plain JSON.parse loses nothing.
  return { result: JSON.parse(document) as SparkIcebergResult, seconds };
}
