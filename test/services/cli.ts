/**
 * `npm run services -- start|stop|status|fetch-jars`: the test services, started by hand for a
 * person to use or to poke at. State lives in `.services/` at the repository root (git-ignored):
 * `state.json` has the addresses, `run/` the data, logs and pid files.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isReady } from './hdfs.js';
import { tcpExchange } from './network.js';
import { openRun, recordedDaemons, stopRun } from './run-dir.js';
import { ensureJars, ETL_READERS_JARS, HADOOP_JARS, ICEBERG_READERS_JARS, ICEBERG_REST_FIXTURE_JARS, KAFKA_CLIENTS_4_JARS, KAFKA_CONNECT_JARS, KAFKA_SERVER_JARS, KAFKA_STREAMS_JARS, KAFKA_TOOLS_JARS, SPARK_ICEBERG_JARS, SPARK_SQL_PARSER_JARS } from './service-jars.js';
import { SERVICE_NAMES, startStack, type ServiceAddresses, type ServiceName } from './stack.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const stateDir = join(root, '.services');
const stateFile = join(stateDir, 'state.json');
const say = (line: string): void => void process.stdout.write(`${line}\n`);

async function start(names: readonly ServiceName[]): Promise<void> {
  if (existsSync(stateFile)) {
    say(`services already started (${stateFile}); run \`npm run services -- stop\` first`);
    process.exitCode = 1;
    return;
  }
  mkdirSync(stateDir, { recursive: true });
  const run = openRun(join(stateDir, 'run'));
  const stack = await startStack(run, names, say);
  writeFileSync(stateFile, `${JSON.stringify(stack.addresses, null, 2)}\n`);
  say(JSON.stringify(stack.addresses, null, 2));
  say(`started in ${JSON.stringify(stack.startSeconds)} seconds; stop with \`npm run services -- stop\``);
}

async function stop(): Promise<void> {
  await stopRun(openRun(join(stateDir, 'run')));
  rmSync(stateDir, { recursive: true, force: true });
  say('services stopped');
}

async function status(): Promise<void> {
  if (!existsSync(stateFile)) {
    say('no services started (npm run services -- start)');
    process.exitCode = 1;
    return;
  }
  const addresses = JSON.parse(readFileSync(stateFile, 'utf8')) as ServiceAddresses;
  const daemons = recordedDaemons(openRun(join(stateDir, 'run')));
  say(`processes: ${[...daemons].map(([name, pid]) => `${name}=${pid}`).join(' ') || 'none'}`);
  const probe = async (name: string, check: () => Promise<boolean>, where: string): Promise<void> => {
    const up = await check().catch(() => false);
    say(`${name.padEnd(10)} ${up ? 'up  ' : 'DOWN'} ${where}`);
    if (!up) process.exitCode = 1;
  };
  const { zookeeper, hdfs, redis } = addresses;
  if (zookeeper !== undefined) {
    const port = Number(zookeeper.connectString.split(':')[1]);
    await probe('zookeeper', async () => (await tcpExchange(port, 'srvr')).includes('Mode:'), zookeeper.connectString);
  }
  if (hdfs !== undefined) await probe('hdfs', () => isReady(hdfs.webHdfsUrl), `${hdfs.webHdfsUrl} ${hdfs.nameNodeUri}`);
  if (redis !== undefined) {
    await probe('redis', async () => (await tcpExchange(redis.port, 'PING\r\n', { firstLineOnly: true })).startsWith('+PONG'), redis.url);
  }
}

const [command = 'status', ...rest] = process.argv.slice(2);
const only = rest.filter((name): name is ServiceName => (SERVICE_NAMES as readonly string[]).includes(name));
switch (command) {
  case 'start':
    await start(only.length > 0 ? only : SERVICE_NAMES);
    break;
  case 'stop':
    await stop();
    break;
  case 'status':
    await status();
    break;
  case 'fetch-jars':
    say(await ensureJars(HADOOP_JARS, say));
    say(await ensureJars(KAFKA_TOOLS_JARS, say));
    say(await ensureJars(ETL_READERS_JARS, say));
    say(await ensureJars(KAFKA_SERVER_JARS, say));
    say(await ensureJars(KAFKA_CLIENTS_4_JARS, say));
    say(await ensureJars(KAFKA_CONNECT_JARS, say));
    say(await ensureJars(KAFKA_STREAMS_JARS, say));
    say(await ensureJars(SPARK_SQL_PARSER_JARS, say));
    say(await ensureJars(ICEBERG_READERS_JARS, say));
    say(await ensureJars(SPARK_ICEBERG_JARS, say));
    say(await ensureJars(ICEBERG_REST_FIXTURE_JARS, say));
    break;
  default:
    say('usage: npm run services -- start [zookeeper|hdfs|redis …] | stop | status | fetch-jars');
    process.exitCode = 64;
}
