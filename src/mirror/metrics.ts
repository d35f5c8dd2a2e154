/** The mirror's Prometheus metrics, in the process registry (an embedded mirror shares the broker's /metrics). */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../common/metrics.js';

export class MirrorMetrics {
  /** Records in a source partition after the last one the target acknowledged (or the committed offset). */
  readonly lag: Gauge<'source' | 'topic' | 'partition'>;
  readonly recordsMirrored: Counter<'source' | 'topic'>;
  /** Record timestamp (creation) to the target's acknowledgement. */
  readonly latencySeconds: Histogram<'source'>;

  constructor(registry: Registry) {
    // Tests may run several mirrors in one process: they then share the metrics.
    const existing = <T>(name: string): T | undefined => registry.getSingleMetric(`${METRIC_PREFIX}${name}`) as T | undefined;
    this.lag =
      existing<Gauge<'source' | 'topic' | 'partition'>>('mirror_lag_records') ??
      new Gauge({
        name: `${METRIC_PREFIX}mirror_lag_records`,
        help: 'Records of a source partition not yet acknowledged by the offline cluster (owned partitions of this process)',
        labelNames: ['source', 'topic', 'partition'],
        registers: [registry],
      });
    this.recordsMirrored =
      existing<Counter<'source' | 'topic'>>('mirror_records_total') ??
      new Counter({
        name: `${METRIC_PREFIX}mirror_records_total`,
        help: 'Records the offline cluster acknowledged (acks=-1), per source cluster and topic; replays count again',
        labelNames: ['source', 'topic'],
        registers: [registry],
      });
    this.latencySeconds =
      existing<Histogram<'source'>>('mirror_latency_seconds') ??
      new Histogram({
        name: `${METRIC_PREFIX}mirror_latency_seconds`,
        help: 'From a record\'s timestamp (its creation) to the offline cluster\'s acknowledgement',
        labelNames: ['source'],
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
        registers: [registry],
      });
  }
}
