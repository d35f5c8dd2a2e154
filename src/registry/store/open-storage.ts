/**
 * Opens the registry's state where the operator put it: in ZooKeeper under /schemas (any number
 * of instances), or in a local file in the data directory (one instance; the directory is locked).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { MemoryCoordination } from '../../coordination/memory-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { withCommittedReads } from './committed-reads.js';
import { lockDataDir } from './data-dir-lock.js';
import { RegistryState } from './registry-state.js';

/** In a file-store registry's data directory: the whole state (written atomically, fsynced). */
export const STATE_FILE = 'registry-state.json';

export interface RegistryStorageOptions {
  readonly zookeeper?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly logger: Logger;
}

export interface RegistryStorage {
  readonly state: RegistryState;
  /** Where the state lives, for logs: `zookeeper HOST:PORT/chroot` or `file DIR/registry-state.json`. */
  readonly location: string;
  close(): Promise<void>;
}

export async function openRegistryStorage(options: RegistryStorageOptions): Promise<RegistryStorage> {
  const { zookeeper, dataDir, logger } = options;
  if ((zookeeper === undefined) === (dataDir === undefined)) {
    throw new TributaryError({
      code: 'CONFIG_INVALID',
      message:
        zookeeper === undefined
          ? 'the registry needs somewhere to keep its state: give --zookeeper HOST:PORT[/chroot] (shared, any number of instances) or --data-dir DIR (local file store, one instance)'
          : 'give either --zookeeper or --data-dir, not both: the state lives in exactly one place',
    });
  }
  let store: CoordinationStore;
  let location: string;
  let unlock = (): void => {};
  if (zookeeper !== undefined) {
    store = await ZooKeeperStore.connect(zookeeper, { logger });
    location = `zookeeper ${zookeeper}`;
  } else {
    const directory = dataDir as string;
    mkdirSync(directory, { recursive: true });
    unlock = lockDataDir(directory);
    const file = join(directory, STATE_FILE);
    try {
      // Reads wait for writes in flight: a full disk undoes a change after it was applied.
      store = withCommittedReads(new MemoryCoordination({ file, logger }).session());
    } catch (error) {
      unlock();
      throw error;
    }
    location = `file ${file}`;
  }
  let state: RegistryState;
  try {
    state = await RegistryState.open(store, { logger });
  } catch (error) {
    await store.close();
    unlock();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    state,
    location,
    close: () => {
      closing ??= store.close().finally(unlock);
      return closing;
    },
  };
}
