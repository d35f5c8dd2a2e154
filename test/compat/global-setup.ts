/**
 * Global setup of the compatibility tests (real Kafka clients against Tributary brokers): a
 * guarded run folder for broker processes, and Apache Kafka's Java tools from Maven (cached).
 */
import type { TestProject } from 'vitest/node';
import { createTemporaryRun, startGuardian, stopRun } from '../services/run-dir.js';
import { ensureJars, KAFKA_TOOLS_JARS } from '../services/service-jars.js';

declare module 'vitest' {
  export interface ProvidedContext {
    compat: { runDir: string; kafkaToolsDir: string };
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = createTemporaryRun('tributary-compat-');
  startGuardian(run);
  const kafkaToolsDir = await ensureJars(KAFKA_TOOLS_JARS, (line) => void process.stderr.write(`[compat] ${line}\n`));
  project.provide('compat', { runDir: run.dir, kafkaToolsDir });
  return async () => {
    await stopRun(run);
  };
}
