/**
 * Prometheus metrics with prom-client: one registry per process, shared by every component in it,
 * so a broker that also runs an embedded mirror exposes both on one `/metrics` endpoint.
 * Metric names start with `tributary_`.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';

export const METRIC_PREFIX = 'tributary_';

let processRegistry: Registry | undefined;

/** The process-wide registry, created on first use with Node's default process metrics. */
export function metricsRegistry(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: METRIC_PREFIX });
  }
  return processRegistry;
}

/** The registry's text exposition, as served at `/metrics`. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  const registry = metricsRegistry();
  return { contentType: registry.contentType, body: await registry.metrics() };
}
