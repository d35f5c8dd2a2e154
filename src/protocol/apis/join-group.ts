/**
 * JoinGroup (key 11), versions 0–5 (non-flexible; v6+ is flexible). v2 adds throttling, v3 only
 * changes when throttling happens, v4 only changes behaviour (a first join with an empty MemberId
 * is answered MEMBER_ID_REQUIRED with the id to rejoin with, KIP-394), v5 adds static membership
 * (KIP-345).
 *
 *   JoinGroupRequest  := GroupId STRING
 *                        SessionTimeoutMs INT32
 *                        RebalanceTimeoutMs INT32                  (v1+, default −1: use SessionTimeoutMs)
 *                        MemberId STRING                           ("" on a first join)
 *                        GroupInstanceId NULLABLE_STRING           (v5+, default null)
 *                        ProtocolType STRING                       ("consumer" for consumers)
 *                        Protocols ARRAY of { Name STRING, Metadata BYTES }
 *
 *   JoinGroupResponse := ThrottleTimeMs INT32                      (v2+)
 *                        ErrorCode INT16
 *                        GenerationId INT32                        (default −1)
 *                        ProtocolName STRING
 *                        Leader STRING
 *                        MemberId STRING
 *                        Members ARRAY of {                        (filled for the leader only)
 *                          MemberId STRING
 *                          GroupInstanceId NULLABLE_STRING         (v5+, default null)
 *                          Metadata BYTES
 *                        }
 *
 * Metadata is opaque to the broker (for ProtocolType "consumer" it is a ConsumerProtocol
 * Subscription, see ../consumer-protocol.ts). Decoded BYTES are views into the request buffer.
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface JoinGroupRequestProtocol {
  readonly name: string;
  readonly metadata: Buffer;
}

export interface JoinGroupRequest {
  readonly groupId: string;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly protocolType: string;
  readonly protocols: readonly JoinGroupRequestProtocol[];
}

export interface JoinGroupResponseMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly metadata: Buffer;
}

export interface JoinGroupResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly generationId: number;
  readonly protocolName: string;
  readonly leader: string;
  readonly memberId: string;
  readonly members: readonly JoinGroupResponseMember[];
}

export const JoinGroupApi: ApiSchema<JoinGroupRequest, JoinGroupResponse> = {
  apiKey: 11,
  name: 'JoinGroup',
  minVersion: 0,
  maxVersion: 5,
  request: [
    field('GroupId', 'string', '0+'),
    field('SessionTimeoutMs', 'int32', '0+'),
    field('RebalanceTimeoutMs', 'int32', '1+', { default: -1 }),
    field('MemberId', 'string', '0+'),
    field('GroupInstanceId', 'string', '5+', { nullable: '5+', default: null }),
    field('ProtocolType', 'string', '0+'),
    field('Protocols', array([field('Name', 'string', '0+'), field('Metadata', 'bytes', '0+')]), '0+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '2+'),
    field('ErrorCode', 'int16', '0+'),
    field('GenerationId', 'int32', '0+', { default: -1 }),
    field('ProtocolName', 'string', '0+'),
    field('Leader', 'string', '0+'),
    field('MemberId', 'string', '0+'),
    field(
      'Members',
      array([field('MemberId', 'string', '0+'), field('GroupInstanceId', 'string', '5+', { nullable: '5+', default: null }), field('Metadata', 'bytes', '0+')]),
      '0+',
    ),
  ],
};
