/**
 * The data files' bytes do not change when the writer changes: sha256 of files written by the
 * whole-file writer before it became a streaming one (issue #19), for the all-types fixture in
 * every codec, and the streaming writer (openDataFileWriter) gives the same bytes chunk by chunk.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { encodeDataFile, openDataFileWriter, type DataFileCodec, type DataFileFormat } from '../../../src/etl/files/data-files.js';
import { allTypesRecords, allTypesSchema } from './data-files-fixture.js';

vi.setConfig({ testTimeout: 60_000 });

/** Measured with the writer of commit 6bddcdd (records held in memory, one Buffer per file). */
const BEFORE_STREAMING: Readonly<Record<string, string>> = {
  'avro/null/1000': '395f8451fa32967a03d1dc94157004bee56475ef9f0b232abb24b166523deedb',
  'avro/deflate/1000': '71829f9587bc1690af48c71c85fdfb12f6e6045cc16f4a9bcbb2fcd59b2e3400',
  'avro/snappy/1000': '95de3ca72c20de36bec9ba126cc7d33f1d2945a333c27461871a25493c22fd19',
  'avro/zstd/1000': '7a3cbd0b32a0a2635971e3426e933b19a2dce637f502f8c91e9f7e74a9172d5b',
  'parquet/null/1000': '7d4640f1a5ef7ba7a14fdd448781754fe86e2be66ae519b2f197dd5af158071b',
  'parquet/snappy/1000': '8cc6871947afd1aa2844126ce7af76a5065eeab76e447fe37f70c1d2c64e850a',
  'parquet/gzip/300': '8d37d711da7da86fe7193c460cbba0aea7136bbcd07302d0a638a9f30f18c5dc',
  'avro/deflate/0': '0344835fd763e4c694b5eebd5c5ff59dde22e0a4ee9055c08c800d3804698d1d',
  'parquet/snappy/0': '8479deac6d4cadeb4cacdc2f5c99035c9dba5ecdb07c69b8f6f5d78a1e347b6c',
};

const schema = allTypesSchema();
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const options = (format: DataFileFormat, codec: DataFileCodec) => ({ format, codec, schema, identity: 'page-views+3+100+1103' });
const metadata = { 'tributary.offsets': '100-1103', 'tributary.partition': '3' };

describe('data file bytes', () => {
  for (const [key, expected] of Object.entries(BEFORE_STREAMING)) {
    const [format, codec, count] = key.split('/') as [DataFileFormat, DataFileCodec, string];
    it(`${key}: the same bytes as before streaming, whole and streamed`, async () => {
      const records = allTypesRecords(Number(count));
      expect(sha256(await encodeDataFile(records, { ...options(format, codec), metadata }))).toBe(expected);
      const chunks: Buffer[] = [];
      const writer = openDataFileWriter(options(format, codec), (chunk) => chunks.push(chunk));
      for (const record of records) await writer.append(record);
      const head = await writer.finish(metadata);
      expect(writer.records).toBe(records.length);
      if (count === '1000' && format === 'avro') expect(chunks.length).toBeGreaterThan(1); // three blocks, each out as it fills
      expect(sha256(Buffer.concat([head, ...chunks]))).toBe(expected);
    });
  }
});
