/**
 * Replication's Prometheus metrics (Kafka's names where one exists): under-replicated and offline
 * partitions, ISR shrinks and expands, leader elections, each follower's lag behind its leader,
 * and role transitions that failed (and are being retried).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../../common/metrics.js';

export class ReplicationMetrics {
  /** Partitions this broker leads whose ISR is smaller than their replica list. */
  readonly underReplicatedPartitions: Gauge;
  /** Partitions this broker leads. */
  readonly leaderPartitions: Gauge;
  /** Times a replica here became leader of a new epoch. */
  readonly leaderElections: Counter;
  readonly isrShrinks: Counter;
  readonly isrExpands: Counter;
  /** Records a follower is behind this leader's log end. */
  readonly replicaLag: Gauge<'topic' | 'partition' | 'follower'>;
  /** 1 while this broker is the controller. */
  readonly activeController: Gauge;
  /** Partitions without a leader (the controller's count; 0 on other brokers). */
  readonly offlinePartitions: Gauge;
  /** Leaders the controller elected (a dead or restarted leader replaced). */
  readonly controllerElections: Counter;
  /** Failed attempts to take the role a partition state gives (kind: storage or other); each is retried. */
  readonly transitionFailures: Counter<'kind'>;
  /** Partitions whose last attempt to take their role failed and which wait for a retry. */
  readonly transitionsFailing: Gauge;

  constructor(registry: Registry) {
    // Several brokers may share a process (tests, the demo): they then share the metrics.
    const named = <T>(name: string, make: (fullName: string) => T): T => (registry.getSingleMetric(`${METRIC_PREFIX}${name}`) as T | undefined) ?? make(`${METRIC_PREFIX}${name}`);
    const gauge = (name: string, help: string): Gauge => named(name, (fullName) => new Gauge({ name: fullName, help, registers: [registry] }));
    const counter = (name: string, help: string): Counter => named(name, (fullName) => new Counter({ name: fullName, help, registers: [registry] }));
    this.underReplicatedPartitions = gauge('replication_under_replicated_partitions', 'Partitions led here whose ISR is smaller than their replicas');
    this.leaderPartitions = gauge('replication_leader_partitions', 'Partitions led by this broker');
    this.leaderElections = counter('replication_leader_elections_total', 'Times a replica on this broker became leader of a new epoch');
    this.isrShrinks = counter('replication_isr_shrinks_total', 'ISR shrinks written by this broker as leader');
    this.isrExpands = counter('replication_isr_expands_total', 'ISR expansions written by this broker as leader');
    this.replicaLag = named(
      'replication_follower_lag_records',
      (fullName) => new Gauge({ name: fullName, help: 'Records each follower is behind the leader here', labelNames: ['topic', 'partition', 'follower'], registers: [registry] }),
    );
    this.activeController = gauge('controller_active', '1 while this broker is the elected controller');
    this.offlinePartitions = gauge('controller_offline_partitions', 'Partitions without a leader, as the controller sees them');
    this.controllerElections = counter('controller_leader_elections_total', 'Leaders elected by the controller on this broker');
    this.transitionFailures = named(
      'replica_transition_failures_total',
      (fullName) => new Counter({ name: fullName, help: 'Failed attempts to become leader, follower or fenced as a partition state says (retried with backoff)', labelNames: ['kind'], registers: [registry] }),
    );
    this.transitionsFailing = gauge('replica_transitions_failing', 'Partitions here whose role transition failed and waits for a retry');
  }
}
