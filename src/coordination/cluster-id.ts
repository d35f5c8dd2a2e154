/**
 * The cluster id every broker reports in Metadata. Clients compare it across connections and
 * restarts (librdkafka logs "reports different ClusterId" and resets its view when it changes),
 * so it is created once and kept in the coordination store at `/cluster/id`, Kafka's ZooKeeper
 * path, with Kafka's data format:
 *
 *   {"version":"1","id":"<22 characters: a random UUID in URL-safe base64>"}
 *
 * Standalone brokers keep it in their persisted in-process store, so it survives restarts too.
 * The first broker to start creates the node; a broker that loses that race reads the winner's.
 */
import { randomUUID } from 'node:crypto';
import { TributaryError } from '../common/errors.js';
import { clusterIdPath } from './paths.js';
import { hasCode, type CoordinationStore } from './store.js';

/** The cluster's id, created on first use. */
export async function loadClusterId(store: CoordinationStore): Promise<string> {
  const existing = await readClusterId(store);
  if (existing !== undefined) return existing;
  const id = Buffer.from(randomUUID().replaceAll('-', ''), 'hex').toString('base64url');
  await store.ensurePath('/cluster');
  try {
    await store.create(clusterIdPath(), Buffer.from(JSON.stringify({ version: '1', id })), 'persistent');
    return id;
  } catch (error) {
    // Another broker created it first (or our create landed before a lost connection): theirs counts.
    if (!hasCode(error, 'NODE_EXISTS')) throw error;
  }
  const created = await readClusterId(store);
  if (created === undefined) throw new TributaryError({ code: 'CLUSTER_ID_MISSING', message: `${clusterIdPath()} vanished while the broker was reading it; start the broker again` });
  return created;
}

async function readClusterId(store: CoordinationStore): Promise<string | undefined> {
  const node = await store.get(clusterIdPath());
  if (node === undefined) return undefined;
  let id: unknown;
  try {
    id = (JSON.parse(node.data.toString('utf8')) as { id?: unknown }).id;
  } catch (error) {
    throw invalidNode(node.data, error);
  }
  if (typeof id !== 'string' || id.length === 0) throw invalidNode(node.data, undefined);
  return id;
}

function invalidNode(data: Buffer, cause: unknown): TributaryError {
  return new TributaryError({
    code: 'CLUSTER_ID_INVALID',
    message: `${clusterIdPath()} holds ${JSON.stringify(data.toString('utf8').slice(0, 200))}, not {"version":"1","id":"…"}; repair or delete the node (clients will see a new cluster id)`,
    ...(cause === undefined ? {} : { cause }),
  });
}
