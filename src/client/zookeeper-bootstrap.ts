/**
 * Bootstrap addresses of a cluster read from its broker registry (`/brokers/ids/<id>` =
 * `{"host","port",…}`), for clients that are told a cluster's ZooKeeper rather than a broker: the
 * mirror reaches each source (and, with `--target-zookeeper`, the target) this way.
 *
 * A broker with several listeners registers them as Kafka does, `"endpoints":["NAME://host:port",…]`
 * with `"listener_security_protocol_map":{"NAME":"PROTOCOL",…}`; a client takes the endpoint of the
 * security protocol it speaks (a SASL_SSL client cannot talk to the PLAINTEXT port). `host`/`port`
 * alone is a broker with its one PLAINTEXT listener.
 */
import { TributaryError } from '../common/errors.js';
import { brokerIdsPath, brokerPath } from '../coordination/paths.js';
import type { CoordinationStore } from '../coordination/store.js';
import type { SecurityProtocol } from './security-config.js';

interface Registration {
  readonly host?: unknown;
  readonly port?: unknown;
  readonly endpoints?: unknown;
  readonly listener_security_protocol_map?: unknown;
}

/** `host:port` of every registered broker, by broker id. Fails with NO_BROKERS_REGISTERED when there is none. */
export async function bootstrapFromZooKeeper(store: CoordinationStore, protocol: SecurityProtocol = 'PLAINTEXT'): Promise<string[]> {
  const ids = ((await store.children(brokerIdsPath())) ?? []).map(Number).filter((id) => Number.isSafeInteger(id) && id >= 0);
  const addresses: string[] = [];
  for (const id of ids.sort((a, b) => a - b)) {
    const node = await store.get(brokerPath(id));
    if (node === undefined) continue; // left since the listing
    let registration: Registration;
    try {
      registration = JSON.parse(node.data.toString('utf8')) as Registration;
    } catch (error) {
      throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${brokerPath(id)} does not hold a broker registration (JSON)`, cause: error, details: { brokerId: id } });
    }
    if (Array.isArray(registration.endpoints)) {
      addresses.push(endpointFor(registration, protocol, id));
      continue;
    }
    if (protocol !== 'PLAINTEXT') {
      throw new TributaryError({
        code: 'NO_MATCHING_LISTENER',
        message: `${brokerPath(id)} registers only a PLAINTEXT listener, but this client speaks ${protocol}: give the broker a ${protocol} listener, or change security.protocol`,
        details: { brokerId: id, protocol },
      });
    }
    const { host, port } = registration;
    if (typeof host !== 'string' || host === '' || typeof port !== 'number' || !Number.isInteger(port)) {
      throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${brokerPath(id)} has no host and port`, details: { brokerId: id } });
    }
    addresses.push(host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
  }
  if (addresses.length === 0) {
    throw new TributaryError({
      code: 'NO_BROKERS_REGISTERED',
      retriable: true,
      message: `no broker is registered under ${brokerIdsPath()} in this ZooKeeper chroot: start the cluster's brokers, or check the chroot of the connect string`,
    });
  }
  return addresses;
}

/** `host:port` of the registered endpoint whose listener speaks `protocol` (Kafka's registration format). */
function endpointFor(registration: Registration, protocol: SecurityProtocol, id: number): string {
  const map = typeof registration.listener_security_protocol_map === 'object' && registration.listener_security_protocol_map !== null ? (registration.listener_security_protocol_map as Record<string, unknown>) : {};
  const offered: string[] = [];
  for (const endpoint of registration.endpoints as unknown[]) {
    const match = typeof endpoint === 'string' ? /^([A-Za-z0-9_-]+):\/\/(\[[^\]]*\]|[^:/]+):(\d{1,5})$/.exec(endpoint) : null;
    if (match === null) throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${brokerPath(id)} lists an endpoint that is not NAME://host:port: ${JSON.stringify(endpoint)}`, details: { brokerId: id } });
    const name = (match[1] ?? '').toUpperCase();
    // Without a map entry, a listener named after a protocol speaks that protocol (Kafka's default map).
    const speaks = typeof map[name] === 'string' ? String(map[name]).toUpperCase() : name;
    offered.push(`${name} (${speaks})`);
    if (speaks === protocol) return `${match[2] ?? ''}:${match[3] ?? ''}`;
  }
  throw new TributaryError({
    code: 'NO_MATCHING_LISTENER',
    message: `${brokerPath(id)} has no ${protocol} listener (it has ${offered.join(', ') || 'none'}): set security.protocol to one of those, or add a ${protocol} listener to the broker`,
    details: { brokerId: id, protocol },
  });
}
