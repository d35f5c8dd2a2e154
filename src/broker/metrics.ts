/** The broker's Prometheus metrics, registered in the process registry. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../common/metrics.js';

export class BrokerMetrics {
  readonly bytesIn: Counter<'topic'>;
  readonly bytesOut: Counter<'topic'>;
  readonly recordsIn: Counter<'topic'>;
  readonly requestSeconds: Histogram<'api'>;
  readonly logEndOffset: Gauge<'topic' | 'partition'>;
  /** Kafka's successful-/failed-authentication-total, per listener and mechanism (SASL mechanism, or SSL for client certificates). */
  readonly authenticationSuccesses: Counter<'listener' | 'mechanism'>;
  readonly authenticationFailures: Counter<'listener' | 'mechanism'>;
  /** Connections closed on accept by max.connections or max.connections.per.ip. */
  readonly connectionsRefused: Counter<'listener' | 'limit'>;

  constructor(registry: Registry) {
    // Several brokers may share a process (tests, the demo): they then share the metrics.
    const existing = <T>(name: string): T | undefined => registry.getSingleMetric(`${METRIC_PREFIX}${name}`) as T | undefined;
    const counter = (name: string, help: string): Counter<'topic'> =>
      existing<Counter<'topic'>>(name) ?? new Counter({ name: `${METRIC_PREFIX}${name}`, help, labelNames: ['topic'], registers: [registry] });
    this.bytesIn = counter('broker_bytes_in_total', 'Record bytes appended, per topic');
    this.bytesOut = counter('broker_bytes_out_total', 'Record bytes sent to fetchers, per topic');
    this.recordsIn = counter('broker_records_in_total', 'Records appended, per topic');
    this.requestSeconds =
      existing<Histogram<'api'>>('broker_request_seconds') ??
      new Histogram({
        name: `${METRIC_PREFIX}broker_request_seconds`,
        help: 'Time from reading a request to writing its response, per API',
        labelNames: ['api'],
        buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
        registers: [registry],
      });
    this.logEndOffset =
      existing<Gauge<'topic' | 'partition'>>('broker_log_end_offset') ??
      new Gauge({ name: `${METRIC_PREFIX}broker_log_end_offset`, help: 'Log end offset per partition', labelNames: ['topic', 'partition'], registers: [registry] });
    const authentications = (name: string, help: string): Counter<'listener' | 'mechanism'> =>
      existing<Counter<'listener' | 'mechanism'>>(name) ?? new Counter({ name: `${METRIC_PREFIX}${name}`, help, labelNames: ['listener', 'mechanism'], registers: [registry] });
    this.authenticationSuccesses = authentications('broker_authentication_successes_total', 'Connections that authenticated, per listener and mechanism');
    this.connectionsRefused =
      existing<Counter<'listener' | 'limit'>>('broker_connections_refused_total') ??
      new Counter({ name: `${METRIC_PREFIX}broker_connections_refused_total`, help: 'Connections closed on accept because a connection limit was reached, per listener and limit', labelNames: ['listener', 'limit'], registers: [registry] });
    this.authenticationFailures = authentications('broker_authentication_failures_total', 'Failed authentications (SASL, or TLS handshakes as mechanism SSL), per listener and mechanism');
  }
}
