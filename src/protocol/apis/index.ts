/**
 * The APIs Tributary serves, one schema each, and the table an ApiVersions response is built
 * from (kafka-protocol.md §1 item 4). Every range stops at the API's last non-flexible version,
 * but where a client needs a flexible one (ARCHITECTURE decision 9): Metadata v9, from which the
 * Java consumer trusts leader epochs. Only such schemas declare `flexibleVersions`.
 */
import type { ApiSchema } from '../schema.js';
import { AlterConfigsApi } from './alter-configs.js';
import { ApiVersionsApi, type ApiVersionRange } from './api-versions.js';
import { CreateAclsApi } from './create-acls.js';
import { CreatePartitionsApi } from './create-partitions.js';
import { CreateTopicsApi } from './create-topics.js';
import { DeleteAclsApi } from './delete-acls.js';
import { DeleteGroupsApi } from './delete-groups.js';
import { DeleteRecordsApi } from './delete-records.js';
import { DeleteTopicsApi } from './delete-topics.js';
import { DescribeAclsApi } from './describe-acls.js';
import { DescribeConfigsApi } from './describe-configs.js';
import { DescribeGroupsApi } from './describe-groups.js';
import { FetchApi } from './fetch.js';
import { FindCoordinatorApi } from './find-coordinator.js';
import { HeartbeatApi } from './heartbeat.js';
import { IncrementalAlterConfigsApi } from './incremental-alter-configs.js';
import { InitProducerIdApi } from './init-producer-id.js';
import { JoinGroupApi } from './join-group.js';
import { LeaveGroupApi } from './leave-group.js';
import { ListGroupsApi } from './list-groups.js';
import { ListOffsetsApi } from './list-offsets.js';
import { MetadataApi } from './metadata.js';
import { OffsetCommitApi } from './offset-commit.js';
import { OffsetFetchApi } from './offset-fetch.js';
import { OffsetForLeaderEpochApi } from './offset-for-leader-epoch.js';
import { ProduceApi } from './produce.js';
import { SaslAuthenticateApi } from './sasl-authenticate.js';
import { SaslHandshakeApi } from './sasl-handshake.js';
import { SyncGroupApi } from './sync-group.js';

export * from './alter-configs.js';
export * from './api-versions.js';
export * from './create-acls.js';
export * from './create-partitions.js';
export * from './create-topics.js';
export * from './delete-acls.js';
export * from './delete-groups.js';
export * from './delete-records.js';
export * from './delete-topics.js';
export * from './describe-acls.js';
export * from './describe-configs.js';
export * from './describe-groups.js';
export * from './fetch.js';
export * from './find-coordinator.js';
export * from './heartbeat.js';
export * from './incremental-alter-configs.js';
export * from './init-producer-id.js';
export * from './join-group.js';
export * from './leave-group.js';
export * from './list-groups.js';
export * from './list-offsets.js';
export * from './metadata.js';
export * from './offset-commit.js';
export * from './offset-fetch.js';
export * from './offset-for-leader-epoch.js';
export * from './produce.js';
export * from './sasl-authenticate.js';
export * from './sasl-handshake.js';
export * from './sync-group.js';

/** Any one API's schema, for dispatch tables keyed by api key. */
export type AnyApiSchema = ApiSchema<unknown, unknown>;

/** The served APIs in api-key order; each schema's minVersion–maxVersion is what is advertised. */
export const SUPPORTED_APIS: readonly AnyApiSchema[] = [
  ProduceApi,
  FetchApi,
  ListOffsetsApi,
  MetadataApi,
  OffsetCommitApi,
  OffsetFetchApi,
  FindCoordinatorApi,
  JoinGroupApi,
  HeartbeatApi,
  LeaveGroupApi,
  SyncGroupApi,
  DescribeGroupsApi,
  ListGroupsApi,
  SaslHandshakeApi,
  ApiVersionsApi,
  CreateTopicsApi,
  DeleteTopicsApi,
  DeleteRecordsApi,
  InitProducerIdApi,
  OffsetForLeaderEpochApi,
  DescribeAclsApi,
  CreateAclsApi,
  DeleteAclsApi,
  DescribeConfigsApi,
  AlterConfigsApi,
  SaslAuthenticateApi,
  CreatePartitionsApi,
  DeleteGroupsApi,
  IncrementalAlterConfigsApi,
];

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
