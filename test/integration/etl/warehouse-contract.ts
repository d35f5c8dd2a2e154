/**
 * The contract every WarehouseFileSystem keeps (src/etl/warehouse/warehouse.ts) as one suite, run
 * against the local folder (warehouse-local.test.ts) and real HDFS over WebHDFS
 * (warehouse-webhdfs.test.ts). Each test gets a fresh, empty root of its own.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import type { WarehouseErrorCode } from '../../../src/etl/warehouse/errors.js';
import type { WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';

export interface WarehouseFixture {
  /** A warehouse whose root is new and empty. */
  readonly warehouse: WarehouseFileSystem;
  /** Removes the root with everything under it. */
  readonly cleanup: () => Promise<void>;
}

/** The error a promise rejects with, checked to be a TributaryError with `code` and the usual details. */
export async function failure(promise: Promise<unknown>, code: WarehouseErrorCode): Promise<TributaryError> {
  const outcome = await promise.then(
    (value: unknown) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a ${code} failure, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(TributaryError);
  const error = outcome.error as TributaryError;
  expect({ code: error.code, message: error.message }).toMatchObject({ code, message: expect.stringContaining(code) as unknown });
  expect(typeof error.details['path']).toBe('string');
  expect(typeof error.details['operation']).toBe('string');
  return error;
}

export async function* chunked(data: Buffer, chunkSize: number): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < data.length; offset += chunkSize) yield data.subarray(offset, offset + chunkSize);
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** Names the loader writes (`<topic>+<partition>+<start>+<end>.avro`) and others URLs mangle. */
export const AWKWARD_NAMES = [
  'page views+3+1000+1999.avro',
  'key=value+a b',
  'ünïcødé 日本語 ✓.avro',
  '%41 stays %2B literal',
  'amp&query?hash#semi;colon',
];

export function warehouseContract(name: string, makeFixture: () => Promise<WarehouseFixture>): void {
  describe(`${name} — WarehouseFileSystem contract`, () => {
    let fixture: WarehouseFixture;
    let warehouse: WarehouseFileSystem;

    beforeEach(async () => {
      fixture = await makeFixture();
      warehouse = fixture.warehouse;
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    it('creates a file with its parents and reads the same bytes back, whole and streamed', async () => {
      const data = Buffer.from('{"offset":42}\n');
      await warehouse.create('t/hourly/2026/11/29/15/t+0+0+41.avro', data);
      expect(await warehouse.open('t/hourly/2026/11/29/15/t+0+0+41.avro')).toEqual(data);
      expect(await readAll(await warehouse.openStream('/t//hourly/2026/11/29/15/t+0+0+41.avro/'))).toEqual(data);
      expect(await warehouse.stat('t/hourly/2026')).toMatchObject({ name: '2026', path: 't/hourly/2026', type: 'directory', length: 0 });
      expect(await warehouse.stat('t/hourly/2026/11/29/15/t+0+0+41.avro')).toMatchObject({
        name: 't+0+0+41.avro',
        path: 't/hourly/2026/11/29/15/t+0+0+41.avro',
        type: 'file',
        length: data.length,
      });
    });

    it('streams a multi-megabyte body in and out unchanged', async () => {
      // Over 8 MiB, the block size of the test HDFS, and not a multiple of the chunk size.
      const data = randomBytes(9 * 1024 * 1024 + 12_345);
      await warehouse.create('big/data.bin', chunked(data, 64 * 1024));
      expect((await warehouse.stat('big/data.bin'))?.length).toBe(data.length);
      expect(sha256(await warehouse.open('big/data.bin'))).toBe(sha256(data));
      expect(sha256(await readAll(await warehouse.openStream('big/data.bin')))).toBe(sha256(data));
    });

    it('creates and reads an empty file', async () => {
      await warehouse.create('empty', Buffer.alloc(0));
      expect(await warehouse.open('empty')).toEqual(Buffer.alloc(0));
      expect(await warehouse.stat('empty')).toMatchObject({ type: 'file', length: 0 });
    });

    it('refuses to create over an existing file or directory, leaving it as it was', async () => {
      await warehouse.create('a/manifest.pending', Buffer.from('original'));
      const error = await failure(warehouse.create('a/manifest.pending', Buffer.from('replacement')), 'WAREHOUSE_FILE_EXISTS');
      expect(error.retriable).toBe(false);
      expect(error.details).toMatchObject({ path: 'a/manifest.pending', operation: 'create' });
      expect(error.message).toContain(warehouse.describe('a/manifest.pending'));
      expect(await warehouse.open('a/manifest.pending')).toEqual(Buffer.from('original'));

      await failure(warehouse.create('a', Buffer.from('x')), 'WAREHOUSE_FILE_EXISTS');
      expect(await warehouse.stat('a')).toMatchObject({ type: 'directory' });
      expect((await warehouse.list('a')).map((entry) => entry.name)).toEqual(['manifest.pending']);
    });

    it('refuses a streamed create over an existing file and keeps the original', async () => {
      await warehouse.create('s/f', Buffer.from('first'));
      await failure(warehouse.create('s/f', chunked(randomBytes(3 * 1024 * 1024), 64 * 1024)), 'WAREHOUSE_FILE_EXISTS');
      expect(await warehouse.open('s/f')).toEqual(Buffer.from('first'));
    });

    it('fails a create whose data source throws with WAREHOUSE_DATA_FAILED', async () => {
      async function* brokenSource(): AsyncGenerator<Buffer> {
        yield Buffer.from('some bytes, then ');
        throw new Error('the encoder broke');
      }
      const error = await failure(warehouse.create('d/broken.avro', brokenSource()), 'WAREHOUSE_DATA_FAILED');
      expect(error.message).toContain('the encoder broke');
    });

    it('reports a file where a folder should be as WAREHOUSE_PARENT_NOT_DIRECTORY', async () => {
      await warehouse.create('f', Buffer.from('a file'));
      await failure(warehouse.create('f/child', Buffer.from('x')), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
      await failure(warehouse.mkdirs('f/sub/dir'), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
      await failure(warehouse.stat('f/child'), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
      await failure(warehouse.list('f/child'), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
      await failure(warehouse.delete('f/child'), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
      expect(await warehouse.open('f')).toEqual(Buffer.from('a file'));
    });

    it('renames a file into place, creating the target folders, and the source is gone', async () => {
      await warehouse.create('_etl/load/staging/7/t+0+0+9.avro', Buffer.from('records'));
      await warehouse.rename('_etl/load/staging/7/t+0+0+9.avro', 't/hourly/2026/11/29/15/t+0+0+9.avro');
      expect(await warehouse.stat('_etl/load/staging/7/t+0+0+9.avro')).toBeUndefined();
      expect(await warehouse.open('t/hourly/2026/11/29/15/t+0+0+9.avro')).toEqual(Buffer.from('records'));
      expect((await warehouse.list('_etl/load/staging/7')).length).toBe(0);
    });

    it('refuses to rename onto an existing file; both files stay intact', async () => {
      await warehouse.create('r/source', Buffer.from('source bytes'));
      await warehouse.create('r/target', Buffer.from('target bytes'));
      const error = await failure(warehouse.rename('r/source', 'r/target'), 'WAREHOUSE_FILE_EXISTS');
      expect(error.details).toMatchObject({ path: 'r/target', operation: 'rename', from: 'r/source', to: 'r/target' });
      expect(await warehouse.open('r/source')).toEqual(Buffer.from('source bytes'));
      expect(await warehouse.open('r/target')).toEqual(Buffer.from('target bytes'));
    });

    it('refuses to rename onto an existing directory instead of moving into it', async () => {
      await warehouse.create('r/file', Buffer.from('bytes'));
      await warehouse.mkdirs('r/dir');
      await failure(warehouse.rename('r/file', 'r/dir'), 'WAREHOUSE_FILE_EXISTS');
      expect(await warehouse.list('r/dir')).toEqual([]);
      expect(await warehouse.open('r/file')).toEqual(Buffer.from('bytes'));

      await warehouse.mkdirs('r/other');
      await failure(warehouse.rename('r/other', 'r/dir'), 'WAREHOUSE_FILE_EXISTS');
      await failure(warehouse.rename('r/other', 'r/file'), 'WAREHOUSE_FILE_EXISTS');
      expect(await warehouse.stat('r/other')).toMatchObject({ type: 'directory' });
    });

    it('fails to rename a missing source with WAREHOUSE_NOT_FOUND and creates nothing', async () => {
      const error = await failure(warehouse.rename('nowhere/missing', 'elsewhere/deep/target'), 'WAREHOUSE_NOT_FOUND');
      expect(error.details).toMatchObject({ path: 'nowhere/missing', from: 'nowhere/missing', to: 'elsewhere/deep/target' });
      expect(await warehouse.stat('elsewhere')).toBeUndefined();
      await failure(warehouse.rename('same', 'same'), 'WAREHOUSE_NOT_FOUND');
    });

    it('renames a directory with its contents in one step, and never under itself', async () => {
      await warehouse.create('v1/hour/a', Buffer.from('a'));
      await warehouse.create('v1/hour/b', Buffer.from('b'));
      await warehouse.rename('v1/hour', 'v2/hour');
      expect((await warehouse.list('v2/hour')).map((entry) => entry.name)).toEqual(['a', 'b']);
      expect(await warehouse.stat('v1/hour')).toBeUndefined();
      await failure(warehouse.rename('v2', 'v2/hour/inside'), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.rename('v2', 'v2'), 'WAREHOUSE_FILE_EXISTS');
    });

    it('makes directories idempotently, and refuses to turn a file into one', async () => {
      await warehouse.mkdirs('m/a/b/c');
      await warehouse.mkdirs('m/a/b/c');
      await warehouse.mkdirs('m/a');
      expect(await warehouse.stat('m/a/b/c')).toMatchObject({ type: 'directory' });
      expect(await warehouse.list('m/a/b/c')).toEqual([]);
      await warehouse.create('m/file', Buffer.from('x'));
      await failure(warehouse.mkdirs('m/file'), 'WAREHOUSE_FILE_EXISTS');
    });

    it('lists a directory sorted by name, with types, lengths and the times stat reports', async () => {
      await warehouse.create('l/b.avro', Buffer.from('12345'));
      await warehouse.create('l/a.avro', Buffer.from('1'));
      await warehouse.mkdirs('l/c');
      await warehouse.create('l/B', Buffer.from('12'));
      const entries = await warehouse.list('l');
      expect(entries.map(({ name, path, type, length }) => ({ name, path, type, length }))).toEqual([
        { name: 'B', path: 'l/B', type: 'file', length: 2 },
        { name: 'a.avro', path: 'l/a.avro', type: 'file', length: 1 },
        { name: 'b.avro', path: 'l/b.avro', type: 'file', length: 5 },
        { name: 'c', path: 'l/c', type: 'directory', length: 0 },
      ]);
      for (const entry of entries) {
        expect(Number.isInteger(entry.modifiedAt)).toBe(true);
        expect((await warehouse.stat(entry.path))?.modifiedAt).toBe(entry.modifiedAt);
      }
      expect((await warehouse.list('')).map((entry) => entry.name)).toEqual(['l']);
    });

    it('fails to list a missing directory or a file, and stat of a missing path is undefined', async () => {
      await failure(warehouse.list('no/such/dir'), 'WAREHOUSE_NOT_FOUND');
      await warehouse.create('x/file', Buffer.from('x'));
      await failure(warehouse.list('x/file'), 'WAREHOUSE_NOT_A_DIRECTORY');
      expect(await warehouse.stat('x/missing')).toBeUndefined();
      expect(await warehouse.stat('missing/too')).toBeUndefined();
    });

    it('fails to open a missing file or a directory', async () => {
      await failure(warehouse.open('missing'), 'WAREHOUSE_NOT_FOUND');
      await failure(warehouse.openStream('missing'), 'WAREHOUSE_NOT_FOUND');
      await warehouse.mkdirs('dir');
      await failure(warehouse.open('dir'), 'WAREHOUSE_NOT_A_FILE');
      await failure(warehouse.openStream('dir'), 'WAREHOUSE_NOT_A_FILE');
    });

    it('deletes files and directories, recursively only when asked, and says whether something was there', async () => {
      await warehouse.create('del/tree/one', Buffer.from('1'));
      await warehouse.create('del/tree/deeper/two', Buffer.from('2'));
      await warehouse.create('del/file', Buffer.from('f'));
      expect(await warehouse.delete('del/file')).toBe(true);
      expect(await warehouse.delete('del/file')).toBe(false);
      expect(await warehouse.delete('del/never/was')).toBe(false);

      await failure(warehouse.delete('del/tree'), 'WAREHOUSE_DIRECTORY_NOT_EMPTY');
      expect(await warehouse.open('del/tree/deeper/two')).toEqual(Buffer.from('2'));
      expect(await warehouse.delete('del/tree', { recursive: true })).toBe(true);
      expect(await warehouse.stat('del/tree')).toBeUndefined();

      await warehouse.mkdirs('del/empty');
      expect(await warehouse.delete('del/empty')).toBe(true);
      expect(await warehouse.list('del')).toEqual([]);
      await failure(warehouse.delete('', { recursive: true }), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.delete('/'), 'WAREHOUSE_INVALID_PATH');
    });

    it('keeps names with spaces, +, =, %, unicode and URL punctuation exactly', async () => {
      for (const [index, name] of AWKWARD_NAMES.entries()) {
        await warehouse.create(`names/${name}`, Buffer.from(`content ${index}`));
      }
      const listed = (await warehouse.list('names')).map((entry) => entry.name);
      expect([...listed].sort()).toEqual([...AWKWARD_NAMES].sort());
      for (const [index, name] of AWKWARD_NAMES.entries()) {
        expect(await warehouse.open(`names/${name}`)).toEqual(Buffer.from(`content ${index}`));
        await warehouse.rename(`names/${name}`, `moved ${name}/${name}`);
        expect(await warehouse.stat(`moved ${name}/${name}`)).toMatchObject({ name, type: 'file' });
        expect(await warehouse.delete(`moved ${name}`, { recursive: true })).toBe(true);
      }
      expect(await warehouse.list('names')).toEqual([]);
      // `a+b` and `a b` are different names, not two spellings of one.
      await warehouse.create('plus/a+b', Buffer.from('plus'));
      await warehouse.create('plus/a b', Buffer.from('space'));
      expect(await warehouse.open('plus/a+b')).toEqual(Buffer.from('plus'));
      expect(await warehouse.open('plus/a b')).toEqual(Buffer.from('space'));
    });

    it('refuses paths that would leave the root or that HDFS cannot hold, and changes nothing', async () => {
      for (const bad of ['../escape', 'a/../../escape', './here', 'a/./b', 'colon:name', 'nul\0byte']) {
        const error = await failure(warehouse.create(bad, Buffer.from('x')), 'WAREHOUSE_INVALID_PATH');
        expect(error.message).toContain(JSON.stringify(bad));
      }
      await failure(warehouse.rename('../x', 'y'), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.mkdirs('a/..'), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.delete('..', { recursive: true }), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.stat('..'), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.list('../..'), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.open('../../etc/passwd'), 'WAREHOUSE_INVALID_PATH');
      await failure(warehouse.stat('a/b:c'), 'WAREHOUSE_INVALID_PATH');
      await warehouse.mkdirs('');
      expect(await warehouse.list('')).toEqual([]);
    });

    it('describes its root and paths under it for messages', () => {
      const root = warehouse.describe();
      expect(warehouse.describe('a/b.avro')).toBe(`${root}/a/b.avro`);
    });
  });
}
