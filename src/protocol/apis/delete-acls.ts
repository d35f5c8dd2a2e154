/**
 * DeleteAcls (key 31), versions 0–1 (non-flexible; v2+ is flexible). v1 adds the pattern type
 * (a v0 filter is LITERAL). Each filter deletes every ACL it matches and lists them.
 *
 *   DeleteAclsRequest  := Filters ARRAY of {
 *                           ResourceTypeFilter INT8, ResourceNameFilter NULLABLE_STRING
 *                           PatternTypeFilter INT8                  (v1+; 1 any, 2 match, 3 literal, 4 prefixed)
 *                           PrincipalFilter NULLABLE_STRING, HostFilter NULLABLE_STRING
 *                           Operation INT8, PermissionType INT8
 *                         }
 *
 *   DeleteAclsResponse := ThrottleTimeMs INT32
 *                         FilterResults ARRAY of {                  (one per filter, in order)
 *                           ErrorCode INT16, ErrorMessage NULLABLE_STRING
 *                           MatchingAcls ARRAY of {
 *                             ErrorCode INT16, ErrorMessage NULLABLE_STRING
 *                             ResourceType INT8, ResourceName STRING
 *                             PatternType INT8                      (v1+)
 *                             Principal STRING, Host STRING, Operation INT8, PermissionType INT8
 *                           }
 *                         }
 */
import { array, field, type ApiSchema } from '../schema.js';

const LITERAL = 3;

export interface DeleteAclsFilter {
  readonly resourceTypeFilter: number;
  readonly resourceNameFilter: string | null;
  readonly patternTypeFilter: number;
  readonly principalFilter: string | null;
  readonly hostFilter: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

export interface DeleteAclsRequest {
  readonly filters: readonly DeleteAclsFilter[];
}

export interface DeleteAclsMatchingAcl {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly resourceType: number;
  readonly resourceName: string;
  readonly patternType: number;
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

export interface DeleteAclsFilterResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly matchingAcls: readonly DeleteAclsMatchingAcl[];
}

export interface DeleteAclsResponse {
  readonly throttleTimeMs: number;
  readonly filterResults: readonly DeleteAclsFilterResult[];
}

export const DeleteAclsApi: ApiSchema<DeleteAclsRequest, DeleteAclsResponse> = {
  apiKey: 31,
  name: 'DeleteAcls',
  minVersion: 0,
  maxVersion: 1,
  request: [
    field(
      'Filters',
      array([
        field('ResourceTypeFilter', 'int8', '0+'),
        field('ResourceNameFilter', 'string', '0+', { nullable: '0+' }),
        field('PatternTypeFilter', 'int8', '1+', { default: LITERAL }),
        field('PrincipalFilter', 'string', '0+', { nullable: '0+' }),
        field('HostFilter', 'string', '0+', { nullable: '0+' }),
        field('Operation', 'int8', '0+'),
        field('PermissionType', 'int8', '0+'),
      ]),
      '0+',
    ),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '0+'),
    field(
      'FilterResults',
      array([
        field('ErrorCode', 'int16', '0+'),
        field('ErrorMessage', 'string', '0+', { nullable: '0+' }),
        field(
          'MatchingAcls',
          array([
            field('ErrorCode', 'int16', '0+'),
            field('ErrorMessage', 'string', '0+', { nullable: '0+' }),
            field('ResourceType', 'int8', '0+'),
            field('ResourceName', 'string', '0+'),
            field('PatternType', 'int8', '1+', { default: LITERAL }),
            field('Principal', 'string', '0+'),
            field('Host', 'string', '0+'),
            field('Operation', 'int8', '0+'),
            field('PermissionType', 'int8', '0+'),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
};
