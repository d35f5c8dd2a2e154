/**
 * The open files of a slice (src/etl/load/slice-writer.ts): records streamed in offset order give
 * the bytes the whole-file writer gives; a file past maxFileBytes rolls to parts with
 * deterministic names; a file past the spill's memory limit goes through a local spill file that
 * is gone afterwards; and staging decoded buckets (replays) gives the same files as streaming.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeDataFile, encodeDataFile, parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { expandOffsets } from '../../../src/etl/load/extract.js';
import { SliceWriter, type StageContext } from '../../../src/etl/load/slice-writer.js';
import { MEMORY_LIMIT_BYTES } from '../../../src/etl/load/spill.js';
import { stageRange } from '../../../src/etl/load/stage.js';
import type { ReaderSchema } from '../../../src/etl/load-types.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { MemoryWarehouse } from './loader-fakes.js';

const SCHEMA = { type: 'record', name: 'View', namespace: 'test', fields: [{ name: 'id', type: 'long' }, { name: 'url', type: 'string' }] };
const reader: ReaderSchema = { ref: { subject: 'views-value', version: 1, id: 7 }, schema: parseAvroSchema(JSON.stringify(SCHEMA), 'AVRO'), fileType: parseDataFileSchema(SCHEMA) };
const HOUR = 493_000;

let spillDirectory: string;
let warehouse: MemoryWarehouse;
beforeEach(async () => {
  spillDirectory = await mkdtemp(join(tmpdir(), 'slice-writer-'));
  warehouse = new MemoryWarehouse();
});
afterEach(async () => {
  await rm(spillDirectory, { recursive: true, force: true });
});

const context = (extra: Partial<StageContext> = {}): StageContext => ({
  warehouse,
  root: 'wh',
  layout: 'hourly',
  load: 'views',
  seq: 1,
  stagingDir: 'wh/_etl/views/staging/0000000001-a',
  format: 'avro',
  codec: 'null',
  spillDirectory,
  ...extra,
});
const slice = { topic: 'views', partition: 2, start: 100, end: 100 + 40_000, reader, outputType: reader.fileType };
/** Two hours, interleaved by offset: even offsets in HOUR, odd ones in HOUR + 1. */
const records = Array.from({ length: 40_000 }, (_, index) => ({ offset: 100 + index, hour: HOUR + (index % 2), value: { id: index, url: `/page/${index}/${'x'.repeat(60 + (index % 50))}` } }));

async function streamAll(writer: SliceWriter): Promise<void> {
  for (const record of records) await writer.append(record.hour, record.value, record.offset);
}

describe('SliceWriter', () => {
  it('streams each hour into one file with the bytes the whole-file writer gives, spilling past its memory limit', async () => {
    const writer = new SliceWriter(context(), slice);
    await streamAll(writer);
    await writer.drain();
    // Over a MiB per hour with the null codec: each open file spilled to disk by now.
    expect((await readdir(spillDirectory)).length).toBe(2);
    const staged = await writer.finish();
    await writer.abandon();
    expect(await readdir(spillDirectory)).toEqual([]);
    expect(staged.files.map((file) => file.path)).toEqual(['wh/views/hourly/2026/03/29/16/views+2+100+40100.avro', 'wh/views/hourly/2026/03/29/17/views+2+100+40100.avro']);
    for (const [index, file] of staged.files.entries()) {
      const mine = records.filter((record) => record.hour === HOUR + index);
      const offsets = mine.map((record) => record.offset);
      const expected = await encodeDataFile(
        mine.map((record) => record.value),
        {
          format: 'avro',
          codec: 'null',
          schema: reader.fileType,
          identity: file.path,
          metadata: { 'tributary.topic': 'views', 'tributary.partition': '2', 'tributary.range': '100-40100', 'tributary.offsets': offsets.map(String).join(','), 'tributary.reader': 'views-value/1/7' },
        },
      );
      const bytes = warehouse.files.get(file.staged)!;
      expect(bytes.length).toBeGreaterThan(MEMORY_LIMIT_BYTES);
      expect(bytes.equals(expected)).toBe(true);
      expect(file).toMatchObject({ records: mine.length, bytes: bytes.length });
    }
  });

  it('rolls a file to parts .1, .2 … at maxFileBytes; the parts hold every record once, and staging buckets gives the same files', async () => {
    const writer = new SliceWriter(context({ maxFileBytes: 300_000 }), slice);
    await streamAll(writer);
    const staged = await writer.finish();
    const names = staged.files.map((file) => file.path.slice(file.path.lastIndexOf('/') + 1));
    expect(names).toContain('views+2+100+40100.avro');
    expect(names).toContain('views+2+100+40100.1.avro');
    expect(names.length).toBeGreaterThan(4);
    const seen: number[] = [];
    for (const file of staged.files) {
      const decoded = await decodeDataFile(warehouse.files.get(file.staged)!, 'avro');
      expect(decoded.records.length).toBe(file.records);
      seen.push(...expandOffsets(decoded.metadata['tributary.offsets'] ?? ''));
    }
    expect(seen.sort((a, b) => a - b)).toEqual(records.map((record) => record.offset));

    // The replay path: the same records bucketed by hour first.
    const again = new MemoryWarehouse();
    const hours = [HOUR, HOUR + 1].map((hour) => {
      const mine = records.filter((record) => record.hour === hour);
      return { hour, values: mine.map((record) => record.value), offsets: mine.map((record) => record.offset) };
    });
    const replayed = await stageRange({ ...context({ maxFileBytes: 300_000 }), warehouse: again, stagingDir: 'wh/_etl/views/staging/0000000001-b' }, { topic: 'views', partition: 2, start: 100, end: 40_100, hours, quarantined: [] }, reader);
    const bytesOf = (files: typeof staged.files, from: MemoryWarehouse): Map<string, string> => new Map(files.map((file) => [file.path, from.files.get(file.staged)!.toString('base64')]));
    expect(bytesOf(replayed.files, again)).toEqual(bytesOf(staged.files, warehouse));
  });
});
