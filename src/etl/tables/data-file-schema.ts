/**
 * The Avro schema a data file carries, read without decoding a record: an Avro container's header
 * (`avro.schema`, read from the stream only up to the header's end) or the Parquet footer's
 * key-value metadata (`parquet.avro.schema`, what parquet-avro reads; only the file's tail is
 * kept). Keys and layouts are the formats' own (Avro 1.12 specification, parquet-avro), not ours,
 * so this reads any writer's files; `etl ddl` uses it when the registry is away.
 */
import type { Readable } from 'node:stream';
import avro from 'avsc';
import { parquetMetadata } from 'hyparquet';
import type { DataFileFormat } from '../files/data-files.js';
import { etlError } from '../errors.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

const AVRO_MAGIC = Buffer.from('Obj\u0001', 'latin1');
const PARQUET_MAGIC = Buffer.from('PAR1', 'latin1');
const AVRO_META = avro.Type.forSchema({ type: 'map', values: 'bytes' });
/** Far above any schema's header; a file whose header goes on past it is not what we wrote. */
const MAX_HEADER_BYTES = 64 * 1024 * 1024;
const AVRO_SCHEMA_KEY = 'avro.schema';
const PARQUET_AVRO_SCHEMA_KEYS = ['parquet.avro.schema', 'avro.schema'];

/** The schema JSON (parsed) of the data file at `path`. */
export async function readDataFileSchema(warehouse: WarehouseFileSystem, path: string, format: DataFileFormat): Promise<unknown> {
  const stream = await warehouse.openStream(path);
  const where = warehouse.describe(path);
  try {
    const text = format === 'avro' ? await avroSchemaText(stream, where) : await parquetSchemaText(stream, where);
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw damaged(where, `its schema metadata is not JSON (${(error as Error).message})`, error);
    }
  } finally {
    stream.destroy();
  }
}

async function avroSchemaText(stream: Readable, where: string): Promise<string> {
  let head = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    head = Buffer.concat([head, chunk]);
    if (head.length < AVRO_MAGIC.length) continue;
    if (!head.subarray(0, AVRO_MAGIC.length).equals(AVRO_MAGIC)) throw damaged(where, 'it does not start as an Avro container file');
    const decoded = decodeMeta(head, where);
    if (decoded !== undefined) {
      const schema = decoded[AVRO_SCHEMA_KEY];
      if (schema === undefined) throw damaged(where, `its header has no ${AVRO_SCHEMA_KEY}`);
      return schema.toString('utf8');
    }
    if (head.length > MAX_HEADER_BYTES) throw damaged(where, `its header goes on past ${MAX_HEADER_BYTES} bytes`);
  }
  throw damaged(where, 'it ends inside its Avro header');
}

/** The header's metadata map, or undefined while `head` holds only part of it. */
function decodeMeta(head: Buffer, where: string): Record<string, Buffer> | undefined {
  let result;
  try {
    result = AVRO_META.decode(head, AVRO_MAGIC.length);
  } catch (error) {
    throw damaged(where, `its Avro header cannot be decoded (${(error as Error).message})`, error);
  }
  return result.offset < 0 ? undefined : (result.value as Record<string, Buffer>);
}

async function parquetSchemaText(stream: Readable, where: string): Promise<string> {
  // Only the tail: the footer (FileMetaData, its length, PAR1) ends the file.
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    kept += chunk.length;
    while (chunks.length > 1 && kept - chunks[0]!.length >= MAX_HEADER_BYTES) kept -= chunks.shift()!.length;
  }
  const tail = Buffer.concat(chunks);
  if (tail.length < 12 || !tail.subarray(tail.length - 4).equals(PARQUET_MAGIC)) throw damaged(where, 'it does not end as a Parquet file (PAR1)');
  let metadata;
  try {
    metadata = parquetMetadata(tail);
  } catch (error) {
    throw damaged(where, `its Parquet footer cannot be decoded (${(error as Error).message})`, error);
  }
  const values = new Map((metadata.key_value_metadata ?? []).map(({ key, value }) => [key, value]));
  const text = PARQUET_AVRO_SCHEMA_KEYS.map((key) => values.get(key)).find((value) => value !== undefined);
  if (text === undefined) throw damaged(where, `its footer has no ${PARQUET_AVRO_SCHEMA_KEYS[0]}`);
  return text;
}

function damaged(where: string, why: string, cause?: unknown): Error {
  return etlError('ETL_WAREHOUSE_DAMAGED', `committed data file ${where} does not carry a readable Avro schema: ${why}`, { details: { file: where }, ...(cause === undefined ? {} : { cause }) });
}
