/**
 * ZooKeeper 3.8 from Debian's libzookeeper-java: a standalone server, or a 3-node ensemble on one
 * host for fault tests (kill, pause or restart one node and watch clients ride it out).
 *
 * tickTime is 500 ms so tests can ask for short sessions (the server's minimum is 2 ticks), and
 * maxSessionTimeout is raised to 60 s because its default (20 ticks) would cap sessions at 10 s.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, LOOPBACK, tcpExchange } from './network.js';
import { startDaemon, waitUntil, type Daemon } from './process.js';
import { serviceDir, type ServiceRun } from './run-dir.js';
import { javaCommand, javaEnvironment } from './java.js';

const ZOOKEEPER_JARS = ['/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-simple.jar'];
const START_TIMEOUT_MS = 60_000;

export interface ZooKeeperNode {
  readonly id: number;
  readonly clientPort: number;
  readonly daemon: Daemon;
}

export interface ZooKeeperCluster {
  /** `host:port[,host:port…]`, without a chroot. */
  readonly connectString: string;
  readonly nodes: readonly ZooKeeperNode[];
  /** Stops one node (SIGTERM, or SIGKILL with `kill`), leaving the others running. */
  stopNode(id: number, options?: { kill?: boolean }): Promise<void>;
  /** Starts a stopped node again with its data and ports, and waits until it serves. */
  startNode(id: number): Promise<void>;
  /** `leader`, `follower` or `standalone`, from the node's `srvr` answer. */
  mode(id: number): Promise<string>;
  stop(): Promise<void>;
}

interface NodePlan {
  readonly id: number;
  readonly dir: string;
  readonly clientPort: number;
  readonly configFile: string;
}

export async function startZooKeeper(run: ServiceRun): Promise<ZooKeeperCluster> {
  checkInstalled();
  const dir = serviceDir(run, 'zookeeper');
  const [clientPort] = await freePorts(1);
  if (clientPort === undefined) throw new Error('no port for ZooKeeper');
  const plan = writeNodeConfig(dir, 1, clientPort, []);
  return launch(run, 'zookeeper', [plan]);
}

export async function startZooKeeperEnsemble(run: ServiceRun, size = 3): Promise<ZooKeeperCluster> {
  checkInstalled();
  const dir = serviceDir(run, 'zookeeper-ensemble');
  const ports = await freePorts(size * 3);
  const peers = Array.from({ length: size }, (_, index) => ({
    id: index + 1,
    clientPort: ports[index * 3] ?? 0,
    quorumPort: ports[index * 3 + 1] ?? 0,
    electionPort: ports[index * 3 + 2] ?? 0,
  }));
  const serverLines = peers.map((peer) => `server.${peer.id}=${LOOPBACK}:${peer.quorumPort}:${peer.electionPort}`);
  const plans = peers.map((peer) => writeNodeConfig(join(dir, `node${peer.id}`), peer.id, peer.clientPort, serverLines));
  return launch(run, 'zookeeper-ensemble', plans);
}

function checkInstalled(): void {
  const missing = ZOOKEEPER_JARS.filter((jar) => !existsSync(jar));
  if (missing.length > 0) {
    throw new Error(
      `ZooKeeper jars missing: ${missing.join(', ')}. Install them with ` +
        '`apt-get install --no-install-recommends libzookeeper-java libslf4j-java` (.ci/run does this).',
    );
  }
}

function writeNodeConfig(dir: string, id: number, clientPort: number, serverLines: readonly string[]): NodePlan {
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const lines = [
    'tickTime=500',
    'initLimit=20',
    'syncLimit=10',
    'maxSessionTimeout=60000',
    `dataDir=${dataDir}`,
    `clientPort=${clientPort}`,
    `clientPortAddress=${LOOPBACK}`,
    'maxClientCnxns=0',
    'admin.enableServer=false',
    '4lw.commands.whitelist=srvr,ruok,mntr,stat,cons,wchs',
    ...serverLines,
  ];
  if (serverLines.length > 0) writeFileSync(join(dataDir, 'myid'), `${id}\n`);
  const configFile = join(dir, 'zoo.cfg');
  writeFileSync(configFile, `${lines.join('\n')}\n`);
  return { id, dir, clientPort, configFile };
}

async function launch(run: ServiceRun, name: string, plans: readonly NodePlan[]): Promise<ZooKeeperCluster> {
  const ensemble = plans.length > 1;
  const mainClass = ensemble
    ? 'org.apache.zookeeper.server.quorum.QuorumPeerMain'
    : 'org.apache.zookeeper.server.ZooKeeperServerMain';
  const nodes = new Map<number, ZooKeeperNode>();

  const startProcess = (plan: NodePlan): ZooKeeperNode => {
    const daemon = startDaemon({
      run,
      name: ensemble ? `${name}-${plan.id}` : name,
      command: javaCommand(),
      args: ['-Xmx128m', '-XX:+UseSerialGC', '-cp', ZOOKEEPER_JARS.join(':'), mainClass, plan.configFile],
      logFile: join(plan.dir, 'zookeeper.log'),
      cwd: plan.dir,
      env: javaEnvironment(),
    });
    const node = { id: plan.id, clientPort: plan.clientPort, daemon };
    nodes.set(plan.id, node);
    return node;
  };
  const mode = async (id: number): Promise<string> => {
    const node = nodes.get(id);
    if (node === undefined) throw new Error(`no ZooKeeper node ${id}`);
    const answer = await tcpExchange(node.clientPort, 'srvr');
    return /^Mode: (\S+)/m.exec(answer)?.[1] ?? 'unknown';
  };
  const waitServing = (node: ZooKeeperNode): Promise<void> =>
    waitUntil(async () => ['standalone', 'leader', 'follower'].includes(await mode(node.id)), {
      what: `ZooKeeper node ${node.id} on ${LOOPBACK}:${node.clientPort} to serve`,
      timeoutMs: START_TIMEOUT_MS,
      daemons: [node.daemon],
    });

  const started = plans.map(startProcess);
  try {
    await Promise.all(started.map(waitServing));
  } catch (error) {
    await Promise.all(started.map((node) => node.daemon.stop()));
    throw error;
  }

  const planOf = (id: number): NodePlan => {
    const plan = plans.find((candidate) => candidate.id === id);
    if (plan === undefined) throw new Error(`no ZooKeeper node ${id}`);
    return plan;
  };
  return {
    connectString: plans.map((plan) => `${LOOPBACK}:${plan.clientPort}`).join(','),
    get nodes() {
      return [...nodes.values()];
    },
    async stopNode(id, options = {}) {
      const node = nodes.get(id);
      if (node === undefined) throw new Error(`no ZooKeeper node ${id}`);
      if (options.kill === true) {
        node.daemon.signal('SIGKILL');
        await node.daemon.exited;
      } else {
        await node.daemon.stop();
      }
    },
    async startNode(id) {
      const current = nodes.get(id);
      if (current !== undefined && !current.daemon.hasExited()) throw new Error(`ZooKeeper node ${id} is running`);
      await waitServing(startProcess(planOf(id)));
    },
    mode,
    async stop() {
      await Promise.all([...nodes.values()].map((node) => node.daemon.stop()));
    },
  };
}
