/**
 * The APIs Tributary serves, one schema each, and the table an ApiVersions response is built
 * from (kafka-protocol.md §1 item 4). Every range stops at the API's last non-flexible version.
 */
import type { ApiSchema } from '../schema.js';
import { ApiVersionsApi, type ApiVersionRange } from './api-versions.js';
import { CreatePartitionsApi } from './create-partitions.js';
import { CreateTopicsApi } from './create-topics.js';
import { DeleteTopicsApi } from './delete-topics.js';
import { FetchApi } from './fetch.js';
import { FindCoordinatorApi } from './find-coordinator.js';
import { InitProducerIdApi } from './init-producer-id.js';
import { ListOffsetsApi } from './list-offsets.js';
import { MetadataApi } from './metadata.js';
import { ProduceApi } from './produce.js';

export * from './api-versions.js';
export * from './create-partitions.js';
export * from './create-topics.js';
export * from './delete-topics.js';
export * from './fetch.js';
export * from './find-coordinator.js';
export * from './init-producer-id.js';
export * from './list-offsets.js';
export * from './metadata.js';
export * from './produce.js';

/** Any one API's schema, for dispatch tables keyed by api key. */
export type AnyApiSchema = ApiSchema<unknown, unknown>;

/** The served APIs in api-key order; each schema's minVersion–maxVersion is what is advertised. */
export const SUPPORTED_APIS: readonly AnyApiSchema[] = [ProduceApi, FetchApi, ListOffsetsApi, MetadataApi, FindCoordinatorApi, ApiVersionsApi, CreateTopicsApi, DeleteTopicsApi, InitProducerIdApi, CreatePartitionsApi];

const BY_KEY: ReadonlyMap<number, AnyApiSchema> = new Map(SUPPORTED_APIS.map((api) => [api.apiKey, api]));

/** The ApiKeys array of an ApiVersions response. */
export const SUPPORTED_API_VERSIONS: readonly ApiVersionRange[] = SUPPORTED_APIS.map(({ apiKey, minVersion, maxVersion }) => ({ apiKey, minVersion, maxVersion }));

/** The schema serving `apiKey`, if any. */
export function findApi(apiKey: number): AnyApiSchema | undefined {
  return BY_KEY.get(apiKey);
}

/** Whether `version` of `apiKey` is served. */
export function isSupportedVersion(apiKey: number, version: number): boolean {
  const api = BY_KEY.get(apiKey);
  return api !== undefined && version >= api.minVersion && version <= api.maxVersion;
}
