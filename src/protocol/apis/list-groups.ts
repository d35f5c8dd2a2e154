/**
 * ListGroups (key 16), versions 0–2 (non-flexible; v3+ is flexible). v1 adds throttling, v2 only
 * changes when throttling happens. The request has no fields before v4 (StatesFilter).
 *
 *   ListGroupsRequest  := (empty)
 *
 *   ListGroupsResponse := ThrottleTimeMs INT32                     (v1+)
 *                         ErrorCode INT16
 *                         Groups ARRAY of { GroupId STRING, ProtocolType STRING }
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface ListGroupsRequest {
  /** No fields before v4 (StatesFilter, flexible), so always `{}` here. */
  readonly _unused?: never;
}

export interface ListGroupsResponseGroup {
  readonly groupId: string;
  readonly protocolType: string;
}

export interface ListGroupsResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly groups: readonly ListGroupsResponseGroup[];
}

export const ListGroupsApi: ApiSchema<ListGroupsRequest, ListGroupsResponse> = {
  apiKey: 16,
  name: 'ListGroups',
  minVersion: 0,
  maxVersion: 2,
  request: [],
  response: [field('ThrottleTimeMs', 'int32', '1+'), field('ErrorCode', 'int16', '0+'), field('Groups', array([field('GroupId', 'string', '0+'), field('ProtocolType', 'string', '0+')]), '0+')],
};
