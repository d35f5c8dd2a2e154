/** The broker's Prometheus metrics, registered in the process registry. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../common/metrics.js';

export class BrokerMetrics {
  readonly bytesIn: Counter<'topic'>;
  readonly bytesOut: Counter<'topic'>;
  readonly recordsIn: Counter<'topic'>;
  readonly requestSeconds: Histogram<'api'>;
  readonly logEndOffset: Gauge<'topic' | 'partition'>;

  constructor(registry: Registry) {
    this.bytesIn = new Counter({ name: `${METRIC_PREFIX}broker_bytes_in_total`, help: 'Record bytes appended, per topic', labelNames: ['topic'], registers: [registry] });
    this.bytesOut = new Counter({ name: `${METRIC_PREFIX}broker_bytes_out_total`, help: 'Record bytes sent to fetchers, per topic', labelNames: ['topic'], registers: [registry] });
    this.recordsIn = new Counter({ name: `${METRIC_PREFIX}broker_records_in_total`, help: 'Records appended, per topic', labelNames: ['topic'], registers: [registry] });
    this.requestSeconds = new Histogram({
      name: `${METRIC_PREFIX}broker_request_seconds`,
      help: 'Time from reading a request to writing its response, per API',
      labelNames: ['api'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    });
    this.logEndOffset = new Gauge({ name: `${METRIC_PREFIX}broker_log_end_offset`, help: 'Log end offset per partition', labelNames: ['topic', 'partition'], registers: [registry] });
  }
}
