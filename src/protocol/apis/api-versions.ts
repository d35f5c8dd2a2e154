/**
 * ApiVersions (key 18), versions 0–2 (non-flexible).
 *
 *   ApiVersionsRequest v0–v2 := (empty)
 *   ApiVersionsResponse      := ErrorCode INT16
 *                               ApiKeys ARRAY of { ApiKey INT16, MinVersion INT16, MaxVersion INT16 }
 *                               ThrottleTimeMs INT32                                  (v1+)
 *
 * A request of v3+ (flexible, header v2) is answered with the v0 body, error 35 and the one
 * entry for ApiVersions itself, so clients fall back to a version we serve (kafka-protocol.md §2.1).
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface ApiVersionsRequest {
  /** v3+ only; never decoded here (those requests get the fallback answer). */
  readonly _unused?: never;
}

export interface ApiVersionRange {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

export interface ApiVersionsResponse {
  readonly errorCode: number;
  readonly apiKeys: readonly ApiVersionRange[];
  readonly throttleTimeMs: number;
}

export const ApiVersionsApi: ApiSchema<ApiVersionsRequest, ApiVersionsResponse> = {
  apiKey: 18,
  name: 'ApiVersions',
  minVersion: 0,
  maxVersion: 2,
  request: [],
  response: [
    field('ErrorCode', 'int16', '0+'),
    field('ApiKeys', array([field('ApiKey', 'int16', '0+'), field('MinVersion', 'int16', '0+'), field('MaxVersion', 'int16', '0+')]), '0+'),
    field('ThrottleTimeMs', 'int32', '1+'),
  ],
};
