/**
 * The controller: one broker, elected through ZooKeeper, that writes partition states when
 * brokers come and go (replication.md §1.2, §5.4). Kafka 0.8–2.x style, with ZooKeeper as the
 * only consensus system.
 *
 * Election: create the ephemeral `/controller` and bump `/controller_epoch` in one multi-op
 * (conditional on the epoch node's version), so exactly one broker wins each epoch. Every broker
 * watches `/controller` (cluster.ts) and runs for election when it disappears.
 *
 * Duties are level-triggered: on every change of the live brokers or the topics, and once when
 * elected, the controller compares every partition's state with the live brokers and writes what
 * leader-election.ts decides — first states for new partitions, dead or wiped replicas out of the
 * ISR, new leaders for dead or restarted ones. A coalesced burst of events, or a change that
 * happened while no controller was active, is therefore never missed.
 *
 * Fencing (KAFKA-6082): every write is a multi-op with `check(/controller_epoch, version)`: a
 * deposed controller still working through its queue cannot change a state. A write that fails
 * its check re-reads the epoch: another controller means resigning; otherwise the partition's
 * state changed meanwhile and is decided again on what is there now.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { decodePartitionState, encodePartitionState, type PartitionState } from '../../coordination/partition-state.js';
import { controllerEpochPath, controllerPath, partitionPath, partitionStatePath, topicPartitionsPath } from '../../coordination/paths.js';
import type { CoordinationStore, TransactionOp } from '../../coordination/store.js';
import { controllerIdOf, type Cluster } from '../cluster.js';
import { decidePartitionState, offlineReason, type LiveBroker } from './leader-election.js';
import type { ReplicationMetrics } from './replication-metrics.js';

export interface ControllerOptions {
  readonly brokerId: number;
  readonly store: CoordinationStore;
  readonly cluster: Cluster;
  readonly logger: Logger;
  readonly metrics: ReplicationMetrics;
}

/** State writes in flight at once while reconciling (a failover may move thousands of leaders). */
const WRITE_CONCURRENCY = 16;

class Deposed extends Error {
  constructor() {
    super('another controller was elected');
  }
}

export class Controller {
  private active = false;
  private epoch = -1;
  private epochVersion = -1;
  private electing = false;
  private reconciling = false;
  private reconcileRequested = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private readonly logger: Logger;
  /** Partitions reported offline, so each is logged once per outage. */
  private readonly reportedOffline = new Set<string>();

  constructor(private readonly options: ControllerOptions) {
    this.logger = options.logger.child({ component: 'controller' });
  }

  get isActive(): boolean {
    return this.active;
  }

  get controllerEpoch(): number {
    return this.epoch;
  }

  start(): void {
    this.unsubscribe = this.options.store.onSessionEvent((event) => {
      if (event === 'expired') this.resign('the coordination session expired');
      if (event === 'reconnected-new-session') void this.elect();
    });
    void this.elect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (!this.active) return;
    this.resign('the broker is stopping');
    // Let the others elect at once rather than after this session ends.
    await this.options.store.delete(controllerPath()).catch(() => undefined);
  }

  /** The live brokers or the topics changed: decide every partition again. */
  clusterChanged(): void {
    if (this.active) this.requestReconcile();
  }

  /** `/controller` changed: run when it is vacant; stop acting when another holds it. */
  controllerChanged(controllerId: number): void {
    if (controllerId === -1) void this.elect();
    else if (controllerId !== this.options.brokerId && this.active) this.resign(`broker ${controllerId} is the controller now`);
  }

  private async elect(): Promise<void> {
    if (this.stopped || this.active || this.electing) return;
    this.electing = true;
    const { store, brokerId } = this.options;
    try {
      for (let attempt = 0; attempt < 10 && !this.stopped && !this.active; attempt += 1) {
        try {
          await store.create(controllerEpochPath(), Buffer.from('0'), 'persistent');
        } catch (error) {
          if (!hasCode(error, 'NODE_EXISTS')) throw error;
        }
        const epochNode = await store.get(controllerEpochPath());
        if (epochNode === undefined) continue;
        const current = Number.parseInt(epochNode.data.toString('utf8'), 10);
        const next = (Number.isSafeInteger(current) ? current : 0) + 1;
        const registration = Buffer.from(JSON.stringify({ version: 1, brokerid: brokerId, timestamp: String(Date.now()) }));
        try {
          const results = await store.transaction([
            { op: 'create', path: controllerPath(), data: registration, mode: 'ephemeral' },
            { op: 'set', path: controllerEpochPath(), data: Buffer.from(String(next)), expectedVersion: epochNode.version },
          ]);
          const written = results[1];
          this.activate(next, written?.op === 'set' ? written.version : epochNode.version + 1);
          return;
        } catch (error) {
          if (hasCode(error, 'NODE_EXISTS')) {
            // Another broker is controller; its removal brings this one back here. Unless the
            // node is this broker's own, from an answer lost to a connection loss (KAFKA-13407).
            const holder = await store.get(controllerPath());
            if (holder !== undefined && controllerIdOf(holder.data) === brokerId) {
              const epochNow = await store.get(controllerEpochPath());
              if (epochNow !== undefined) this.activate(Number.parseInt(epochNow.data.toString('utf8'), 10), epochNow.version);
            }
            return;
          }
          if (hasCode(error, 'BAD_VERSION')) continue; // another election bumped the epoch first
          if (error instanceof TributaryError && error.retriable) {
            await sleep(200);
            continue;
          }
          throw error;
        }
      }
    } catch (error) {
      if (!this.stopped) {
        this.logger.warn({ err: error }, 'controller election failed; trying again');
        setTimeout(() => void this.elect(), 1_000).unref();
      }
    } finally {
      this.electing = false;
    }
  }

  private activate(epoch: number, epochVersion: number): void {
    this.epoch = epoch;
    this.epochVersion = epochVersion;
    this.active = true;
    this.options.metrics.activeController.set(1);
    this.logger.info({ controllerEpoch: epoch }, 'elected controller');
    this.requestReconcile();
  }

  private resign(reason: string): void {
    if (!this.active) return;
    this.active = false;
    this.options.metrics.activeController.set(0);
    this.options.metrics.offlinePartitions.set(0);
    this.logger.info({ controllerEpoch: this.epoch, reason }, 'no longer the controller');
  }

  private requestReconcile(): void {
    this.reconcileRequested = true;
    if (this.reconciling) return;
    this.reconciling = true;
    void (async () => {
      while (this.reconcileRequested && this.active && !this.stopped) {
        this.reconcileRequested = false;
        try {
          await this.reconcile();
        } catch (error) {
          if (error instanceof Deposed) {
            this.resign('another controller was elected');
            break;
          }
          this.logger.warn({ err: error }, 'could not bring every partition state in line; trying again');
          await sleep(500);
          this.reconcileRequested = true;
        }
      }
    })().finally(() => {
      this.reconciling = false;
    });
  }

  /** Decides every partition against the live brokers and writes the changes. */
  private async reconcile(): Promise<void> {
    const { cluster } = this.options;
    const live = new Map<number, LiveBroker>();
    for (const broker of cluster.liveBrokers()) {
      live.set(broker.id, { ...(broker.incarnation === undefined ? {} : { incarnation: broker.incarnation }), ...(broker.storageId === undefined ? {} : { storageId: broker.storageId }) });
    }
    const work: (() => Promise<void>)[] = [];
    let offline = 0;
    const offlineNow = new Set<string>();
    for (const { topic, partition, replicas, state } of cluster.allPartitions()) {
      const next = decidePartitionState(replicas, state?.state, live, this.epoch);
      const resulting = next ?? state?.state;
      if (resulting !== undefined && resulting.leader < 0) {
        offline += 1;
        const key = `${topic}-${partition}`;
        offlineNow.add(key);
        if (!this.reportedOffline.has(key)) {
          this.reportedOffline.add(key);
          this.logger.error({ topic, partition, isr: resulting.isr }, `partition ${key} is offline: ${offlineReason(resulting, live)}`);
        }
      }
      if (next === undefined) continue;
      work.push(() => this.write(topic, partition, next, state?.state, state?.version));
    }
    for (const key of [...this.reportedOffline]) if (!offlineNow.has(key)) this.reportedOffline.delete(key);
    this.options.metrics.offlinePartitions.set(offline);
    for (let index = 0; index < work.length; index += WRITE_CONCURRENCY) {
      if (!this.active) return;
      await Promise.all(work.slice(index, index + WRITE_CONCURRENCY).map((task) => task()));
    }
  }

  /** One fenced state write: created when `previous` is undefined, else set at `version`. */
  private async write(topic: string, partition: number, next: PartitionState, previous: PartitionState | undefined, version: number | undefined): Promise<void> {
    const { store, cluster } = this.options;
    const path = partitionStatePath(topic, partition);
    const fence: TransactionOp = { op: 'check', path: controllerEpochPath(), expectedVersion: this.epochVersion };
    try {
      if (previous === undefined || version === undefined) {
        // Level by level, never above the topic's node: a topic deleted meanwhile must stay
        // deleted (a create under a missing parent fails with NO_NODE, and this write is dropped).
        for (const parent of [topicPartitionsPath(topic), partitionPath(topic, partition)]) {
          try {
            await store.create(parent, Buffer.alloc(0), 'persistent');
          } catch (error) {
            if (!hasCode(error, 'NODE_EXISTS')) throw error;
          }
        }
        await store.transaction([fence, { op: 'create', path, data: encodePartitionState(next), mode: 'persistent' }]);
        cluster.noteState(topic, partition, { state: next, version: 0 });
      } else {
        const results = await store.transaction([fence, { op: 'set', path, data: encodePartitionState(next), expectedVersion: version }]);
        const written = results[1];
        cluster.noteState(topic, partition, { state: next, version: written?.op === 'set' ? written.version : version + 1 });
      }
      if (next.leader !== (previous?.leader ?? -2) || next.leaderEpoch !== (previous?.leaderEpoch ?? -1)) {
        if (previous !== undefined && next.leader >= 0) this.options.metrics.controllerElections.inc();
        this.logger.info({ topic, partition, leader: next.leader, leaderEpoch: next.leaderEpoch, isr: next.isr, previousLeader: previous?.leader, previousIsr: previous?.isr }, previous === undefined ? 'partition state created' : 'leader elected');
      } else {
        this.logger.info({ topic, partition, leader: next.leader, isr: next.isr, previousIsr: previous?.isr }, 'unavailable replicas removed from the ISR');
      }
    } catch (error) {
      if (hasCode(error, 'BAD_VERSION') || hasCode(error, 'NODE_EXISTS')) {
        const epochNode = await store.get(controllerEpochPath());
        if (epochNode === undefined || epochNode.version !== this.epochVersion) throw new Deposed();
        // The state changed under this decision (a leader's ISR write): decide again on what is there.
        const node = await store.get(path);
        if (node !== undefined) cluster.noteState(topic, partition, { state: decodePartitionState(node.data, path), version: node.version });
        this.reconcileRequested = true;
        return;
      }
      if (hasCode(error, 'NO_NODE')) return; // the topic was deleted meanwhile
      throw error;
    }
  }
}

function hasCode(error: unknown, code: string): boolean {
  return error instanceof TributaryError && error.code === code;
}
