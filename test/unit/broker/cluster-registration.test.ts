/**
 * Cluster registration in /brokers/ids when ZooKeeper answers badly: a create that fails with a
 * lost connection (an ensemble leader election) is tried again, also when re-registering after a
 * session expiry, and a create whose answer was lost is recognised as this broker's own node.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../../src/broker/cluster.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination, type MemoryCoordinationStore } from '../../../src/coordination/memory-store.js';
import { brokerPath } from '../../../src/coordination/paths.js';
import { coordinationError } from '../../../src/coordination/store.js';

const logger = createLogger({ name: 'cluster', level: 'silent' });
let cluster: Cluster | undefined;

afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

/** The session, with `create` of the broker's node replaced by `create` (given the real one). */
function withCreate(session: MemoryCoordinationStore, create: (real: MemoryCoordinationStore['create'], path: string, data: Buffer, mode: Parameters<MemoryCoordinationStore['create']>[2]) => Promise<string>): MemoryCoordinationStore {
  return new Proxy(session, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      if (property !== 'create') return (value as (...args: unknown[]) => unknown).bind(target);
      const real = (value as MemoryCoordinationStore['create']).bind(target);
      return (path: string, data: Buffer, mode: Parameters<MemoryCoordinationStore['create']>[2]) => (path === brokerPath(1) ? create(real, path, data, mode) : real(path, data, mode));
    },
  });
}

describe('Cluster registration', () => {
  it('registers again after a session expiry although the first create meets a lost connection', async () => {
    const tree = new MemoryCoordination();
    const session = tree.session();
    let failures = 0;
    let failNext = false;
    const store = withCreate(session, async (real, path, data, mode) => {
      if (failNext) {
        failNext = false;
        failures += 1;
        throw coordinationError('CONNECTION_LOSS', { operation: `create ${path}` });
      }
      return real(path, data, mode);
    });
    cluster = new Cluster(store, { id: 1, host: '127.0.0.1', port: 9092 }, { topicsChanged: () => {} }, logger);
    await cluster.start();
    const observer = tree.session();
    expect(await observer.exists(brokerPath(1))).toBe(true);
    failNext = true;
    await session.expireSession();
    await expect.poll(() => failures, { timeout: 5_000 }).toBe(1);
    await expect.poll(() => observer.exists(brokerPath(1)), { timeout: 10_000, interval: 100 }).toBe(true);
  }, 20_000);

  it('takes a node its own lost-answer create made for its registration, at once', async () => {
    const tree = new MemoryCoordination();
    const store = withCreate(tree.session(), async (real, path, data, mode) => {
      await real(path, data, mode);
      throw coordinationError('CONNECTION_LOSS', { operation: `create ${path}` });
    });
    cluster = new Cluster(store, { id: 1, host: '127.0.0.1', port: 9092 }, { topicsChanged: () => {} }, logger);
    // Without the incarnation check this waited 60 s for "another broker's" session, then failed.
    await cluster.start();
    const node = await tree.session().get(brokerPath(1));
    expect(JSON.parse(node?.data.toString('utf8') ?? '{}')).toMatchObject({ incarnation: cluster.incarnation });
  }, 20_000);
});
