/**
 * Global setup of the compatibility tests (real Kafka clients against Tributary brokers): a
 * guarded run folder for broker processes, Apache Kafka's Java tools, Apache's Avro and Parquet
 * readers for the loader's data files, from Maven (cached), and a ZooKeeper for the tests that run
 * a replicated cluster of broker processes (replication-clients).
 *
 * ZooKeeper is the one `TRIBUTARY_TEST_SERVICES` names when it is set (the state file that
 * `npm run services -- start zookeeper` writes, as for the integration tests), otherwise a
 * standalone one started in this run (about a second; stopped with the run).
 */
import { readFileSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { createTemporaryRun, startGuardian, stopRun } from '../services/run-dir.js';
import { ensureJars, ETL_READERS_JARS, KAFKA_TOOLS_JARS } from '../services/service-jars.js';
import type { ServiceAddresses } from '../services/stack.js';
import { startZooKeeper } from '../services/zookeeper.js';

declare module 'vitest' {
  export interface ProvidedContext {
    compat: { runDir: string; kafkaToolsDir: string; etlReadersDir: string; zookeeper: string };
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = createTemporaryRun('tributary-compat-');
  startGuardian(run);
  const log = (line: string): void => void process.stderr.write(`[compat] ${line}\n`);
  try {
    const kafkaToolsDir = await ensureJars(KAFKA_TOOLS_JARS, log);
    const etlReadersDir = await ensureJars(ETL_READERS_JARS, log);
    const reuse = process.env['TRIBUTARY_TEST_SERVICES'];
    const given = reuse !== undefined && reuse !== '' ? (JSON.parse(readFileSync(reuse, 'utf8')) as ServiceAddresses).zookeeper : undefined;
    if (reuse !== undefined && reuse !== '' && given === undefined) throw new Error(`${reuse} names no ZooKeeper (start one with \`npm run services -- start zookeeper\`)`);
    const zookeeper = given?.connectString ?? (await startZooKeeper(run)).connectString;
    project.provide('compat', { runDir: run.dir, kafkaToolsDir, etlReadersDir, zookeeper });
  } catch (error) {
    await stopRun(run);
    throw error;
  }
  return async () => {
    // The run's daemons (this ZooKeeper, broker processes) stop with it.
    await stopRun(run);
  };
}
