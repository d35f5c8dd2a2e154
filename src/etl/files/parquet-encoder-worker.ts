/**
 * The worker thread of parquet-encoder.ts: encodes row groups on the second core while the main
 * thread goes on fetching and decoding. A request names the Avro schema (JSON text; its plan is
 * kept per text) and carries the rows' bytes (transferred); the answer carries the encoded bytes
 * (transferred) or the error's code, message and details.
 */
import { parentPort } from 'node:worker_threads';
import type { Type } from 'avsc';
import type { CompressionCodec } from 'hyparquet';
import { TributaryError } from '../../common/errors.js';
import { encodeRowGroup } from './parquet-row-group.js';
import { planParquetRecord, type ParquetRecordPlan } from './parquet-schema.js';
import { parseDataFileSchema } from './schema-types.js';

export interface EncodeRequest {
  readonly id: number;
  readonly schema: string;
  /** The plan's option (parquet-schema.ts ParquetPlanOptions). */
  readonly microseconds: boolean;
  readonly codec: CompressionCodec;
  readonly rows: Uint8Array;
  readonly rowCount: number;
  readonly start: number;
  readonly firstRow: number;
  readonly ordinal: number;
}

const plans = new Map<string, { type: Type; plan: ParquetRecordPlan }>();

parentPort?.on('message', (request: EncodeRequest) => {
  try {
    const key = `${request.microseconds ? 'µs' : 'ms'}\n${request.schema}`;
    let planned = plans.get(key);
    if (planned === undefined) {
      const type = parseDataFileSchema(request.schema);
      plans.set(key, (planned = { type, plan: planParquetRecord(type, undefined, { microseconds: request.microseconds }) }));
    }
    const rows = Buffer.from(request.rows.buffer, request.rows.byteOffset, request.rows.byteLength);
    const encoded = encodeRowGroup({ ...planned, codec: request.codec, rows, rowCount: request.rowCount, start: request.start, firstRow: request.firstRow, ordinal: request.ordinal });
    const bytes = new Uint8Array(encoded.bytes.buffer, encoded.bytes.byteOffset, encoded.bytes.byteLength);
    parentPort?.postMessage({ id: request.id, bytes, rowGroup: encoded.rowGroup, pageIndexes: encoded.pageIndexes }, [bytes.buffer as ArrayBuffer]);
  } catch (error) {
    const failure = error instanceof TributaryError ? { code: error.code, message: error.message, details: error.details } : { code: 'DATA_FILE_RECORD_INVALID', message: String((error as Error).message ?? error), details: {} };
    parentPort?.postMessage({ id: request.id, error: failure });
  }
});
