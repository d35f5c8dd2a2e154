/**
 * The Hive DDL of a loaded topic (`tributary etl ddl`): one external table over the topic folder,
 * partitioned by hour, and one ADD PARTITION per committed hour, so Hive, Spark SQL, Trino or
 * Impala read exactly what the loader committed. Pure text from a definition; hive-tables.ts
 * gathers the definitions from the load file, the warehouse and the registry.
 *
 *   CREATE EXTERNAL TABLE IF NOT EXISTS `db`.`table` (<columns>)
 *   PARTITIONED BY (`dt` STRING, `hr` STRING)             -- layout hive
 *                  (`year` …, `month` …, `day` …, `hour` STRING)   -- layout hourly
 *   STORED AS AVRO | PARQUET
 *   LOCATION '<topic folder>'
 *   TBLPROPERTIES ('avro.schema.literal'='<schema JSON>')  -- Avro only
 *   ALTER TABLE `db`.`table` ADD IF NOT EXISTS PARTITION (`dt`='2026-11-29', `hr`='15') LOCATION '<hour folder>';
 *
 * The hourly layout's folders (hourly/YYYY/MM/DD/HH) are not `column=value` folders, so engines
 * cannot discover them (MSCK REPAIR, Spark's partition discovery): they are queryable through
 * the explicit partition LOCATIONs printed here, which is why every partition names its folder.
 * Avro tables get the columns too (Hive's AvroSerDe takes them from the schema literal; Spark and
 * Trino read the column list). Statements end with `;` on their line; string literals escape `\`,
 * `'` and `;` (`\;`, which Hive's CLI does not split at and Hive and Spark read as `;`).
 */
import type { Type } from 'avsc';
import type { DataFileFormat } from '../files/data-files.js';
import { schemaJsonOf } from '../files/schema-types.js';
import { etlError } from '../errors.js';
import { hourPartitionValues, type HourLayout } from '../layout.js';
import { hiveColumns, quoteIdentifier } from './hive-types.js';

export interface HivePartition {
  /** Hours since the epoch (UTC). */
  readonly hour: number;
  readonly location: string;
}

export interface HiveTableDefinition {
  readonly database: string;
  readonly table: string;
  readonly topic: string;
  readonly format: DataFileFormat;
  readonly layout: HourLayout;
  /** The records' type as the data files hold them (reader schema, or the transformation's output). */
  readonly schema: Type;
  /** The topic folder. */
  readonly location: string;
  /** The committed hours, each with its folder. */
  readonly partitions: readonly HivePartition[];
}

/** A Hive/Spark SQL string literal. */
export function hiveString(text: string): string {
  const escaped = text.replace(/[\\';\n\r\t]/g, (character) => {
    switch (character) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\${character}`;
    }
  });
  return `'${escaped}'`;
}

/** The partition columns of a layout, in folder order. */
export function partitionColumns(layout: HourLayout): string[] {
  return hourPartitionValues(0, layout).map(([column]) => column);
}

/** The CREATE TABLE and the ADD PARTITIONs of one table, each statement ending in `;`. */
export function hiveTableDdl(definition: HiveTableDefinition): string {
  const what = `the Hive table of topic ${definition.topic}`;
  const columns = hiveColumns(definition.schema, what);
  const partitions = partitionColumns(definition.layout);
  const clash = columns.find((column) => partitions.includes(column.name.toLowerCase()));
  if (clash !== undefined) {
    throw etlError(
      'ETL_SCHEMA_PROBLEM',
      `${what}: the records have a field ${clash.name}, which is also a partition column of the ${definition.layout} layout (${partitions.join(', ')}); Hive refuses a column twice. ` +
        'Rename the field with a transform in the load file (transform.fields), or use the other layout for a new load',
      { details: { topic: definition.topic, field: clash.name, layout: definition.layout } },
    );
  }
  const table = `${quoteIdentifier(definition.database)}.${quoteIdentifier(definition.table)}`;
  const lines = [
    `-- topic ${definition.topic}: ${definition.partitions.length} committed hour${definition.partitions.length === 1 ? '' : 's'}`,
    `CREATE EXTERNAL TABLE IF NOT EXISTS ${table} (`,
    ...columns.map((column, index) => `  ${quoteIdentifier(column.name)} ${column.type}${index < columns.length - 1 ? ',' : ''}`),
    ')',
    `PARTITIONED BY (${partitions.map((column) => `${quoteIdentifier(column)} STRING`).join(', ')})`,
    `STORED AS ${definition.format === 'avro' ? 'AVRO' : 'PARQUET'}`,
    `LOCATION ${hiveString(definition.location)}${definition.format === 'avro' ? '' : ';'}`,
    ...(definition.format === 'avro' ? [`TBLPROPERTIES ('avro.schema.literal'=${hiveString(JSON.stringify(schemaJsonOf(definition.schema)))});`] : []),
  ];
  for (const partition of [...definition.partitions].sort((a, b) => a.hour - b.hour)) {
    const spec = hourPartitionValues(partition.hour, definition.layout)
      .map(([column, value]) => `${quoteIdentifier(column)}=${hiveString(value)}`)
      .join(', ');
    lines.push(`ALTER TABLE ${table} ADD IF NOT EXISTS PARTITION (${spec}) LOCATION ${hiveString(partition.location)};`);
  }
  return `${lines.join('\n')}\n`;
}
