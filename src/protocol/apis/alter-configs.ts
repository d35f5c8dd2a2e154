/**
 * AlterConfigs (key 33), versions 0–1 (non-flexible; v2+ is flexible): replace the whole set of
 * a resource's dynamic configs. v1 only changes quota throttling.
 *
 *   AlterConfigsRequest  := Resources ARRAY of {
 *                             ResourceType INT8, ResourceName STRING
 *                             Configs ARRAY of { Name STRING, Value NULLABLE_STRING }
 *                           }
 *                           ValidateOnly BOOLEAN
 *
 *   AlterConfigsResponse := ThrottleTimeMs INT32
 *                           Responses ARRAY of {
 *                             ErrorCode INT16, ErrorMessage NULLABLE_STRING
 *                             ResourceType INT8, ResourceName STRING
 *                           }
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface AlterableConfig {
  readonly name: string;
  readonly value: string | null;
}

export interface AlterConfigsResource {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly configs: readonly AlterableConfig[];
}

export interface AlterConfigsRequest {
  readonly resources: readonly AlterConfigsResource[];
  readonly validateOnly: boolean;
}

/** One resource's outcome; IncrementalAlterConfigs answers with the same shape. */
export interface AlterConfigsResourceResponse {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly resourceType: number;
  readonly resourceName: string;
}

export interface AlterConfigsResponse {
  readonly throttleTimeMs: number;
  readonly responses: readonly AlterConfigsResourceResponse[];
}

/** The response fields AlterConfigs and IncrementalAlterConfigs share. */
export const ALTER_CONFIGS_RESPONSE_FIELDS = [
  field('ThrottleTimeMs', 'int32', '0+'),
  field(
    'Responses',
    array([
      field('ErrorCode', 'int16', '0+'),
      field('ErrorMessage', 'string', '0+', { nullable: '0+' }),
      field('ResourceType', 'int8', '0+'),
      field('ResourceName', 'string', '0+'),
    ]),
    '0+',
  ),
] as const;

export const AlterConfigsApi: ApiSchema<AlterConfigsRequest, AlterConfigsResponse> = {
  apiKey: 33,
  name: 'AlterConfigs',
  minVersion: 0,
  maxVersion: 1,
  request: [
    field(
      'Resources',
      array([
        field('ResourceType', 'int8', '0+'),
        field('ResourceName', 'string', '0+'),
        field('Configs', array([field('Name', 'string', '0+'), field('Value', 'string', '0+', { nullable: '0+' })]), '0+'),
      ]),
      '0+',
    ),
    field('ValidateOnly', 'bool', '0+'),
  ],
  response: ALTER_CONFIGS_RESPONSE_FIELDS,
};
