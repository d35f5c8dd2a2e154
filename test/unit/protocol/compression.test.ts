import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import lz4 from 'lz4-napi';
import snappy from 'snappy';
import { describe, expect, it } from 'vitest';
import { compress, compressionName, decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from '../../../src/protocol/compression.js';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { validateProducerBatch } from '../../../src/protocol/batch-validation.js';
import { COMPRESSION_MASK, readBatchHeader, writeBatchCrc, type CompressionName } from '../../../src/protocol/record-batch.js';
import { decodeRecords, encodeRecordBatch, type RecordInput } from '../../../src/protocol/records.js';
import { seededRandom } from '../../support/seeded-random.js';

const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const;

function kafkaCodeOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (error instanceof KafkaProtocolError) return error.code;
    throw error;
  }
  return 'NONE';
}

function hex(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'hex');
}


function text(bytes: number): Buffer {
  const words = ['kafka', 'log', 'partition', 'offset', 'segment', 'replica', 'broker', 'consumer'];
  const next = seededRandom(bytes);
  const parts: string[] = [];
  let length = 0;
  while (length < bytes) {
    const word = `${words[Math.floor(next() * words.length)] ?? 'x'}-${Math.floor(next() * 1000)} `;
    parts.push(word);
    length += word.length;
  }
  return Buffer.from(parts.join('')).subarray(0, bytes);
}

describe('compress / decompress round trips', () => {
  const inputs: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from('x')],
    ['100 random bytes', randomBytes(100)],
    ['1 MiB of text', text(1024 * 1024)],
    ['300 KiB of random bytes', randomBytes(300 * 1024)],
    ['1 MiB of zeros', Buffer.alloc(1024 * 1024)],
  ];
  for (const codec of [...CODECS, 'none'] as const) {
    for (const [label, input] of inputs) {
      it(`${codec}: ${label}`, () => {
        const compressed = compress(codec, input);
        if (codec !== 'none' && label.includes('1 MiB')) expect(compressed.length).toBeLessThan(input.length / 2);
        expect(decompress(codec, compressed).equals(input)).toBe(true);
        expect(decompress(compressionName({ none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 }[codec]), compressed).equals(input)).toBe(true);
      });
    }
  }

  it('accepts the codec as the Attributes number', () => {
    const input = text(5000);
    expect(decompress(1, compress('gzip', input)).equals(input)).toBe(true);
    expect(decompress(2, compress('snappy', input)).equals(input)).toBe(true);
    expect(decompress(3, compress('lz4', input)).equals(input)).toBe(true);
    expect(decompress(4, compress('zstd', input)).equals(input)).toBe(true);
  });

  it('answers codec numbers 5–7 with UNSUPPORTED_COMPRESSION_TYPE', () => {
    for (const codec of [5, 6, 7]) expect(kafkaCodeOf(() => decompress(codec, Buffer.from('x')))).toBe('UNSUPPORTED_COMPRESSION_TYPE');
  });
});

describe('wire formats', () => {
  it('snappy: writes the xerial framing Java writes, in 32 KiB chunks', () => {
    const input = text(100 * 1024);
    const framed = compress('snappy', input);
    expect(framed.subarray(0, 16).toString('hex')).toBe('82534e41505059000000000100000001');
    let chunks = 0;
    for (let position = 16; position < framed.length; position += 4 + framed.readInt32BE(position)) chunks += 1;
    expect(chunks).toBe(4);
  });

  it('snappy: reads a raw block (librdkafka) and a xerial-framed stream (Java), golden bytes', () => {
    // "hello": varint length 5, literal tag (5 − 1) << 2, the bytes.
    expect(decompress('snappy', hex('05 10 68656c6c6f')).toString()).toBe('hello');
    expect(decompress('snappy', hex('82534e4150505900 00000001 00000001 00000007 0510 68656c6c6f 00000007 0510 776f726c64')).toString()).toBe('helloworld');
    // A header-only xerial stream is empty.
    expect(decompress('snappy', hex('82534e4150505900 00000001 00000001')).length).toBe(0);
  });

  it('snappy: reads raw blocks and xerial streams made by the library, of every size', () => {
    for (const size of [0, 1, 1000, 32 * 1024, 200 * 1024]) {
      const input = text(size);
      expect(decompress('snappy', snappy.compressSync(input)).equals(input)).toBe(true);
      expect(decompress('snappy', compress('snappy', input)).equals(input)).toBe(true);
    }
  });

  it('lz4: writes one frame of independent 64 KiB blocks without checksums, as Kafka does', () => {
    const frame = compress('lz4', text(1000));
    expect(frame.readUInt32LE(0)).toBe(0x184d2204);
    expect(frame[4]).toBe(0x60); // version 01, block independence
    expect(frame[5]).toBe(0x40); // 64 KiB blocks
  });

  it('lz4: reads golden frames with stored and literal-only blocks, checksums and content size', () => {
    expect(decompress('lz4', hex('04224d18 60 40 82 05000080 68656c6c6f 00000000')).toString()).toBe('hello');
    expect(decompress('lz4', hex('04224d18 60 40 82 06000000 50 68656c6c6f 00000000')).toString()).toBe('hello');
    for (const options of [{ blockChecksums: true }, { contentChecksum: true }, { blockChecksums: true, contentChecksum: true }]) {
      const input = text(200 * 1024);
      expect(decompress('lz4', lz4.compressFrameSync(input, options)).equals(input)).toBe(true);
    }
  });

  it('lz4: reads concatenated frames and skips skippable frames', () => {
    const blob = Buffer.concat([compress('lz4', Buffer.from('one ')), hex('5a2a4d18 03000000 aabbcc'), compress('lz4', Buffer.from('two'))]);
    expect(decompress('lz4', blob).toString()).toBe('one two');
  });

  it('zstd: reads golden frames with raw and RLE blocks, several frames and a skippable frame', () => {
    // Single segment, 1-byte content size 5, last raw block of 5 bytes.
    expect(decompress('zstd', hex('28b52ffd 20 05 290000 68656c6c6f')).toString()).toBe('hello');
    // Single segment, content size 10, last RLE block of 10 × 'a'.
    expect(decompress('zstd', hex('28b52ffd 20 0a 530000 61')).toString()).toBe('a'.repeat(10));
    expect(decompress('zstd', hex('28b52ffd 20 05 290000 68656c6c6f 502a4d18 02000000 ffff 28b52ffd 20 0a 530000 61')).toString()).toBe(
      `hello${'a'.repeat(10)}`,
    );
  });

  it('gzip: reads concatenated members', () => {
    expect(decompress('gzip', Buffer.concat([gzipSync('one '), gzipSync('two')])).toString()).toBe('one two');
  });
});

describe('corrupt input', () => {
  for (const codec of CODECS) {
    it(`${codec}: garbage, empty and truncated input are CORRUPT_MESSAGE`, () => {
      expect(kafkaCodeOf(() => decompress(codec, Buffer.from('this is not compressed at all')))).toBe('CORRUPT_MESSAGE');
      expect(kafkaCodeOf(() => decompress(codec, Buffer.alloc(0)))).toBe('CORRUPT_MESSAGE');
      const compressed = compress(codec, text(100 * 1024));
      for (const cut of [1, 5, 17, Math.floor(compressed.length / 2), compressed.length - 1]) {
        expect(kafkaCodeOf(() => decompress(codec, compressed.subarray(0, cut))), `cut at ${cut}`).toBe('CORRUPT_MESSAGE');
      }
    });

    it(`${codec}: random damage gives the data back or CORRUPT_MESSAGE, never another error`, () => {
      const next = seededRandom(codec.length * 7919);
      const original = compress(codec, text(20 * 1024));
      let rejected = 0;
      for (let round = 0; round < 300; round += 1) {
        const damaged = Buffer.from(original);
        const flips = 1 + Math.floor(next() * 4);
        for (let i = 0; i < flips; i += 1) {
          const at = Math.floor(next() * damaged.length);
          damaged[at] = Math.floor(next() * 256);
        }
        const cut = next() < 0.2 ? Math.floor(next() * damaged.length) : damaged.length;
        try {
          decompress(codec, damaged.subarray(0, cut), 1024 * 1024);
        } catch (error) {
          expect(error).toBeInstanceOf(KafkaProtocolError);
          expect((error as KafkaProtocolError).code).toBe('CORRUPT_MESSAGE');
          rejected += 1;
        }
      }
      expect(rejected).toBeGreaterThan(0);
    });
  }

  it('lz4: rejects stray bytes after the frame, reserved bits, dictionaries and oversized blocks', () => {
    expect(kafkaCodeOf(() => decompress('lz4', hex('04224d18 60 40 82 05000080 68656c6c6f 00000000 ab')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('lz4', hex('04224d18 62 40 82 00000000')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('lz4', hex('04224d18 61 40 00000000 82 00000000')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('lz4', hex('04224d18 60 40 82 01000100')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('lz4', hex('04224d18 60 40 00 05000080 68656c6c6f 00000000')))).toBe('CORRUPT_MESSAGE'); // bad header checksum
  });

  it('zstd: rejects reserved block types, dictionaries and stray bytes', () => {
    expect(kafkaCodeOf(() => decompress('zstd', hex('28b52ffd 20 05 2f0000 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('zstd', hex('28b52ffd 21 07 05 290000 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('zstd', hex('28b52ffd 20 05 290000 68656c6c6f 00')))).toBe('CORRUPT_MESSAGE');
    // Content size 6 declared, 5 delivered.
    expect(kafkaCodeOf(() => decompress('zstd', hex('28b52ffd 20 06 290000 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
  });

  it('snappy: rejects a xerial chunk that runs past the end and a block longer than it declares', () => {
    expect(kafkaCodeOf(() => decompress('snappy', hex('82534e4150505900 00000001 00000001 00000009 0510 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('snappy', hex('82534e4150505900 0000')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('snappy', hex('04 10 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
    expect(kafkaCodeOf(() => decompress('snappy', hex('ffffffffff7f')))).toBe('CORRUPT_MESSAGE');
  });
});

describe('the output-size limit', () => {
  const MiB = 1024 * 1024;

  for (const codec of CODECS) {
    it(`${codec}: refuses output past the limit and accepts it at the limit`, () => {
      const input = Buffer.alloc(MiB, 7);
      const compressed = compress(codec, input);
      expect(decompress(codec, compressed, MiB).equals(input)).toBe(true);
      expect(kafkaCodeOf(() => decompress(codec, compressed, MiB - 1))).toBe('CORRUPT_MESSAGE');
      expect(kafkaCodeOf(() => decompress(codec, compressed, 1000))).toBe('CORRUPT_MESSAGE');
      expect(decompress(codec, compress(codec, Buffer.alloc(0)), 0).length).toBe(0);
    });
  }

  it('none: the limit applies too', () => {
    expect(kafkaCodeOf(() => decompress('none', Buffer.alloc(10), 9))).toBe('CORRUPT_MESSAGE');
  });

  it('zstd: a bomb of RLE blocks is refused from its framing, before decoding, under the default limit', () => {
    // No content size, 128 KiB window, blocks of 128 KiB × 'a' (RLE: 4 bytes each).
    const rleBlock = (last: boolean): Buffer => {
      const header = Buffer.alloc(4);
      header.writeUIntLE(((128 * 1024) << 3) | (1 << 1) | (last ? 1 : 0), 0, 3);
      header[3] = 0x61;
      return header;
    };
    const bomb = (blocks: number): Buffer =>
      Buffer.concat([hex('28b52ffd 00 38'), ...Array.from({ length: blocks }, (_, i) => rleBlock(i === blocks - 1))]);
    const small = decompress('zstd', bomb(10));
    expect(small.length).toBe(10 * 128 * 1024);
    expect(small.every((byte) => byte === 0x61)).toBe(true);
    expect(kafkaCodeOf(() => decompress('zstd', bomb(10), MiB))).toBe('CORRUPT_MESSAGE');
    const big = bomb(600); // 75 MiB from 2.4 KB
    expect(600 * 128 * 1024).toBeGreaterThan(DEFAULT_MAX_DECOMPRESSED_BYTES);
    expect(kafkaCodeOf(() => decompress('zstd', big))).toBe('CORRUPT_MESSAGE');
  });

  it('zstd: a declared content size or window past the limit is refused', () => {
    // 8-byte content size of 2^40.
    expect(kafkaCodeOf(() => decompress('zstd', hex('28b52ffd c0 38 0000000000010000 290000 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
    // Window of 2^31 bytes (exponent 21).
    expect(kafkaCodeOf(() => decompress('zstd', hex('28b52ffd 00 a8 290000 68656c6c6f')))).toBe('CORRUPT_MESSAGE');
  });

  it('lz4: a frame of repeated highly compressed blocks is refused from its framing under the default limit', () => {
    const one = lz4.compressFrameSync(Buffer.alloc(64 * 1024));
    const header = one.subarray(0, 7);
    const blockSize = one.readUInt32LE(7);
    const block = one.subarray(7, 11 + blockSize);
    expect(one.length).toBe(7 + 4 + blockSize + 4);
    const bomb = (blocks: number): Buffer => Buffer.concat([header, ...Array.from({ length: blocks }, () => block), Buffer.alloc(4)]);
    expect(decompress('lz4', bomb(10)).equals(Buffer.alloc(640 * 1024))).toBe(true);
    expect(kafkaCodeOf(() => decompress('lz4', bomb(1100)))).toBe('CORRUPT_MESSAGE'); // 68.75 MiB
    expect(kafkaCodeOf(() => decompress('lz4', bomb(10), 600 * 1024))).toBe('CORRUPT_MESSAGE');
  });

  it('snappy: a block declaring more than the limit is refused before decoding', () => {
    const lying = Buffer.concat([hex('80808040'), hex('00')]); // declares 128 MiB
    expect(kafkaCodeOf(() => decompress('snappy', lying))).toBe('CORRUPT_MESSAGE');
    const xerial = compress('snappy', Buffer.alloc(100 * 1024));
    expect(kafkaCodeOf(() => decompress('snappy', xerial, 64 * 1024))).toBe('CORRUPT_MESSAGE');
  });

  it('gzip: a bomb is stopped at the limit', () => {
    const bomb = gzipSync(Buffer.alloc(8 * MiB));
    expect(bomb.length).toBeLessThan(16 * 1024);
    expect(kafkaCodeOf(() => decompress('gzip', bomb, MiB))).toBe('CORRUPT_MESSAGE');
  });
});

describe('compressed record batches', () => {
  function records(count: number): RecordInput[] {
    return Array.from({ length: count }, (_, i) => ({
      key: i % 5 === 0 ? null : Buffer.from(`key-${i % 17}`),
      value: i % 11 === 3 ? null : Buffer.from(`value-${i}-${'x'.repeat(i % 50)}`),
      headers: i % 3 === 0 ? [{ key: 'h', value: Buffer.from(String(i)) }, { key: 'n', value: null }] : [],
      timestamp: 1_700_000_000_000 + i,
    }));
  }

  for (const codec of CODECS) {
    for (const count of [1, 10_000]) {
      it(`${codec}: ${count} record(s) round-trip through encodeRecordBatch and decodeRecords`, () => {
        const input = records(count);
        const batch = encodeRecordBatch(input, { compression: codec, baseOffset: 100n });
        const header = readBatchHeader(batch);
        expect(header.attributes & COMPRESSION_MASK).toBe({ gzip: 1, snappy: 2, lz4: 3, zstd: 4 }[codec]);
        expect(header.recordsCount).toBe(count);
        if (count > 1) expect(batch.length).toBeLessThan(encodeRecordBatch(input).length / 2);
        const producerBatch = encodeRecordBatch(input, { compression: codec });
        expect(validateProducerBatch(producerBatch, { maxBatchBytes: 1 << 30, allowZstd: true, timestampType: 'CreateTime', timestampBeforeMaxMs: Infinity, timestampAfterMaxMs: Infinity, now: 0 }).recordCount).toBe(count); // CRC over the compressed bytes, every record walked
        const decoded = decodeRecords(batch);
        expect(decoded).toHaveLength(count);
        const bytes = (buffer: Buffer | null | undefined): string => (buffer === null || buffer === undefined ? '-' : buffer.toString('hex'));
        const headers = (list: readonly { key: string; value: Buffer | null }[] | undefined): string => (list ?? []).map((h) => `${h.key}=${bytes(h.value)}`).join(',');
        // One string per record: 10,000 separate expectations would be the slowest part of the test.
        expect(decoded.map((r) => `${r.offset} ${r.timestamp} ${bytes(r.key)} ${bytes(r.value)} ${headers(r.headers)}`)).toEqual(
          input.map((r, i) => `${100n + BigInt(i)} ${r.timestamp} ${bytes(r.key)} ${bytes(r.value)} ${headers(r.headers)}`),
        );
        // Views into one decompressed buffer, not into the batch.
        const backing = new Set(decoded.flatMap((record) => (record.value === null ? [] : [record.value.buffer])));
        expect(backing.size).toBe(1);
        expect(backing.has(batch.buffer)).toBe(false);
      });
    }
  }

  it('compression none builds the same bytes as no compression option', () => {
    const input = records(20);
    expect(encodeRecordBatch(input, { compression: 'none' }).equals(encodeRecordBatch(input))).toBe(true);
  });

  it('decodes a batch among others at a position', () => {
    const first = encodeRecordBatch(records(3), { compression: 'lz4' });
    const second = encodeRecordBatch(records(4), { compression: 'zstd', baseOffset: 3n });
    const both = Buffer.concat([first, second]);
    expect(decodeRecords(both, first.length).map((r) => r.offset)).toEqual([3n, 4n, 5n, 6n]);
  });

  function withSection(codec: CompressionName, section: Buffer, recordsCount: number): Buffer {
    const template = encodeRecordBatch(records(1), { compression: codec });
    const batch = Buffer.concat([template.subarray(0, 61), section]);
    batch.writeInt32BE(batch.length - 12, 8);
    batch.writeInt32BE(recordsCount, 57);
    batch.writeInt32BE(recordsCount - 1, 23);
    writeBatchCrc(batch);
    return batch;
  }

  for (const codec of CODECS) {
    it(`${codec}: a damaged blob or a record count that does not match is CORRUPT_MESSAGE`, () => {
      expect(kafkaCodeOf(() => decodeRecords(withSection(codec, Buffer.from('garbage garbage garbage'), 1)))).toBe('CORRUPT_MESSAGE');
      const plain = encodeRecordBatch(records(5)).subarray(61);
      expect(decodeRecords(withSection(codec, compress(codec, plain), 5))).toHaveLength(5);
      expect(kafkaCodeOf(() => decodeRecords(withSection(codec, compress(codec, plain), 4)))).toBe('CORRUPT_MESSAGE');
      expect(kafkaCodeOf(() => decodeRecords(withSection(codec, compress(codec, plain), 6)))).toBe('CORRUPT_MESSAGE');
    });

    it(`${codec}: decodeRecords enforces maxDecompressedBytes`, () => {
      const batch = encodeRecordBatch(records(2000), { compression: codec });
      expect(decodeRecords(batch)).toHaveLength(2000);
      expect(kafkaCodeOf(() => decodeRecords(batch, 0, { maxDecompressedBytes: 10_000 }))).toBe('CORRUPT_MESSAGE');
    });
  }
});
