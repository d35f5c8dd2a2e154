/**
 * `npm run chaos -- <suite> [options]`: the long fault-injection runs, by hand (never in `npm
 * test`). Each suite is a function of its own options; this file finds ZooKeeper for it and
 * dispatches:
 *
 *   npm run chaos -- replication [--rounds N] [--scenario leader-kill|controller-kill|double-failover|power-loss] …
 *   npm run chaos -- storage [--scenario crash-acks-all|crash-acks-one|corrupt-files] [--rounds N] [--kind …] …
 *   npm run chaos -- limits [--scenario connection-flood|oversized-frames|slowloris|tiny-produce] [--short]
 *   npm run chaos -- consumers [--scenario kill-zookeeper-group|kill-broker-group|far-behind|off-retention] [--kills N] [--backlog N] …
 *   npm run chaos -- zookeeper [--scenario leader-kill|pause-broker|pause-consumer|pause-loader] [--rounds N] …
 *   npm run chaos -- disk [--scenario disk-full|disk-full-standalone|registry-disk-full|warehouse-disk-full] [--cycles N]
 *   npm run chaos -- fuzz [--frames N] [--seed N] [--sasl-share F]
 *   npm run chaos -- loader [--scenario namenode-restart|datanode-kill|redis-restart|worker-kills|racing-workers] [--rounds N] [--kills N]
 *   npm run chaos -- hostile-input [--scenario fuzz-registry|fuzz-avro] [--requests N] [--payloads N] [--seed N]
 *   npm run chaos -- compaction [--rounds N] [--seed N]
 *
 * ZooKeeper: the one in `$TRIBUTARY_TEST_SERVICES` (the state.json of `npm run services -- start
 * zookeeper`) when set, else a fresh one in a temporary run folder, watched by the services'
 * guardian and removed at the end. Broker processes live in that run folder; a suite copies the
 * evidence of a failed scenario (broker logs, data dirs, history) out of it first.
 *
 * The exit code is 0 only when every scenario held every invariant.
 */
import { readFileSync } from 'node:fs';
import { createTemporaryRun, openRun, startGuardian, stopRun, type ServiceRun } from '../services/run-dir.js';
import { startStack, type ServiceAddresses } from '../services/stack.js';
import { runConsumersChaos } from './consumers.js';
import { runFuzzChaos } from './fuzz.js';
import { runReplicationChaos } from './replication.js';
import { runLimitsChaos } from './limits-suite.js';
import { runLoaderChaos } from './loader.js';
import { runHostileInputChaos } from './registry-fuzz-suite.js';
import { runStorageChaos } from './storage.js';
import { runZooKeeperChaos } from './zookeeper.js';
import { runDiskChaos } from './disk.js';
import { runCompactionChaos } from './compaction.js';

export interface ChaosContext {
  /** The service run the brokers belong to. */
  readonly run: ServiceRun;
  /** ZooKeeper's `host:port`. */
  readonly zookeeper: string;
  readonly say: (line: string) => void;
}

/** A suite: its options (argv after the suite name); resolves true when no invariant was violated. */
export type ChaosSuite = (args: readonly string[], context: ChaosContext) => Promise<boolean>;

/** The suites by name; issue #22 adds more here. */
const SUITES: Readonly<Record<string, ChaosSuite>> = {
  replication: runReplicationChaos,
  storage: runStorageChaos,
  limits: runLimitsChaos,
  consumers: runConsumersChaos,
  zookeeper: runZooKeeperChaos,
  disk: runDiskChaos,
  fuzz: runFuzzChaos,
  loader: runLoaderChaos,
  'hostile-input': runHostileInputChaos,
  compaction: runCompactionChaos,
};

const say = (line: string): void => void process.stdout.write(`${line}\n`);

async function main(): Promise<number> {
  const [name, ...args] = process.argv.slice(2);
  const suite = name === undefined ? undefined : SUITES[name];
  if (suite === undefined) {
    say(`usage: npm run chaos -- <suite> [options]; suites: ${Object.keys(SUITES).join(', ')}${name === undefined ? '' : ` (not "${name}")`}`);
    return 64;
  }
  const reuse = process.env['TRIBUTARY_TEST_SERVICES'];
  if (reuse !== undefined && reuse !== '') {
    const addresses = JSON.parse(readFileSync(reuse, 'utf8')) as ServiceAddresses;
    if (addresses.zookeeper === undefined) throw new Error(`${reuse} names no ZooKeeper: npm run services -- start zookeeper`);
    say(`using ZooKeeper ${addresses.zookeeper.connectString} from ${reuse}`);
    return (await suite(args, { run: openRun(addresses.runDir), zookeeper: addresses.zookeeper.connectString, say })) ? 0 : 1;
  }
  const run = createTemporaryRun('tributary-chaos-');
  startGuardian(run);
  let ok = false;
  const stopOnSignal = (): void => {
    void stopRun(run).finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    const stack = await startStack(run, ['zookeeper'], say);
    const zookeeper = stack.addresses.zookeeper?.connectString;
    if (zookeeper === undefined) throw new Error('ZooKeeper did not start');
    say(`ZooKeeper ${zookeeper} started in ${run.dir}`);
    ok = await suite(args, { run, zookeeper, say });
  } finally {
    await stopRun(run);
  }
  return ok ? 0 : 1;
}

// Broker daemons are unref'd children: while a suite only waits for one to exit, nothing else may
// hold the event loop, and Node would end the run mid-await (exit code 13).
const keepAlive = setInterval(() => undefined, 60_000);
try {
  process.exitCode = await main();
} finally {
  clearInterval(keepAlive);
}
