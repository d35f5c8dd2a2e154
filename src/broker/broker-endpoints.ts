/**
 * A broker's endpoints as its registration in `/brokers/ids/<id>` carries them, in Kafka's form:
 *
 *   "endpoints": ["PLAINTEXT://host:9092", "SASL_SSL://host:9093"]        (scheme = listener name)
 *   "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SASL_SSL"}
 *
 * beside the older `host`/`port` pair (the inter-broker listener), which a registration without
 * endpoints — a broker from before listeners — is read as: one PLAINTEXT endpoint.
 */
import { parseEndpoint } from './listeners.js';
import type { SecurityProtocol } from './security/identity.js';

export interface BrokerEndpoint {
  readonly listenerName: string;
  readonly securityProtocol: SecurityProtocol;
  readonly host: string;
  readonly port: number;
}

const PROTOCOLS = new Set<string>(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']);

export function formatEndpoint(endpoint: { readonly listenerName: string; readonly host: string; readonly port: number }): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  return `${endpoint.listenerName}://${host}:${endpoint.port}`;
}

/** The registration fields that describe `endpoints`. */
export function endpointRegistration(endpoints: readonly BrokerEndpoint[]): { endpoints: string[]; listener_security_protocol_map: Record<string, string> } {
  return {
    endpoints: endpoints.map(formatEndpoint),
    listener_security_protocol_map: Object.fromEntries(endpoints.map((endpoint) => [endpoint.listenerName, endpoint.securityProtocol])),
  };
}

/**
 * The endpoints a registration names. An entry that cannot be read is skipped (a later broker may
 * register forms this one does not know); without any, the `host`/`port` pair as PLAINTEXT.
 */
export function endpointsOfRegistration(registration: { readonly host?: unknown; readonly port?: unknown; readonly endpoints?: unknown; readonly listener_security_protocol_map?: unknown }): BrokerEndpoint[] {
  const map = typeof registration.listener_security_protocol_map === 'object' && registration.listener_security_protocol_map !== null ? (registration.listener_security_protocol_map as Record<string, unknown>) : {};
  const endpoints: BrokerEndpoint[] = [];
  if (Array.isArray(registration.endpoints)) {
    for (const entry of registration.endpoints) {
      if (typeof entry !== 'string') continue;
      try {
        const { name, host, port } = parseEndpoint(entry, 'registration endpoints');
        // Kafka's default map names each listener after its protocol, so a name missing from the map is read that way.
        const protocol = map[name] ?? name;
        if (typeof protocol === 'string' && PROTOCOLS.has(protocol)) endpoints.push({ listenerName: name, securityProtocol: protocol as SecurityProtocol, host, port });
      } catch {
        // Unreadable entry: skipped.
      }
    }
  }
  if (endpoints.length === 0 && typeof registration.host === 'string' && typeof registration.port === 'number') {
    endpoints.push({ listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT', host: registration.host, port: registration.port });
  }
  return endpoints;
}

/** The endpoint of `broker` on listener `listenerName`, undefined when it has none there. */
export function endpointOn(broker: { readonly host: string; readonly port: number; readonly endpoints?: readonly BrokerEndpoint[] | undefined }, listenerName: string): BrokerEndpoint | undefined {
  const endpoints = broker.endpoints ?? [{ listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT' as const, host: broker.host, port: broker.port }];
  return endpoints.find((endpoint) => endpoint.listenerName === listenerName);
}
