/**
 * A WebHDFS CREATE whose DataNode half fails on the DataNode's own trouble (found by `npm run
 * chaos -- loader --scenario namenode-restart`: the NameNode SIGKILLed while a file was uploaded,
 * and the DataNode answered `RemoteException SocketException … Connection reset` from its call to
 * it). The NameNode had created the file, so the name may hold an empty leased file: the failure
 * is WAREHOUSE_CREATE_INCOMPLETE, which the loader answers by writing a fresh name, not the
 * permanent WAREHOUSE_ERROR it was ("the warehouse failed the request"), which failed the run.
 * A fake NameNode and DataNode answer over HTTP exactly as HDFS 3.5 did.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createUnderFreshName } from '../../../src/etl/load/fresh-name.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';
import { quietLogger } from './loader-fakes.js';

const SOCKET_EXCEPTION = JSON.stringify({
  RemoteException: {
    exception: 'SocketException',
    javaClassName: 'java.net.SocketException',
    message: 'Call From vm/127.0.0.1 to localhost:33485 failed on socket exception: java.net.SocketException: Connection reset; For more details see:  http://wiki.apache.org/hadoop/SocketException',
  },
});

let server: Server | undefined;

afterEach(async () => {
  const running = server;
  server = undefined;
  if (running === undefined) return;
  running.closeAllConnections();
  await new Promise((resolve) => running.close(resolve));
});

/** NameNode and DataNode in one server: CREATE answers with a DataNode location, whose upload fails `failures` times. */
async function fakeHdfs(failures: number): Promise<{ url: string; uploads: string[] }> {
  const uploads: string[] = [];
  server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname.startsWith('/datanode/')) {
      request.resume();
      request.on('end', () => {
        uploads.push(url.pathname);
        if (uploads.length <= failures) {
          response.writeHead(403, { 'content-type': 'application/json' }).end(SOCKET_EXCEPTION);
        } else {
          response.writeHead(201).end();
        }
      });
      return;
    }
    if (url.searchParams.get('op') === 'CREATE') {
      const { port } = server?.address() as AddressInfo;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ Location: `http://127.0.0.1:${port}/datanode${url.pathname.slice('/webhdfs/v1'.length)}?op=CREATE` }));
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ RemoteException: { exception: 'FileNotFoundException', message: 'no' } }));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `webhdfs://127.0.0.1:${port}/?user=etl`, uploads };
}

describe('a DataNode that fails an upload on its own network trouble', () => {
  it('makes the create WAREHOUSE_CREATE_INCOMPLETE, naming what HDFS said', async () => {
    const hdfs = await fakeHdfs(1);
    const warehouse = openWarehouse(hdfs.url, { logger: quietLogger });
    const failure = warehouse.create('staging/a.avro', Buffer.from('data'), { fresh: true });
    await expect(failure).rejects.toMatchObject({ code: 'WAREHOUSE_CREATE_INCOMPLETE', message: expect.stringContaining('SocketException') as unknown });
  });

  it('so a staged file is written again under a fresh name', async () => {
    const hdfs = await fakeHdfs(1);
    const warehouse = openWarehouse(hdfs.url, { logger: quietLogger });
    expect(await createUnderFreshName(warehouse, 'staging/a.avro', Buffer.from('data'))).toBe('staging/a.avro.retry2');
    expect(hdfs.uploads).toEqual(['/datanode/staging/a.avro', '/datanode/staging/a.avro.retry2']);
  });
});
