/**
 * Registry instances for the integration tests: on the shared ZooKeeper (each test under its
 * own chroot, removed afterwards) or on a local file store in a temp directory, plus a small
 * HTTP helper and a dump of the stored state for "nothing changed" checks.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../src/common/logger.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { LOOPBACK } from '../../services/network.js';
import { dumpTree } from '../../unit/registry/registry-state-support.js';
import { zookeeperAddress } from '../services.js';

export const silent = createLogger({ name: 'registry-test', level: 'silent' });

/** Things to undo after each test, newest first. */
const cleanups: (() => Promise<void> | void)[] = [];

export async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** A fresh chroot on the shared ZooKeeper (`HOST:PORT/t-registry-…`), deleted by cleanUp. */
export function zookeeperChroot(): string {
  const chroot = `/t-registry-${process.pid}-${randomBytes(4).toString('hex')}`;
  const servers = zookeeperAddress().connectString;
  cleanups.push(async () => {
    const root = await ZooKeeperStore.connect(servers, { logger: silent });
    try {
      await root.deleteRecursive(chroot);
    } finally {
      await root.close();
    }
  });
  return `${servers}${chroot}`;
}

/** A temp data directory for a file-store registry, deleted by cleanUp. */
export function dataDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'tributary-registry-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

export type Storage = { readonly zookeeper: string } | { readonly dataDir: string };

/** A registry on a free loopback port, closed by cleanUp (closing twice is harmless). */
export async function startRegistry(storage: Storage): Promise<RunningRegistry> {
  const registry = await startRegistryServer({ host: LOOPBACK, port: 0, logger: silent, ...storage });
  cleanups.push(() => registry.close());
  return registry;
}

/** Every node under /schemas in the chroot, with data and version. */
export async function dumpZooKeeper(zookeeper: string): Promise<Record<string, string>> {
  const store = await ZooKeeperStore.connect(zookeeper, { logger: silent });
  try {
    return await dumpTree(store);
  } finally {
    await store.close();
  }
}

export interface HttpAnswer {
  readonly status: number;
  readonly json: unknown;
}

export async function http(base: string, method: string, path: string, body?: unknown): Promise<HttpAnswer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json };
}

/** A record schema as registry request text. */
export function recordSchema(name: string, fields: readonly (string | { name: string; type: unknown; default?: unknown })[]): string {
  return JSON.stringify({ type: 'record', name, fields: fields.map((field) => (typeof field === 'string' ? { name: field, type: 'string' } : field)) });
}
