/**
 * Vitest global setup of the integration tests: starts real ZooKeeper, HDFS and Redis in a fresh
 * temporary run folder, guarded by a watchdog that cleans up if this process dies, and hands the
 * addresses to the tests (`inject('services')`, see `test/integration/services.ts`).
 */
import { readFileSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { createTemporaryRun, startGuardian, stopRun } from './run-dir.js';
import { startStack, type ServiceAddresses } from './stack.js';

declare module 'vitest' {
  export interface ProvidedContext {
    services: ServiceAddresses;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Reuse services started by hand (`npm run services -- start`) when asked to: quick iterations.
  const reuse = process.env['TRIBUTARY_TEST_SERVICES'];
  if (reuse !== undefined && reuse !== '') {
    project.provide('services', JSON.parse(readFileSync(reuse, 'utf8')) as ServiceAddresses);
    return async () => {};
  }
  const run = createTemporaryRun();
  startGuardian(run);
  const log = (line: string): void => void process.stderr.write(`[services] ${line}\n`);
  const began = performance.now();
  let stack;
  try {
    stack = await startStack(run, undefined, log);
  } catch (error) {
    await stopRun(run);
    throw error;
  }
  const total = ((performance.now() - began) / 1000).toFixed(1);
  const each = Object.entries(stack.startSeconds).map(([name, seconds]) => `${name} ${seconds}s`).join(', ');
  log(`ready in ${total}s (${each}) under ${run.dir}`);
  project.provide('services', stack.addresses);
  return async () => {
    await stack.stop();
    await stopRun(run); // anything a test started in the run and left behind
  };
}
