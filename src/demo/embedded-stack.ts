/**
 * The embedded default of ARCHITECTURE.md decision 6, in this process: a standalone broker on the
 * in-process coordination store (kept in DIR/broker, as `tributary broker start` without
 * --zookeeper keeps it) and the schema registry with its file store (DIR/registry), both on
 * ephemeral ports of 127.0.0.1.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Broker } from '../broker/broker.js';
import { parseBrokerConfig } from '../broker/config.js';
import type { Logger } from '../common/logger.js';
import { MemoryCoordination } from '../coordination/memory-store.js';
import type { CoordinationStore } from '../coordination/store.js';
import { startRegistryServer, type RunningRegistry } from '../registry/server.js';

/** As in src/cli/commands/broker.ts: the standalone broker's coordination state beside its logs. */
const STANDALONE_STATE_FILE = 'standalone-coordination.json';
const LOOPBACK = '127.0.0.1';

export interface EmbeddedStack {
  /** `127.0.0.1:PORT` of the broker. */
  readonly bootstrap: string;
  readonly registryUrl: string;
  readonly brokerDir: string;
  readonly registryDir: string;
  /** A new session on the broker's coordination store (for the loader's run lease). */
  coordinationSession(): CoordinationStore;
  /** Stops the registry, then the broker (its logs flushed and checkpointed), then the sessions. */
  stop(): Promise<void>;
}

export async function startEmbeddedStack(dir: string, logger: Logger): Promise<EmbeddedStack> {
  const brokerDir = join(dir, 'broker');
  const registryDir = join(dir, 'registry');
  await mkdir(brokerDir, { recursive: true });
  const coordination = new MemoryCoordination({ file: join(brokerDir, STANDALONE_STATE_FILE), logger: logger.child({ name: 'coordination' }) });
  const sessions: CoordinationStore[] = [];
  const broker = await Broker.start({
    id: 0,
    listen: { host: LOOPBACK, port: 0 },
    dataDir: brokerDir,
    config: parseBrokerConfig({}, 'the demo'),
    store: coordination.session(),
    logger: logger.child({ name: 'broker-0' }),
  });
  let registry: RunningRegistry;
  try {
    registry = await startRegistryServer({ host: LOOPBACK, port: 0, dataDir: registryDir, logger: logger.child({ name: 'registry' }) });
  } catch (error) {
    await broker.stop();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    bootstrap: `${LOOPBACK}:${broker.port}`,
    registryUrl: registry.url,
    brokerDir,
    registryDir,
    coordinationSession() {
      const session = coordination.session();
      sessions.push(session);
      return session;
    },
    stop() {
      stopping ??= (async () => {
        try {
          await registry.close();
        } finally {
          await broker.stop();
          for (const session of sessions) await session.close();
        }
      })();
      return stopping;
    },
  };
}
