/**
 * Global setup of the compatibility tests (real Kafka clients against Tributary brokers): a
 * guarded run folder for broker processes, Apache Kafka's Java tools, and Apache's Avro and
 * Parquet readers for the loader's data files, from Maven (cached).
 */
import type { TestProject } from 'vitest/node';
import { createTemporaryRun, startGuardian, stopRun } from '../services/run-dir.js';
import { ensureJars, ETL_READERS_JARS, KAFKA_TOOLS_JARS } from '../services/service-jars.js';

declare module 'vitest' {
  export interface ProvidedContext {
    compat: { runDir: string; kafkaToolsDir: string; etlReadersDir: string };
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = createTemporaryRun('tributary-compat-');
  startGuardian(run);
  const log = (line: string): void => void process.stderr.write(`[compat] ${line}\n`);
  const kafkaToolsDir = await ensureJars(KAFKA_TOOLS_JARS, log);
  const etlReadersDir = await ensureJars(ETL_READERS_JARS, log);
  project.provide('compat', { runDir: run.dir, kafkaToolsDir, etlReadersDir });
  return async () => {
    await stopRun(run);
  };
}
