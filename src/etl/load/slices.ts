/**
 * A partition's planned range [start, end) cut into slices of at most maxRecordsPerTask offsets,
 * counted from the range's start: [start, start + n), [start + n, start + 2n), … The slices are a
 * function of the plan alone, so one task reading the whole range and one task per slice on
 * several workers write the same files (each slice has files of its own, slice-writer.ts).
 */
export interface Slice {
  readonly start: number;
  readonly end: number;
}

export function slicesOf(range: Slice, maxRecordsPerTask: number | undefined): Slice[] {
  if (range.end <= range.start) return [{ start: range.start, end: range.end }];
  const size = maxRecordsPerTask === undefined || maxRecordsPerTask <= 0 ? range.end - range.start : maxRecordsPerTask;
  const slices: Slice[] = [];
  for (let start = range.start; start < range.end; start += size) slices.push({ start, end: Math.min(range.end, start + size) });
  return slices;
}
