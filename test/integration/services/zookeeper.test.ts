/**
 * Proves the harness's ZooKeeper is the real thing: node creation, one-shot watches, ephemeral
 * nodes that vanish with their session, and a 3-node ensemble that survives losing its leader.
 */
import zookeeper from 'node-zookeeper-client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { startZooKeeperEnsemble, type ZooKeeperCluster } from '../../services/zookeeper.js';
import { services, zookeeperAddress } from '../services.js';

const { CreateMode, Event } = zookeeper;
type Client = zookeeper.Client;

const clients: Client[] = [];

async function connect(connectString: string, sessionTimeout = 4_000): Promise<Client> {
  const client = zookeeper.createClient(connectString, { sessionTimeout, spinDelay: 200, retries: 2 });
  clients.push(client);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ZooKeeper session with ${connectString} in 20 s`)), 20_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  return client;
}

/** node-zookeeper-client's Exception is not an Error subclass. */
function asError(error: Error | zookeeper.Exception): Error {
  return error instanceof Error ? error : new Error(error.toString());
}

function create(client: Client, path: string, data: string, mode = CreateMode.PERSISTENT): Promise<string> {
  return new Promise((resolve, reject) =>
    client.create(path, Buffer.from(data), mode, (error, created) => (error ? reject(asError(error)) : resolve(created))),
  );
}

function getData(client: Client, path: string, watcher?: (event: zookeeper.Event) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const callback = (error: Error | zookeeper.Exception | null, data: Buffer): void =>
      error ? reject(asError(error)) : resolve(data.toString('utf8'));
    if (watcher === undefined) client.getData(path, callback);
    else client.getData(path, watcher, callback);
  });
}

function setData(client: Client, path: string, data: string): Promise<void> {
  return new Promise((resolve, reject) => client.setData(path, Buffer.from(data), (error) => (error ? reject(asError(error)) : resolve())));
}

function exists(client: Client, path: string, watcher?: (event: zookeeper.Event) => void): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const callback = (error: Error | zookeeper.Exception | null, stat: zookeeper.Stat): void =>
      error ? reject(asError(error)) : resolve(stat !== null && stat !== undefined);
    if (watcher === undefined) client.exists(path, callback);
    else client.exists(path, watcher, callback);
  });
}

/** A watcher and the promise of the first event it sees. */
function watchOnce(): { watcher: (event: zookeeper.Event) => void; fired: () => number; event: Promise<zookeeper.Event> } {
  let count = 0;
  let deliver: (event: zookeeper.Event) => void = () => {};
  const event = new Promise<zookeeper.Event>((resolve) => {
    deliver = resolve;
  });
  return {
    watcher: (seen) => {
      count += 1;
      deliver(seen);
    },
    fired: () => count,
    event,
  };
}

const unique = (): string => `/smoke-${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

describe('ZooKeeper (standalone)', () => {
  it('creates a node and reads its data back', async () => {
    const client = await connect(zookeeperAddress().connectString);
    const path = unique();
    expect(await create(client, path, 'hello')).toBe(path);
    expect(await getData(client, path)).toBe('hello');
  });

  it('fires a data watch once when the node changes', async () => {
    const writer = await connect(zookeeperAddress().connectString);
    const watcher = await connect(zookeeperAddress().connectString);
    const path = unique();
    await create(writer, path, 'v1');
    const watch = watchOnce();
    // The watch is registered once the read has been answered; only then may the write happen.
    expect(await getData(watcher, path, watch.watcher)).toBe('v1');
    await setData(writer, path, 'v2');
    const seen = await watch.event;
    expect(seen.getType()).toBe(Event.NODE_DATA_CHANGED);
    expect(seen.getPath()).toBe(path);
    // Watches are one-shot: a second change without re-arming does not fire again. The read
    // below is ordered after the notification of v3 would have been, on the same session.
    await setData(writer, path, 'v3');
    expect(await getData(watcher, path)).toBe('v3');
    expect(watch.fired()).toBe(1);
  });

  it('deletes an ephemeral node when its session is closed', async () => {
    const owner = await connect(zookeeperAddress().connectString);
    const observer = await connect(zookeeperAddress().connectString);
    const path = unique();
    await create(owner, path, 'alive', CreateMode.EPHEMERAL);
    const watch = watchOnce();
    expect(await exists(observer, path, watch.watcher)).toBe(true);
    owner.close();
    const event = await watch.event;
    expect(event.getType()).toBe(Event.NODE_DELETED);
    expect(await exists(observer, path)).toBe(false);
  });
});

describe('ZooKeeper (3-node ensemble)', () => {
  let ensemble: ZooKeeperCluster | undefined;
  afterAll(async () => {
    await ensemble?.stop();
  });

  it('forms a quorum, and keeps data and sessions when the leader stops', async () => {
    ensemble = await startZooKeeperEnsemble(openRun(services().runDir));
    const modes = await Promise.all(ensemble.nodes.map((node) => ensemble!.mode(node.id)));
    expect(modes.filter((mode) => mode === 'leader')).toHaveLength(1);
    expect(modes.filter((mode) => mode === 'follower')).toHaveLength(2);

    const client = await connect(ensemble.connectString, 10_000);
    const path = unique();
    await create(client, path, 'survives', CreateMode.EPHEMERAL);

    const leader = ensemble.nodes[modes.indexOf('leader')];
    if (leader === undefined) throw new Error('no leader found');
    await ensemble.stopNode(leader.id, { kill: true });

    // The two survivors elect a new leader; the client's session and its ephemeral node live on.
    const survivors = ensemble.nodes.filter((node) => node.id !== leader.id);
    await expect
      .poll(async () => (await Promise.all(survivors.map((node) => ensemble!.mode(node.id).catch(() => 'down')))).sort(), {
        timeout: 30_000,
        interval: 250,
      })
      .toEqual(['follower', 'leader']);
    const other = await connect(survivors.map((node) => `127.0.0.1:${node.clientPort}`).join(','), 10_000);
    expect(await getData(other, path)).toBe('survives');

    await ensemble.startNode(leader.id);
    expect(['leader', 'follower']).toContain(await ensemble.mode(leader.id));
  });
});
