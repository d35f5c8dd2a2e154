/**
 * The bytes of the Avro container files, read here by an independent walk of the specification's
 * layout (not by the module's reader): magic, metadata, sync marker, blocks closed near 64 KiB,
 * and each codec's block format — snappy with the big-endian CRC-32 of the uncompressed block that
 * Java's SnappyCodec checks, deflate without a zlib header. Then damaged files, refused precisely.
 */
import { inflateRawSync } from 'node:zlib';
import { crc32 } from '@node-rs/crc32';
import avro from 'avsc';
import snappy from 'snappy';
import { describe, expect, it, vi } from 'vitest';

// Encoding a thousand records can take seconds on a busy shared machine.
vi.setConfig({ testTimeout: 30_000 });
import { decodeDataFile, encodeDataFile, syncMarkerFor, type DataFileCodec } from '../../../src/etl/files/data-files.js';
import { allTypesRecords, allTypesSchema } from './data-files-fixture.js';

const schema = allTypesSchema();
const records = allTypesRecords(1_000);
const identity = 'page-views+3+100+1103';
const LONG = avro.Type.forSchema('long');
interface ContainerHeader {
  magic: Buffer;
  meta: Record<string, Buffer>;
  sync: Buffer;
}
const HEADER = avro.Type.forSchema({
  type: 'record',
  name: 'Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});

interface Walked {
  readonly meta: Record<string, string>;
  readonly metaKeys: string[];
  readonly sync: Buffer;
  readonly blocks: { count: number; data: Buffer; start: number }[];
}

function decodeHeader(bytes: Buffer): { value: ContainerHeader; offset: number } {
  const decoded: { value: unknown; offset: number } = HEADER.decode(bytes, 0);
  return { value: decoded.value as ContainerHeader, offset: decoded.offset };
}

/** The container's parts, by the specification's layout. */
function walk(bytes: Buffer): Walked {
  const header = decodeHeader(bytes);
  const blocks: Walked['blocks'] = [];
  let position = header.offset;
  while (position < bytes.length) {
    const start = position;
    const count = LONG.decode(bytes, position);
    const size = LONG.decode(bytes, count.offset);
    const data = bytes.subarray(size.offset, size.offset + (size.value as number));
    position = size.offset + data.length;
    expect(bytes.subarray(position, position + 16)).toEqual(header.value.sync);
    position += 16;
    blocks.push({ count: count.value as number, data, start });
  }
  return {
    meta: Object.fromEntries(Object.entries(header.value.meta).map(([key, value]) => [key, value.toString('utf8')])),
    metaKeys: Object.keys(header.value.meta),
    sync: header.value.sync,
    blocks,
  };
}

const encode = (codec: DataFileCodec, metadata: Record<string, string> = { 'tributary.offsets': '100-1103' }): Promise<Buffer> =>
  encodeDataFile(records, { format: 'avro', codec, schema, identity, metadata });

/** The records' serialized bytes, back to back, as a null-codec file's blocks hold them. */
const serialized = Buffer.concat(records.map((record) => schema.toBuffer(record)));

describe('Avro container layout', () => {
  it('starts with "Obj" 1, metadata avro.schema, avro.codec then the caller\'s keys sorted, and the identity\'s sync marker', async () => {
    const bytes = await encode('deflate', { 'z.last': '1', 'a.first': '2', 'tributary.offsets': '100-1103' });
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from([0x4f, 0x62, 0x6a, 0x01]));
    const file = walk(bytes);
    expect(file.metaKeys).toEqual(['avro.schema', 'avro.codec', 'a.first', 'tributary.offsets', 'z.last']);
    expect(file.meta['avro.codec']).toBe('deflate');
    expect(JSON.parse(file.meta['avro.schema'] ?? '')).toEqual(schema.schema({ exportAttrs: true }));
    expect(file.sync).toEqual(syncMarkerFor(identity));
  });

  it('null: blocks hold the serialized records, each closed once it reaches 64 KiB', async () => {
    const file = walk(await encode('null'));
    expect(file.meta['avro.codec']).toBe('null');
    expect(file.blocks.length).toBeGreaterThan(2);
    expect(file.blocks.reduce((sum, block) => sum + block.count, 0)).toBe(records.length);
    expect(Buffer.concat(file.blocks.map((block) => block.data))).toEqual(serialized);
    for (const block of file.blocks.slice(0, -1)) {
      expect(block.data.length).toBeGreaterThanOrEqual(64 * 1024);
      // Closed by the record that crossed 64 KiB: without its last record it was below.
      const lastRecord = schema.toBuffer(records[file.blocks.slice(0, file.blocks.indexOf(block) + 1).reduce((sum, b) => sum + b.count, 0) - 1]);
      expect(block.data.length - lastRecord.length).toBeLessThan(64 * 1024);
    }
  });

  it('snappy: each block is a raw snappy block followed by the big-endian CRC-32 of the uncompressed block', async () => {
    const file = walk(await encode('snappy'));
    expect(file.meta['avro.codec']).toBe('snappy');
    const blocks = file.blocks.map((block) => {
      const compressed = block.data.subarray(0, block.data.length - 4);
      const uncompressed = snappy.uncompressSync(compressed) as Buffer;
      expect(block.data.readUInt32BE(block.data.length - 4)).toBe(crc32(uncompressed));
      return uncompressed;
    });
    expect(Buffer.concat(blocks)).toEqual(serialized);
  });

  it('deflate: each block is raw DEFLATE without a zlib header', async () => {
    const file = walk(await encode('deflate'));
    expect(Buffer.concat(file.blocks.map((block) => inflateRawSync(block.data)))).toEqual(serialized);
  });

  it('zstd: the file names the codec "zstandard" and each block is one zstd frame', async () => {
    const file = walk(await encode('zstd'));
    expect(file.meta['avro.codec']).toBe('zstandard');
    for (const block of file.blocks) expect(block.data.readUInt32LE(0)).toBe(0xfd2fb528);
  });
});

describe('damaged Avro files are DATA_FILE_CORRUPT', () => {
  // A string is part of the message; a RegExp matches it.
  const corrupt = (message: string | RegExp) =>
    expect.objectContaining({ code: 'DATA_FILE_CORRUPT', message: (typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message)) as unknown }) as unknown;

  it('without the magic', async () => {
    await expect(decodeDataFile(Buffer.from('PAR1....'), 'avro')).rejects.toEqual(corrupt('does not start with the magic 4f 62 6a 01 ("Obj" 1) but 50415231'));
  });

  it('cut inside the header', async () => {
    const bytes = await encode('null');
    await expect(decodeDataFile(bytes.subarray(0, 40), 'avro')).rejects.toEqual(corrupt('ends inside its header (40 bytes)'));
  });

  it('cut inside a block', async () => {
    const bytes = await encode('null');
    const second = walk(bytes).blocks[1];
    await expect(decodeDataFile(bytes.subarray(0, (second?.start ?? 0) + 100), 'avro')).rejects.toEqual(corrupt(new RegExp(`block at byte ${second?.start} declares \\d+ bytes and a sync marker; \\d+ bytes remain`)));
  });

  it('with a snappy block whose CRC does not match', async () => {
    const bytes = Buffer.from(await encode('snappy'));
    const first = walk(bytes).blocks[0];
    const crcAt = (first?.data.byteOffset ?? 0) - bytes.byteOffset + (first?.data.length ?? 0) - 1;
    bytes[crcAt] = (bytes[crcAt] ?? 0) ^ 0xff;
    await expect(decodeDataFile(bytes, 'avro')).rejects.toEqual(corrupt(/^Avro snappy block of \d+ bytes cannot be decompressed: CRC-32 of the uncompressed block is 0x[0-9a-f]{8}, the block stores 0x[0-9a-f]{8}$/));
  });

  it('with a block that does not end with the sync marker', async () => {
    const bytes = Buffer.from(await encode('null'));
    const first = walk(bytes).blocks[0];
    const syncAt = (first?.data.byteOffset ?? 0) - bytes.byteOffset + (first?.data.length ?? 0);
    bytes[syncAt] = (bytes[syncAt] ?? 0) ^ 0x01;
    await expect(decodeDataFile(bytes, 'avro')).rejects.toEqual(corrupt(`block at byte ${first?.start} does not end with the file's sync marker`));
  });

  it('with a block declaring more records than its bytes can hold', async () => {
    const bytes = await encode('null');
    const file = walk(bytes);
    const first = file.blocks[0];
    const start = first?.start ?? 0;
    const declared = LONG.decode(bytes, start);
    const forged = Buffer.concat([bytes.subarray(0, start), LONG.toBuffer(10_000_000), bytes.subarray(declared.offset)]);
    await expect(decodeDataFile(forged, 'avro')).rejects.toEqual(corrupt(new RegExp(`block at byte ${start} declares 10000000 records, more than its \\d+ bytes can hold`)));
  });

  it('with an unknown codec', async () => {
    const bytes = await encode('null');
    const header = decodeHeader(bytes);
    const forged = Buffer.concat([HEADER.toBuffer({ ...header.value, meta: { ...header.value.meta, 'avro.codec': Buffer.from('brotli') } }), bytes.subarray(header.offset)]);
    await expect(decodeDataFile(forged, 'avro')).rejects.toEqual(corrupt('uses codec "brotli"; this reader knows null, deflate, snappy, zstandard'));
  });
});
