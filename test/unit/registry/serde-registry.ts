/**
 * A real registry for the serde tests: the REST server in this process on a temporary data dir,
 * and clients whose every HTTP request is recorded (to prove what is fetched once).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../src/common/logger.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { startRegistryServer } from '../../../src/registry/server.js';

export interface TestRegistry {
  readonly url: string;
  /** "METHOD /path" of every request made through `client()`s, in order. */
  readonly requests: string[];
  client(): RegistryClient;
  close(): Promise<void>;
}

export async function startTestRegistry(): Promise<TestRegistry> {
  const dataDir = await mkdtemp(join(tmpdir(), 'tributary-serde-'));
  const server = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir, logger: createLogger({ name: 'registry', level: 'silent' }) });
  const requests: string[] = [];
  const recording: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input);
    requests.push(`${init?.method ?? 'GET'} ${url.pathname}`);
    return fetch(input, init);
  };
  return {
    url: server.url,
    requests,
    client: () => new RegistryClient({ url: server.url, fetch: recording, backoffMs: 1 }),
    close: async () => {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
