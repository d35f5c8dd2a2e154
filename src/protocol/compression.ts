/**
 * The compression codecs of RecordBatch v2: what goes in the Records section (from byte 61) of a
 * batch whose Attributes bits 0–2 name a codec. That section is ONE compressed blob of the records
 * back to back; RecordsCount stays uncompressed in the header. Everything here is synchronous.
 *
 * Wire formats, as Kafka's Java client and librdkafka write them:
 *
 *   1 gzip    RFC 1952 gzip (one or more members), as java.util.zip.GZIPOutputStream writes it.
 *             node:zlib, default level.
 *
 *   2 snappy  Java writes snappy-java's ("xerial") framing:
 *               magic   8 bytes  82 53 4e 41 50 50 59 00   ("\x82SNAPPY\0")
 *               version int32    1
 *               compat  int32    1
 *               chunks  { length int32 (big-endian), raw snappy block of that many bytes } …
 *             each raw block = uncompressed length (unsigned varint) + snappy elements. librdkafka
 *             writes one raw snappy block without the framing; both are read (a raw block cannot
 *             start with the magic: its first element would be a copy with nothing to copy from).
 *             We write the xerial framing with 32 KiB input chunks, as Java does.
 *
 *   3 lz4     The LZ4 *frame* format, with a correct header checksum (Kafka's magic-0 message sets
 *             used a broken one; those are not accepted):
 *               magic   uint32 LE 0x184D2204
 *               FLG     int8      version 01, block independence, block/content checksum, content
 *                                 size and dictionary flags
 *               BD      int8      block maximum size (4: 64 KiB … 7: 4 MiB)
 *               [content size uint64 LE] [dictionary id uint32 LE]
 *               HC      int8      (xxh32(descriptor) >> 8) & 0xff
 *               blocks  { size uint32 LE (high bit: stored uncompressed; 0 = end mark), data,
 *                         [xxh32 uint32 if block checksums] } … , [content xxh32 if content checksum]
 *             Skippable frames (magic 0x184D2A5x) are skipped. We write independent 64 KiB blocks
 *             without checksums or content size: what Kafka's KafkaLZ4BlockOutputStream writes.
 *
 *   4 zstd    Zstandard frames (RFC 8878), one or more, skippable frames allowed:
 *               magic   uint32 LE 0xFD2FB528
 *               header  descriptor int8, [window descriptor int8], [dictionary id], [content size]
 *               blocks  { header 3 bytes LE: last bit, type (raw / RLE / compressed), size } …
 *               [content checksum uint32]
 *             Level 3 (the zstd and Kafka default).
 *
 * Decompression is bounded: before a codec library allocates anything, the framing is walked here
 * to size the output (LZ4: the block maximum per compressed block, and exactly, from the block's
 * sequence lengths, only for blocks where that bound would pass the limit; zstd: declared content
 * sizes, else raw/RLE block sizes plus the block maximum for each compressed block, so a zstd blob
 * within one 128 KiB block of the limit may be refused; snappy: each block's declared length), and
 * output beyond `maxOutputBytes` is refused, as is malformed input — always with KafkaProtocolError
 * CORRUPT_MESSAGE, never another exception type. gzip is stopped by zlib at the limit.
 *
 * Libraries (prebuilt Node-API binaries delivered through npm optionalDependencies; no compiler):
 * snappy (napi-rs, raw blocks), lz4-napi (lz4_flex, LZ4 frames), @toondepauw/node-zstd (libzstd).
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import type ZstdModule from '@toondepauw/node-zstd';
import type Lz4Module from 'lz4-napi';
import type SnappyModule from 'snappy';
import { KafkaProtocolError } from './kafka-errors.js';
import type { CompressionName } from './record-batch.js';

// The native codecs load on first use, so a process that never meets a codec never loads it
// (and a platform without its prebuilt binary fails only when that codec is needed).
const requireNative = createRequire(import.meta.url);
let lz4Module: typeof Lz4Module | undefined;
let snappyModule: typeof SnappyModule | undefined;
let zstdCodec: { encoder: InstanceType<typeof ZstdModule.Encoder>; decoder: InstanceType<typeof ZstdModule.Decoder> } | undefined;
const lz4 = (): typeof Lz4Module => (lz4Module ??= requireNative('lz4-napi') as typeof Lz4Module);
const snappy = (): typeof SnappyModule => (snappyModule ??= requireNative('snappy') as typeof SnappyModule);

/** Default ceiling on what one compressed blob may decompress to. */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

const CODEC_NAMES: readonly CompressionName[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

/** The codec name for the Attributes bits 0–2; UNSUPPORTED_COMPRESSION_TYPE for 5–7. */
export function compressionName(codec: number): CompressionName {
  const name = CODEC_NAMES[codec];
  if (name === undefined) {
    throw new KafkaProtocolError('UNSUPPORTED_COMPRESSION_TYPE', `unknown compression codec ${codec}; known are 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd`);
  }
  return name;
}

/** Compresses `data` (records back to back) into the Records section of a `codec` batch. */
export function compress(codec: CompressionName, data: Buffer): Buffer {
  switch (codec) {
    case 'none':
      return data;
    case 'gzip':
      return gzipSync(data);
    case 'snappy':
      return snappyXerialCompress(data);
    case 'lz4':
      return lz4().compressFrameSync(data);
    case 'zstd':
      return zstd().encoder.encodeSync(data);
  }
}

/**
 * Decompresses the Records section of a batch compressed with `codec` (a name, or the Attributes
 * codec number). Refuses output larger than `maxOutputBytes` and malformed input with
 * KafkaProtocolError CORRUPT_MESSAGE; an unknown codec number is UNSUPPORTED_COMPRESSION_TYPE.
 */
export function decompress(codec: CompressionName | number, data: Buffer, maxOutputBytes = DEFAULT_MAX_DECOMPRESSED_BYTES): Buffer {
  const name = typeof codec === 'number' ? compressionName(codec) : codec;
  if (!Number.isSafeInteger(maxOutputBytes) || maxOutputBytes < 0) throw new RangeError(`maxOutputBytes must be a non-negative integer, not ${maxOutputBytes}`);
  if (name === 'none') {
    if (data.length > maxOutputBytes) throw tooLarge(name, maxOutputBytes);
    return data;
  }
  let output: Buffer;
  try {
    switch (name) {
      case 'gzip':
        output = gunzip(data, maxOutputBytes);
        break;
      case 'snappy':
        output = snappyDecompress(data, maxOutputBytes);
        break;
      case 'lz4':
        output = lz4Decompress(data, maxOutputBytes);
        break;
      case 'zstd':
        output = zstdDecompress(data, maxOutputBytes);
        break;
    }
  } catch (error) {
    if (error instanceof KafkaProtocolError) throw error;
    throw new KafkaProtocolError('CORRUPT_MESSAGE', `${name} data could not be decompressed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
      details: { codec: name, compressedBytes: data.length },
    });
  }
  if (output.length > maxOutputBytes) throw tooLarge(name, maxOutputBytes);
  return output;
}

function corrupt(codec: CompressionName, message: string): KafkaProtocolError {
  return new KafkaProtocolError('CORRUPT_MESSAGE', `${codec} data is malformed: ${message}`, { details: { codec } });
}

function tooLarge(codec: CompressionName, limit: number, bound?: number): KafkaProtocolError {
  return new KafkaProtocolError(
    'CORRUPT_MESSAGE',
    `${codec} data would decompress to ${bound === undefined ? 'more than' : `up to ${bound} bytes, more than`} the limit of ${limit} bytes`,
    { details: { codec, limit, ...(bound === undefined ? {} : { bound }) } },
  );
}

// ---- gzip ----------------------------------------------------------------------------------

function gunzip(data: Buffer, limit: number): Buffer {
  try {
    // zlib stops and throws once the output passes maxOutputLength (which must be ≥ 1).
    return gunzipSync(data, { maxOutputLength: Math.max(1, limit) });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge('gzip', limit);
    throw error;
  }
}

// ---- snappy --------------------------------------------------------------------------------

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_SIZE = 16;
const XERIAL_CHUNK_SIZE = 32 * 1024;

function snappyXerialCompress(data: Buffer): Buffer {
  const parts: Buffer[] = [XERIAL_MAGIC, Buffer.from([0, 0, 0, 1, 0, 0, 0, 1])];
  for (let position = 0; position < data.length; position += XERIAL_CHUNK_SIZE) {
    const block = snappy().compressSync(data.subarray(position, position + XERIAL_CHUNK_SIZE));
    const length = Buffer.alloc(4);
    length.writeInt32BE(block.length);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

function snappyDecompress(data: Buffer, limit: number): Buffer {
  if (data.length < XERIAL_MAGIC.length || !data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) return snappyBlock(data, limit);
  if (data.length < XERIAL_HEADER_SIZE) throw corrupt('snappy', `xerial header truncated at ${data.length} bytes`);
  const blocks: Buffer[] = [];
  let total = 0;
  let position = XERIAL_HEADER_SIZE;
  while (position < data.length) {
    if (position + 4 > data.length) throw corrupt('snappy', `xerial chunk length truncated at byte ${position}`);
    const length = data.readInt32BE(position);
    const end = position + 4 + length;
    if (length < 0 || end > data.length) throw corrupt('snappy', `xerial chunk at byte ${position} declares ${length} bytes, ${data.length - position - 4} remain`);
    const block = snappyBlock(data.subarray(position + 4, end), limit - total);
    blocks.push(block);
    total += block.length;
    position = end;
  }
  return Buffer.concat(blocks, total);
}

/** One raw snappy block; its leading varint (the uncompressed length) is checked before decoding. */
function snappyBlock(block: Buffer, limit: number): Buffer {
  let declared = 0;
  let position = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = block[position];
    if (byte === undefined || shift > 28) throw corrupt('snappy', 'block length varint is truncated or too long');
    declared += (byte & 0x7f) * 2 ** shift;
    position += 1;
    if ((byte & 0x80) === 0) break;
  }
  if (declared > limit) throw tooLarge('snappy', limit, declared);
  const output = snappy().uncompressSync(block);
  if (typeof output === 'string') throw corrupt('snappy', 'decoder returned a string');
  if (output.length !== declared) throw corrupt('snappy', `block declares ${declared} bytes but holds ${output.length}`);
  return output;
}

// ---- lz4 -----------------------------------------------------------------------------------

const LZ4_FRAME_MAGIC = 0x184d2204;
const SKIPPABLE_MAGIC_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const LZ4_BLOCK_MAX_SIZES = new Map([
  [4, 64 * 1024],
  [5, 256 * 1024],
  [6, 1024 * 1024],
  [7, 4 * 1024 * 1024],
]);

function lz4Decompress(data: Buffer, limit: number): Buffer {
  const frames: Lz4Frame[] = [];
  let bound = 0;
  let position = 0;
  while (position < data.length) {
    if (position + 4 > data.length) throw corrupt('lz4', `${data.length - position} stray bytes after the last frame`);
    const magic = data.readUInt32LE(position);
    if ((magic & SKIPPABLE_MAGIC_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      position = skipSkippableFrame('lz4', data, position);
      continue;
    }
    if (magic !== LZ4_FRAME_MAGIC) throw corrupt('lz4', `frame at byte ${position} has magic 0x${magic.toString(16)}, not 0x184d2204 (an LZ4 frame)`);
    const start = position;
    const need = (count: number, what: string): void => {
      if (position + count > data.length) throw corrupt('lz4', `${what} truncated at byte ${position}`);
    };
    need(7, 'frame descriptor');
    const flg = data.readUInt8(position + 4);
    const bd = data.readUInt8(position + 5);
    position += 6;
    if (flg >> 6 !== 1) throw corrupt('lz4', `frame version ${flg >> 6}, expected 1`);
    if ((flg & 0x02) !== 0 || (bd & 0x8f) !== 0) throw corrupt('lz4', 'reserved frame descriptor bits are set');
    if ((flg & 0x01) !== 0) throw corrupt('lz4', 'frame needs a dictionary, which Kafka never uses');
    const blockMaxSize = LZ4_BLOCK_MAX_SIZES.get((bd >> 4) & 0x07);
    if (blockMaxSize === undefined) throw corrupt('lz4', `block maximum size id ${(bd >> 4) & 0x07} is not 4–7`);
    const blockChecksums = (flg & 0x10) !== 0;
    const contentChecksum = (flg & 0x04) !== 0;
    let contentSize: number | undefined;
    if ((flg & 0x08) !== 0) {
      need(9, 'content size');
      const size = data.readBigUInt64LE(position);
      if (size > BigInt(limit - bound)) throw tooLarge('lz4', limit, Number(size) + bound);
      contentSize = Number(size);
      position += 8;
    }
    const headerChecksum = data.readUInt8(position);
    // Independent blocks without checksums or a content size (what Kafka's and librdkafka's
    // producers write) are decoded block by block, which skips the frame decoder's fixed cost;
    // the header checksum is then checked here, as a consumer's decoder will check it.
    const byBlocks = (flg & 0x20) !== 0 && (flg & 0x1c) === 0;
    if (byBlocks && headerChecksum !== ((xxh32(data.subarray(start + 4, position)) >>> 8) & 0xff)) {
      throw corrupt('lz4', `frame at byte ${start} has a wrong header checksum`);
    }
    position += 1;
    const blocks: Lz4Block[] = [];
    let frameBound = 0;
    let frameExact = true;
    for (;;) {
      need(4, 'block size');
      const word = data.readUInt32LE(position);
      position += 4;
      if (word === 0) break;
      const size = word & 0x7fffffff;
      const stored = (word & 0x80000000) !== 0;
      if (size > blockMaxSize) throw corrupt('lz4', `block of ${size} bytes exceeds the frame's block maximum of ${blockMaxSize}`);
      need(size + (blockChecksums ? 4 : 0), 'block');
      // A compressed block yields at most the block maximum: that bound is free. Only where it
      // would pass the limit are the block's sequences walked for its exact size.
      let output = stored ? size : blockMaxSize;
      if (!stored && bound + frameBound + blockMaxSize > limit) {
        output = lz4BlockOutputSize(data, position, position + size);
        if (output > blockMaxSize) throw corrupt('lz4', `block at byte ${position - 4} decompresses to ${output} bytes, more than the frame's block maximum of ${blockMaxSize}`);
      } else if (!stored) {
        frameExact = false;
      }
      blocks.push({ start: position, size, stored });
      position += size + (blockChecksums ? 4 : 0);
      frameBound += output;
      if (bound + frameBound > limit) throw tooLarge('lz4', limit, bound + frameBound);
    }
    if (contentChecksum) {
      need(4, 'content checksum');
      position += 4;
    }
    if (contentSize !== undefined && (frameExact ? contentSize !== frameBound : contentSize > frameBound)) {
      throw corrupt('lz4', `frame declares ${contentSize} bytes but its blocks hold ${frameExact ? '' : 'at most '}${frameBound}`);
    }
    bound += frameBound;
    frames.push({ bytes: data.subarray(start, position), size: frameBound, exact: frameExact, blocks: byBlocks ? blocks : undefined, blockMaxSize });
  }
  if (frames.length === 0) throw corrupt('lz4', 'no LZ4 frame');
  const outputs = frames.flatMap((frame): Buffer[] => {
    const { size, exact } = frame;
    // lz4_flex decodes one frame per call and ignores what follows it: hence one call per frame.
    const parts = frame.blocks === undefined ? [lz4().decompressFrameSync(frame.bytes)] : lz4Blocks(data, frame.blocks, frame.blockMaxSize);
    let length = 0;
    for (const part of parts) length += part.length;
    if (exact ? length !== size : length > size) throw corrupt('lz4', `frame decoded to ${length} bytes, its blocks say ${exact ? '' : 'at most '}${size}`);
    return parts;
  });
  return outputs.length === 1 && outputs[0] !== undefined ? outputs[0] : Buffer.concat(outputs);
}

interface Lz4Block {
  readonly start: number;
  readonly size: number;
  readonly stored: boolean;
}

interface Lz4Frame {
  readonly bytes: Buffer;
  /** Bound on (or, when `exact`, the size of) the frame's output. */
  readonly size: number;
  readonly exact: boolean;
  /** Set when the frame is decoded block by block. */
  readonly blocks: readonly Lz4Block[] | undefined;
  readonly blockMaxSize: number;
}

/**
 * Independent blocks one by one: a stored block is its own output (copied), a compressed one goes
 * to lz4_flex's block decoder, whose input is the block behind its output capacity (uint32 LE;
 * the frame's block maximum — it refuses a block that would decode to more).
 */
function lz4Blocks(data: Buffer, blocks: readonly Lz4Block[], blockMaxSize: number): Buffer[] {
  return blocks.map(({ start, size, stored }) => {
    // A copy, as every decompressed output is: callers may keep records after the batch's buffer is reused.
    if (stored) return Buffer.from(data.subarray(start, start + size));
    const input = Buffer.allocUnsafe(4 + size);
    input.writeUInt32LE(blockMaxSize, 0);
    data.copy(input, 4, start, start + size);
    return lz4().uncompressSync(input);
  });
}

/** xxHash32 (seed 0) of a few bytes — the LZ4 frame header checksum covers 2 to 14 bytes. */
function xxh32(bytes: Buffer): number {
  const PRIME1 = 0x9e3779b1;
  const PRIME2 = 0x85ebca77;
  const PRIME3 = 0xc2b2ae3d;
  const PRIME4 = 0x27d4eb2f;
  const PRIME5 = 0x165667b1;
  const rotl = (value: number, bits: number): number => ((value << bits) | (value >>> (32 - bits))) >>> 0;
  if (bytes.length >= 16) throw new RangeError('xxh32 here serves inputs shorter than 16 bytes');
  let hash = (PRIME5 + bytes.length) >>> 0;
  let position = 0;
  for (; position + 4 <= bytes.length; position += 4) {
    hash = (hash + Math.imul(bytes.readUInt32LE(position), PRIME3)) >>> 0;
    hash = Math.imul(rotl(hash, 17), PRIME4) >>> 0;
  }
  for (; position < bytes.length; position += 1) {
    hash = (hash + Math.imul(bytes[position] as number, PRIME5)) >>> 0;
    hash = Math.imul(rotl(hash, 11), PRIME1) >>> 0;
  }
  hash ^= hash >>> 15;
  hash = Math.imul(hash, PRIME2) >>> 0;
  hash ^= hash >>> 13;
  hash = Math.imul(hash, PRIME3) >>> 0;
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/**
 * The exact output size of the LZ4 block in `data[start, end)`, from its sequence lengths alone:
 * each sequence is a token (literal length, match length − 4, 4 bits each, 15 = more length bytes
 * follow, each adding up to 255), the literals, a 2-byte match offset and the extra match length
 * bytes; the last sequence has literals only and ends the block. Nothing is copied.
 */
function lz4BlockOutputSize(data: Buffer, start: number, end: number): number {
  let output = 0;
  let position = start;
  const length = (nibble: number): number => {
    let total = nibble;
    if (nibble === 15) {
      for (;;) {
        const byte = data[position];
        if (byte === undefined || position >= end) throw corrupt('lz4', 'block ends inside a sequence length');
        position += 1;
        total += byte;
        if (byte !== 255) break;
      }
    }
    return total;
  };
  for (;;) {
    const token = data[position];
    if (token === undefined || position >= end) throw corrupt('lz4', 'block ends before its last sequence');
    position += 1;
    const literals = length(token >> 4);
    position += literals;
    output += literals;
    if (position === end) return output;
    if (position + 2 > end) throw corrupt('lz4', 'block ends inside a sequence');
    if (data.readUInt16LE(position) === 0) throw corrupt('lz4', 'match offset 0');
    position += 2;
    output += length(token & 0x0f) + 4;
  }
}

function skipSkippableFrame(codec: CompressionName, data: Buffer, position: number): number {
  if (position + 8 > data.length) throw corrupt(codec, `skippable frame header truncated at byte ${position}`);
  const end = position + 8 + data.readUInt32LE(position + 4);
  if (end > data.length) throw corrupt(codec, `skippable frame at byte ${position} runs past the end`);
  return end;
}

// ---- zstd ----------------------------------------------------------------------------------

const ZSTD_FRAME_MAGIC = 0xfd2fb528;
const ZSTD_BLOCK_MAX_SIZE = 128 * 1024;
/** Decoders should support windows up to 8 MiB (RFC 8878 §3.1.1.1.2); larger ones must fit the limit. */
const ZSTD_MIN_WINDOW_ALLOWANCE = 8 * 1024 * 1024;
const ZSTD_LEVEL = 3;
function zstd(): NonNullable<typeof zstdCodec> {
  if (zstdCodec === undefined) {
    const module = requireNative('@toondepauw/node-zstd') as typeof ZstdModule;
    zstdCodec = { encoder: new module.Encoder(ZSTD_LEVEL), decoder: new module.Decoder() };
  }
  return zstdCodec;
}

function zstdDecompress(data: Buffer, limit: number): Buffer {
  let bound = 0;
  let frames = 0;
  let position = 0;
  while (position < data.length) {
    if (position + 4 > data.length) throw corrupt('zstd', `${data.length - position} stray bytes after the last frame`);
    const magic = data.readUInt32LE(position);
    if ((magic & SKIPPABLE_MAGIC_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      position = skipSkippableFrame('zstd', data, position);
      continue;
    }
    if (magic !== ZSTD_FRAME_MAGIC) throw corrupt('zstd', `frame at byte ${position} has magic 0x${magic.toString(16)}, not 0xfd2fb528 (a zstd frame)`);
    frames += 1;
    position += 4;
    const need = (count: number, what: string): void => {
      if (position + count > data.length) throw corrupt('zstd', `${what} truncated at byte ${position}`);
    };
    need(1, 'frame header');
    const descriptor = data.readUInt8(position);
    position += 1;
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor & 0x20) !== 0;
    if ((descriptor & 0x08) !== 0) throw corrupt('zstd', 'reserved frame header bit is set');
    const checksum = (descriptor & 0x04) !== 0;
    const dictionaryIdSize = [0, 1, 2, 4][descriptor & 0x03] ?? 0;
    let windowSize: number | undefined;
    if (!singleSegment) {
      need(1, 'window descriptor');
      const window = data.readUInt8(position);
      position += 1;
      const base = 2 ** (10 + (window >> 3));
      windowSize = base + (base / 8) * (window & 0x07);
    }
    need(dictionaryIdSize, 'dictionary id');
    if (dictionaryIdSize > 0 && data.readUIntLE(position, dictionaryIdSize) !== 0) throw corrupt('zstd', 'frame needs a dictionary, which Kafka never uses');
    position += dictionaryIdSize;
    const contentSizeBytes = contentSizeFlag === 0 ? (singleSegment ? 1 : 0) : 2 ** contentSizeFlag;
    let contentSize: number | undefined;
    if (contentSizeBytes > 0) {
      need(contentSizeBytes, 'content size');
      const size =
        contentSizeBytes === 8 ? data.readBigUInt64LE(position) : BigInt(data.readUIntLE(position, contentSizeBytes) + (contentSizeBytes === 2 ? 256 : 0));
      if (size > BigInt(limit - bound)) throw tooLarge('zstd', limit, Number(size) + bound);
      contentSize = Number(size);
      position += contentSizeBytes;
    }
    const window = windowSize ?? contentSize ?? 0;
    if (Math.min(window, contentSize ?? window) > Math.max(limit, ZSTD_MIN_WINDOW_ALLOWANCE)) {
      throw corrupt('zstd', `window of ${window} bytes is larger than this decoder allows`);
    }
    const blockMaxSize = Math.min(window, ZSTD_BLOCK_MAX_SIZE);
    let frameBound = 0;
    for (let last = false; !last; ) {
      need(3, 'block header');
      const header = data.readUIntLE(position, 3);
      position += 3;
      last = (header & 1) === 1;
      const type = (header >> 1) & 0x03;
      const size = header >>> 3;
      if (type === 3) throw corrupt('zstd', `reserved block type at byte ${position - 3}`);
      if (size > blockMaxSize) throw corrupt('zstd', `block of ${size} bytes exceeds the frame's block maximum of ${blockMaxSize}`);
      const stored = type === 1 ? 1 : size; // RLE: one byte repeated `size` times
      need(stored, 'block');
      position += stored;
      frameBound += type === 2 ? blockMaxSize : size;
      if (bound + Math.min(frameBound, contentSize ?? frameBound) > limit) throw tooLarge('zstd', limit, bound + frameBound);
    }
    if (checksum) {
      need(4, 'content checksum');
      position += 4;
    }
    bound += Math.min(frameBound, contentSize ?? frameBound);
  }
  if (frames === 0) throw corrupt('zstd', 'no zstd frame');
  return zstd().decoder.decodeSync(data);
}
