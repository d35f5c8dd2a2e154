/**
 * One Parquet row group from its rows' Avro encodings: decode the rows, shred them into leaf
 * columns (parquet-schema.ts), and have hyparquet-writer's column writer encode each column chunk
 * (dictionary or plain pages, levels, statistics, compression) at the file offset the group
 * starts at. Pure computation on bytes, so it runs the same inline or in a worker thread
 * (parquet-encoder.ts): same rows, same offset, same bytes.
 */
import type { Type } from 'avsc';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import type { ColumnChunk, CompressionCodec, RowGroup, SchemaElement } from 'hyparquet';
import { ByteWriter } from 'hyparquet-writer';
import { writeColumn } from 'hyparquet-writer/src/column.js';
import type { ColumnEncoder, PageIndexes } from 'hyparquet-writer/src/types.js';
import type SnappyModule from 'snappy';
import { TributaryError } from '../../common/errors.js';
import { compress } from '../../protocol/compression.js';
import { dataFileError, describeThrown } from './errors.js';
import type { ParquetRecordPlan } from './parquet-schema.js';

/** parquet-mr's defaults: parquet.page.size, parquet.dictionary.page.size. */
const PAGE_BYTES = 1024 * 1024;
const DICTIONARY_BYTES = 1024 * 1024;

// The native codecs load on first use, as in protocol/compression.ts.
const requireNative = createRequire(import.meta.url);
let snappyModule: typeof SnappyModule | undefined;
const snappy = (): typeof SnappyModule => (snappyModule ??= requireNative('snappy') as typeof SnappyModule);
export const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const COMPRESSORS = {
  SNAPPY: (bytes: Uint8Array): Uint8Array => snappy().compressSync(asBuffer(bytes)),
  GZIP: (bytes: Uint8Array): Uint8Array => gzipSync(bytes),
  ZSTD: (bytes: Uint8Array): Uint8Array => compress('zstd', asBuffer(bytes)),
};

export interface EncodedRowGroup {
  /** The column chunks' bytes, to be written at `start`. */
  readonly bytes: Buffer;
  readonly rowGroup: RowGroup;
  readonly pageIndexes: PageIndexes[];
}

export interface RowGroupInput {
  readonly plan: ParquetRecordPlan;
  /** The type the rows were Avro-encoded with. */
  readonly type: Type;
  readonly codec: CompressionCodec;
  /** The rows' Avro encodings back to back. */
  readonly rows: Buffer;
  readonly rowCount: number;
  /** File offset of the group's first byte. */
  readonly start: number;
  /** The group's first row's index in the file (error messages). */
  readonly firstRow: number;
  readonly ordinal: number;
}

/** A ByteWriter whose running offset starts where the row group does. */
class OffsetByteWriter extends ByteWriter {
  constructor(start: number, size: number) {
    super(size);
    this.offset = start;
  }
}

const isStringColumn = (element: SchemaElement): boolean => element.type === 'BYTE_ARRAY' && (element.logical_type?.type === 'STRING' || element.converted_type === 'UTF8');
const BEYOND_D7FF = /[\uD800-\uFFFF]/;
const SURROGATE = /[\uD800-\uDFFF]/;
const HIGH_BMP = /[\uE000-\uFFFF]/;

/**
 * Whether a string column holds values whose order the column writer could get wrong: it
 * compares strings as JavaScript does, by UTF-16 units, while Parquet orders BYTE_ARRAY min/max by
 * unsigned bytes (UTF-8). The two orders part only between a character beyond the BMP (a surrogate
 * pair in UTF-16) and one from U+E000 to U+FFFF, so only a chunk holding both kinds is written
 * without statistics: a wrong max would let engines skip a row group holding a matching row,
 * while a missing one only costs pruning.
 */
function anyOrderedApart(values: readonly unknown[]): boolean {
  let surrogate = false;
  let high = false;
  for (const value of values) {
    // Most strings hold nothing from U+D800 up: one test, and only the rare others are classified.
    if (typeof value !== 'string' || !BEYOND_D7FF.test(value)) continue;
    surrogate ||= SURROGATE.test(value);
    high ||= HIGH_BMP.test(value);
    if (surrogate && high) return true;
  }
  return false;
}

export function encodeRowGroup(input: RowGroupInput): EncodedRowGroup {
  const { plan, type, rows } = input;
  const columns = plan.newColumns();
  let position = 0;
  for (let index = 0; index < input.rowCount; index += 1) {
    try {
      const decoded = type.decode(rows, position);
      if (decoded.offset < 0) throw new Error(`the stored rows end inside row ${index}`);
      position = decoded.offset;
      plan.shred(decoded.value, columns);
    } catch (error) {
      const row = input.firstRow + index;
      if (error instanceof TributaryError) throw new TributaryError({ code: error.code, message: `record ${row} cannot be written: ${error.message}`, details: { ...error.details, record: row }, cause: error });
      throw dataFileError('DATA_FILE_RECORD_INVALID', `record ${row} cannot be written to Parquet: ${describeThrown(error)}`, { record: row }, error);
    }
  }
  // Encoded groups are mostly well under their rows' Avro size: start at a quarter and grow.
  const writer = new OffsetByteWriter(input.start, Math.max(64 * 1024, rows.length >> 2));
  const chunks: ColumnChunk[] = [];
  const pageIndexes: PageIndexes[] = [];
  plan.leaves.forEach((leaf, leafIndex) => {
    const column = columns[leafIndex]!;
    columns[leafIndex] = { values: [], definitionLevels: [], repetitionLevels: [] }; // let it go once written
    const statistics = leaf.statistics && !(isStringColumn(leaf.writeElement) && anyOrderedApart(column.values));
    const encoder: ColumnEncoder = {
      columnName: leaf.name,
      element: leaf.writeElement,
      schemaPath: [...leaf.schemaPath.slice(0, -1), leaf.writeElement],
      codec: input.codec,
      compressors: COMPRESSORS,
      stats: statistics,
      statisticsTruncateLength: Number.POSITIVE_INFINITY,
      pageSize: PAGE_BYTES,
      dictionarySize: DICTIONARY_BYTES,
      columnIndex: statistics,
      offsetIndex: true,
    };
    const written = writeColumn({
      writer,
      column: encoder,
      pageData: {
        values: column.values as never,
        // Levels are only written for columns that can have them (hyparquet checks the maxima).
        definitionLevels: leaf.maxDefinitionLevel === 0 ? [] : column.definitionLevels,
        repetitionLevels: leaf.maxRepetitionLevel === 0 ? [] : column.repetitionLevels,
        maxDefinitionLevel: leaf.maxDefinitionLevel,
      },
    });
    chunks.push(written.chunk);
    pageIndexes.push({ chunk: written.chunk, ...(written.columnIndex === undefined ? {} : { columnIndex: written.columnIndex }), ...(written.offsetIndex === undefined ? {} : { offsetIndex: written.offsetIndex }) });
  });
  const uncompressed = chunks.reduce((sum, chunk) => sum + (chunk.meta_data?.total_uncompressed_size ?? 0n), 0n);
  // A view when the writer's buffer is nearly full (one ArrayBuffer less for the GC to find), else a
  // copy: a view would keep the whole buffer alive while the budget counts only the bytes in use.
  const bytes = writer.index * 5 >= writer.buffer.byteLength * 4 ? Buffer.from(writer.buffer, 0, writer.index) : Buffer.from(writer.getBuffer());
  return {
    bytes,
    rowGroup: {
      columns: chunks,
      total_byte_size: uncompressed,
      num_rows: BigInt(input.rowCount),
      file_offset: BigInt(input.start),
      total_compressed_size: BigInt(bytes.length),
      ordinal: input.ordinal,
    },
    pageIndexes,
  };
}
