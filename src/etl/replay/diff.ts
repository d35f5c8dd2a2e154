/**
 * What a replay changes in an hour, for its report: records whose content differs (compared by
 * Kafka offset, the file metadata `tributary.offsets` maps records to offsets) and whether the
 * data files' schema differs. A file whose bytes are unchanged (same sha256) is not read; any other
 * old file of the hour is read and decoded once. Whether a rebuilt hour is the live one byte for
 * byte is told from the manifests alone (sameFiles).
 */
import { expandOffsets } from '../load/extract.js';
import { decodeDataFile, type DataFileFormat } from '../files/data-files.js';
import type { VersionFile } from './manifest.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface HourDiff {
  recordsChanged: number;
  /** undefined until a file tells. */
  outputSchemaChanged: boolean | undefined;
}

export function emptyDiff(): HourDiff {
  return { recordsChanged: 0, outputSchemaChanged: undefined };
}

/**
 * Adds the comparison of one new file with the old file of the same name (`old` undefined: none)
 * to `diff`. `values` are the new file's records, at `offsets`.
 */
export async function compareFile(
  diff: HourDiff,
  inputs: {
    readonly warehouse: WarehouseFileSystem;
    readonly liveDir: string;
    readonly format: DataFileFormat;
    readonly outputSchemaJson: string;
    readonly old: VersionFile | undefined;
    readonly next: VersionFile;
    readonly offsets: readonly number[];
    readonly values: readonly unknown[];
  },
): Promise<void> {
  const { old, next } = inputs;
  if (old === undefined) {
    diff.recordsChanged += next.records;
    return;
  }
  if (old.sha256 === next.sha256) {
    diff.outputSchemaChanged ??= false;
    return;
  }
  const decoded = await decodeDataFile(await inputs.warehouse.open(`${inputs.liveDir}/${old.name}`), inputs.format);
  if (JSON.stringify(decoded.schemaJson) !== inputs.outputSchemaJson) diff.outputSchemaChanged = true;
  else diff.outputSchemaChanged ??= false;
  const before = new Map<number, string>();
  expandOffsets(decoded.metadata['tributary.offsets'] ?? '').forEach((offset, index) => before.set(offset, JSON.stringify(decoded.records[index])));
  let inBoth = 0;
  let same = 0;
  inputs.offsets.forEach((offset, index) => {
    const earlier = before.get(offset);
    if (earlier === undefined) return;
    inBoth += 1;
    if (earlier === JSON.stringify(inputs.values[index])) same += 1;
  });
  // Records only in the old file, only in the new one, or in both with other content.
  diff.recordsChanged += before.size - inBoth + (inputs.offsets.length - inBoth) + (inBoth - same);
}

/** Old files with no new file of the same name: all their records are gone from the hour. */
export function countRemoved(diff: HourDiff, old: readonly VersionFile[], next: readonly VersionFile[]): void {
  const names = new Set(next.map((file) => file.name));
  for (const file of old) if (!names.has(file.name)) diff.recordsChanged += file.records;
}

/** Whether two versions hold the same data files: the same names with the same bytes (sha256 and length). */
export function sameFiles(old: readonly VersionFile[], next: readonly VersionFile[]): boolean {
  if (old.length !== next.length) return false;
  const before = new Map(old.map((file) => [file.name, file]));
  return next.every((file) => {
    const earlier = before.get(file.name);
    return earlier !== undefined && earlier.sha256 === file.sha256 && earlier.bytes === file.bytes;
  });
}
