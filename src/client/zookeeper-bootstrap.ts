/**
 * Bootstrap addresses of a cluster read from its broker registry (`/brokers/ids/<id>` =
 * `{"host","port",…}`), for clients that are told a cluster's ZooKeeper rather than a broker: the
 * mirror reaches each source (and, with `--target-zookeeper`, the target) this way.
 */
import { TributaryError } from '../common/errors.js';
import { brokerIdsPath, brokerPath } from '../coordination/paths.js';
import type { CoordinationStore } from '../coordination/store.js';

/** `host:port` of every registered broker, by broker id. Fails with NO_BROKERS_REGISTERED when there is none. */
export async function bootstrapFromZooKeeper(store: CoordinationStore): Promise<string[]> {
  const ids = ((await store.children(brokerIdsPath())) ?? []).map(Number).filter((id) => Number.isSafeInteger(id) && id >= 0);
  const addresses: string[] = [];
  for (const id of ids.sort((a, b) => a - b)) {
    const node = await store.get(brokerPath(id));
    if (node === undefined) continue; // left since the listing
    let registration: { host?: unknown; port?: unknown };
    try {
      registration = JSON.parse(node.data.toString('utf8')) as { host?: unknown; port?: unknown };
    } catch (error) {
      throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${brokerPath(id)} does not hold a broker registration (JSON)`, cause: error, details: { brokerId: id } });
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
