/**
 * The DataNode half of WebHDFS CREATE and OPEN, over node:http rather than fetch.
 *
 * Why not fetch: the Hadoop 3.5.0 DataNode answers every CREATE with an unsolicited
 * `100 Continue` before its `201 Created`, and Node's fetch (undici) fails the request on it
 * ("bad response"); node:http treats it as the informational response it is. It also lets the
 * body stream with back-pressure and tells us how many bytes went out before a failure, which
 * the CREATE outcome check needs.
 *
 * A streamed body is sent in pieces of at least UPLOAD_CHUNK_BYTES (chunked transfer encoding);
 * a Buffer goes whole, with its Content-Length.
 *
 * Every transfer has an idle timeout: no bytes either way for `idleTimeoutMs` ends it (a consumer
 * that stops reading an OPEN stream for that long loses it, too).
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { chunksOf, DataSourceError } from './data.js';
import type { WarehouseData } from './warehouse.js';

/**
 * A streamed body goes out in pieces of at least this many bytes: writers hand over one Avro
 * block or Parquet page at a time (tens of KiB), and every piece sent is a write to the socket
 * and a chunk header on the wire.
 */
export const UPLOAD_CHUNK_BYTES = 1024 * 1024;

/** DataNode error bodies are a RemoteException with a stack trace: a few KiB. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface DataNodeAnswer {
  readonly status: number;
  readonly body: string;
}

export interface UploadAnswer extends DataNodeAnswer {
  readonly sentBytes: number;
}

/** The connection failed or timed out before an answer came: the outcome is unknown. */
export class DataNodeTransportError extends Error {
  constructor(
    cause: unknown,
    /** Bytes handed to the socket before the failure. */
    readonly sentBytes: number,
    /** Whether the whole body had been handed to the socket. */
    readonly sentAll: boolean,
  ) {
    super(`the DataNode connection failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DataNodeTransportError';
  }
}

export class IdleTimeoutError extends Error {
  constructor(idleTimeoutMs: number) {
    super(`no bytes moved for ${idleTimeoutMs} ms`);
    this.name = 'IdleTimeoutError';
  }
}

/**
 * PUTs `data` to the DataNode `location` (from the NameNode's CREATE answer). Resolves with the
 * DataNode's answer, whatever its status; rejects with DataSourceError if `data` failed, or
 * DataNodeTransportError if no answer came.
 */
export function putToDataNode(location: URL, data: WarehouseData, idleTimeoutMs: number): Promise<UploadAnswer> {
  return new Promise((resolve, reject) => {
    let sentBytes = 0;
    let sentAll = false;
    let answered = false;
    const headers: OutgoingHttpHeaders = { 'content-type': 'application/octet-stream' };
    // A Buffer goes with its length; a stream goes chunked.
    if (Buffer.isBuffer(data)) headers['content-length'] = data.length;
    const request = httpRequest(location, { method: 'PUT', headers });
    request.setTimeout(idleTimeoutMs, () => request.destroy(new IdleTimeoutError(idleTimeoutMs)));

    const failed = (error: unknown): void => {
      // The DataNode may answer (403: the file exists) and close while the body is still going
      // out; then the answer counts, not the broken pipe.
      if (answered) return;
      reject(error instanceof DataSourceError ? error : new DataNodeTransportError(error, sentBytes, sentAll));
    };
    request.on('error', failed);
    request.on('response', (response) => {
      answered = true;
      readAnswer(response, idleTimeoutMs).then(
        (body) => resolve({ status: response.statusCode ?? 0, body, sentBytes }),
        (error: unknown) => reject(new DataNodeTransportError(error, sentBytes, sentAll)),
      );
    });

    async function* counted(): AsyncGenerator<Buffer> {
      for await (const chunk of coalesced(chunksOf(data), UPLOAD_CHUNK_BYTES)) {
        yield chunk;
        sentBytes += chunk.length;
      }
      sentAll = true;
    }
    pipeline(counted(), request).catch((error: unknown) => {
      if (error instanceof DataSourceError) request.destroy(error);
      failed(error);
    });
  });
}

/**
 * GETs the DataNode `location` (from the NameNode's OPEN answer). Resolves once the status line
 * is in: 200 gives the body as a stream that fails if it ends short of its Content-Length; any
 * other status gives the (error) body as text.
 */
export function getFromDataNode(location: URL, idleTimeoutMs: number): Promise<{ status: 200; stream: Transform } | DataNodeAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(location, { method: 'GET' });
    request.setTimeout(idleTimeoutMs, () => request.destroy(new IdleTimeoutError(idleTimeoutMs)));
    request.on('error', (error) => reject(new DataNodeTransportError(error, 0, true)));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      if (status !== 200) {
        readAnswer(response, idleTimeoutMs).then((body) => resolve({ status, body }), (error: unknown) => reject(new DataNodeTransportError(error, 0, true)));
        return;
      }
      const declared = response.headers['content-length'];
      const stream = lengthChecked(declared === undefined ? undefined : Number(declared));
      response.on('error', (error) => stream.destroy(error));
      stream.on('close', () => {
        if (!response.complete) response.destroy();
      });
      response.pipe(stream);
      resolve({ status: 200, stream });
    });
    request.end();
  });
}

/** Joins consecutive chunks until they reach `minimumBytes` (the last piece may be shorter). */
export async function* coalesced(chunks: AsyncIterable<Buffer>, minimumBytes: number): AsyncGenerator<Buffer, void, undefined> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    if (pendingBytes === 0 && chunk.length >= minimumBytes) {
      yield chunk;
      continue;
    }
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes >= minimumBytes) {
      yield Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending, pendingBytes);
}

/** Passes bytes through, and fails at the end if fewer or more than `expected` came. */
function lengthChecked(expected: number | undefined): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      seen += chunk.length;
      callback(null, chunk);
    },
    flush(callback: TransformCallback) {
      if (expected !== undefined && Number.isFinite(expected) && seen !== expected) {
        callback(new Error(`the DataNode sent ${seen} bytes of the ${expected} it announced`));
      } else {
        callback();
      }
    },
  });
}

async function readAnswer(response: IncomingMessage, idleTimeoutMs: number): Promise<string> {
  response.setTimeout(idleTimeoutMs, () => response.destroy(new IdleTimeoutError(idleTimeoutMs)));
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      response.destroy();
      throw new Error(`the DataNode's answer exceeds ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
