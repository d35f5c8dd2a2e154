/**
 * DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topic configs are dynamic (the
 * overrides in `/config/topics/<topic>`, applied by every broker without a restart); broker
 * configs are static (the broker's --config file and --set flags), so they can be described but
 * not altered.
 *
 * A topic's config is described as Kafka does: the override if there is one (DYNAMIC_TOPIC_CONFIG),
 * else the broker setting it falls back to (STATIC_BROKER_CONFIG when the broker sets it to
 * something other than the built-in default, DEFAULT_CONFIG otherwise), with those as synonyms.
 *
 * An alteration is checked whole before anything is written: one unknown name or bad value
 * refuses the resource with INVALID_CONFIG and leaves its configs as they were.
 *
 * Describing needs DESCRIBE_CONFIGS, altering ALTER_CONFIGS, on the topic (else
 * TOPIC_AUTHORIZATION_FAILED) or, for a broker, on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
 */
import { TributaryError } from '../../common/errors.js';
import { AlterConfigsApi, type AlterConfigsRequest, type AlterConfigsResourceResponse, type AlterConfigsResponse } from '../../protocol/apis/alter-configs.js';
import {
  CONFIG_RESOURCE_TYPE,
  CONFIG_SOURCE,
  CONFIG_TYPE,
  DescribeConfigsApi,
  type DescribeConfigsEntry,
  type DescribeConfigsRequest,
  type DescribeConfigsResource,
  type DescribeConfigsResponse,
  type DescribeConfigsResult,
  type DescribeConfigsSynonym,
} from '../../protocol/apis/describe-configs.js';
import {
  CONFIG_OPERATION,
  IncrementalAlterConfigsApi,
  type IncrementalAlterableConfig,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsResponse,
} from '../../protocol/apis/incremental-alter-configs.js';
import { KafkaErrorCode, KafkaProtocolError } from '../../protocol/kafka-errors.js';
import {
  formatTopicConfigValue,
  logConfigFromTopicConfigs,
  topicConfigDefinition,
  TOPIC_CONFIGS,
  unknownTopicConfigMessage,
  type LogConfig,
  type TopicConfigDefinition,
} from '../../storage/log-config.js';
import { validateTopicName } from '../../storage/log-manager.js';
import { brokerConfigSchema, defaultLogConfig, parseBrokerConfig, type BrokerConfig } from '../config.js';
import type { BrokerContext } from '../context.js';
import type { ApiHandler, RequestContext } from '../router.js';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../security/acl.js';

/** The refusal of a resource the requester may not describe or alter the configs of, or undefined. */
function refusedResource(
  context: BrokerContext,
  requestContext: RequestContext,
  operation: typeof AclOperation.DESCRIBE_CONFIGS | typeof AclOperation.ALTER_CONFIGS,
  resource: { readonly resourceType: number; readonly resourceName: string },
): { errorCode: number; errorMessage: string } | undefined {
  const { authorizer } = context;
  const { identity } = requestContext;
  const verb = operation === AclOperation.DESCRIBE_CONFIGS ? 'DESCRIBE_CONFIGS' : 'ALTER_CONFIGS';
  if (resource.resourceType === CONFIG_RESOURCE_TYPE.TOPIC && !authorizer.authorize(identity, operation, ResourceType.TOPIC, resource.resourceName)) {
    return { errorCode: KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: `${identity.principal} may not ${verb} topic ${resource.resourceName}` };
  }
  if (resource.resourceType === CONFIG_RESOURCE_TYPE.BROKER && !authorizer.authorize(identity, operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)) {
    return { errorCode: KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: `${identity.principal} may not ${verb} the cluster's brokers` };
  }
  return undefined;
}

/** The broker settings with nothing set: what "default" means for DescribeConfigs sources. */
const BUILT_IN_BROKER_CONFIG: BrokerConfig = parseBrokerConfig({}, 'built-in broker defaults');
const BUILT_IN_LOG_CONFIG: LogConfig = defaultLogConfig(BUILT_IN_BROKER_CONFIG);

const STATIC_BROKER_CONFIGS_MESSAGE =
  "broker configs are static in Tributary: set them in the broker's --config file or with --set and restart it; only topic configs can be altered";

export function describeConfigsHandler(context: BrokerContext): ApiHandler<DescribeConfigsRequest, DescribeConfigsResponse> {
  const brokerLogConfig = defaultLogConfig(context.config);
  return {
    api: DescribeConfigsApi,
    async handle(request, _version, requestContext) {
      const options = { synonyms: request.includeSynonyms, documentation: request.includeDocumentation };
      const results = request.resources.map((resource): DescribeConfigsResult => {
        const ok = (configs: DescribeConfigsEntry[]): DescribeConfigsResult => ({ ...echo(resource), errorCode: 0, errorMessage: null, configs: wanted(configs, resource.configurationKeys) });
        const fail = (errorCode: number, errorMessage: string): DescribeConfigsResult => ({ ...echo(resource), errorCode, errorMessage, configs: [] });
        const refused = refusedResource(context, requestContext, AclOperation.DESCRIBE_CONFIGS, resource);
        if (refused !== undefined) return fail(refused.errorCode, refused.errorMessage);
        switch (resource.resourceType) {
          case CONFIG_RESOURCE_TYPE.TOPIC: {
            const topic = context.cluster.topic(resource.resourceName);
            if (topic === undefined) return fail(KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${resource.resourceName} does not exist`);
            return ok(TOPIC_CONFIGS.map((definition) => topicConfigEntry(definition, topic.configs[definition.name], brokerLogConfig, options)));
          }
          case CONFIG_RESOURCE_TYPE.BROKER: {
            // "" is the cluster-wide dynamic default, which Tributary never has.
            if (resource.resourceName === '') return ok([]);
            if (resource.resourceName !== String(context.brokerId)) {
              return fail(KafkaErrorCode.INVALID_REQUEST, `this is broker ${context.brokerId}; the configs of broker ${resource.resourceName} are described by that broker`);
            }
            return ok(brokerConfigEntries(context.config, options));
          }
          default:
            return fail(KafkaErrorCode.INVALID_REQUEST, unsupportedResourceMessage(resource.resourceType));
        }
      });
      return { throttleTimeMs: 0, results };
    },
  };
}

export function alterConfigsHandler(context: BrokerContext): ApiHandler<AlterConfigsRequest, AlterConfigsResponse> {
  return {
    api: AlterConfigsApi,
    async handle(request, _version, requestContext) {
      const responses: AlterConfigsResourceResponse[] = [];
      for (const resource of request.resources) {
        const refused = refusedResource(context, requestContext, AclOperation.ALTER_CONFIGS, resource);
        if (refused !== undefined) {
          responses.push({ ...echo(resource), ...refused });
          continue;
        }
        // AlterConfigs replaces the whole set: what the request lists is all that remains.
        responses.push(
          await alterResource(context, resource, request.validateOnly, () => {
            rejectDuplicates(resource.configs.map((config) => config.name));
            const next: Record<string, string> = {};
            for (const config of resource.configs) if (config.value !== null) next[config.name] = config.value.trim();
            return next;
          }),
        );
      }
      return { throttleTimeMs: 0, responses };
    },
  };
}

export function incrementalAlterConfigsHandler(context: BrokerContext): ApiHandler<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse> {
  const brokerLogConfig = defaultLogConfig(context.config);
  return {
    api: IncrementalAlterConfigsApi,
    async handle(request, _version, requestContext) {
      const responses: AlterConfigsResourceResponse[] = [];
      for (const resource of request.resources) {
        const refused = refusedResource(context, requestContext, AclOperation.ALTER_CONFIGS, resource);
        if (refused !== undefined) {
          responses.push({ ...echo(resource), ...refused });
          continue;
        }
        responses.push(
          await alterResource(context, resource, request.validateOnly, (current) => {
            rejectDuplicates(resource.configs.map((config) => config.name));
            const next: Record<string, string> = { ...current };
            for (const operation of resource.configs) applyOperation(next, operation, brokerLogConfig);
            return next;
          }),
        );
      }
      return { throttleTimeMs: 0, responses };
    },
  };
}

/**
 * One resource of an alter request: only topics can be altered; `change` builds the new override
 * set from the stored one, which is validated whole and written conditionally (Cluster).
 */
async function alterResource(
  context: BrokerContext,
  resource: { readonly resourceType: number; readonly resourceName: string },
  validateOnly: boolean,
  change: (current: Readonly<Record<string, string>>) => Record<string, string>,
): Promise<AlterConfigsResourceResponse> {
  const fail = (errorCode: number, errorMessage: string): AlterConfigsResourceResponse => ({ ...echo(resource), errorCode, errorMessage });
  if (resource.resourceType === CONFIG_RESOURCE_TYPE.BROKER) return fail(KafkaErrorCode.POLICY_VIOLATION, STATIC_BROKER_CONFIGS_MESSAGE);
  if (resource.resourceType !== CONFIG_RESOURCE_TYPE.TOPIC) return fail(KafkaErrorCode.INVALID_REQUEST, unsupportedResourceMessage(resource.resourceType));
  const topic = resource.resourceName;
  try {
    validateTopicName(topic);
  } catch {
    // No topic can have this name (and it must not reach a coordination path).
    return fail(KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${topic} does not exist`);
  }
  const brokerLogConfig = defaultLogConfig(context.config);
  try {
    const written = await context.cluster.alterTopicConfigs(
      topic,
      (current) => {
        const next = change(current);
        try {
          logConfigFromTopicConfigs(next, brokerLogConfig, `configs of topic ${topic}`);
        } catch (error) {
          throw new KafkaProtocolError('INVALID_CONFIG', (error as Error).message, { cause: error });
        }
        return next;
      },
      { validateOnly },
    );
    if (!validateOnly) context.logger.info({ topic, configs: written }, 'topic configs changed');
    return { ...echo(resource), errorCode: 0, errorMessage: null };
  } catch (error) {
    if (error instanceof KafkaProtocolError) return fail(error.kafkaCode, error.message);
    if (error instanceof TributaryError && error.code === 'UNKNOWN_TOPIC_OR_PARTITION') return fail(KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error.message);
    if (error instanceof TributaryError && error.retriable) {
      // A storm of concurrent changes (nothing written) or a lost coordination connection (the
      // write's outcome unknown): the client should look before it retries.
      context.logger.warn({ err: error, topic }, 'changing topic configs failed; the client may retry');
      return fail(KafkaErrorCode.UNKNOWN_SERVER_ERROR, `the configs of topic ${topic} may not have changed (${error.message}); describe them, then retry`);
    }
    context.logger.error({ err: error, topic }, 'changing topic configs failed');
    return fail(KafkaErrorCode.UNKNOWN_SERVER_ERROR, 'changing the topic configs failed; see the broker log');
  }
}

/** Applies one SET / DELETE / APPEND / SUBTRACT to the override set `configs`, in place. */
function applyOperation(configs: Record<string, string>, operation: IncrementalAlterableConfig, brokerLogConfig: LogConfig): void {
  const { name, value } = operation;
  const definition = topicConfigDefinition(name);
  // Unknown names are refused by the whole-set validation, with the list of known ones.
  switch (operation.configOperation) {
    case CONFIG_OPERATION.SET:
      if (value === null) throw new KafkaProtocolError('INVALID_CONFIG', `SET of topic config ${name} needs a value${definition === undefined ? '' : `: ${definition.allowed}`}`);
      configs[name] = value.trim();
      return;
    case CONFIG_OPERATION.DELETE:
      if (definition === undefined) throw new KafkaProtocolError('INVALID_CONFIG', unknownTopicConfigMessage(name));
      delete configs[name];
      return;
    case CONFIG_OPERATION.APPEND:
    case CONFIG_OPERATION.SUBTRACT: {
      const verb = operation.configOperation === CONFIG_OPERATION.APPEND ? 'APPEND' : 'SUBTRACT';
      if (definition === undefined) throw new KafkaProtocolError('INVALID_CONFIG', unknownTopicConfigMessage(name));
      if (definition.type !== 'LIST') {
        throw new KafkaProtocolError('INVALID_CONFIG', `${verb} applies to list configs only, and topic config ${name} is a ${definition.type}: use SET or DELETE`);
      }
      const listed = (text: string): string[] => text.split(',').map((item) => item.trim()).filter((item) => item !== '');
      const current = listed(configs[name] ?? formatTopicConfigValue(definition, brokerLogConfig));
      const items = listed(value ?? '');
      const next = verb === 'APPEND' ? [...current, ...items.filter((item) => !current.includes(item))] : current.filter((item) => !items.includes(item));
      configs[name] = next.join(',');
      return;
    }
    default:
      throw new KafkaProtocolError('INVALID_REQUEST', `config operation ${operation.configOperation} on ${name} is not one of SET (0), DELETE (1), APPEND (2), SUBTRACT (3)`);
  }
}

function rejectDuplicates(names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw new KafkaProtocolError('INVALID_REQUEST', `config ${name} appears more than once in the request`);
    seen.add(name);
  }
}

function topicConfigEntry(
  definition: TopicConfigDefinition,
  override: string | undefined,
  brokerLogConfig: LogConfig,
  options: { synonyms: boolean; documentation: boolean },
): DescribeConfigsEntry {
  const brokerValue = formatTopicConfigValue(definition, brokerLogConfig);
  const builtInValue = formatTopicConfigValue(definition, BUILT_IN_LOG_CONFIG);
  // Set to the built-in default counts as not set: the broker's raw settings are not kept.
  const brokerSets = brokerValue !== builtInValue;
  const synonyms: DescribeConfigsSynonym[] = [
    ...(override === undefined ? [] : [{ name: definition.name, value: override, source: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG }]),
    ...(brokerSets ? [{ name: definition.brokerSynonym, value: brokerValue, source: CONFIG_SOURCE.STATIC_BROKER_CONFIG }] : []),
    { name: definition.brokerSynonym, value: builtInValue, source: CONFIG_SOURCE.DEFAULT_CONFIG },
  ];
  const [effective] = synonyms;
  return {
    name: definition.name,
    value: effective?.value ?? builtInValue,
    readOnly: false,
    configSource: effective?.source ?? CONFIG_SOURCE.DEFAULT_CONFIG,
    isSensitive: false,
    synonyms: options.synonyms ? synonyms : [],
    configType: CONFIG_TYPE[definition.type],
    documentation: options.documentation ? definition.documentation : null,
  };
}

/** Broker settings whose values are secrets: described as Kafka describes passwords (value null, sensitive). */
const SENSITIVE_BROKER_CONFIGS: ReadonlySet<string> = new Set(['ssl.key.password']);

/** Every broker setting, read-only: they come from the broker's config file and flags. Unset optional ones are null. */
function brokerConfigEntries(config: BrokerConfig, options: { synonyms: boolean; documentation: boolean }): DescribeConfigsEntry[] {
  const documentation = new Map(TOPIC_CONFIGS.map((definition) => [definition.brokerSynonym, `The default of topic config ${definition.name}: ${definition.documentation}`]));
  return (Object.keys(brokerConfigSchema.shape) as (keyof BrokerConfig)[]).map((name) => {
    const sensitive = SENSITIVE_BROKER_CONFIGS.has(name);
    const shown = (raw: string | number | boolean | undefined): string | null => (sensitive || raw === undefined ? null : formatBrokerValue(raw, name));
    const value = shown(config[name]);
    const builtIn = shown(BUILT_IN_BROKER_CONFIG[name]);
    const source = config[name] === BUILT_IN_BROKER_CONFIG[name] ? CONFIG_SOURCE.DEFAULT_CONFIG : CONFIG_SOURCE.STATIC_BROKER_CONFIG;
    const synonyms: DescribeConfigsSynonym[] = [
      ...(source === CONFIG_SOURCE.STATIC_BROKER_CONFIG ? [{ name, value, source }] : []),
      { name, value: builtIn, source: CONFIG_SOURCE.DEFAULT_CONFIG },
    ];
    return {
      name,
      value,
      readOnly: true,
      configSource: source,
      isSensitive: sensitive,
      synonyms: options.synonyms ? synonyms : [],
      configType: sensitive ? CONFIG_TYPE.PASSWORD : brokerConfigType(name, config[name] ?? ''),
      documentation: options.documentation ? (documentation.get(name) ?? null) : null,
    };
  });
}

/** Kafka's DOUBLE broker settings: their "no limit" is Double.MAX_VALUE, not Long.MAX_VALUE. */
const DOUBLE_BROKER_CONFIGS = new Set(['log.cleaner.io.max.bytes.per.second', 'log.cleaner.io.buffer.load.factor', 'log.cleaner.min.cleanable.ratio']);

function formatBrokerValue(value: string | number | boolean, name = ''): string {
  if (value === Infinity) return DOUBLE_BROKER_CONFIGS.has(name) ? '1.7976931348623157E308' : '9223372036854775807';
  return String(value);
}

function brokerConfigType(name: string, value: string | number | boolean): number {
  if (typeof value === 'boolean') return CONFIG_TYPE.BOOLEAN;
  if (typeof value === 'string') return name === 'log.cleanup.policy' ? CONFIG_TYPE.LIST : CONFIG_TYPE.STRING;
  if (DOUBLE_BROKER_CONFIGS.has(name)) return CONFIG_TYPE.DOUBLE;
  return name.endsWith('.ms') || name.endsWith('retention.bytes') ? CONFIG_TYPE.LONG : CONFIG_TYPE.INT;
}

/** Only the configs asked for, when the request names some (names Tributary lacks are left out, as Kafka does). */
function wanted(configs: DescribeConfigsEntry[], keys: readonly string[] | null): DescribeConfigsEntry[] {
  if (keys === null) return configs;
  const names = new Set(keys);
  return configs.filter((entry) => names.has(entry.name));
}

function echo(resource: Pick<DescribeConfigsResource, 'resourceType' | 'resourceName'>): { resourceType: number; resourceName: string } {
  return { resourceType: resource.resourceType, resourceName: resource.resourceName };
}

function unsupportedResourceMessage(resourceType: number): string {
  return `config resource type ${resourceType} is not served: Tributary has topic (2) and broker (4) configs`;
}
