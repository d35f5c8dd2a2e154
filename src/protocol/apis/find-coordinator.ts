/**
 * FindCoordinator (key 10), versions 0–2 (non-flexible).
 *
 *   FindCoordinatorRequest  := Key STRING, KeyType INT8 (v1+; 0 = group, 1 = transaction)
 *   FindCoordinatorResponse := ThrottleTimeMs INT32 (v1+), ErrorCode INT16,
 *                              ErrorMessage NULLABLE_STRING (v1+), NodeId INT32, Host STRING, Port INT32
 */
import { field, type ApiSchema } from '../schema.js';

export interface FindCoordinatorRequest {
  readonly key: string;
  readonly keyType: number;
}

export interface FindCoordinatorResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

export const FindCoordinatorApi: ApiSchema<FindCoordinatorRequest, FindCoordinatorResponse> = {
  apiKey: 10,
  name: 'FindCoordinator',
  minVersion: 0,
  maxVersion: 2,
  request: [field('Key', 'string', '0+'), field('KeyType', 'int8', '1+')],
  response: [
    field('ThrottleTimeMs', 'int32', '1+'),
    field('ErrorCode', 'int16', '0+'),
    field('ErrorMessage', 'string', '1+', { nullable: '1+', default: null }),
    field('NodeId', 'int32', '0+'),
    field('Host', 'string', '0+'),
    field('Port', 'int32', '0+'),
  ],
};
