/**
 * Request and response headers (kafka-protocol.md §2).
 *
 *   RequestHeader v1  := RequestApiKey INT16, RequestApiVersion INT16, CorrelationId INT32,
 *                        ClientId NULLABLE_STRING
 *   RequestHeader v2  := v1 + TAG_BUFFER                  (flexible request versions)
 *   ResponseHeader v0 := CorrelationId INT32
 *   ResponseHeader v1 := v0 + TAG_BUFFER                  (flexible response versions, except ApiVersions)
 *
 * ClientId keeps its INT16 length even in v2 (Kafka's RequestHeader.json), so key, version, id and
 * client id always read the same; whether a TAG_BUFFER follows depends on the API's flexible
 * versions (schema.ts `flexibleVersions`), looked up in the table of served APIs. ApiVersions
 * declares none: its v3+ requests get the v0 fallback answer without their body (or the header's
 * tags) being read, and its responses use header v0 at every version anyway ("Tagged fields are
 * only supported in the body but not in the header", ApiVersionsResponse.json).
 */
import { ApiVersionsApi } from './apis/api-versions.js';
import { findApi } from './apis/index.js';
import { isFlexibleVersion } from './schema.js';
import type { WireReader, WireWriter } from './wire.js';

export interface RequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

export type RequestHeaderVersion = 1 | 2;
export type ResponseHeaderVersion = 0 | 1;

function flexible(apiKey: number, apiVersion: number): boolean {
  const api = findApi(apiKey);
  return api !== undefined && isFlexibleVersion(api, apiVersion);
}

/** 2 for a flexible version of a served API, else 1 (unknown APIs and versions included). */
export function requestHeaderVersion(apiKey: number, apiVersion: number): RequestHeaderVersion {
  return flexible(apiKey, apiVersion) ? 2 : 1;
}

/** 1 for a flexible version of a served API other than ApiVersions, else 0. */
export function responseHeaderVersion(apiKey: number, apiVersion: number): ResponseHeaderVersion {
  return apiKey !== ApiVersionsApi.apiKey && flexible(apiKey, apiVersion) ? 1 : 0;
}

/**
 * Reads the header (v1, or v2 where the key and version call for it: its tags are skipped); the
 * reader is left at the start of the body.
 */
export function decodeRequestHeader(reader: WireReader): RequestHeader {
  const header: RequestHeader = {
    apiKey: reader.int16('RequestApiKey'),
    apiVersion: reader.int16('RequestApiVersion'),
    correlationId: reader.int32('CorrelationId'),
    clientId: reader.nullableString('ClientId'),
  };
  if (requestHeaderVersion(header.apiKey, header.apiVersion) === 2) reader.skipTaggedFields('request header TAG_BUFFER');
  return header;
}

/** Writes the header a client sends for the key and version: v1, or v2 (an empty TAG_BUFFER more). */
export function encodeRequestHeader(writer: WireWriter, header: RequestHeader): void {
  writer.int16(header.apiKey).int16(header.apiVersion).int32(header.correlationId).nullableString(header.clientId);
  if (requestHeaderVersion(header.apiKey, header.apiVersion) === 2) writer.emptyTaggedFields();
}

/** Writes response header v0 or v1 (see responseHeaderVersion). */
export function encodeResponseHeader(writer: WireWriter, correlationId: number, headerVersion: ResponseHeaderVersion = 0): void {
  writer.int32(correlationId);
  if (headerVersion === 1) writer.emptyTaggedFields();
}

/** Reads response header v0 or v1 (its tags skipped) and returns the correlation id. */
export function decodeResponseHeader(reader: WireReader, headerVersion: ResponseHeaderVersion): number {
  const correlationId = reader.int32('CorrelationId');
  if (headerVersion === 1) reader.skipTaggedFields('response header TAG_BUFFER');
  return correlationId;
}
