/**
 * The block codecs of Avro object container files, byte for byte as Java's Avro reads them
 * (org.apache.avro.file.*Codec):
 *
 *   null       the serialized records as they are.
 *   deflate    raw DEFLATE (RFC 1951): no zlib header or trailer (Java inflates with nowrap).
 *   snappy     one raw snappy block of the serialized records, then the CRC-32 (IEEE, as
 *              java.util.zip.CRC32) of the UNcompressed records, 4 bytes big-endian. Java's
 *              SnappyCodec refuses a block without it ("Checksum failure").
 *   zstandard  one Zstandard frame (RFC 8878), level 3. Our codec name is `zstd`; the file says
 *              `zstandard`, the name the Avro specification gives it.
 *
 * Decompression is bounded by `maxBlockBytes`, and every malformed block is DATA_FILE_CORRUPT.
 */
import { createRequire } from 'node:module';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { crc32 } from '@node-rs/crc32';
import type SnappyModule from 'snappy';
import { compress, decompress } from '../../protocol/compression.js';
import { dataFileError, describeThrown } from './errors.js';

export type AvroCodecName = 'null' | 'deflate' | 'snappy' | 'zstandard';

const SNAPPY_CRC_BYTES = 4;

// Loaded on first use, as in protocol/compression.ts: a loader that never writes snappy never loads it.
const requireNative = createRequire(import.meta.url);
let snappyModule: typeof SnappyModule | undefined;
const snappy = (): typeof SnappyModule => (snappyModule ??= requireNative('snappy') as typeof SnappyModule);

export function compressAvroBlock(codec: AvroCodecName, block: Buffer): Buffer {
  switch (codec) {
    case 'null':
      return block;
    case 'deflate':
      return deflateRawSync(block);
    case 'snappy': {
      const checksum = Buffer.alloc(SNAPPY_CRC_BYTES);
      checksum.writeUInt32BE(crc32(block));
      return Buffer.concat([snappy().compressSync(block), checksum]);
    }
    case 'zstandard':
      return compress('zstd', block);
  }
}

export function decompressAvroBlock(codec: AvroCodecName, data: Buffer, maxBlockBytes: number): Buffer {
  let block: Buffer;
  try {
    switch (codec) {
      case 'null':
        return data;
      case 'deflate':
        block = inflateRawSync(data, { maxOutputLength: Math.max(1, maxBlockBytes) });
        break;
      case 'snappy': {
        if (data.length < SNAPPY_CRC_BYTES) throw new Error(`a snappy block needs at least its ${SNAPPY_CRC_BYTES}-byte CRC, it has ${data.length} bytes`);
        block = decompress('snappy', data.subarray(0, data.length - SNAPPY_CRC_BYTES), maxBlockBytes);
        const stored = data.readUInt32BE(data.length - SNAPPY_CRC_BYTES);
        const actual = crc32(block);
        if (stored !== actual) throw new Error(`CRC-32 of the uncompressed block is ${hex(actual)}, the block stores ${hex(stored)}`);
        break;
      }
      case 'zstandard':
        block = decompress('zstd', data, maxBlockBytes);
        break;
    }
  } catch (error) {
    throw dataFileError('DATA_FILE_CORRUPT', `Avro ${codec} block of ${data.length} bytes cannot be decompressed: ${describeThrown(error)}`, { codec }, error);
  }
  return block;
}

const hex = (value: number): string => `0x${value.toString(16).padStart(8, '0')}`;
