/**
 * The data files' bytes do not change unless the writer is meant to: sha256 of files written by
 * the whole-file writer before it became a streaming one (issue #19) for Avro, and by the Parquet
 * writer of issue #32 (hyparquet-writer's column encoder, which replaced parquetjs-lite), for the
 * all-types fixture in every codec; the streaming writer (openDataFileWriter) gives the same
 * bytes chunk by chunk.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { encodeDataFile, openDataFileWriter, type DataFileCodec, type DataFileFormat } from '../../../src/etl/files/data-files.js';
import { allTypesRecords, allTypesSchema } from './data-files-fixture.js';

vi.setConfig({ testTimeout: 60_000 });

/** Avro: measured with the writer of commit 6bddcdd (records held in memory, one Buffer per file); Parquet: with issue #32's. */
const BEFORE_STREAMING: Readonly<Record<string, string>> = {
  'avro/null/1000': '395f8451fa32967a03d1dc94157004bee56475ef9f0b232abb24b166523deedb',
  'avro/deflate/1000': '71829f9587bc1690af48c71c85fdfb12f6e6045cc16f4a9bcbb2fcd59b2e3400',
  'avro/snappy/1000': '95de3ca72c20de36bec9ba126cc7d33f1d2945a333c27461871a25493c22fd19',
  'avro/zstd/1000': '7a3cbd0b32a0a2635971e3426e933b19a2dce637f502f8c91e9f7e74a9172d5b',
  'avro/deflate/0': '0344835fd763e4c694b5eebd5c5ff59dde22e0a4ee9055c08c800d3804698d1d',
  'parquet/null/1000': 'f2a4c852c9ded2a5cc3f5758a9e7fa58d61fe5ae4802ed5745a1ed5d1688649a',
  'parquet/snappy/1000': '9b0b2400a2c831108a1454f817f887dcffd8e4f19898f615d1b2141cc9eaa36d',
  'parquet/gzip/300': 'ca1e41fbc377dd6e256f851cfd74f94968ecd3b8e9f1b0822812e1713bd3fb6f',
  'parquet/zstd/1000': 'f2230622d49c6333e1c19447aafdea1c07890290f1a0d699b9fd095e0cd6536a',
  'parquet/snappy/0': 'bb19c97418022b30072ff5bc7b7bee57e8be8c4bcab6a97cc9b91597d377d5de',
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
