/** The file store: state survives a restart, one instance per data directory, clear refusals. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { LOCK_FILE } from '../../../src/registry/store/data-dir-lock.js';
import { openRegistryStorage, STATE_FILE } from '../../../src/registry/store/open-storage.js';
import { recordSchema } from './registry-state-support.js';

const logger = createLogger({ name: 'registry-storage-test', level: 'silent' });
const directories: string[] = [];

function dataDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'registry-storage-'));
  directories.push(directory);
  return directory;
}

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('the file store', () => {
  it('keeps subjects, ids and the id counter across a restart', async () => {
    const directory = dataDir();
    const first = await openRegistryStorage({ dataDir: directory, logger });
    await first.state.register('a', { schema: recordSchema('A', ['x']) });
    await first.state.register('b', { schema: recordSchema('B', ['x']) });
    await first.state.deleteSubject('b');
    await first.state.deleteSubject('b', true);
    await first.close();
    expect(readdirSync(directory).sort()).toEqual([STATE_FILE]);

    const second = await openRegistryStorage({ dataDir: directory, logger });
    expect(await second.state.versions('a')).toEqual([1]);
    expect((await second.state.schemaById(2)).schema).toContain('"B"');
    expect((await second.state.register('c', { schema: recordSchema('C', ['x']) })).id).toBe(3);
    await second.close();
  });

  it('refuses a second instance on the same data directory while the first runs', async () => {
    const directory = dataDir();
    const first = await openRegistryStorage({ dataDir: directory, logger });
    await expect(openRegistryStorage({ dataDir: directory, logger })).rejects.toMatchObject({
      code: 'DATA_DIR_LOCKED',
      message: expect.stringContaining(`another registry (pid ${process.pid}) is using the data directory`) as unknown,
    });
    await first.close();
    const again = await openRegistryStorage({ dataDir: directory, logger });
    await again.close();
  });

  it('takes over the lock of a process that is gone', async () => {
    const directory = dataDir();
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(join(directory, LOCK_FILE), `${gone}\n`);
    const storage = await openRegistryStorage({ dataDir: directory, logger });
    await storage.close();
    expect(existsSync(join(directory, LOCK_FILE))).toBe(false);
  });

  it('needs exactly one of --zookeeper and --data-dir', async () => {
    await expect(openRegistryStorage({ logger })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('give --zookeeper') as unknown,
    });
    await expect(openRegistryStorage({ zookeeper: '127.0.0.1:1', dataDir: dataDir(), logger })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('not both') as unknown,
    });
  });
});
