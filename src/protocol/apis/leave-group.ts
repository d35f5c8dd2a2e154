/**
 * LeaveGroup (key 13), versions 0–3 (non-flexible; v4+ is flexible). v1 adds throttling, v2 only
 * changes when throttling happens, v3 replaces the single MemberId with a batch of member
 * identities (KIP-345: an admin may remove static members by GroupInstanceId).
 *
 *   LeaveGroupRequest  := GroupId STRING
 *                         MemberId STRING                          (v0–2)
 *                         Members ARRAY of {                       (v3+)
 *                           MemberId STRING
 *                           GroupInstanceId NULLABLE_STRING        (default null)
 *                         }
 *
 *   LeaveGroupResponse := ThrottleTimeMs INT32                     (v1+)
 *                         ErrorCode INT16
 *                         Members ARRAY of {                       (v3+)
 *                           MemberId STRING
 *                           GroupInstanceId NULLABLE_STRING
 *                           ErrorCode INT16
 *                         }
 *
 * Decoding v0–2 gives Members = []; decoding v3 gives MemberId = "".
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface LeaveGroupRequestMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
}

export interface LeaveGroupRequest {
  readonly groupId: string;
  /** v0–2 only. */
  readonly memberId: string;
  /** v3+ only. */
  readonly members: readonly LeaveGroupRequestMember[];
}

export interface LeaveGroupResponseMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly errorCode: number;
}

export interface LeaveGroupResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  /** v3+ only. */
  readonly members: readonly LeaveGroupResponseMember[];
}

export const LeaveGroupApi: ApiSchema<LeaveGroupRequest, LeaveGroupResponse> = {
  apiKey: 13,
  name: 'LeaveGroup',
  minVersion: 0,
  maxVersion: 3,
  request: [
    field('GroupId', 'string', '0+'),
    field('MemberId', 'string', '0-2'),
    field('Members', array([field('MemberId', 'string', '3+'), field('GroupInstanceId', 'string', '3+', { nullable: '3+', default: null })]), '3+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '1+'),
    field('ErrorCode', 'int16', '0+'),
    field(
      'Members',
      array([field('MemberId', 'string', '3+'), field('GroupInstanceId', 'string', '3+', { nullable: '3+' }), field('ErrorCode', 'int16', '3+')]),
      '3+',
    ),
  ],
};
