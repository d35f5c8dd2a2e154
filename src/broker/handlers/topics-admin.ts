/**
 * CreateTopics, CreatePartitions and DeleteTopics. A topic's partitions get `ReplicationFactor`
 * replicas each (−1: the broker's default.replication.factor), placed over the live brokers as
 * Kafka places them (racks spread when every broker has one), or as the request's Assignments
 * say. The answer comes once every partition has a leader (Kafka waits for the same, up to the
 * request's timeout). Configs use Kafka's topic-config names and are validated before anything is
 * written, but after the existence check: an existing topic answers TOPIC_ALREADY_EXISTS whatever
 * else the request says.
 *
 * One request may create at most `create.topic.max.partitions` partitions in all (over its
 * topics): beyond that the topics that do not fit are refused with POLICY_VIOLATION, so no single
 * request can make the broker create folders for minutes or run out of file descriptors.
 *
 * Creating needs CREATE on the cluster or the topic, deleting DELETE on the topic, adding
 * partitions ALTER on the topic; a topic refused answers TOPIC_AUTHORIZATION_FAILED, untouched.
 */
import { TributaryError } from '../../common/errors.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import { CreateTopicsApi, type CreatableTopicResult, type CreateTopicsRequest, type CreateTopicsResponse } from '../../protocol/apis/create-topics.js';
import {
  CreatePartitionsApi,
  type CreatePartitionsRequest,
  type CreatePartitionsResponse,
  type CreatePartitionsResult,
} from '../../protocol/apis/create-partitions.js';
import { DeleteTopicsApi, type DeleteTopicsRequest, type DeleteTopicsResponse } from '../../protocol/apis/delete-topics.js';
import { logConfigFromTopicConfigs } from '../../storage/log-config.js';
import { validateTopicName } from '../../storage/log-manager.js';
import type { BrokerContext } from '../context.js';
import type { ApiHandler, RequestContext } from '../router.js';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../security/acl.js';

/** Whether the requester may do `operation` on `topic` (CREATE is also granted on the whole cluster). */
function topicAccess(context: BrokerContext, requestContext: RequestContext, operation: AclOperation): (topic: string) => boolean {
  const { authorizer } = context;
  const { identity } = requestContext;
  const clusterWide = operation === AclOperation.CREATE && authorizer.authorize(identity, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
  return (topic) => clusterWide || authorizer.authorize(identity, operation, ResourceType.TOPIC, topic);
}

const REFUSED_MESSAGE = 'the principal is not authorized for this topic';

export function createTopicsHandler(context: BrokerContext): ApiHandler<CreateTopicsRequest, CreateTopicsResponse> {
  return {
    api: CreateTopicsApi,
    async handle(request, _version, requestContext) {
      const allowed = topicAccess(context, requestContext, AclOperation.CREATE);
      const topics: CreatableTopicResult[] = [];
      const maxPartitions = context.config['create.topic.max.partitions'];
      let partitionsThisRequest = 0;
      for (const topic of request.topics) {
        const fail = (errorCode: number, errorMessage: string): CreatableTopicResult => ({ name: topic.name, errorCode, errorMessage });
        if (!allowed(topic.name)) {
          topics.push(fail(KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, REFUSED_MESSAGE));
          continue;
        }
        // Before anything about the request is judged, as Kafka does: `--create --if-not-exists`
        // tools (kafka-topics, Connect, Streams) treat only TOPIC_ALREADY_EXISTS as "done", so an
        // existing topic must not be refused for configs or counts it would not have used.
        if (context.cluster.topic(topic.name) !== undefined) {
          topics.push(fail(KafkaErrorCode.TOPIC_ALREADY_EXISTS, `topic ${topic.name} already exists`));
          continue;
        }
        try {
          validateTopicName(topic.name);
        } catch (error) {
          topics.push(fail(KafkaErrorCode.INVALID_TOPIC_EXCEPTION, (error as Error).message));
          continue;
        }
        const manual = topic.assignments.length > 0 ? new Map(topic.assignments.map((entry) => [entry.partitionIndex, [...entry.brokerIds]])) : undefined;
        if (manual !== undefined && (topic.numPartitions !== -1 || topic.replicationFactor !== -1)) {
          topics.push(fail(KafkaErrorCode.INVALID_REQUEST, 'give either assignments, or a partition count and replication factor, not both (set the counts to -1 with assignments)'));
          continue;
        }
        const partitions = manual?.size ?? (topic.numPartitions === -1 ? context.config['num.partitions'] : topic.numPartitions);
        if (!Number.isInteger(partitions) || partitions < 1) {
          topics.push(fail(KafkaErrorCode.INVALID_PARTITIONS, `number of partitions must be at least 1, not ${partitions}`));
          continue;
        }
        if (partitionsThisRequest + partitions > maxPartitions) {
          topics.push(fail(KafkaErrorCode.POLICY_VIOLATION, partitionLimitMessage(partitions, partitionsThisRequest, maxPartitions)));
          continue;
        }
        const replicationFactor = topic.replicationFactor === -1 ? context.config['default.replication.factor'] : topic.replicationFactor;
        const liveBrokers = context.cluster.liveBrokers().length;
        if (manual === undefined && (!Number.isInteger(replicationFactor) || replicationFactor < 1 || replicationFactor > liveBrokers)) {
          topics.push(
            fail(
              KafkaErrorCode.INVALID_REPLICATION_FACTOR,
              replicationFactor < 1
                ? `replication factor must be at least 1, not ${replicationFactor}`
                : `replication factor ${replicationFactor} is larger than the ${liveBrokers} live broker${liveBrokers === 1 ? '' : 's'}; start more brokers or ask for fewer replicas`,
            ),
          );
          continue;
        }
        const configs: Record<string, string> = {};
        for (const config of topic.configs) if (config.value !== null) configs[config.name] = config.value;
        try {
          logConfigFromTopicConfigs(configs, undefined, `configs of topic ${topic.name}`);
        } catch (error) {
          topics.push(fail(KafkaErrorCode.INVALID_CONFIG, (error as Error).message));
          continue;
        }
        partitionsThisRequest += partitions;
        if (request.validateOnly) {
          topics.push({ name: topic.name, errorCode: 0, errorMessage: null });
          continue;
        }
        try {
          const created = await context.cluster.createTopic(topic.name, partitions, configs, manual === undefined ? { replicationFactor } : { assignment: manual });
          context.logger.info({ topic: topic.name, partitions, replicas: Object.fromEntries(created.partitions) }, 'created topic');
          // Answered once every partition has a leader, so the client's first produce finds one.
          const wait = leaderWaitMs(request.timeoutMs);
          const led = (await context.cluster.waitForLeaders(topic.name, wait)) && (await context.replicas.leadershipTaken(topic.name, wait));
          if (!led) context.logger.warn({ topic: topic.name }, 'created topic; its leaders are not all elected yet');
          topics.push({ name: topic.name, errorCode: 0, errorMessage: null });
        } catch (error) {
          if (error instanceof TributaryError && error.code === 'TOPIC_ALREADY_EXISTS') topics.push(fail(KafkaErrorCode.TOPIC_ALREADY_EXISTS, error.message));
          else if (error instanceof TributaryError && (error.code === 'INVALID_REPLICA_ASSIGNMENT' || error.code === 'INVALID_REPLICATION_FACTOR')) {
            topics.push(fail(KafkaErrorCode[error.code], error.message));
          } else {
            context.logger.error({ err: error, topic: topic.name }, 'creating a topic failed');
            topics.push(fail(KafkaErrorCode.UNKNOWN_SERVER_ERROR, 'creating the topic failed; see the broker log'));
          }
        }
      }
      return { throttleTimeMs: 0, topics };
    },
  };
}

export function deleteTopicsHandler(context: BrokerContext): ApiHandler<DeleteTopicsRequest, DeleteTopicsResponse> {
  return {
    api: DeleteTopicsApi,
    async handle(request, _version, requestContext) {
      const allowed = topicAccess(context, requestContext, AclOperation.DELETE);
      const responses = [];
      for (const name of request.topicNames) {
        if (!allowed(name)) {
          responses.push({ name, errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED });
          continue;
        }
        try {
          validateTopicName(name);
        } catch {
          // No topic can have this name, so it does not exist (as Kafka answers).
          responses.push({ name, errorCode: KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION });
          continue;
        }
        try {
          await context.cluster.deleteTopic(name);
          context.logger.info({ topic: name }, 'deleted topic');
          responses.push({ name, errorCode: 0 });
        } catch (error) {
          const unknown = error instanceof TributaryError && error.code === 'UNKNOWN_TOPIC_OR_PARTITION';
          if (!unknown) context.logger.error({ err: error, topic: name }, 'deleting a topic failed');
          responses.push({ name, errorCode: unknown ? KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION : KafkaErrorCode.UNKNOWN_SERVER_ERROR });
        }
      }
      return { throttleTimeMs: 0, responses };
    },
  };
}

export function createPartitionsHandler(context: BrokerContext): ApiHandler<CreatePartitionsRequest, CreatePartitionsResponse> {
  return {
    api: CreatePartitionsApi,
    async handle(request, _version, requestContext) {
      const allowed = topicAccess(context, requestContext, AclOperation.ALTER);
      const results: CreatePartitionsResult[] = [];
      const maxPartitions = context.config['create.topic.max.partitions'];
      let partitionsThisRequest = 0;
      for (const topic of request.topics) {
        const fail = (errorCode: number, errorMessage: string): CreatePartitionsResult => ({ name: topic.name, errorCode, errorMessage });
        if (!allowed(topic.name)) {
          results.push(fail(KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, REFUSED_MESSAGE));
          continue;
        }
        const assignment = context.cluster.topic(topic.name);
        if (assignment === undefined) {
          results.push(fail(KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${topic.name} does not exist`));
          continue;
        }
        if (topic.assignments !== null) {
          results.push(fail(KafkaErrorCode.INVALID_REQUEST, 'manual replica assignments are not supported; give the new partition count only'));
          continue;
        }
        if (topic.count <= assignment.partitions.size) {
          results.push(fail(KafkaErrorCode.INVALID_PARTITIONS, `topic ${topic.name} has ${assignment.partitions.size} partitions; the new count must be larger, not ${topic.count}`));
          continue;
        }
        const added = topic.count - assignment.partitions.size;
        if (partitionsThisRequest + added > maxPartitions) {
          results.push(fail(KafkaErrorCode.POLICY_VIOLATION, partitionLimitMessage(added, partitionsThisRequest, maxPartitions)));
          continue;
        }
        partitionsThisRequest += added;
        if (request.validateOnly) {
          results.push({ name: topic.name, errorCode: 0, errorMessage: null });
          continue;
        }
        try {
          await context.cluster.addPartitions(topic.name, topic.count);
          context.logger.info({ topic: topic.name, partitions: topic.count }, 'added partitions');
          const wait = leaderWaitMs(request.timeoutMs);
          if (await context.cluster.waitForLeaders(topic.name, wait)) await context.replicas.leadershipTaken(topic.name, wait);
          results.push({ name: topic.name, errorCode: 0, errorMessage: null });
        } catch (error) {
          context.logger.error({ err: error, topic: topic.name }, 'adding partitions failed');
          results.push(fail(KafkaErrorCode.UNKNOWN_SERVER_ERROR, 'adding partitions failed; see the broker log'));
        }
      }
      return { throttleTimeMs: 0, results };
    },
  };
}

/** The longest a CreateTopics answer waits for the new partitions' leaders. */
const CREATE_LEADER_WAIT_MS = 30_000;

/** How long to wait for leaders within a request's timeout: most of it, so the answer still comes in time. */
function leaderWaitMs(requestTimeoutMs: number): number {
  return Math.min(Math.max(Math.floor(requestTimeoutMs * 0.8), 0), CREATE_LEADER_WAIT_MS);
}

function partitionLimitMessage(wanted: number, earlier: number, limit: number): string {
  return `this request would create ${earlier + wanted} partitions (${wanted} here${earlier > 0 ? `, ${earlier} for earlier topics` : ''}); one request may create at most ${limit} (the broker's create.topic.max.partitions): create them in several requests or raise the limit`;
}
