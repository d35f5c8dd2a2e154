/**
 * Request and response headers.
 *
 *   RequestHeader v1 := RequestApiKey INT16, RequestApiVersion INT16, CorrelationId INT32,
 *                       ClientId NULLABLE_STRING
 *   RequestHeader v2 := v1 + TAG_BUFFER (flexible requests only; for Tributary that means
 *                       ApiVersions v3+, whose body is never parsed: ClientId keeps its INT16
 *                       length even in v2, so key, version, id and client id always read the same)
 *   ResponseHeader v0 := CorrelationId INT32      (every response Tributary sends, ApiVersions included)
 */
import type { WireReader, WireWriter } from './wire.js';

export interface RequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

/** Reads the v1 header; the reader is left at the start of the body. */
export function decodeRequestHeader(reader: WireReader): RequestHeader {
  return {
    apiKey: reader.int16('RequestApiKey'),
    apiVersion: reader.int16('RequestApiVersion'),
    correlationId: reader.int32('CorrelationId'),
    clientId: reader.nullableString('ClientId'),
  };
}

export function encodeRequestHeader(writer: WireWriter, header: RequestHeader): void {
  writer.int16(header.apiKey).int16(header.apiVersion).int32(header.correlationId).nullableString(header.clientId);
}

export function encodeResponseHeader(writer: WireWriter, correlationId: number): void {
  writer.int32(correlationId);
}
