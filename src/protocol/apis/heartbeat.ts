/**
 * Heartbeat (key 12), versions 0–3 (non-flexible; v4+ is flexible). v1 adds throttling, v2 only
 * changes when throttling happens, v3 adds static membership (KIP-345).
 *
 *   HeartbeatRequest  := GroupId STRING
 *                        GenerationId INT32
 *                        MemberId STRING
 *                        GroupInstanceId NULLABLE_STRING           (v3+, default null)
 *
 *   HeartbeatResponse := ThrottleTimeMs INT32                      (v1+)
 *                        ErrorCode INT16                           (REBALANCE_IN_PROGRESS: rejoin)
 */
import { field, type ApiSchema } from '../schema.js';

export interface HeartbeatRequest {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
}

export interface HeartbeatResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
}

export const HeartbeatApi: ApiSchema<HeartbeatRequest, HeartbeatResponse> = {
  apiKey: 12,
  name: 'Heartbeat',
  minVersion: 0,
  maxVersion: 3,
  request: [
    field('GroupId', 'string', '0+'),
    field('GenerationId', 'int32', '0+'),
    field('MemberId', 'string', '0+'),
    field('GroupInstanceId', 'string', '3+', { nullable: '3+', default: null }),
  ],
  response: [field('ThrottleTimeMs', 'int32', '1+'), field('ErrorCode', 'int16', '0+')],
};
