/** What `tributary demo` prints on stdout: the hour folders with their files, then the audit report. */
import { join } from 'node:path';
import type { DemoResult } from './demo.js';
import { DEMO_PARTITIONS, DEMO_TOPIC } from './demo.js';

/** `2026-05-01T13`, the hour key of manifests and `etl status`. */
const HOUR_WIDTH = 13;

export function formatDemoSummary(result: DemoResult): string {
  const lines: string[] = [];
  const files = result.folders.reduce((sum, folder) => sum + folder.files.length, 0);
  const loaded = result.folders.reduce((sum, folder) => sum + folder.records, 0);
  const created = `${new Date(result.hours.from).toISOString()} – ${new Date(result.hours.to).toISOString()}`;
  lines.push(`topic ${DEMO_TOPIC}: ${result.produced} page views created ${created} (event time), in ${DEMO_PARTITIONS} partitions`);
  lines.push(`warehouse ${result.warehouseDir} (load file ${result.loadFile}): ${loaded} records in ${files} files`);
  lines.push('');
  lines.push(`${'hour (UTC)'.padEnd(HOUR_WIDTH)}  ${'records'.padStart(9)}  folder`);
  for (const folder of result.folders) {
    lines.push(`${folder.hour.padEnd(HOUR_WIDTH)}  ${String(folder.records).padStart(9)}  ${join(result.warehouseDir, folder.path)}/`);
    const nameWidth = Math.max(...folder.files.map((file) => file.name.length));
    for (const file of folder.files) {
      lines.push(`${' '.repeat(HOUR_WIDTH + 13)}${file.name.padEnd(nameWidth)}  ${String(file.records).padStart(6)} records  ${String(file.bytes).padStart(8)} bytes`);
    }
  }
  lines.push(`${'total'.padEnd(HOUR_WIDTH)}  ${String(loaded).padStart(9)}`);
  lines.push('');
  for (const table of result.icebergTables ?? []) {
    lines.push(`Iceberg table ${table.topic}: ${table.location} (metadata v${table.version}, ${table.snapshots} snapshot${table.snapshots === 1 ? '' : 's'}, ${table.records} records)`);
    lines.push(`  query it: npx tributary etl ddl --load ${result.loadFile}   (Spark's catalog settings, Trino's register_table)`);
    lines.push(`            Spark (with etl ddl's settings): spark.read.format("iceberg").load("${table.location}"); Java: new HadoopTables(conf).load("${table.location}")`);
    lines.push('');
  }
  lines.push(result.auditReport.trimEnd());
  // Otherwise the latency table reads as if the pipeline took hours.
  lines.push('(the sample events were created over past hours and sent just now: the latencies above are their age, not the pipeline\'s speed)');
  return `${lines.join('\n')}\n`;
}
