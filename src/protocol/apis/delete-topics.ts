/**
 * DeleteTopics (key 20), versions 0–3 (non-flexible; v4+ is flexible). v0–3 share one layout;
 * v3 may return TOPIC_DELETION_DISABLED (73).
 *
 *   DeleteTopicsRequest  := TopicNames ARRAY of STRING
 *                           TimeoutMs INT32
 *
 *   DeleteTopicsResponse := ThrottleTimeMs INT32                       (v1+)
 *                           Responses ARRAY of { Name STRING, ErrorCode INT16 }
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface DeleteTopicsRequest {
  readonly topicNames: readonly string[];
  readonly timeoutMs: number;
}

export interface DeletableTopicResult {
  readonly name: string;
  readonly errorCode: number;
}

export interface DeleteTopicsResponse {
  readonly throttleTimeMs: number;
  readonly responses: readonly DeletableTopicResult[];
}

export const DeleteTopicsApi: ApiSchema<DeleteTopicsRequest, DeleteTopicsResponse> = {
  apiKey: 20,
  name: 'DeleteTopics',
  minVersion: 0,
  maxVersion: 3,
  request: [field('TopicNames', array('string'), '0-5'), field('TimeoutMs', 'int32', '0+')],
  response: [field('ThrottleTimeMs', 'int32', '1+'), field('Responses', array([field('Name', 'string', '0+'), field('ErrorCode', 'int16', '0+')]), '0+')],
};
