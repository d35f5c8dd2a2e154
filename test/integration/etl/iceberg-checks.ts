/**
 * What the Iceberg loader tests check of a table as a reader returned it (the Java API's dump, or
 * the REST catalog's view): each produced record exactly once, and the snapshots' offset ranges.
 */
import { expect } from 'vitest';
import type { ProducedRecord } from './loader-support.js';

interface TableRows {
  readonly records: readonly Readonly<Record<string, unknown>>[];
}

interface TableSnapshots {
  readonly snapshots: readonly { readonly summary: Readonly<Record<string, string>> }[];
}

/** `<partition>/<offset>` of a row, from its `_kafka` column. */
export const positionOf = (row: Readonly<Record<string, unknown>>): string => {
  const kafka = row['_kafka'] as { partition: number; offset: number };
  return `${kafka.partition}/${kafka.offset}`;
};

const byPosition = (a: readonly [string, unknown], b: readonly [string, unknown]): number => a[0].localeCompare(b[0], 'en', { numeric: true });

/** Each produced record once, its url (unique per record) in the row at its position. */
export function expectExactly(table: TableRows, produced: readonly ProducedRecord[]): void {
  const rows = table.records.map((row) => [positionOf(row), row['url']] as const).sort(byPosition);
  const wanted = produced.map((record) => [`${record.partition}/${record.offset}`, (record.value as { url: string }).url] as const).sort(byPosition);
  expect(rows).toEqual(wanted);
}

/** The offsets the snapshots' summaries carry, per partition: contiguous from 0 to the last produced (no gap, no overlap). */
export function expectOffsetsCovered(table: TableSnapshots, produced: readonly ProducedRecord[], partitions: number): void {
  const ranges = new Map<string, [number, number][]>();
  for (const snapshot of table.snapshots) {
    const offsets = JSON.parse(snapshot.summary['tributary.offsets'] ?? '{}') as Record<string, [number, number]>;
    for (const [partition, range] of Object.entries(offsets)) ranges.set(partition, [...(ranges.get(partition) ?? []), range]);
  }
  for (let partition = 0; partition < partitions; partition += 1) {
    const sorted = (ranges.get(String(partition)) ?? []).sort((a, b) => a[0] - b[0]);
    const end = Math.max(...produced.filter((record) => record.partition === partition).map((record) => record.offset)) + 1;
    expect(sorted.map(([start]) => start)).toEqual([0, ...sorted.slice(0, -1).map(([, stop]) => stop)]);
    expect(sorted.at(-1)?.[1]).toBe(end);
  }
}
