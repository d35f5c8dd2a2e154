/**
 * Avro object container files (Avro specification 1.12, "Object Container Files"), written by hand
 * so that the bytes depend only on the records and the options:
 *
 *   magic     4 bytes    4f 62 6a 01                      "Obj" then version 1
 *   metadata  map<bytes> in Avro binary:
 *               { count: long, count × { key: string, value: bytes } } …  then count 0
 *               (long = zigzag varint; string and bytes = length as long, then the bytes)
 *             written as one block of entries, in this order:
 *               avro.schema   the writer schema, JSON text (UTF-8)
 *               avro.codec    null | deflate | snappy | zstandard
 *               the caller's keys, in sorted order
 *   sync      16 bytes   the file's sync marker (the caller's; never random)
 *   blocks    { count: long        records in the block
 *               size: long         bytes of data
 *               data: size bytes   the records' Avro binary encodings back to back, compressed
 *                                  whole by the codec (avro-codecs.ts)
 *               sync: 16 bytes     the marker again } …
 *
 * A block is closed once its serialized records reach BLOCK_TARGET_BYTES (Java's default sync
 * interval), so readers can split and skip a file without reading it whole.
 */
import { promisify } from 'node:util';
import { deflateRaw } from 'node:zlib';
import avro from 'avsc';
import type { Type } from 'avsc';
import { compressAvroBlock, decompressAvroBlock, type AvroCodecName } from './avro-codecs.js';
import { dataFileError, describeThrown } from './errors.js';
import { minimumEncodedBytes } from './avro-sizes.js';
import { EncodingBuffer } from './encoding-buffer.js';
import { parseDataFileSchema, schemaJsonOf } from './schema-types.js';

export const AVRO_MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]);
export const SYNC_MARKER_BYTES = 16;
export const BLOCK_TARGET_BYTES = 64 * 1024;
/** Largest block a reader decompresses: far above what any writer's block of records reaches. */
const MAX_BLOCK_BYTES = 256 * 1024 * 1024;
/** Records of a schema that encodes to zero bytes (only nulls, empty records) cannot be bounded by size. */
const MAX_ZERO_BYTE_RECORDS_PER_BLOCK = 1_000_000;

export const AVRO_SCHEMA_KEY = 'avro.schema';
export const AVRO_CODEC_KEY = 'avro.codec';
const AVRO_CODECS: readonly AvroCodecName[] = ['null', 'deflate', 'snappy', 'zstandard'];

const HEADER_TYPE = avro.Type.forSchema(
  {
    type: 'record',
    name: 'org.apache.avro.file.Header',
    fields: [
      { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
      { name: 'meta', type: { type: 'map', values: 'bytes' } },
      { name: 'sync', type: { type: 'fixed', name: 'Sync', size: SYNC_MARKER_BYTES } },
    ],
  },
  { registry: {} },
);
const LONG_TYPE = avro.Type.forSchema('long');

export interface AvroContainerOptions {
  readonly codec: AvroCodecName;
  readonly syncMarker: Buffer;
  /** Extra metadata; keys must not start with `avro.` (reserved by the specification). */
  readonly metadata: Readonly<Record<string, string>>;
  /**
   * The schema as the header states it, when it carries attributes avsc does not keep (Iceberg's
   * field ids on manifests); it must describe `type`. Default: the type's own schema.
   */
  readonly schemaJson?: unknown;
}

/** Writes `records` (each already checked valid for `type`) as one container file. */
export function writeAvroContainer(type: Type, records: readonly unknown[], options: AvroContainerOptions): Buffer {
  const blocks: Buffer[] = [];
  const writer = new AvroBlockWriter(type, options, (chunk) => blocks.push(chunk));
  for (const record of records) void writer.append(record); // synchronous: no compressOffThread
  writer.flush();
  return Buffer.concat([avroContainerHeader(type, options), ...blocks]);
}

/** The header: magic, metadata (schema, codec, the caller's keys sorted), sync marker. */
export function avroContainerHeader(type: Type, options: AvroContainerOptions): Buffer {
  checkSyncMarker(options.syncMarker);
  const meta: Record<string, Buffer> = {
    [AVRO_SCHEMA_KEY]: Buffer.from(JSON.stringify(options.schemaJson ?? schemaJsonOf(type)), 'utf8'),
    [AVRO_CODEC_KEY]: Buffer.from(options.codec, 'utf8'),
  };
  for (const key of Object.keys(options.metadata).sort()) meta[key] = Buffer.from(options.metadata[key] ?? '', 'utf8');
  return HEADER_TYPE.toBuffer({ magic: AVRO_MAGIC, meta, sync: options.syncMarker });
}

/**
 * The blocks of a container file, written as they fill: each closed block (count, size, data,
 * sync) goes to `emit` as one Buffer the writer never touches again. The header comes apart
 * (avroContainerHeader), because its metadata may name what only the last record tells (the
 * offsets a file holds), while the blocks only need the sync marker.
 */
/** Blocks a writer has waiting for compression before `append` makes the caller wait. */
const BLOCKS_IN_FLIGHT = 2;
/**
 * Compressions running at once in the process: libuv's pool has 4 threads, and each running
 * deflate holds ~270 KiB of zlib state, so a load with a hundred open files must not start one per block.
 */
const COMPRESSIONS_AT_ONCE = 4;

export class AvroBlockWriter {
  private readonly block = new EncodingBuffer(2 * BLOCK_TARGET_BYTES);
  /** Blocks being compressed off the main thread, oldest first; each emits in turn when done. */
  private readonly inFlight: Promise<void>[] = [];
  private emitted: Promise<void> = Promise.resolve();
  private blockRecords = 0;
  /** Bytes emitted so far (closed blocks). */
  emittedBytes = 0;
  records = 0;

  /**
   * `compressOffThread`: deflate blocks on libuv's thread pool (the second core) rather than here;
   * the blocks come out the same and in order, but `emittedBytes` then lags the records appended,
   * so it is only for callers that do not cut files by size.
   */
  constructor(
    private readonly type: Type,
    private readonly options: Pick<AvroContainerOptions, 'codec' | 'syncMarker'> & { readonly compressOffThread?: boolean },
    private readonly emit: (chunk: Buffer) => void,
  ) {
    checkSyncMarker(options.syncMarker);
  }

  /** Adds one record (already checked valid for the type); closes the block once it is full. A Promise when blocks wait to be compressed. */
  append(record: unknown): void | Promise<void> {
    this.block.append(this.type, record);
    this.blockRecords += 1;
    this.records += 1;
    if (this.block.length >= BLOCK_TARGET_BYTES) return this.closeBlock();
    return undefined;
  }

  /** Closes the open block, if it holds records: call once after the last record. */
  flush(): void {
    if (this.blockRecords > 0) void this.closeBlock();
  }

  /** Closes the open block and waits until every block is emitted. */
  async settle(): Promise<void> {
    this.flush();
    await this.emitted;
  }

  private closeBlock(): void | Promise<void> {
    const count = this.blockRecords;
    this.blockRecords = 0;
    if (this.options.compressOffThread === true && this.options.codec === 'deflate') {
      const serialized = Buffer.from(this.block.view());
      this.block.clear();
      const compressed = deflateRawOffThread(serialized);
      const done = (this.emitted = Promise.all([this.emitted, compressed]).then(([, bytes]) => this.emitBlock(count, bytes)));
      done.catch(() => undefined); // seen by the next append or settle
      this.inFlight.push(done);
      if (this.inFlight.length < BLOCKS_IN_FLIGHT) return undefined;
      return this.inFlight.shift();
    }
    const compressed = compressAvroBlock(this.options.codec, this.block.view());
    // Copied out by emitBlock: the null codec hands back the scratch bytes themselves.
    this.emitBlock(count, compressed);
    this.block.clear();
    return undefined;
  }

  private emitBlock(records: number, compressed: Buffer): void {
    const chunk = Buffer.concat([LONG_TYPE.toBuffer(records), LONG_TYPE.toBuffer(compressed.length), compressed, this.options.syncMarker]);
    this.emittedBytes += chunk.length;
    this.emit(chunk);
  }
}

const deflateRawAsync = promisify(deflateRaw);
let compressing = 0;
const waitingToCompress: (() => void)[] = [];

async function deflateRawOffThread(block: Buffer): Promise<Buffer> {
  // A finishing compression hands its slot to the first waiter, so the count never passes the limit.
  if (compressing >= COMPRESSIONS_AT_ONCE) await new Promise<void>((resolve) => waitingToCompress.push(resolve));
  else compressing += 1;
  try {
    return await deflateRawAsync(block);
  } finally {
    const next = waitingToCompress.shift();
    if (next === undefined) compressing -= 1;
    else next();
  }
}

function checkSyncMarker(marker: Buffer): void {
  if (marker.length !== SYNC_MARKER_BYTES) throw new RangeError(`a sync marker has ${SYNC_MARKER_BYTES} bytes, not ${marker.length}`);
}

export interface AvroContainerContents {
  readonly schemaJson: unknown;
  readonly codec: AvroCodecName;
  /** Every metadata entry, `avro.*` included, as UTF-8 text. */
  readonly metadata: Record<string, string>;
  readonly syncMarker: Buffer;
  readonly records: unknown[];
}

/**
 * Reads a whole container file; anything malformed is DATA_FILE_CORRUPT naming the byte. `typeOf`
 * builds the reading type from the header's schema (default: the data files' conventions).
 */
export function readAvroContainer(bytes: Buffer, typeOf: (schemaJson: unknown) => Type = parseDataFileSchema): AvroContainerContents {
  if (bytes.length < AVRO_MAGIC.length || !bytes.subarray(0, AVRO_MAGIC.length).equals(AVRO_MAGIC)) {
    throw corrupt(`does not start with the magic 4f 62 6a 01 ("Obj" 1) but ${bytes.subarray(0, AVRO_MAGIC.length).toString('hex') || 'nothing'}`);
  }
  let header: { value: { meta: Record<string, Buffer>; sync: Buffer }; offset: number };
  try {
    header = HEADER_TYPE.decode(bytes, 0);
  } catch (error) {
    throw corrupt(`has a malformed header: ${describeThrown(error)}`, error);
  }
  if (header.offset < 0) throw corrupt(`ends inside its header (${bytes.length} bytes)`);
  const metadata = Object.fromEntries(Object.entries(header.value.meta).map(([key, value]) => [key, value.toString('utf8')]));
  const codec = metadata[AVRO_CODEC_KEY] ?? 'null';
  if (!isAvroCodec(codec)) throw corrupt(`uses codec ${JSON.stringify(codec)}; this reader knows ${AVRO_CODECS.join(', ')}`);
  const schemaText = metadata[AVRO_SCHEMA_KEY];
  if (schemaText === undefined) throw corrupt(`has no ${AVRO_SCHEMA_KEY} in its metadata`);
  let type: Type;
  let schemaJson: unknown;
  try {
    schemaJson = JSON.parse(schemaText);
    type = typeOf(schemaJson);
  } catch (error) {
    throw corrupt(`has an ${AVRO_SCHEMA_KEY} that is not a valid Avro schema: ${describeThrown(error)}`, error);
  }
  const syncMarker = Buffer.from(header.value.sync);
  const minimumRecordBytes = minimumEncodedBytes(type);

  const records: unknown[] = [];
  let position = header.offset;
  while (position < bytes.length) {
    const blockStart = position;
    const count = readLong(bytes, position, 'record count');
    const size = readLong(bytes, count.offset, 'block size');
    position = size.offset;
    if (count.value < 0 || size.value < 0) throw corrupt(`block at byte ${blockStart} declares ${count.value} records in ${size.value} bytes`);
    if (position + size.value + SYNC_MARKER_BYTES > bytes.length) {
      throw corrupt(`block at byte ${blockStart} declares ${size.value} bytes and a sync marker; ${bytes.length - position} bytes remain`);
    }
    const data = bytes.subarray(position, position + size.value);
    position += size.value;
    if (!bytes.subarray(position, position + SYNC_MARKER_BYTES).equals(syncMarker)) throw corrupt(`block at byte ${blockStart} does not end with the file's sync marker`);
    position += SYNC_MARKER_BYTES;
    const block = decompressAvroBlock(codec, data, MAX_BLOCK_BYTES);
    const fits = minimumRecordBytes === 0 ? count.value <= MAX_ZERO_BYTE_RECORDS_PER_BLOCK : count.value * minimumRecordBytes <= block.length;
    if (!fits) throw corrupt(`block at byte ${blockStart} declares ${count.value} records, more than its ${block.length} bytes can hold`);
    let at = 0;
    for (let index = 0; index < count.value; index += 1) {
      let decoded: { value: unknown; offset: number };
      try {
        decoded = type.decode(block, at);
      } catch (error) {
        throw corrupt(`block at byte ${blockStart}: record ${index} cannot be decoded: ${describeThrown(error)}`, error);
      }
      if (decoded.offset < 0) throw corrupt(`block at byte ${blockStart} ends inside record ${index} of ${count.value}`);
      records.push(decoded.value);
      at = decoded.offset;
    }
    if (at !== block.length) throw corrupt(`block at byte ${blockStart} has ${block.length - at} bytes after its ${count.value} records`);
  }
  return { schemaJson, codec, metadata, syncMarker, records };
}

function readLong(bytes: Buffer, position: number, what: string): { value: number; offset: number } {
  let decoded: { value: unknown; offset: number };
  try {
    decoded = LONG_TYPE.decode(bytes, position);
  } catch (error) {
    throw corrupt(`has a malformed ${what} at byte ${position}: ${describeThrown(error)}`, error);
  }
  if (decoded.offset < 0) throw corrupt(`ends inside a ${what} at byte ${position}`);
  return { value: decoded.value as number, offset: decoded.offset };
}

function isAvroCodec(name: string): name is AvroCodecName {
  return (AVRO_CODECS as readonly string[]).includes(name);
}

function corrupt(what: string, cause?: unknown): Error {
  return dataFileError('DATA_FILE_CORRUPT', `Avro container file ${what}`, {}, cause);
}
