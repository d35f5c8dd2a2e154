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

/** Avro: measured with the writer of commit 6bddcdd (records held in memory, one Buffer per file); Parquet: with issue #32's, since issue #33 with created_by in parquet-mr's parseable form. */
const BEFORE_STREAMING: Readonly<Record<string, string>> = {
  'avro/null/1000': '395f8451fa32967a03d1dc94157004bee56475ef9f0b232abb24b166523deedb',
  'avro/deflate/1000': '71829f9587bc1690af48c71c85fdfb12f6e6045cc16f4a9bcbb2fcd59b2e3400',
  'avro/snappy/1000': '95de3ca72c20de36bec9ba126cc7d33f1d2945a333c27461871a25493c22fd19',
  'avro/zstd/1000': '7a3cbd0b32a0a2635971e3426e933b19a2dce637f502f8c91e9f7e74a9172d5b',
  'avro/deflate/0': '0344835fd763e4c694b5eebd5c5ff59dde22e0a4ee9055c08c800d3804698d1d',
  'parquet/null/1000': '1be53cdaf56c0709fca0894f8c1c671491c40c7bdf0446baa57b3992c476376f',
  'parquet/snappy/1000': '7e7f7ddce16313cdd7a75eb1fa97fbb0656c513e609531bb99bf083edda3c68b',
  'parquet/gzip/300': '414a413a80c36980cb4c348f2c3738d84d650c3d530aa6f28f35a203cd4d482d',
  'parquet/zstd/1000': 'c8534648033c2e3fbcc5e0877c043ecb1146b73556774bd6e46a1940dcc94351',
  'parquet/snappy/0': '0743a1f934aa73695c10bf39fa22e2c0c3e00bafa66c9fa8f09988167d027dcb',
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
