/**
 * Metadata: live brokers, the controller, and for each topic asked for (or all) its partitions
 * with their leader, leader epoch (v7+), replicas, in-sync replicas and offline replicas (v5+),
 * from the partition states in the coordination store. A partition without a leader reports
 * LEADER_NOT_AVAILABLE. A named unknown topic is created when the client allows it and
 * `auto.create.topics.enable` is on, and returned in the same answer once its leaders are elected
 * (or, if that takes long, without them, as LEADER_NOT_AVAILABLE: the client asks again).
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

/** How long an auto-created topic's Metadata answer waits for the controller to elect its leaders. */
const AUTO_CREATE_LEADER_WAIT_MS = 3_000;

export function metadataHandler(context: BrokerContext): ApiHandler<MetadataRequest, MetadataResponse> {
  return {
    api: MetadataApi,
    async handle(request, version, requestContext) {
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
        // Each client is told the addresses of the listener it came in on.
        brokers: cluster.liveBrokersOn(requestContext.identity.listenerName).map((broker) => ({ nodeId: broker.id, host: broker.host, port: broker.port, rack: broker.rack ?? null })),
        clusterId: context.clusterId,
        // Admin clients send CreateTopics and the like to the controller; any broker here serves
        // them, so while no election has been seen (a broker just started) this one answers.
        controllerId: cluster.controllerId() >= 0 && cluster.isLive(cluster.controllerId()) ? cluster.controllerId() : context.brokerId,
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
  const replicationFactor = context.config['default.replication.factor'];
  const live = context.cluster.liveBrokers().length;
  if (live < replicationFactor) {
    // As Kafka: a topic is not created with fewer replicas than asked for (it would stay under-
    // replicated for good). The client asks again; once enough brokers are up, it is created.
    context.logger.warn({ topic: name, replicationFactor, liveBrokers: live }, `not auto-creating topic ${name}: default.replication.factor is ${replicationFactor} and only ${live} brokers are live`);
    return KafkaErrorCode.LEADER_NOT_AVAILABLE;
  }
  try {
    const created = await context.cluster.createTopic(name, context.config['num.partitions'], {}, { replicationFactor });
    context.logger.info({ topic: name, partitions: created.partitions.size }, 'auto-created topic');
    // Answered with leaders when the controller is quick (it usually is): the client's first
    // produce then needs no retry.
    if (await context.cluster.waitForLeaders(name, AUTO_CREATE_LEADER_WAIT_MS)) await context.replicas.leadershipTaken(name, AUTO_CREATE_LEADER_WAIT_MS);
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
  const { cluster } = context;
  const partitions = [...assignment.partitions.entries()]
    .sort(([a], [b]) => a - b)
    .map(([partitionIndex, replicas]) => {
      const state = cluster.partitionState(assignment.name, partitionIndex)?.state;
      // A log this broker could not open at start is offline, as a partition on a failed log dir is in Kafka.
      const offlineHere = (id: number): boolean => id === context.brokerId && context.logs.offlineReason(assignment.name, partitionIndex) !== undefined;
      const offlineReplicas = replicas.filter((id) => !cluster.isLive(id) || offlineHere(id));
      const named = state !== undefined && state.leader >= 0 && cluster.isLive(state.leader) ? state.leader : -1;
      // A leader whose log this broker could not open serves nothing: the partition is offline.
      const storageFailed = named >= 0 && offlineHere(named);
      const leader = storageFailed ? -1 : named;
      const errorCode = storageFailed ? KafkaErrorCode.KAFKA_STORAGE_ERROR : leader === -1 ? KafkaErrorCode.LEADER_NOT_AVAILABLE : KafkaErrorCode.NONE;
      return {
        errorCode,
        partitionIndex,
        leaderId: leader,
        leaderEpoch: state?.leaderEpoch ?? -1,
        replicaNodes: [...replicas],
        isrNodes: [...(state?.isr ?? [])],
        offlineReplicas,
      };
    });
  return { errorCode: 0, name: assignment.name, isInternal: false, partitions, topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED };
}

function topicError(name: string, errorCode: number): MetadataResponseTopic {
  return { errorCode, name, isInternal: false, partitions: [], topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED };
}
