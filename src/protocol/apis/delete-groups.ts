/**
 * DeleteGroups (key 42), versions 0–1 (non-flexible; v2+ is flexible). v1 only changes when
 * throttling happens. Kafka spells the request field GroupsNames (sic).
 *
 *   DeleteGroupsRequest  := GroupsNames ARRAY of STRING
 *
 *   DeleteGroupsResponse := ThrottleTimeMs INT32                   (v0+)
 *                           Results ARRAY of { GroupId STRING, ErrorCode INT16 }
 *
 * Only a group with no members can be deleted (else NON_EMPTY_GROUP); deleting one removes its
 * committed offsets.
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface DeleteGroupsRequest {
  readonly groupsNames: readonly string[];
}

export interface DeleteGroupsResponseResult {
  readonly groupId: string;
  readonly errorCode: number;
}

export interface DeleteGroupsResponse {
  readonly throttleTimeMs: number;
  readonly results: readonly DeleteGroupsResponseResult[];
}

export const DeleteGroupsApi: ApiSchema<DeleteGroupsRequest, DeleteGroupsResponse> = {
  apiKey: 42,
  name: 'DeleteGroups',
  minVersion: 0,
  maxVersion: 1,
  request: [field('GroupsNames', array('string'), '0+')],
  response: [field('ThrottleTimeMs', 'int32', '0+'), field('Results', array([field('GroupId', 'string', '0+'), field('ErrorCode', 'int16', '0+')]), '0+')],
};
