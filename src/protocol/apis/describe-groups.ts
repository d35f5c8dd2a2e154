/**
 * DescribeGroups (key 15), versions 0–4 (non-flexible; v5+ is flexible). v1 adds throttling, v2
 * only changes when throttling happens, v3 adds authorized operations, v4 adds the members'
 * GroupInstanceId (KIP-345).
 *
 *   DescribeGroupsRequest  := Groups ARRAY of STRING
 *                             IncludeAuthorizedOperations BOOLEAN  (v3+)
 *
 *   DescribeGroupsResponse := ThrottleTimeMs INT32                 (v1+)
 *                             Groups ARRAY of {
 *                               ErrorCode INT16
 *                               GroupId STRING
 *                               GroupState STRING                  (e.g. "Stable", "Empty", "Dead")
 *                               ProtocolType STRING                ("" when none)
 *                               ProtocolData STRING                (the chosen protocol's name, Stable only)
 *                               Members ARRAY of {
 *                                 MemberId STRING
 *                                 GroupInstanceId NULLABLE_STRING  (v4+, default null)
 *                                 ClientId STRING
 *                                 ClientHost STRING
 *                                 MemberMetadata BYTES             (Stable only, else empty)
 *                                 MemberAssignment BYTES           (Stable only, else empty)
 *                               }
 *                               AuthorizedOperations INT32         (v3+, default −2147483648)
 *                             }
 *
 * A group the coordinator does not know is described with state "Dead" and no members, not an
 * error. AuthorizedOperations −2147483648 means "not requested" (AUTHORIZED_OPERATIONS_OMITTED).
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface DescribeGroupsRequest {
  readonly groups: readonly string[];
  readonly includeAuthorizedOperations: boolean;
}

export interface DescribeGroupsResponseMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  readonly memberMetadata: Buffer;
  readonly memberAssignment: Buffer;
}

export interface DescribeGroupsResponseGroup {
  readonly errorCode: number;
  readonly groupId: string;
  readonly groupState: string;
  readonly protocolType: string;
  readonly protocolData: string;
  readonly members: readonly DescribeGroupsResponseMember[];
  readonly authorizedOperations: number;
}

export interface DescribeGroupsResponse {
  readonly throttleTimeMs: number;
  readonly groups: readonly DescribeGroupsResponseGroup[];
}

export const DescribeGroupsApi: ApiSchema<DescribeGroupsRequest, DescribeGroupsResponse> = {
  apiKey: 15,
  name: 'DescribeGroups',
  minVersion: 0,
  maxVersion: 4,
  request: [field('Groups', array('string'), '0+'), field('IncludeAuthorizedOperations', 'bool', '3+')],
  response: [
    field('ThrottleTimeMs', 'int32', '1+'),
    field(
      'Groups',
      array([
        field('ErrorCode', 'int16', '0+'),
        field('GroupId', 'string', '0+'),
        field('GroupState', 'string', '0+'),
        field('ProtocolType', 'string', '0+'),
        field('ProtocolData', 'string', '0+'),
        field(
          'Members',
          array([
            field('MemberId', 'string', '0+'),
            field('GroupInstanceId', 'string', '4+', { nullable: '4+', default: null }),
            field('ClientId', 'string', '0+'),
            field('ClientHost', 'string', '0+'),
            field('MemberMetadata', 'bytes', '0+'),
            field('MemberAssignment', 'bytes', '0+'),
          ]),
          '0+',
        ),
        field('AuthorizedOperations', 'int32', '3+', { default: -2147483648 }),
      ]),
      '0+',
    ),
  ],
};
