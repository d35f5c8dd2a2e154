/**
 * A broker: the storage engine behind the Kafka protocol, registered in the coordination store,
 * with its replicas (leaders and followers) and a controller candidate. Standalone and cluster
 * mode differ only in the store (in-process or ZooKeeper): a standalone broker is its own
 * controller and every partition's only replica.
 */
import { ConnectionLimits } from './connection-limits.js';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { systemClock, type Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { metricsRegistry } from '../common/metrics.js';
import { ProducerIdAllocator } from '../coordination/producer-ids.js';
import { loadClusterId } from '../coordination/cluster-id.js';
import type { CoordinationStore } from '../coordination/store.js';
import { logConfigFromTopicConfigs } from '../storage/log-config.js';
import { LogManager } from '../storage/log-manager.js';
import { Cluster } from './cluster.js';
import { cleanerConfig, defaultLogConfig, type BrokerConfig } from './config.js';
import type { BrokerContext } from './context.js';
import { FetchWaiters } from './fetch-waiters.js';
import { GroupCoordinator } from './group/group-coordinator.js';
import { createAclsHandler, deleteAclsHandler, describeAclsHandler } from './handlers/acls.js';
import { alterConfigsHandler, describeConfigsHandler, incrementalAlterConfigsHandler } from './handlers/configs.js';
import { deleteRecordsHandler } from './handlers/delete-records.js';
import { fetchHandler } from './handlers/fetch.js';
import { findCoordinatorHandler } from './handlers/find-coordinator.js';
import { deleteGroupsHandler, describeGroupsHandler, heartbeatHandler, joinGroupHandler, leaveGroupHandler, listGroupsHandler, syncGroupHandler } from './handlers/groups.js';
import { initProducerIdHandler } from './handlers/init-producer-id.js';
import { listOffsetsHandler } from './handlers/list-offsets.js';
import { metadataHandler } from './handlers/metadata.js';
import { offsetCommitHandler, offsetFetchHandler } from './handlers/offsets.js';
import { offsetForLeaderEpochHandler } from './handlers/offset-for-leader-epoch.js';
import { produceHandler } from './handlers/produce.js';
import { createPartitionsHandler, createTopicsHandler, deleteTopicsHandler } from './handlers/topics-admin.js';
import { BrokerMetrics } from './metrics.js';
import { Controller } from './replication/controller.js';
import { ReplicaManager } from './replication/replica-manager.js';
import { ReplicationMetrics } from './replication/replication-metrics.js';
import { RequestRouter } from './router.js';
import { createAuthorizer, type Authorizer } from './security/authorizer.js';
import { saslAuthenticateHandler, saslHandshakeHandler } from './handlers/sasl.js';
import { interBrokerListener, resolveListeners, usesSasl } from './listeners.js';
import { mechanismsOn, openListeners, type OpenListener } from './listener-servers.js';
import { startCredentialCache, type StartedCredentialCache } from './security/credential-source.js';
import { INTER_BROKER_PASSWORD_ENV, interBrokerClientSecurity } from '../client/inter-broker-security.js';
import type { CredentialSource } from './security/sasl-mechanisms.js';
import type { ListenAddress } from './server.js';

export interface BrokerOptions {
  readonly id: number;
  /** The one PLAINTEXT listener's address when the config sets no `listeners`. */
  readonly listen?: ListenAddress;
  /** Host clients should connect to (defaults to the listen host). */
  readonly advertisedHost?: string;
  /** Where SASL listeners find users' credentials; defaults to the watched `/config/users` of `store`. */
  readonly credentials?: CredentialSource;
  /** The inter-broker SASL password when it comes from the environment (the CLI reads it; inter.broker.sasl.password.file otherwise). */
  readonly interBrokerSaslPassword?: string;
  readonly dataDir: string;
  readonly config: BrokerConfig;
  readonly store: CoordinationStore;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Stable id reported in Metadata; the same for every broker of a cluster. */
  readonly clusterId?: string;
}

/** Credentials of a broker without SASL listeners: nobody (never asked). */
const NO_USERS: CredentialSource = { credential: () => undefined };

/** Partitions whose logs are created between two turns of the event loop while syncing. */
const SYNC_YIELD_EVERY = 64;

/** How long a start waits for the controller to replace states that name this broker's previous run as leader. */
const START_SETTLE_MS = 15_000;

const API_NAMES: Record<number, string> = {
  0: 'Produce',
  1: 'Fetch',
  2: 'ListOffsets',
  3: 'Metadata',
  8: 'OffsetCommit',
  9: 'OffsetFetch',
  10: 'FindCoordinator',
  11: 'JoinGroup',
  12: 'Heartbeat',
  13: 'LeaveGroup',
  14: 'SyncGroup',
  15: 'DescribeGroups',
  16: 'ListGroups',
  17: 'SaslHandshake',
  18: 'ApiVersions',
  19: 'CreateTopics',
  20: 'DeleteTopics',
  22: 'InitProducerId',
  23: 'OffsetForLeaderEpoch',
  29: 'DescribeAcls',
  30: 'CreateAcls',
  31: 'DeleteAcls',
  32: 'DescribeConfigs',
  33: 'AlterConfigs',
  36: 'SaslAuthenticate',
  37: 'CreatePartitions',
  42: 'DeleteGroups',
  44: 'IncrementalAlterConfigs',
};

export class Broker {
  private stopping: Promise<void> | undefined;
  /** Topics seen in the cluster at the last sync: a log is deleted only when its topic disappears. */
  private knownTopics = new Set<string>();
  private syncing: Promise<void> = Promise.resolve();

  private constructor(
    readonly id: number,
    private readonly listeners: readonly OpenListener[],
    private readonly logs: LogManager,
    private readonly cluster: Cluster,
    private readonly groups: GroupCoordinator,
    private readonly replicas: ReplicaManager,
    private readonly controller: Controller,
    private readonly authorizer: Authorizer,
    private readonly router: RequestRouter,
    private readonly options: BrokerOptions,
    private readonly credentials: StartedCredentialCache | undefined,
  ) {}

  static async start(options: BrokerOptions): Promise<Broker> {
    const { config, logger } = options;
    const defaults = defaultLogConfig(config);
    // Settings are checked before anything opens: a listener typo fails the start at once.
    const listenerSpecs = resolveListeners(config, options.listen, options.advertisedHost);
    const interBroker = interBrokerListener(config, listenerSpecs);
    for (const spec of listenerSpecs) mechanismsOn(config, spec.securityProtocol);
    const interBrokerSecurity =
      interBroker.securityProtocol === 'PLAINTEXT'
        ? undefined
        : interBrokerClientSecurity(
            { securityProtocol: interBroker.securityProtocol, ...config },
            // The CLI reads the environment; the broker is handed only this one variable.
            { [INTER_BROKER_PASSWORD_ENV]: options.interBrokerSaslPassword },
          );
    const clock = options.clock ?? systemClock;
    let cluster: Cluster | undefined;
    let groups: GroupCoordinator | undefined;
    let replicas: ReplicaManager | undefined;
    let controller: Controller | undefined;
    const waiters = new FetchWaiters();
    const replicaWaiters = new FetchWaiters();
    const metrics = new BrokerMetrics(metricsRegistry());
    const replicationMetrics = new ReplicationMetrics(metricsRegistry());
    const logs = await LogManager.open({
      dataDir: options.dataDir,
      brokerId: options.id,
      logger,
      clock,
      configFor: (topic) => logConfigFromTopicConfigs(cluster?.topic(topic)?.configs ?? {}, defaults, `configs of topic ${topic}`),
      retentionCheckIntervalMs: config['log.retention.check.interval.ms'],
      highWatermarkCheckpointIntervalMs: config['replica.high.watermark.checkpoint.interval.ms'],
      producerIdExpirationMs: config['producer.id.expiration.ms'],
      producerIdExpirationCheckIntervalMs: config['producer.id.expiration.check.interval.ms'],
      cleaner: cleanerConfig(config),
      onHighWatermarkAdvanced: (log) => {
        waiters.notify(log.topic, log.partition);
        metrics.logEndOffset.set({ topic: log.topic, partition: String(log.partition) }, log.logEndOffset);
      },
      onFlushed: (log) => replicas?.onFlushed(log),
      onAppended: (log) => replicas?.onAppended(log),
    });
    let broker: Broker | undefined;
    const router = new RequestRouter([], logger);
    let credentials: StartedCredentialCache | undefined;
    let listeners: OpenListener[];
    try {
      if (options.credentials === undefined && listenerSpecs.some((spec) => usesSasl(spec.securityProtocol))) credentials = await startCredentialCache(options.store, logger);
      listeners = await openListeners(
        listenerSpecs,
        router,
        {
          maxRequestBytes: config['socket.request.max.bytes'],
          idleTimeoutMs: config['connections.max.idle.ms'],
          limits: new ConnectionLimits(config['max.connections'], config['max.connections.per.ip']),
          onConnectionRefused: (listener, limit) => metrics.connectionsRefused.inc({ listener, limit }),
          fetchSendMode: config['fetch.send.mode'],
          logger,
          onRequestDone: (apiKey, milliseconds) => metrics.requestSeconds.observe({ api: API_NAMES[apiKey] ?? String(apiKey) }, milliseconds / 1000),
        },
        { config, credentials: options.credentials ?? credentials?.source ?? NO_USERS, metrics, logger },
      );
    } catch (error) {
      await credentials?.stop();
      await logs.close().catch(() => {});
      throw error;
    }
    const interBrokerEndpoint = listeners.find((listener) => listener.spec.name === interBroker.name)?.endpoint ?? (listeners[0] as OpenListener).endpoint;
    const authorizer = createAuthorizer({
      kind: config.authorizer,
      superUsers: config['super.users'],
      allowEveryoneIfNoAclFound: config['allow.everyone.if.no.acl.found'],
      store: options.store,
      logger,
    });
    try {
      // The ACLs are loaded before the first request is let in (router.open below).
      await authorizer.start();
      cluster = new Cluster(
        options.store,
        {
          id: options.id,
          // Readers from before listeners connect here: the inter-broker listener.
          host: interBrokerEndpoint.host,
          port: interBrokerEndpoint.port,
          endpoints: listeners.map((listener) => listener.endpoint),
          storageId: logs.storageId,
          ...(config['broker.rack'] === '' ? {} : { rack: config['broker.rack'] }),
        },
        {
          topicsChanged: () => {
            void broker?.syncLogs();
            controller?.clusterChanged();
          },
          brokersChanged: () => {
            groups?.brokersChanged();
            controller?.clusterChanged();
          },
          partitionStatesChanged: (partitions) => {
            void replicas?.statesChanged(partitions);
            // A partition whose log is not open yet gets it (and its replica) from a sync.
            if (partitions.some(({ topic, partition }) => replicas?.replica(topic, partition) === undefined && cluster?.topic(topic)?.partitions.get(partition)?.includes(options.id))) void broker?.syncLogs();
            controller?.clusterChanged();
          },
          controllerChanged: (controllerId) => controller?.controllerChanged(controllerId),
        },
        logger,
      );
      const clusterView = cluster;
      replicas = new ReplicaManager({
        brokerId: options.id,
        cluster,
        store: options.store,
        logs,
        clock,
        logger,
        metrics: replicationMetrics,
        replicaWaiters,
        replicaLagTimeMaxMs: config['replica.lag.time.max.ms'],
        sessionTimeoutMs: config['zookeeper.session.timeout.ms'],
        interBrokerListener: interBroker.name,
        ...(interBrokerSecurity === undefined ? {} : { interBrokerSecurity }),
        fetcher: {
          maxWaitMs: config['replica.fetch.wait.max.ms'],
          partitionMaxBytes: config['replica.fetch.max.bytes'],
          responseMaxBytes: config['replica.fetch.response.max.bytes'],
          backoffMs: config['replica.fetch.backoff.ms'],
        },
      });
      controller = new Controller({ brokerId: options.id, store: options.store, cluster, logger, metrics: replicationMetrics });
      const context: BrokerContext = {
        brokerId: options.id,
        clusterId: options.clusterId ?? (await loadClusterId(options.store)),
        config,
        logs,
        cluster,
        replicas,
        waiters,
        replicaWaiters,
        metrics,
        logger,
        authorizer,
      };
      router.register([
        produceHandler(context),
        fetchHandler(context),
        listOffsetsHandler(context),
        metadataHandler(context),
        offsetForLeaderEpochHandler(context),
        createTopicsHandler(context),
        deleteTopicsHandler(context),
        deleteRecordsHandler(context),
        createPartitionsHandler(context),
        describeConfigsHandler(context),
        alterConfigsHandler(context),
        incrementalAlterConfigsHandler(context),
        initProducerIdHandler(new ProducerIdAllocator({ store: options.store, brokerId: options.id }), logger, authorizer),
        describeAclsHandler(context),
        createAclsHandler(context, options.store),
        deleteAclsHandler(context, options.store),
        saslHandshakeHandler((listenerName) => mechanismsOn(config, listenerSpecs.find((spec) => spec.name === listenerName)?.securityProtocol ?? 'PLAINTEXT')),
        saslAuthenticateHandler(),
      ]);
      groups = new GroupCoordinator({
        brokerId: options.id,
        store: options.store,
        settings: {
          minSessionTimeoutMs: config['group.min.session.timeout.ms'],
          maxSessionTimeoutMs: config['group.max.session.timeout.ms'],
          initialRebalanceDelayMs: config['group.initial.rebalance.delay.ms'],
          maxSize: config['group.max.size'],
          maxMetadataBytes: config['offset.metadata.max.bytes'],
          retentionMs: config['offsets.retention.minutes'] * 60_000,
          retentionCheckIntervalMs: config['offsets.retention.check.interval.ms'],
        },
        liveBrokerIds: () => clusterView.liveBrokers().map((info) => info.id),
        partitionExists: (topic, partition) => clusterView.topic(topic)?.partitions.has(partition) ?? false,
        logger: logger.child({ component: 'group-coordinator' }),
      });
      router.register([
        findCoordinatorHandler(groups, cluster, authorizer),
        joinGroupHandler(groups, authorizer),
        syncGroupHandler(groups, authorizer),
        heartbeatHandler(groups, authorizer),
        leaveGroupHandler(groups, authorizer),
        offsetCommitHandler(groups, authorizer),
        offsetFetchHandler(groups, authorizer),
        describeGroupsHandler(groups, authorizer),
        listGroupsHandler(groups, authorizer),
        deleteGroupsHandler(groups, authorizer),
      ]);
      broker = new Broker(options.id, listeners, logs, cluster, groups, replicas, controller, authorizer, router, options, credentials);
      await cluster.start();
      controller.start();
      await broker.syncLogs();
      replicas.start();
      // A previous run of this broker may be named leader by states the controller has yet to
      // replace: serve once it has (or, bounded, without those partitions).
      await replicas.settled(START_SETTLE_MS);
      logs.startSchedules();
      groups.start();
      router.open();
      logger.info(
        {
          id: options.id,
          listen: `${listeners[0]?.server.address.host ?? ''}:${listeners[0]?.server.address.port ?? ''}`,
          listeners: listeners.map((listener) => `${listener.spec.name}://${listener.spec.host}:${listener.server.address.port} (${listener.spec.securityProtocol})`),
          interBrokerListener: interBroker.name,
          dataDir: options.dataDir,
          recovered: logs.recoveredFromUncleanShutdown,
        },
        'broker started',
      );
      return broker;
    } catch (error) {
      await Promise.all(listeners.map((listener) => listener.server.stop(0)));
      authorizer.stop();
      await credentials?.stop();
      await replicas?.stop().catch(() => {});
      await controller?.stop().catch(() => {});
      await logs.close().catch(() => {});
      throw error;
    }
  }

  /** The first listener's bound port (the only one without `listeners`). */
  get port(): number {
    return this.firstListener.server.address.port;
  }

  get address(): ListenAddress {
    return this.firstListener.server.address;
  }

  /** Open client connections, over every listener. */
  get connectionCount(): number {
    return this.listeners.reduce((sum, listener) => sum + listener.server.connectionCount, 0);
  }

  /** The bound port of listener `name` (e.g. SASL_SSL), undefined when the broker has none by that name. */
  listenerPort(name: string): number | undefined {
    return this.listeners.find((listener) => listener.spec.name === name.toUpperCase())?.server.address.port;
  }

  /** What clients of listener `name` are told to connect to (default: the inter-broker listener). */
  advertisedAddress(name?: string): { host: string; port: number } | undefined {
    if (name === undefined) return { host: this.cluster.self.host, port: this.cluster.self.port };
    const endpoint = this.listeners.find((listener) => listener.spec.name === name.toUpperCase())?.endpoint;
    return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
  }

  /**
   * Reads every TLS listener's keystore and truststore again (certificate rotation without a
   * restart): new handshakes get the new certificates. A listener whose files do not read keeps
   * its certificates; the first such failure is thrown after every listener was tried.
   */
  async reloadCertificates(): Promise<void> {
    let failure: Error | undefined;
    for (const listener of this.listeners) {
      if (!listener.server.usesTls) continue;
      try {
        await listener.server.reloadCertificates();
        this.options.logger.info({ listener: listener.spec.name }, 'TLS certificates reloaded');
      } catch (error) {
        failure ??= error instanceof Error ? error : new Error(String(error));
        this.options.logger.error({ err: error, listener: listener.spec.name }, 'TLS certificates not reloaded; the listener keeps its current ones');
      }
    }
    if (failure !== undefined) throw failure;
  }

  private get firstListener(): OpenListener {
    return this.listeners[0] as OpenListener;
  }

  /** The request router, for tests that send requests as a given identity (router.route). */
  get requestRouter(): RequestRouter {
    return this.router;
  }

  get logManager(): LogManager {
    return this.logs;
  }

  /** This broker's replicas and their roles (tests and tools look at them). */
  get replicaManager(): ReplicaManager {
    return this.replicas;
  }

  /** Whether this broker is the elected controller now. */
  get isController(): boolean {
    return this.controller.isActive;
  }

  /**
   * Opens the logs of partitions newly assigned here, applies config changes, and deletes the
   * logs of topics that were deleted. Serialized: one sync at a time, in order of events.
   */
  syncLogs(): Promise<void> {
    this.syncing = this.syncing
      .then(async () => {
        let created = 0;
        for (const { topic, partition } of this.cluster.localPartitions()) {
          // Offline partitions stay offline (reported at start); existing logs need nothing.
          if (this.logs.getLog(topic, partition) !== undefined || this.logs.offlineReason(topic, partition) !== undefined) continue;
          try {
            await this.logs.getOrCreateLog(topic, partition);
          } catch (error) {
            this.options.logger.error({ err: error, topic, partition }, 'could not create a partition log; requests to it will be retried');
          }
          // A topic of thousands of partitions must not hold the event loop: let clients in between.
          created += 1;
          if (created % SYNC_YIELD_EVERY === 0) await yieldToEventLoop();
        }
        const current = new Set(this.cluster.topicNames());
        for (const topic of current) {
          try {
            this.logs.updateConfig(topic);
          } catch (error) {
            // An override the broker cannot read (written to the store by hand) must not stop the
            // other topics' sync or the deletion of deleted topics: this topic keeps its settings.
            this.options.logger.error({ err: error, topic }, `topic ${topic} keeps its current settings: its overrides in the coordination store are invalid; fix them with tributary topics alter --config`);
          }
        }
        // Logs being created (a produce to a new partition) are included once they exist.
        await this.logs.settled();
        // A log goes when its topic was seen and is gone, or when this process created it (a
        // produce can create a partition's log before any sync saw its topic, and after the last).
        const deleted = [...this.logs.allLogs(), ...this.logs.offlineLogs()].filter(
          (log) => !current.has(log.topic) && (this.knownTopics.has(log.topic) || this.logs.createdSinceStart(log.topic, log.partition)),
        );
        // Roles follow the logs: replicas of new logs start, replicas of deleted topics stop.
        await this.replicas.sync();
        for (const log of deleted) this.options.logger.info({ topic: log.topic, partition: log.partition }, 'topic deleted; deleting its log');
        if (deleted.length > 0) await this.logs.deleteLogs(deleted);
        this.knownTopics = current;
      })
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'could not bring logs in line with the cluster'));
    return this.syncing;
  }

  /** Clean stop: stop accepting, finish in-flight requests, flush and checkpoint, deregister. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const { logger, config } = this.options;
      logger.info({ id: this.id }, 'broker stopping');
      // Parked joins and syncs are answered NOT_COORDINATOR at once, so their connections drain
      // and the members move to the broker that takes the groups over.
      this.groups.stop();
      await Promise.all(this.listeners.map((listener) => listener.server.stop(config['shutdown.grace.ms'])));
      await this.credentials?.stop();
      await this.syncing;
      await this.replicas.stop();
      await this.controller.stop();
      // Deregistered before the logs close: the controller moves leadership at once.
      await this.cluster.stop();
      this.authorizer.stop();
      await this.logs.close();
      await this.options.store.close();
      logger.info({ id: this.id }, 'broker stopped cleanly');
    })();
    return this.stopping;
  }
}

