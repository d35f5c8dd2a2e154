/**
 * CreateAcls (key 30), versions 0–1 (non-flexible; v2+ is flexible). v1 adds the pattern type
 * (v0 creations are LITERAL). Kafka 4 serves v1+ only, so its tools send v1.
 *
 *   CreateAclsRequest  := Creations ARRAY of {
 *                           ResourceType INT8, ResourceName STRING
 *                           ResourcePatternType INT8               (v1+; 3 literal, 4 prefixed)
 *                           Principal STRING, Host STRING
 *                           Operation INT8, PermissionType INT8
 *                         }
 *
 *   CreateAclsResponse := ThrottleTimeMs INT32
 *                         Results ARRAY of { ErrorCode INT16, ErrorMessage NULLABLE_STRING }   (one per creation, in order)
 */
import { array, field, type ApiSchema } from '../schema.js';

const LITERAL = 3;

export interface CreatableAcl {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly resourcePatternType: number;
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

export interface CreateAclsRequest {
  readonly creations: readonly CreatableAcl[];
}

export interface AclCreationResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export interface CreateAclsResponse {
  readonly throttleTimeMs: number;
  readonly results: readonly AclCreationResult[];
}

export const CreateAclsApi: ApiSchema<CreateAclsRequest, CreateAclsResponse> = {
  apiKey: 30,
  name: 'CreateAcls',
  minVersion: 0,
  maxVersion: 1,
  request: [
    field(
      'Creations',
      array([
        field('ResourceType', 'int8', '0+'),
        field('ResourceName', 'string', '0+'),
        field('ResourcePatternType', 'int8', '1+', { default: LITERAL }),
        field('Principal', 'string', '0+'),
        field('Host', 'string', '0+'),
        field('Operation', 'int8', '0+'),
        field('PermissionType', 'int8', '0+'),
      ]),
      '0+',
    ),
  ],
  response: [field('ThrottleTimeMs', 'int32', '0+'), field('Results', array([field('ErrorCode', 'int16', '0+'), field('ErrorMessage', 'string', '0+', { nullable: '0+' })]), '0+')],
};
