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
  'parquet/null/1000': 'bf4a1f0459f4de91db6c2e9a764dfee5839acf72ecf9c498925bcd9338ab3545',
  'parquet/snappy/1000': '9617aa5b0221c9acb136232015cc4fddcb9f20e8ba4de0cb0517f81605f479f9',
  'parquet/gzip/300': '2d936e288618da49f15a28756ef23ae251637914c472178d00349cc6acd504ba',
  'parquet/zstd/1000': '3a6e4f82ba42b2b114f9bd89a5e7f75f7edda28405eb9d7b16b248f9b53709c1',
  'parquet/snappy/0': 'c8dab36ebec6bdbfe728f6cf0a4f39182819416de0b183e601a09912e966e9a2',
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
