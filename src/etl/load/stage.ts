/**
 * Staging a range whose records are already decoded and bucketed by hour (replays rebuild hours
 * this way): the records go through the same slice writer a load's task streams into
 * (slice-writer.ts), so the files get the same names and bytes as the load wrote.
 */
import type { ExtractedRange } from './extract.js';
import type { ReaderSchema } from '../load-types.js';
import { SliceWriter, type StageContext, type StagedRange } from './slice-writer.js';

export { createUnderFreshName } from './fresh-name.js';
export type { StageContext, StagedRange } from './slice-writer.js';

export async function stageRange(context: StageContext, range: ExtractedRange, reader: ReaderSchema): Promise<StagedRange> {
  const { topic, partition, start, end } = range;
  const writer = new SliceWriter(context, { topic, partition, start, end, reader, outputType: range.outputType ?? reader.fileType });
  try {
    // Hour by hour: the same files as records interleaved by offset, since each hour's file
    // sees its own records in offset order either way.
    for (const bucket of range.hours) {
      for (let index = 0; index < bucket.values.length; index += 1) await writer.append(bucket.hour, bucket.values[index], bucket.offsets[index]!);
    }
    for (const record of range.quarantined) writer.quarantine(record);
    return await writer.finish();
  } finally {
    await writer.abandon();
  }
}
