/**
 * DescribeAcls (key 29), versions 0–1 (non-flexible; v2+ is flexible). v1 adds the pattern type:
 * a v0 filter is LITERAL (3), and v0 answers carry LITERAL patterns only.
 *
 *   DescribeAclsRequest  := ResourceTypeFilter INT8                 (1 = any, 2 topic, 3 group, 4 cluster, …)
 *                           ResourceNameFilter NULLABLE_STRING       (null = any name)
 *                           PatternTypeFilter INT8                  (v1+; 1 any, 2 match, 3 literal, 4 prefixed)
 *                           PrincipalFilter NULLABLE_STRING
 *                           HostFilter NULLABLE_STRING
 *                           Operation INT8                          (1 = any)
 *                           PermissionType INT8                     (1 any, 2 deny, 3 allow)
 *
 *   DescribeAclsResponse := ThrottleTimeMs INT32
 *                           ErrorCode INT16, ErrorMessage NULLABLE_STRING
 *                           Resources ARRAY of {
 *                             ResourceType INT8, ResourceName STRING
 *                             PatternType INT8                      (v1+)
 *                             Acls ARRAY of { Principal STRING, Host STRING, Operation INT8, PermissionType INT8 }
 *                           }
 */
import { array, field, type ApiSchema } from '../schema.js';

/** PatternType LITERAL: what a v0 filter or ACL means. */
const LITERAL = 3;

export interface DescribeAclsRequest {
  readonly resourceTypeFilter: number;
  readonly resourceNameFilter: string | null;
  readonly patternTypeFilter: number;
  readonly principalFilter: string | null;
  readonly hostFilter: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

export interface AclDescription {
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

export interface DescribeAclsResource {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly patternType: number;
  readonly acls: readonly AclDescription[];
}

export interface DescribeAclsResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly resources: readonly DescribeAclsResource[];
}

export const DescribeAclsApi: ApiSchema<DescribeAclsRequest, DescribeAclsResponse> = {
  apiKey: 29,
  name: 'DescribeAcls',
  minVersion: 0,
  maxVersion: 1,
  request: [
    field('ResourceTypeFilter', 'int8', '0+'),
    field('ResourceNameFilter', 'string', '0+', { nullable: '0+' }),
    field('PatternTypeFilter', 'int8', '1+', { default: LITERAL }),
    field('PrincipalFilter', 'string', '0+', { nullable: '0+' }),
    field('HostFilter', 'string', '0+', { nullable: '0+' }),
    field('Operation', 'int8', '0+'),
    field('PermissionType', 'int8', '0+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '0+'),
    field('ErrorCode', 'int16', '0+'),
    field('ErrorMessage', 'string', '0+', { nullable: '0+' }),
    field(
      'Resources',
      array([
        field('ResourceType', 'int8', '0+'),
        field('ResourceName', 'string', '0+'),
        field('PatternType', 'int8', '1+', { default: LITERAL }),
        field('Acls', array([field('Principal', 'string', '0+'), field('Host', 'string', '0+'), field('Operation', 'int8', '0+'), field('PermissionType', 'int8', '0+')]), '0+'),
      ]),
      '0+',
    ),
  ],
};
