/**
 * IncrementalAlterConfigs (key 44), version 0 (non-flexible; v1+ is flexible): change some of a
 * resource's dynamic configs, leaving the others as they are (KIP-339). The Java admin tools use
 * it for `kafka-configs.sh --alter`.
 *
 *   IncrementalAlterConfigsRequest  := Resources ARRAY of {
 *                                        ResourceType INT8, ResourceName STRING
 *                                        Configs ARRAY of {
 *                                          Name STRING
 *                                          ConfigOperation INT8      (CONFIG_OPERATION below)
 *                                          Value NULLABLE_STRING
 *                                        }
 *                                      }
 *                                      ValidateOnly BOOLEAN
 *
 *   IncrementalAlterConfigsResponse := the AlterConfigs response (alter-configs.ts)
 */
import { array, field, type ApiSchema } from '../schema.js';
import { ALTER_CONFIGS_RESPONSE_FIELDS, type AlterConfigsResponse } from './alter-configs.js';

/** AlterConfigOp.OpType: APPEND and SUBTRACT apply to list configs only. */
export const CONFIG_OPERATION = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

export interface IncrementalAlterableConfig {
  readonly name: string;
  readonly configOperation: number;
  readonly value: string | null;
}

export interface IncrementalAlterConfigsResource {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly configs: readonly IncrementalAlterableConfig[];
}

export interface IncrementalAlterConfigsRequest {
  readonly resources: readonly IncrementalAlterConfigsResource[];
  readonly validateOnly: boolean;
}

export type IncrementalAlterConfigsResponse = AlterConfigsResponse;

export const IncrementalAlterConfigsApi: ApiSchema<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse> = {
  apiKey: 44,
  name: 'IncrementalAlterConfigs',
  minVersion: 0,
  maxVersion: 0,
  request: [
    field(
      'Resources',
      array([
        field('ResourceType', 'int8', '0+'),
        field('ResourceName', 'string', '0+'),
        field(
          'Configs',
          array([field('Name', 'string', '0+'), field('ConfigOperation', 'int8', '0+'), field('Value', 'string', '0+', { nullable: '0+' })]),
          '0+',
        ),
      ]),
      '0+',
    ),
    field('ValidateOnly', 'bool', '0+'),
  ],
  response: ALTER_CONFIGS_RESPONSE_FIELDS,
};
