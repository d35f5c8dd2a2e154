/**
 * The offline mirror of the paper's deployment (§4): embedded consumers pull from every online
 * (source) cluster and one producer writes into the offline (target) cluster.
 *
 * Delivery is in order per source partition, and once: a source offset is committed only after
 * the target acknowledged (acks=-1) every record below it and their audit counts (tier MIRROR)
 * were published, so a crash loses nothing; and every record carries its mirror origin, so a
 * restarted mirror resumes after the last record of each source partition in the target instead
 * of re-sending from the committed offset (resume-point.ts), and its producer is idempotent, so
 * a retry within one process is not stored twice either. Records keep key, value, headers
 * (plus the mirror origin) and timestamp, and their partition number while the source and target
 * topics have the same partition count (else they are placed by key, and delivery after a crash is
 * at least once). Several sources with the same topic name
 * merge into one target topic. Mirror processes with the same group share each topic's
 * partitions through the group. See source-mirror.ts, commit-gate.ts and stream-pump.ts.
 */
import { bootstrapFromZooKeeper } from '../client/zookeeper-bootstrap.js';
import type { Logger } from '../common/logger.js';
import { metricsRegistry } from '../common/metrics.js';
import { ZooKeeperStore } from '../coordination/zookeeper-store.js';
import { securityOption, securityProtocolOf, type ClientSecurity, type SecurityProtocol } from '../client/security-config.js';
import type { MirrorSecurity, MirrorSettings, MirrorTargetAddress } from './config.js';
import { MirrorMetrics } from './metrics.js';
import { connectMirrorAudit, type MirrorAuditPublisher } from './mirror-audit.js';
import { SourceMirror } from './source-mirror.js';
import { MirrorTarget } from './target.js';
import { TopicFilter } from './topic-filter.js';

export interface MirrorOptions {
  readonly settings: MirrorSettings;
  readonly target: MirrorTargetAddress;
  readonly logger: Logger;
  /**
   * Hears a failure after which the mirror cannot go on (a record the target refuses for good, a
   * group that cannot rebalance). Commits have stopped by then; call `stop()`.
   */
  readonly onFatal?: (error: Error) => void;
  /** TLS and SASL of the target's and each source's connections (resolveMirrorSecurity); absent: PLAINTEXT everywhere. */
  readonly security?: MirrorSecurity;
}

export class Mirror {
  private readonly sources: SourceMirror[] = [];
  private audit: MirrorAuditPublisher | undefined;
  private stopping: Promise<void> | undefined;
  private failure: Error | undefined;

  private constructor(
    private readonly target: MirrorTarget,
    private readonly logger: Logger,
    private readonly onFatal: ((error: Error) => void) | undefined,
  ) {}

  static async start(options: MirrorOptions): Promise<Mirror> {
    const logger = options.logger.child({ component: 'mirror', group: options.settings.group });
    const targetSecurity = options.security?.target;
    const bootstrap =
      'bootstrap' in options.target
        ? options.target.bootstrap
        : await targetBootstrapFromZooKeeper(options.target.zookeeper, options.settings.sessionTimeoutMs, securityProtocolOf(targetSecurity));
    const mirror = new Mirror(await MirrorTarget.connect({ bootstrap, logger, ...securityOption(targetSecurity) }), logger, options.onFatal);
    try {
      const audit = await connectAudit(options.settings, bootstrap, logger, targetSecurity);
      mirror.audit = audit;
      const filter = new TopicFilter(options.settings.whitelist, options.settings.blacklist);
      const metrics = new MirrorMetrics(metricsRegistry());
      for (const source of options.settings.sources) {
        const started = await SourceMirror.start({
          source,
          settings: options.settings,
          filter,
          target: mirror.target,
          audit,
          metrics,
          logger,
          onFatal: (error) => mirror.fail(error),
          ...securityOption(options.security?.sources.get(source.name)),
        });
        mirror.sources.push(started);
        if (mirror.failure !== undefined) started.failCommits(mirror.failure);
      }
      logger.info({ sources: options.settings.sources.map((source) => source.name), target: bootstrap, audit: audit !== undefined }, 'mirror started');
      return mirror;
    } catch (error) {
      await mirror.stop().catch(() => undefined);
      throw error;
    }
  }

  /** Mirrored topics per source name. */
  topics(): Record<string, string[]> {
    return Object.fromEntries(this.sources.map((source) => [source.name, source.mirroredTopics()]));
  }

  /**
   * Stops taking records, waits for the target's acknowledgements, commits them (audit flushed
   * first), releases the partitions to the group, and closes everything.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.sources.map((source) => source.stop().catch((error: unknown) => this.logger.warn({ err: error, source: source.name }, 'source did not stop cleanly'))));
      await this.target.close();
      await this.audit?.close();
      this.logger.info('mirror stopped');
    })();
    return this.stopping;
  }

  private fail(error: Error): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.logger.error({ err: error }, 'mirror failed: no more commits; stop it and start again once the cause is fixed (it resumes from the committed offsets)');
    for (const source of this.sources) source.failCommits(error);
    this.onFatal?.(error);
  }
}

async function targetBootstrapFromZooKeeper(zookeeper: string, sessionTimeoutMs: number, protocol: SecurityProtocol): Promise<string[]> {
  const store = await ZooKeeperStore.connect(zookeeper, { sessionTimeoutMs });
  try {
    return await bootstrapFromZooKeeper(store, protocol);
  } finally {
    await store.close();
  }
}

/** The MIRROR-tier counter when a registry is configured (AuditCount events are framed with it). */
async function connectAudit(settings: MirrorSettings, bootstrap: readonly string[], logger: Logger, security: ClientSecurity | undefined): Promise<MirrorAuditPublisher | undefined> {
  if (settings.registry === undefined) {
    logger.warn('no schema registry given: the mirror does not count records for the audit');
    return undefined;
  }
  return connectMirrorAudit({
    bootstrap,
    registryUrl: settings.registry,
    logger,
    ...securityOption(security),
    ...(settings.auditWindowMs === undefined ? {} : { windowMs: settings.auditWindowMs }),
    ...(settings.auditLatenessMs === undefined ? {} : { latenessMs: settings.auditLatenessMs }),
  });
}
