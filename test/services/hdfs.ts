/**
 * Real HDFS: a NameNode and a DataNode (Hadoop 3.5.0, two JVMs) with WebHDFS on, replication 1,
 * permissions off, and the DataNode registered as 127.0.0.1 so WebHDFS redirects point at an
 * address the tests can reach. Ready means one live DataNode and safe mode off.
 *
 * The daemons are started with `java` directly, without Hadoop's shell scripts, so the Java 17
 * `--add-opens` flags those scripts would add are given here.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, LOOPBACK } from './network.js';
import { startDaemon, stopProcessGroup, waitUntil, type Daemon } from './process.js';
import { serviceDir, type ServiceRun } from './run-dir.js';
import { ensureJars, HADOOP_JARS } from './service-jars.js';
import { javaCommand, javaEnvironment } from './java.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const START_TIMEOUT_MS = 120_000;

/** The user WebHDFS requests act as when they name none (`hadoop.http.staticuser.user`). */
export const HDFS_USER = 'etl';

const JAVA_17_OPENS = [
  'java.io', 'java.lang', 'java.lang.reflect', 'java.math', 'java.net', 'java.nio', 'java.text',
  'java.util', 'java.util.concurrent', 'java.util.zip', 'sun.nio.ch', 'sun.security.util', 'sun.security.x509',
].map((pkg) => `--add-opens=java.base/${pkg}=ALL-UNNAMED`);

export interface HdfsCluster {
  /** `hdfs://127.0.0.1:<rpc>`, the file system URI. */
  readonly nameNodeUri: string;
  /** `http://127.0.0.1:<http>`; WebHDFS is under `/webhdfs/v1`. */
  readonly webHdfsUrl: string;
  readonly user: string;
  readonly nameNode: Daemon;
  readonly dataNode: Daemon;
  stop(): Promise<void>;
}

export async function startHdfs(run: ServiceRun, log: (line: string) => void = () => {}): Promise<HdfsCluster> {
  const jars = await ensureJars(HADOOP_JARS, log);
  const dir = serviceDir(run, 'hdfs');
  const [rpcPort, httpPort] = await freePorts(2);
  if (rpcPort === undefined || httpPort === undefined) throw new Error('no ports for HDFS');
  writeConfiguration(dir, rpcPort, httpPort); // into <dir>/conf, which javaArgs puts on the classpath

  await execFileAsync(javaCommand(), javaArgs(dir, jars, '256m', nameNodeClass, '-format', '-force', '-nonInteractive'), {
    env: javaEnvironment(),
    cwd: dir,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: unknown) => {
    throw new Error(`formatting the HDFS NameNode failed: ${(error as Error).message}`, { cause: error });
  });

  const nameNode = startHdfsDaemon(run, dir, jars, 'namenode');
  const dataNode = startHdfsDaemon(run, dir, jars, 'datanode');
  const webHdfsUrl = `http://${LOOPBACK}:${httpPort}`;
  try {
    await waitUntil(() => isReady(webHdfsUrl), {
      what: `HDFS at ${webHdfsUrl} to report one live DataNode and safe mode off`,
      timeoutMs: START_TIMEOUT_MS,
      intervalMs: 250,
      daemons: [nameNode, dataNode],
    });
  } catch (error) {
    await Promise.all([dataNode.stop(), nameNode.stop()]);
    throw error;
  }
  return {
    nameNodeUri: `hdfs://${LOOPBACK}:${rpcPort}`,
    webHdfsUrl,
    user: HDFS_USER,
    nameNode,
    dataNode,
    async stop() {
      await dataNode.stop();
      await nameNode.stop();
    },
  };
}

const nameNodeClass = 'org.apache.hadoop.hdfs.server.namenode.NameNode';

/** The JVM arguments of an HDFS daemon whose folder (with its `conf/`) is `dir`. */
function javaArgs(dir: string, jars: string, heap: string, mainClass: string, ...args: string[]): string[] {
  return [
    '-XX:+IgnoreUnrecognizedVMOptions', ...JAVA_17_OPENS, `-Xmx${heap}`, '-XX:+UseSerialGC',
    `-Dhadoop.home.dir=${dir}`, `-Dhadoop.log.dir=${dir}`, '-cp', `${join(dir, 'conf')}:${jars}/*`, mainClass, ...args,
  ];
}

export type HdfsDaemonKind = 'namenode' | 'datanode';

/** Starts one daemon of the HDFS in `dir` (formatted and configured already), logging to `<kind>.log`. */
function startHdfsDaemon(run: ServiceRun, dir: string, jars: string, kind: HdfsDaemonKind): Daemon {
  const args = kind === 'namenode' ? javaArgs(dir, jars, '384m', nameNodeClass) : javaArgs(dir, jars, '256m', 'org.apache.hadoop.hdfs.server.datanode.DataNode');
  return startDaemon({ run, name: `hdfs-${kind}`, command: javaCommand(), args, logFile: join(dir, `${kind}.log`), cwd: dir, env: javaEnvironment() });
}

/**
 * Stop and start of one HDFS daemon at a time, for fault tests: a NameNode restart, a DataNode
 * SIGKILL and restart. Works on the HDFS of a run started by this process or by another one
 * (`npm run services`, the vitest global setup): it finds the daemon by its pid file and starts
 * the replacement from the run's `hdfs/` folder with the same configuration (same ports; the
 * NameNode keeps its metadata, the DataNode its blocks). The replacement is recorded in the run
 * like the original, so stopping the run stops it.
 */
export interface HdfsDaemonControl {
  /** The daemon's process-group id now, if it runs. */
  pidOf(kind: HdfsDaemonKind): number | undefined;
  /** SIGTERM (a clean stop) or SIGKILL; resolves once the process is gone. */
  stop(kind: HdfsDaemonKind, signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts the daemon again (it must be stopped); does not wait for it to serve. */
  start(kind: HdfsDaemonKind): Promise<void>;
  /** Until the NameNode reports one live DataNode and safe mode off. */
  waitReady(timeoutMs?: number): Promise<void>;
}

export function controlHdfs(run: ServiceRun, webHdfsUrl: string): HdfsDaemonControl {
  const dir = join(run.dir, 'hdfs');
  const started = new Map<HdfsDaemonKind, Daemon>();
  const pidOf = (kind: HdfsDaemonKind): number | undefined => {
    const file = join(run.pidDir, `hdfs-${kind}.pid`);
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  };
  return {
    pidOf,
    async stop(kind, signal) {
      const pid = pidOf(kind);
      if (pid === undefined) return;
      const daemon = started.get(kind);
      if (signal === 'SIGKILL') {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
        await (daemon?.exited ?? stopProcessGroup(pid, { graceMs: 1_000 }));
      } else {
        await stopProcessGroup(pid, { ...(daemon === undefined ? {} : { exited: daemon.exited }), graceMs: 20_000 });
      }
      // A daemon started by another process leaves its pid file to that process, which may be gone.
      rmSync(join(run.pidDir, `hdfs-${kind}.pid`), { force: true });
      started.delete(kind);
    },
    async start(kind) {
      if (pidOf(kind) !== undefined) throw new Error(`the HDFS ${kind} of ${run.dir} still runs; stop it first`);
      started.set(kind, startHdfsDaemon(run, dir, await ensureJars(HADOOP_JARS), kind));
    },
    async waitReady(timeoutMs = START_TIMEOUT_MS) {
      await waitUntil(() => isReady(webHdfsUrl), { what: `HDFS at ${webHdfsUrl} to report one live DataNode and safe mode off`, timeoutMs, intervalMs: 250, daemons: [...started.values()] });
    },
  };
}

/** One live DataNode and safe mode off, read from the NameNode's JMX servlet. */
export async function isReady(webHdfsUrl: string): Promise<boolean> {
  const state = await jmxBean(webHdfsUrl, 'Hadoop:service=NameNode,name=FSNamesystemState');
  const info = await jmxBean(webHdfsUrl, 'Hadoop:service=NameNode,name=NameNodeInfo');
  return state?.['NumLiveDataNodes'] === 1 && info?.['Safemode'] === '';
}

async function jmxBean(webHdfsUrl: string, query: string): Promise<Record<string, unknown> | undefined> {
  const response = await fetch(`${webHdfsUrl}/jmx?qry=${encodeURIComponent(query)}`);
  if (!response.ok) return undefined;
  const body = (await response.json()) as { beans?: Record<string, unknown>[] };
  return body.beans?.[0];
}

function writeConfiguration(dir: string, rpcPort: number, httpPort: number): string {
  const confDir = join(dir, 'conf');
  mkdirSync(confDir, { recursive: true });
  const xml = (properties: Record<string, string>): string =>
    '<?xml version="1.0"?>\n<configuration>\n' +
    Object.entries(properties)
      .map(([name, value]) => `  <property><name>${name}</name><value>${value}</value></property>\n`)
      .join('') +
    '</configuration>\n';

  writeFileSync(join(confDir, 'core-site.xml'), xml({
    'fs.defaultFS': `hdfs://${LOOPBACK}:${rpcPort}`,
    'hadoop.tmp.dir': join(dir, 'tmp'),
    'hadoop.http.staticuser.user': HDFS_USER,
  }));
  writeFileSync(join(confDir, 'hdfs-site.xml'), xml({
    'dfs.replication': '1',
    'dfs.permissions.enabled': 'false',
    'dfs.webhdfs.enabled': 'true',
    'dfs.namenode.name.dir': `file://${join(dir, 'name')}`,
    'dfs.datanode.data.dir': `file://${join(dir, 'data')}`,
    'dfs.namenode.rpc-address': `${LOOPBACK}:${rpcPort}`,
    'dfs.namenode.http-address': `${LOOPBACK}:${httpPort}`,
    'dfs.namenode.secondary.http-address': `${LOOPBACK}:0`,
    // The DataNode binds kernel-chosen ports and registers them; redirects carry the real port.
    'dfs.datanode.address': `${LOOPBACK}:0`,
    'dfs.datanode.http.address': `${LOOPBACK}:0`,
    'dfs.datanode.ipc.address': `${LOOPBACK}:0`,
    'dfs.datanode.hostname': LOOPBACK,
    'dfs.namenode.datanode.registration.ip-hostname-check': 'false',
    'dfs.namenode.safemode.extension': '0',
    // Small blocks: the DataNode refuses a volume with less than one block free.
    'dfs.blocksize': '8m',
    'dfs.namenode.resource.du.reserved': '10485760',
    'dfs.heartbeat.interval': '1',
    'dfs.namenode.heartbeat.recheck-interval': '5000',
    'dfs.client.block.write.replace-datanode-on-failure.policy': 'NEVER',
  }));
  writeFileSync(join(confDir, 'log4j.properties'), [
    'log4j.rootLogger=INFO,console',
    'log4j.appender.console=org.apache.log4j.ConsoleAppender',
    'log4j.appender.console.target=System.err',
    'log4j.appender.console.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n',
    '',
  ].join('\n'));
  // The daemons' web servers look their webapps up on the classpath; the Hadoop tarball ships
  // them beside the jars, the Maven jars do not. Empty ones suffice: WebHDFS and JMX are servlets.
  for (const app of ['hdfs', 'datanode', 'secondary', 'static']) {
    mkdirSync(join(confDir, 'webapps', app, 'WEB-INF'), { recursive: true });
    writeFileSync(
      join(confDir, 'webapps', app, 'WEB-INF', 'web.xml'),
      '<?xml version="1.0"?>\n<web-app xmlns="http://java.sun.com/xml/ns/javaee" version="2.5"/>\n',
    );
  }
  return confDir;
}
