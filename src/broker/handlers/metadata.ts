/**
 * Metadata: live brokers, and for each topic asked for (or all) its partitions and their leader —
 * the broker the partition is assigned to. A partition whose broker is down reports
 * LEADER_NOT_AVAILABLE (there is no replication to fail over to). A named unknown topic is created
 * when the client allows it and `auto.create.topics.enable` is on, and returned in the same answer.
 */
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import {
  AUTHORIZED_OPERATIONS_OMITTED,
  MetadataApi,
  type MetadataRequest,
  type MetadataResponse,
  type MetadataResponseTopic,
} from '../../protocol/apis/metadata.js';
import { TributaryError } from '../../common/errors.js';
import { validateTopicName } from '../../storage/log-manager.js';
import type { TopicAssignment } from '../cluster.js';
import type { BrokerContext } from '../context.js';
import type { ApiHandler } from '../router.js';

export function metadataHandler(context: BrokerContext): ApiHandler<MetadataRequest, MetadataResponse> {
  return {
    api: MetadataApi,
    async handle(request, version) {
      const { cluster } = context;
      // v0: an empty list means all topics; v1+: null means all, empty means none.
      const all = request.topics === null || (version === 0 && request.topics.length === 0);
      const names = all ? cluster.topicNames() : (request.topics ?? []).map((topic) => topic.name);
      const topics: MetadataResponseTopic[] = [];
      for (const name of names) {
        let assignment = cluster.topic(name);
        if (assignment === undefined && !all) {
          const created = await autoCreate(context, name, request.allowAutoTopicCreation || version < 4);
          if (typeof created === 'number') {
            topics.push(topicError(name, created));
            continue;
          }
          assignment = created;
        }
        if (assignment !== undefined) topics.push(describe(context, assignment));
      }
      return {
        throttleTimeMs: 0,
        brokers: cluster.liveBrokers().map((broker) => ({ nodeId: broker.id, host: broker.host, port: broker.port, rack: broker.rack ?? null })),
        clusterId: context.clusterId,
        controllerId: cluster.liveBrokers()[0]?.id ?? context.brokerId,
        topics,
        clusterAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
      };
    },
  };
}

async function autoCreate(context: BrokerContext, name: string, clientAllows: boolean): Promise<TopicAssignment | number> {
  try {
    validateTopicName(name);
  } catch {
    return KafkaErrorCode.INVALID_TOPIC_EXCEPTION;
  }
  if (!clientAllows || !context.config['auto.create.topics.enable']) return KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
  try {
    const created = await context.cluster.createTopic(name, context.config['num.partitions']);
    context.logger.info({ topic: name, partitions: created.partitions.size }, 'auto-created topic');
    return created;
  } catch (error) {
    if (error instanceof TributaryError && error.code === 'TOPIC_ALREADY_EXISTS') {
      context.logger.debug({ topic: name, cached: context.cluster.topic(name) !== undefined }, 'auto-create raced with another creation');
      return context.cluster.topic(name) ?? KafkaErrorCode.LEADER_NOT_AVAILABLE;
    }
    context.logger.error({ err: error, topic: name }, 'auto-creating a topic failed');
    return KafkaErrorCode.LEADER_NOT_AVAILABLE;
  }
}

function describe(context: BrokerContext, assignment: TopicAssignment): MetadataResponseTopic {
  const partitions = [...assignment.partitions.entries()]
    .sort(([a], [b]) => a - b)
    .map(([partitionIndex, owner]) => {
      // A log this broker could not open at start is offline, as a partition on a failed log dir is in Kafka.
      const offline = owner === context.brokerId && context.logs.offlineReason(assignment.name, partitionIndex) !== undefined;
      const live = context.cluster.isLive(owner) && !offline;
      return {
        errorCode: offline ? KafkaErrorCode.KAFKA_STORAGE_ERROR : live ? KafkaErrorCode.NONE : KafkaErrorCode.LEADER_NOT_AVAILABLE,
        partitionIndex,
        leaderId: live ? owner : -1,
        leaderEpoch: -1,
        replicaNodes: [owner],
        isrNodes: live ? [owner] : [],
        offlineReplicas: live ? [] : [owner],
      };
    });
  return { errorCode: 0, name: assignment.name, isInternal: false, partitions, topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED };
}

function topicError(name: string, errorCode: number): MetadataResponseTopic {
  return { errorCode, name, isInternal: false, partitions: [], topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED };
}
