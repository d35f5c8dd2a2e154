/**
 * The part of parquetjs-lite 0.8.7 (a CommonJS package without type declarations) that the data
 * files use: the envelope writer (which writes through a callback, so a file goes out as it is
 * written) and the envelope reader over a Buffer.
 */
declare module 'parquetjs-lite' {
  export class ParquetSchema {
    constructor(definition: Record<string, unknown>);
  }

  export interface ParquetWriterOptions {
    rowGroupSize?: number;
    pageSize?: number;
    useDataPageV2?: boolean;
    pageIndex?: boolean;
  }

  export class ParquetEnvelopeWriter {
    constructor(
      schema: ParquetSchema,
      write: (chunk: Buffer) => Promise<void>,
      close: () => Promise<void>,
      fileOffset: number,
      options: ParquetWriterOptions,
    );
  }

  export class ParquetWriter {
    constructor(schema: ParquetSchema, envelopeWriter: ParquetEnvelopeWriter, options: ParquetWriterOptions);
    /** The row group being filled (shredded columns); `rowCount` is absent once it is written. */
    rowBuffer: unknown;
    appendRow(row: Record<string, unknown>): Promise<void>;
    setRowGroupSize(rows: number): void;
    setMetadata(key: string, value: string): void;
    close(): Promise<void>;
  }

  /** The Thrift FileMetaData, as parquetjs-lite decodes it. */
  export interface ParquetFileMetadata {
    version: number;
    schema: { name: string; converted_type?: number | null }[];
    key_value_metadata?: { key: string; value: string }[] | null;
    num_rows: unknown;
  }

  export class ParquetEnvelopeReader {
    static openBuffer(buffer: Buffer): Promise<ParquetEnvelopeReader>;
    readHeader(): Promise<void>;
    readFooter(): Promise<ParquetFileMetadata>;
    close(): Promise<void>;
  }

  export interface ParquetCursor {
    next(): Promise<Record<string, unknown> | null>;
  }

  export class ParquetReader {
    constructor(metadata: ParquetFileMetadata, envelopeReader: ParquetEnvelopeReader, options?: Record<string, unknown>);
    getCursor(): ParquetCursor;
    getRowCount(): unknown;
    close(): Promise<void>;
  }
}
