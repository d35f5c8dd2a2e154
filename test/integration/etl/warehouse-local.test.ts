/**
 * The local-folder warehouse: the shared contract, plus what only a local folder can show —
 * nothing lands outside the root, a failed create leaves no file, and an interrupted rename
 * (both names on one inode, as a crash between link and unlink leaves it) is finished by the
 * next rename of the same pair.
 */
import { link, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCAL_TEMPORARY_PREFIX, LocalWarehouse } from '../../../src/etl/warehouse/local-warehouse.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';
import { failure, warehouseContract } from './warehouse-contract.js';

warehouseContract('local folder', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'tributary-warehouse-'));
  // The root itself does not exist yet: the warehouse makes it on first write.
  return {
    warehouse: new LocalWarehouse(join(folder, 'root')),
    cleanup: () => rm(folder, { recursive: true, force: true }),
  };
});

describe('local folder warehouse', () => {
  let folder: string;
  let root: string;
  let warehouse: LocalWarehouse;

  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'tributary-warehouse-'));
    root = join(folder, 'root');
    warehouse = new LocalWarehouse(root);
  });

  afterEach(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('never writes outside its root, whatever the path says', async () => {
    await writeFile(join(folder, 'outside'), 'untouched');
    for (const escape of ['../outside', 'a/../../outside', '../root/../outside']) {
      await failure(warehouse.create(escape, Buffer.from('overwritten?')), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.delete(escape), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.rename('a', escape), 'WAREHOUSE_INVALID_PATH');
    }
    expect((await readdir(folder)).sort()).toEqual(['outside']);
    // An absolute-looking path is still under the root.
    await warehouse.create('/etc/passwd', Buffer.from('inside'));
    expect(await readdir(join(root, 'etc'))).toEqual(['passwd']);
  });

  it('leaves neither the file nor a temporary file behind when the data source fails', async () => {
    async function* brokenSource(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(100_000, 1);
      throw new Error('the encoder broke');
    }
    await failure(warehouse.create('d/broken.avro', brokenSource()), 'WAREHOUSE_DATA_FAILED');
    expect(await readdir(join(root, 'd'))).toEqual([]);
  });

  it('leaves no temporary file after a refused create', async () => {
    await warehouse.create('f', Buffer.from('original'));
    await failure(warehouse.create('f', Buffer.from('other')), 'WAREHOUSE_FILE_EXISTS');
    const names = await readdir(root);
    expect(names).toEqual(['f']);
    expect(names.some((name) => name.startsWith(LOCAL_TEMPORARY_PREFIX))).toBe(false);
  });

  it('finishes a rename that stopped between its link and its unlink', async () => {
    await warehouse.create('staging/part', Buffer.from('bytes'));
    await warehouse.mkdirs('final');
    await link(join(root, 'staging/part'), join(root, 'final/part'));
    await warehouse.rename('staging/part', 'final/part');
    expect(await warehouse.stat('staging/part')).toBeUndefined();
    expect(await warehouse.open('final/part')).toEqual(Buffer.from('bytes'));
    expect((await stat(join(root, 'final/part'))).nlink).toBe(1);
  });

  it('is what openWarehouse gives for file URLs and bare paths', async () => {
    await warehouse.create('x', Buffer.from('via url'));
    for (const url of [`file://${root}`, root, `${root}/`]) {
      const opened = openWarehouse(url);
      expect(opened).toBeInstanceOf(LocalWarehouse);
      expect(await opened.open('x')).toEqual(Buffer.from('via url'));
    }
  });

  it('refuses a relative root', () => {
    expect(() => new LocalWarehouse('relative/root')).toThrow(/WAREHOUSE_INVALID_URL/);
  });
});
