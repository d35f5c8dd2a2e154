/**
 * DescribeConfigs (key 32), versions 1–3 (non-flexible; v4+ is flexible). v0 is not served: it
 * has no ConfigSource (only an IsDefault flag), and Kafka 4 dropped it (KIP-896). v2 only changes
 * quota throttling. Readers of v1+ take "is default" to mean ConfigSource = DEFAULT_CONFIG.
 *
 *   DescribeConfigsRequest  := Resources ARRAY of {
 *                                ResourceType INT8                   (2 = topic, 4 = broker)
 *                                ResourceName STRING                 (a topic, or a broker id in decimal)
 *                                ConfigurationKeys NULLABLE ARRAY of STRING   (null = every config)
 *                              }
 *                              IncludeSynonyms BOOLEAN               (v1+)
 *                              IncludeDocumentation BOOLEAN          (v3+)
 *
 *   DescribeConfigsResponse := ThrottleTimeMs INT32
 *                              Results ARRAY of {
 *                                ErrorCode INT16, ErrorMessage NULLABLE_STRING
 *                                ResourceType INT8, ResourceName STRING
 *                                Configs ARRAY of {
 *                                  Name STRING, Value NULLABLE_STRING, ReadOnly BOOLEAN
 *                                  ConfigSource INT8                 (v1+; CONFIG_SOURCE below)
 *                                  IsSensitive BOOLEAN
 *                                  Synonyms ARRAY of { Name STRING, Value NULLABLE_STRING, Source INT8 }   (v1+)
 *                                  ConfigType INT8                   (v3+; CONFIG_TYPE below)
 *                                  Documentation NULLABLE_STRING     (v3+)
 *                                }
 *                              }
 */
import { array, field, type ApiSchema } from '../schema.js';

/** ConfigResource.Type: the kinds of resource a config belongs to. */
export const CONFIG_RESOURCE_TYPE = { TOPIC: 2, BROKER: 4 } as const;

/** Where a config's value comes from (DescribeConfigsResponse.ConfigSource). */
export const CONFIG_SOURCE = {
  UNKNOWN: 0,
  DYNAMIC_TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
} as const;

/** A config's data type (DescribeConfigsResponse.ConfigType, v3+). */
export const CONFIG_TYPE = { UNKNOWN: 0, BOOLEAN: 1, STRING: 2, INT: 3, SHORT: 4, LONG: 5, DOUBLE: 6, LIST: 7, CLASS: 8, PASSWORD: 9 } as const;

export interface DescribeConfigsResource {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly configurationKeys: readonly string[] | null;
}

export interface DescribeConfigsRequest {
  readonly resources: readonly DescribeConfigsResource[];
  readonly includeSynonyms: boolean;
  readonly includeDocumentation: boolean;
}

export interface DescribeConfigsSynonym {
  readonly name: string;
  readonly value: string | null;
  readonly source: number;
}

export interface DescribeConfigsEntry {
  readonly name: string;
  readonly value: string | null;
  readonly readOnly: boolean;
  readonly configSource: number;
  readonly isSensitive: boolean;
  readonly synonyms: readonly DescribeConfigsSynonym[];
  readonly configType: number;
  readonly documentation: string | null;
}

export interface DescribeConfigsResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly resourceType: number;
  readonly resourceName: string;
  readonly configs: readonly DescribeConfigsEntry[];
}

export interface DescribeConfigsResponse {
  readonly throttleTimeMs: number;
  readonly results: readonly DescribeConfigsResult[];
}

export const DescribeConfigsApi: ApiSchema<DescribeConfigsRequest, DescribeConfigsResponse> = {
  apiKey: 32,
  name: 'DescribeConfigs',
  minVersion: 1,
  maxVersion: 3,
  request: [
    field(
      'Resources',
      array([
        field('ResourceType', 'int8', '0+'),
        field('ResourceName', 'string', '0+'),
        field('ConfigurationKeys', array('string'), '0+', { nullable: '0+' }),
      ]),
      '0+',
    ),
    field('IncludeSynonyms', 'bool', '1+'),
    field('IncludeDocumentation', 'bool', '3+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '0+'),
    field(
      'Results',
      array([
        field('ErrorCode', 'int16', '0+'),
        field('ErrorMessage', 'string', '0+', { nullable: '0+' }),
        field('ResourceType', 'int8', '0+'),
        field('ResourceName', 'string', '0+'),
        field(
          'Configs',
          array([
            field('Name', 'string', '0+'),
            field('Value', 'string', '0+', { nullable: '0+' }),
            field('ReadOnly', 'bool', '0+'),
            field('ConfigSource', 'int8', '1+', { default: -1 }),
            field('IsSensitive', 'bool', '0+'),
            field('Synonyms', array([field('Name', 'string', '1+'), field('Value', 'string', '1+', { nullable: '0+' }), field('Source', 'int8', '1+')]), '1+'),
            field('ConfigType', 'int8', '3+'),
            field('Documentation', 'string', '3+', { nullable: '0+' }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
};
