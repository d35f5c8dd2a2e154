/**
 * A role transition that fails is retried by the replica manager with backoff (transition-retry.ts),
 * not left until the controller happens to write the partition's state again: a broker named
 * leader ends up leading, a follower ends up following, each without another state write. The
 * failures are logged and counted, and no retry timer is left once the manager stops or the
 * replica is removed.
 *
 * The replica manager runs on a real Cluster over the in-process coordination store and a real
 * LogManager in a temp dir; failures are injected at the log's seams (the leader-epoch checkpoint
 * write, the high-watermark mode switch of stepping down).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { Cluster } from '../../../../src/broker/cluster.js';
import { FetchWaiters } from '../../../../src/broker/fetch-waiters.js';
import { ReplicaManager } from '../../../../src/broker/replication/replica-manager.js';
import { ReplicationMetrics } from '../../../../src/broker/replication/replication-metrics.js';
import type { TransitionRetrySettings } from '../../../../src/broker/replication/transition-retry.js';
import { systemClock } from '../../../../src/common/clock.js';
import { MemoryCoordination } from '../../../../src/coordination/memory-store.js';
import { encodePartitionState, type PartitionState } from '../../../../src/coordination/partition-state.js';
import { partitionStatePath, topicPath, topicsPath } from '../../../../src/coordination/paths.js';
import { encodeTopicAssignment } from '../../../../src/coordination/topic-assignment.js';
import type { LogManager } from '../../../../src/storage/log-manager.js';
import { memoryLogger, openManager, temporaryDirectory } from '../../storage/helpers.js';
import { checkpointFailure } from './transition-failures.js';

const ME = 1;
/** Short pauses, so N failures take milliseconds (the schedule itself: transition-retry.test.ts). */
const FAST: TransitionRetrySettings = { backoff: { initialDelayMs: 5, maxDelayMs: 20 }, storageBackoff: { initialDelayMs: 10, maxDelayMs: 40 }, errorEvery: 10 };

interface World {
  readonly manager: ReplicaManager;
  readonly cluster: Cluster;
  readonly logs: LogManager;
  readonly controller: ReturnType<MemoryCoordination['session']>;
  readonly lines: Record<string, unknown>[];
  readonly metrics: ReplicationMetrics;
  readonly registry: Registry;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Broker 1 holding a replica of t-0 (replicas `replicas`), its replica created with no state yet:
 * the "controller" session then writes the one state the test needs.
 */
async function world(replicas: number[]): Promise<World> {
  const tree = new MemoryCoordination();
  const controller = tree.session();
  await controller.ensurePath(topicsPath());
  await controller.create(topicPath('t'), encodeTopicAssignment(new Map([[0, replicas]])), 'persistent');
  const { manager: logs } = await openManager(temporaryDirectory());
  cleanups.push(() => logs.close());
  await logs.getOrCreateLog('t', 0);
  const { logger, lines } = memoryLogger();
  const registry = new Registry();
  const metrics = new ReplicationMetrics(registry);
  // The cluster tells the manager of state changes, as the broker wires them; the manager comes after it.
  const wired: { manager?: ReplicaManager } = {};
  const cluster = new Cluster(tree.session(), { id: ME, host: '127.0.0.1', port: 9092 }, { topicsChanged: () => {}, partitionStatesChanged: (partitions) => void wired.manager?.statesChanged(partitions) }, logger);
  cleanups.push(() => cluster.stop());
  await cluster.start();
  const manager = new ReplicaManager({
    brokerId: ME,
    cluster,
    store: tree.session(),
    logs,
    clock: systemClock,
    logger,
    metrics,
    replicaWaiters: new FetchWaiters(),
    replicaLagTimeMaxMs: 30_000,
    sessionTimeoutMs: 6_000,
    fetcher: { maxWaitMs: 100, partitionMaxBytes: 1 << 20, responseMaxBytes: 1 << 20, backoffMs: 50 },
    transitionRetry: FAST,
  });
  wired.manager = manager;
  cleanups.push(() => manager.stop());
  manager.start();
  await manager.sync();
  expect(manager.replica('t', 0)?.role).toBe('unknown');
  return { manager, cluster, logs, controller, lines, metrics, registry };
}

async function writeState(controller: World['controller'], state: Partial<PartitionState> & { leader: number; isr: number[] }): Promise<void> {
  const full: PartitionState = { leaderEpoch: 1, controllerEpoch: 1, replicaStorage: {}, leaderIncarnation: '', ...state };
  const path = partitionStatePath('t', 0);
  await controller.ensurePath(path.slice(0, path.lastIndexOf('/')));
  await controller.create(path, encodePartitionState(full), 'persistent');
}

/** Makes `method` of `target` throw `error()` for its first `times` calls, then behave as before; returns the call count. */
function failFirst<T extends object, K extends keyof T>(target: T, method: K, times: number, error: () => unknown): { calls: number } {
  const real = target[method] as unknown as (...args: unknown[]) => unknown;
  const counter = { calls: 0 };
  (target as Record<K, unknown>)[method] = (...args: unknown[]): unknown => {
    counter.calls += 1;
    if (counter.calls <= times) throw error();
    return real.apply(target, args);
  };
  return counter;
}

async function failuresCounted(registry: Registry, kind: string): Promise<number> {
  const metric = (await registry.getSingleMetric('tributary_replica_transition_failures_total')?.get())?.values.find((value) => value.labels.kind === kind);
  return metric?.value ?? 0;
}

describe('a failed role transition', () => {
  it('is retried until the broker leads, without another state from the controller', async () => {
    const { manager, logs, controller, lines, registry } = await world([1, 2]);
    const log = logs.getLog('t', 0)!;
    const assign = failFirst(log.leaderEpochCache, 'assign', 3, checkpointFailure);
    await writeState(controller, { leader: ME, leaderEpoch: 4, isr: [1, 2] });
    await expect.poll(() => manager.leaderFor('t', 0).errorCode, { timeout: 5_000, interval: 10 }).toBe(0);
    expect(assign.calls).toBe(4);
    expect(manager.replica('t', 0)?.leaderEpoch).toBe(4);
    expect(log.leaderEpochCache.latestEpoch()).toBe(4);
    // The state node was written once, by the test's "controller".
    expect((await controller.get(partitionStatePath('t', 0)))?.version).toBe(0);
    expect(manager.failingTransitions()).toEqual({ partitions: 0, pendingTimers: 0 });
    expect(await failuresCounted(registry, 'storage')).toBe(3);
    const failures = lines.filter((line) => line.msg === 'could not take the role the partition state gives; retrying after a backoff');
    expect(failures.map((line) => line.attempt)).toEqual([1, 2, 3]);
    expect(failures.every((line) => line.level === 40 && typeof line.nextDelayMs === 'number')).toBe(true);
    const logged = failures[0]?.err as { code?: string; message?: string; retriable?: boolean };
    expect(logged.code).toBe('REPLICA_TRANSITION_FAILED');
    expect(logged.retriable).toBe(true);
    // A storage failure says what to do about it.
    expect(logged.message).toContain('leader of epoch 4');
    expect(logged.message).toContain('its storage failed (EIO)');
    expect(logged.message).toContain(log.directory);
    expect(logged.message).toContain('stop this broker: the controller then elects another in-sync replica');
    expect(lines.some((line) => line.msg === 'took the role the partition state gives after failed attempts' && line.failedAttempts === 3)).toBe(true);
  });

  it('is retried until the broker follows the leader, without another state from the controller', async () => {
    const { manager, logs, controller, registry } = await world([1, 2]);
    const log = logs.getLog('t', 0)!;
    const stepDown = failFirst(log, 'setHighWatermarkMode', 2, () => new Error('an unexpected failure'));
    await writeState(controller, { leader: 2, leaderEpoch: 3, isr: [2, 1] });
    // The first attempt fails halfway (the role is set before the failing step): done means the
    // state applied in full, after which nothing is failing.
    await expect.poll(() => manager.replica('t', 0)?.stateVersion, { timeout: 5_000, interval: 10 }).toBe(0);
    expect(stepDown.calls).toBe(3);
    expect(manager.replica('t', 0)?.role).toBe('follower');
    expect(manager.replica('t', 0)?.leaderId).toBe(2);
    expect(manager.replica('t', 0)?.leaderEpoch).toBe(3);
    expect((await controller.get(partitionStatePath('t', 0)))?.version).toBe(0);
    expect(manager.failingTransitions()).toEqual({ partitions: 0, pendingTimers: 0 });
    expect(await failuresCounted(registry, 'other')).toBe(2);
  });

  it('leaves no retry timer behind once the manager stops', async () => {
    const { manager, logs, controller } = await world([1, 2]);
    const log = logs.getLog('t', 0)!;
    const assign = failFirst(log.leaderEpochCache, 'assign', Number.POSITIVE_INFINITY, checkpointFailure);
    await writeState(controller, { leader: ME, isr: [1, 2] });
    await expect.poll(() => assign.calls, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(2);
    expect(manager.failingTransitions()).toEqual({ partitions: 1, pendingTimers: 1 });
    await manager.stop();
    expect(manager.failingTransitions()).toEqual({ partitions: 0, pendingTimers: 0 });
    const afterStop = assign.calls;
    // Longer than the longest pause of the test schedule: a timer left behind would have fired.
    await new Promise((resolve) => setTimeout(resolve, 4 * FAST.storageBackoff.maxDelayMs));
    expect(assign.calls).toBe(afterStop);
    expect(manager.replica('t', 0)?.role).not.toBe('leader');
  });

  it('is no longer retried once the replica is removed', async () => {
    const { manager, logs, controller } = await world([1, 2]);
    const assign = failFirst(logs.getLog('t', 0)!.leaderEpochCache, 'assign', Number.POSITIVE_INFINITY, checkpointFailure);
    await writeState(controller, { leader: ME, isr: [1, 2] });
    await expect.poll(() => assign.calls, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(1);
    // The topic is deleted: the broker's sync drops the replica.
    await controller.deleteRecursive(topicPath('t'));
    await expect.poll(async () => {
      await manager.sync();
      return manager.replica('t', 0);
    }, { timeout: 5_000, interval: 20 }).toBeUndefined();
    expect(manager.failingTransitions()).toEqual({ partitions: 0, pendingTimers: 0 });
    const afterRemoval = assign.calls;
    await new Promise((resolve) => setTimeout(resolve, 4 * FAST.storageBackoff.maxDelayMs));
    expect(assign.calls).toBe(afterRemoval);
  });
});
