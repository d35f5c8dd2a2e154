/**
 * SyncGroup (key 14), versions 0–3 (non-flexible; v4+ is flexible). v1 adds throttling, v2 only
 * changes when throttling happens, v3 adds static membership (KIP-345).
 *
 *   SyncGroupRequest  := GroupId STRING
 *                        GenerationId INT32
 *                        MemberId STRING
 *                        GroupInstanceId NULLABLE_STRING           (v3+, default null)
 *                        Assignments ARRAY of {                    (sent by the leader only)
 *                          MemberId STRING
 *                          Assignment BYTES
 *                        }
 *
 *   SyncGroupResponse := ThrottleTimeMs INT32                      (v1+)
 *                        ErrorCode INT16
 *                        Assignment BYTES                          (this member's)
 *
 * Assignment is opaque to the broker (for ProtocolType "consumer" it is a ConsumerProtocol
 * Assignment, see ../consumer-protocol.ts). Decoded BYTES are views into the request buffer.
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface SyncGroupRequestAssignment {
  readonly memberId: string;
  readonly assignment: Buffer;
}

export interface SyncGroupRequest {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly assignments: readonly SyncGroupRequestAssignment[];
}

export interface SyncGroupResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly assignment: Buffer;
}

export const SyncGroupApi: ApiSchema<SyncGroupRequest, SyncGroupResponse> = {
  apiKey: 14,
  name: 'SyncGroup',
  minVersion: 0,
  maxVersion: 3,
  request: [
    field('GroupId', 'string', '0+'),
    field('GenerationId', 'int32', '0+'),
    field('MemberId', 'string', '0+'),
    field('GroupInstanceId', 'string', '3+', { nullable: '3+', default: null }),
    field('Assignments', array([field('MemberId', 'string', '0+'), field('Assignment', 'bytes', '0+')]), '0+'),
  ],
  response: [field('ThrottleTimeMs', 'int32', '1+'), field('ErrorCode', 'int16', '0+'), field('Assignment', 'bytes', '0+')],
};
