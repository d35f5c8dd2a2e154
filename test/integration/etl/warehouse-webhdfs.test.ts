/**
 * The WebHDFS warehouse against the real HDFS of the shared test services: the shared contract,
 * RemoteExceptions mapped to warehouse codes, names checked on HDFS independently of our client,
 * and lost answers (through a proxy in front of the NameNode) resolved by reading HDFS back
 * instead of repeating the call. Every test works under a root folder of its own.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';
import { WebHdfsWarehouse, type WebHdfsWarehouseOptions } from '../../../src/etl/warehouse/webhdfs-warehouse.js';
import { hdfsAddress } from '../services.js';
import { AWKWARD_NAMES, failure, warehouseContract } from './warehouse-contract.js';
import { startFaultProxy, type FaultProxy } from './warehouse-fault-proxy.js';

const base = `/tributary-test/warehouse-${process.pid}-${randomBytes(4).toString('hex')}`;
const silent = createLogger({ name: 'warehouse-test', level: 'silent' });
let roots = 0;

function freshRoot(): string {
  roots += 1;
  return `${base}/${roots}`;
}

function connect(root: string, options: Partial<WebHdfsWarehouseOptions> = {}): WebHdfsWarehouse {
  const { webHdfsUrl, user } = hdfsAddress();
  return new WebHdfsWarehouse({ nameNodeUrl: webHdfsUrl, root, user, logger: silent, ...options });
}

afterAll(async () => {
  await connect('/').delete(base.slice(1), { recursive: true });
  // The shared parent goes only if no one else is using it.
  await connect('/').delete('tributary-test').catch(() => undefined);
});

warehouseContract('WebHDFS (real HDFS)', async () => {
  const root = freshRoot();
  return {
    warehouse: connect(root),
    cleanup: async () => {
      await connect('/').delete(root.slice(1), { recursive: true });
    },
  };
});

/** LISTSTATUS with plain fetch, to see the names HDFS holds without trusting our client's encoding. */
async function namesOnHdfs(hdfsPath: string): Promise<string[]> {
  const { webHdfsUrl, user } = hdfsAddress();
  const encoded = hdfsPath.split('/').map(encodeURIComponent).join('/');
  const response = await fetch(`${webHdfsUrl}/webhdfs/v1${encoded}?op=LISTSTATUS&user.name=${encodeURIComponent(user)}`);
  const body = (await response.json()) as { FileStatuses: { FileStatus: { pathSuffix: string }[] } };
  return body.FileStatuses.FileStatus.map((status) => status.pathSuffix);
}

describe('WebHDFS warehouse', () => {
  it('maps NameNode RemoteExceptions to warehouse codes and keeps what HDFS said', async () => {
    const warehouse = connect(freshRoot());
    await warehouse.create('file', Buffer.from('x'));

    const parentIsFile = await failure(warehouse.mkdirs('file/sub'), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
    expect(parentIsFile.retriable).toBe(false);
    expect(parentIsFile.details).toMatchObject({
      path: 'file/sub',
      operation: 'mkdirs',
      httpStatus: 403,
      remoteException: { exception: 'ParentNotDirectoryException', javaClassName: 'org.apache.hadoop.fs.ParentNotDirectoryException' },
    });
    expect(parentIsFile.message).toContain('ParentNotDirectoryException');
    // The Java stack trace HDFS appends stays out of the message.
    expect(parentIsFile.message).not.toContain('\tat org.apache');

    // Reads through a file come back as AccessControlException "(is not a directory)".
    const throughFile = await failure(warehouse.create('file/child', Buffer.from('y')), 'WAREHOUSE_PARENT_NOT_DIRECTORY');
    expect(throughFile.details).toMatchObject({ operation: 'create', remoteException: { exception: 'AccessControlException' } });

    const fileInTheWay = await failure(warehouse.mkdirs('file'), 'WAREHOUSE_FILE_EXISTS');
    expect(fileInTheWay.details['remoteException']).toMatchObject({ exception: 'FileAlreadyExistsException' });

    await warehouse.create('other', Buffer.from('z'));
    const renameOnto = await failure(warehouse.rename('other', 'file'), 'WAREHOUSE_FILE_EXISTS');
    expect(renameOnto.details['remoteException']).toMatchObject({ exception: 'FileAlreadyExistsException' });

    const missing = await failure(warehouse.list('missing'), 'WAREHOUSE_NOT_FOUND');
    expect(missing.details).toMatchObject({ httpStatus: 404, remoteException: { exception: 'FileNotFoundException' } });

    await warehouse.mkdirs('full/dir');
    const notEmpty = await failure(warehouse.delete('full'), 'WAREHOUSE_DIRECTORY_NOT_EMPTY');
    expect(notEmpty.details['remoteException']).toMatchObject({ exception: 'PathIsNotEmptyDirectoryException' });
  });

  it('maps a RemoteException from the DataNode half of CREATE, and creates nothing', async () => {
    const root = freshRoot();
    const warehouse = connect(root);
    await warehouse.mkdirs('limited');
    // A name quota of 1 on our own folder: the folder itself uses it up, so no file fits.
    const { webHdfsUrl, user } = hdfsAddress();
    const quota = await fetch(`${webHdfsUrl}/webhdfs/v1${root}/limited?op=SETQUOTA&namespacequota=1&storagespacequota=-1&user.name=${user}`, { method: 'PUT' });
    expect(quota.status).toBe(200);

    const error = await failure(warehouse.create('limited/file', Buffer.from('x')), 'WAREHOUSE_QUOTA_EXCEEDED');
    expect(error.retriable).toBe(false);
    expect(error.details).toMatchObject({ operation: 'create', path: 'limited/file', remoteException: { exception: 'NSQuotaExceededException' } });
    expect(await warehouse.list('limited')).toEqual([]);
  });

  it('writes a fresh name without asking first, and a body streamed in small pieces arrives whole', async () => {
    const warehouse = connect(freshRoot());
    // 3 MiB in 20 KiB pieces: sent to the DataNode joined into pieces of at least 1 MiB.
    const piece = randomBytes(20 * 1024);
    const pieces = Math.ceil((3 * 1024 * 1024) / piece.length);
    const parts = Array.from({ length: pieces }, (_, index) => Buffer.concat([Buffer.from([index % 256]), piece.subarray(1)]));
    async function* body(): AsyncGenerator<Buffer> {
      yield* parts;
    }
    await warehouse.create('staging/a1b2/part.avro', body(), { fresh: true });
    const expected = Buffer.concat(parts);
    // Buffer.equals: a deep toEqual over 3 MiB would take minutes.
    expect((await warehouse.open('staging/a1b2/part.avro')).equals(expected)).toBe(true);
    expect((await warehouse.stat('staging/a1b2/part.avro'))?.length).toBe(pieces * piece.length);
  });

  it('stores names exactly as given, as plain WebHDFS lists them', async () => {
    const root = freshRoot();
    const warehouse = connect(root);
    for (const name of [...AWKWARD_NAMES, 'a+b', 'a b']) await warehouse.create(`n/${name}`, Buffer.from(name));
    await warehouse.rename('n/a+b', 'n/renamed+c=d');
    expect((await namesOnHdfs(`${root}/n`)).sort()).toEqual([...AWKWARD_NAMES, 'renamed+c=d', 'a b'].sort());
  });

  it('is what openWarehouse gives for a webhdfs:// URL, with the user and root from the URL', async () => {
    const { webHdfsUrl, user } = hdfsAddress();
    const root = freshRoot();
    const address = new URL(webHdfsUrl);
    const warehouse = openWarehouse(`webhdfs://${address.host}${root}?user=${user}`, { logger: silent });
    expect(warehouse).toBeInstanceOf(WebHdfsWarehouse);
    await warehouse.create('via-url', Buffer.from('hello'));
    expect(await connect(root).open('via-url')).toEqual(Buffer.from('hello'));
    expect(warehouse.describe('via-url')).toBe(`webhdfs://${address.host}${root}/via-url`);
  });

  describe('when answers are lost', () => {
    let proxy: FaultProxy;

    beforeAll(async () => {
      proxy = await startFaultProxy(hdfsAddress().webHdfsUrl);
    });

    afterAll(async () => {
      await proxy.close();
    });

    const throughProxy = (root: string, options: Partial<WebHdfsWarehouseOptions> = {}): WebHdfsWarehouse =>
      connect(root, { nameNodeUrl: proxy.url, retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 10 }, ...options });

    it('learns from HDFS that a RENAME whose answer was lost happened, and does not send it again', async () => {
      const root = freshRoot();
      const warehouse = throughProxy(root);
      await warehouse.create('staging/part', Buffer.from('bytes'));
      await warehouse.mkdirs('final');
      const renamesBefore = proxy.sent('RENAME');
      proxy.loseAnswer('RENAME');
      await warehouse.rename('staging/part', 'final/part');
      expect(proxy.sent('RENAME') - renamesBefore).toBe(1);
      expect(await connect(root).stat('staging/part')).toBeUndefined();
      expect(await connect(root).open('final/part')).toEqual(Buffer.from('bytes'));
      // Sending it again would have failed: the source is gone.
      await failure(connect(root).rename('staging/part', 'final/part'), 'WAREHOUSE_NOT_FOUND');
    });

    it('learns from HDFS that a DELETE whose answer was lost happened', async () => {
      const root = freshRoot();
      const warehouse = throughProxy(root);
      await warehouse.create('tree/a', Buffer.from('a'));
      const deletesBefore = proxy.sent('DELETE');
      proxy.loseAnswer('DELETE');
      expect(await warehouse.delete('tree', { recursive: true })).toBe(true);
      expect(proxy.sent('DELETE') - deletesBefore).toBe(1);
      expect(await connect(root).stat('tree')).toBeUndefined();
    });

    it('reports a RENAME that timed out before reaching HDFS as not done and retriable', async () => {
      const root = freshRoot();
      const warehouse = throughProxy(root, { requestTimeoutMs: 1_000 });
      await warehouse.create('staging/part', Buffer.from('bytes'));
      proxy.swallow('RENAME');
      try {
        const error = await failure(warehouse.rename('staging/part', 'final/part'), 'WAREHOUSE_UNAVAILABLE');
        expect(error.retriable).toBe(true);
        expect(error.details).toMatchObject({ verdict: 'not-renamed' });
      } finally {
        proxy.release();
      }
      expect(await connect(root).open('staging/part')).toEqual(Buffer.from('bytes'));
      expect(await connect(root).stat('final/part')).toBeUndefined();
    });

    it('retries a read that gets no answer, within its bound, then fails retriable', async () => {
      const warehouse = throughProxy(freshRoot(), { requestTimeoutMs: 500, retry: { attempts: 3, initialDelayMs: 10, maxDelayMs: 20 } });
      const before = proxy.sent('GETFILESTATUS');
      proxy.swallow('GETFILESTATUS');
      try {
        const error = await failure(warehouse.stat('anything'), 'WAREHOUSE_UNAVAILABLE');
        expect(error.retriable).toBe(true);
        expect(error.details).toMatchObject({ attempts: 3, answerLost: true });
        expect(error.message).toContain('no answer within 500 ms');
      } finally {
        proxy.release();
      }
      expect(proxy.sent('GETFILESTATUS') - before).toBe(3);
    });
  });

  it('fails retriable, saying the request was never sent, when the NameNode is unreachable', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
    const warehouse = connect('/nowhere', { nameNodeUrl: `http://127.0.0.1:${closedPort}`, retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 10 } });
    const error = await failure(warehouse.create('file', Buffer.from('x')), 'WAREHOUSE_UNAVAILABLE');
    expect(error.retriable).toBe(true);
    expect(error.details).toMatchObject({ answerLost: false, attempts: 2 });
    expect(error.message).toContain('ECONNREFUSED');
    // A DELETE that never left is not a lost answer: no probe, just the retriable error.
    const deleteError = await failure(warehouse.delete('file'), 'WAREHOUSE_UNAVAILABLE');
    expect(deleteError.details).toMatchObject({ answerLost: false });
  });
});
