/**
 * The container writer's blocks (src/etl/files/avro-container.ts): records serialized into one
 * reused scratch buffer give byte for byte the file of the straightforward writer (each record to
 * a Buffer of its own, a block closed once it reaches 64 KiB), for small records, for records far
 * larger than the scratch buffer, and with a codec that hands the scratch bytes back (null).
 */
import avro from 'avsc';
import type { Type } from 'avsc';
import { describe, expect, it } from 'vitest';
import { compressAvroBlock, type AvroCodecName } from '../../../src/etl/files/avro-codecs.js';
import { AvroBlockWriter, BLOCK_TARGET_BYTES, readAvroContainer, writeAvroContainer } from '../../../src/etl/files/avro-container.js';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';

const SCHEMA = { type: 'record', name: 'Row', fields: [{ name: 'id', type: 'long' }, { name: 'text', type: 'string' }, { name: 'note', type: ['null', 'string'] }] };
const LONG = avro.Type.forSchema('long');
const SYNC = Buffer.from('0123456789abcdef');

/** The writer as it was: a Buffer per record, concatenated per block. */
function reference(type: Type, records: readonly unknown[], codec: AvroCodecName): Buffer {
  const parts: Buffer[] = [];
  let pending: Buffer[] = [];
  let bytes = 0;
  const close = (): void => {
    const data = compressAvroBlock(codec, Buffer.concat(pending, bytes));
    parts.push(LONG.toBuffer(pending.length), LONG.toBuffer(data.length), data, SYNC);
    pending = [];
    bytes = 0;
  };
  for (const record of records) {
    const encoded = type.toBuffer(record);
    pending.push(encoded);
    bytes += encoded.length;
    if (bytes >= BLOCK_TARGET_BYTES) close();
  }
  if (pending.length > 0) close();
  return Buffer.concat(parts);
}

function rows(): unknown[] {
  const records: unknown[] = [];
  for (let index = 0; index < 5_000; index += 1) {
    // Mostly small rows, a few far larger than the writer's first scratch buffer (2 × 64 KiB).
    const size = index % 1_000 === 7 ? 300_000 + index : index % 1_000 === 500 ? 2_000_000 : 20 + (index % 50);
    records.push({ id: index * 2 ** 40 - 5, text: String.fromCharCode(97 + (index % 26)).repeat(size), note: index % 3 === 0 ? null : `n${index}` });
  }
  return records;
}

describe('Avro container blocks', () => {
  const type = parseDataFileSchema(SCHEMA);
  const records = rows();
  it.each<AvroCodecName>(['null', 'deflate', 'snappy', 'zstandard'])('writes the same bytes as a Buffer per record would, codec %s', (codec) => {
    const file = writeAvroContainer(type, records, { codec, syncMarker: SYNC, metadata: { 'tributary.test': 'blocks' } });
    const blocks = reference(type, records, codec);
    expect(file.subarray(file.length - blocks.length).equals(blocks)).toBe(true);
    const read = readAvroContainer(file);
    expect(read.records).toHaveLength(records.length);
    expect(read.records).toEqual(records);
  });

  it('deflates off the main thread into the same blocks, in order, waiting when too many are in flight', async () => {
    const chunks: Buffer[] = [];
    const writer = new AvroBlockWriter(type, { codec: 'deflate', syncMarker: SYNC, compressOffThread: true }, (chunk) => chunks.push(chunk));
    let waits = 0;
    for (const record of records) {
      const appended = writer.append(record);
      if (appended !== undefined) {
        waits += 1;
        await appended;
      }
    }
    await writer.settle();
    expect(waits).toBeGreaterThan(0);
    expect(Buffer.concat(chunks).equals(reference(type, records, 'deflate'))).toBe(true);
  });

  it('writes an empty file as a header without blocks', () => {
    const file = writeAvroContainer(type, [], { codec: 'null', syncMarker: SYNC, metadata: {} });
    expect(readAvroContainer(file).records).toEqual([]);
  });
});
