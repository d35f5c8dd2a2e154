/**
 * Proves the harness's HDFS is the real thing, over WebHDFS with Node's fetch: the NameNode
 * redirects CREATE and OPEN to the DataNode (307), and the bytes come back identical.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { hdfsAddress } from '../services.js';

interface FileStatus {
  pathSuffix: string;
  type: 'FILE' | 'DIRECTORY';
  length: number;
}

function url(path: string, op: string, params: Record<string, string> = {}): string {
  const { webHdfsUrl, user } = hdfsAddress();
  const query = new URLSearchParams({ op, 'user.name': user, ...params });
  return `${webHdfsUrl}/webhdfs/v1${path}?${query.toString()}`;
}

async function json<T>(response: Response): Promise<T> {
  const body = await response.text();
  if (!response.ok) throw new Error(`WebHDFS answered ${response.status}: ${body}`);
  return JSON.parse(body) as T;
}

/**
 * The DataNode answers every CREATE with an unsolicited `100 Continue` before its `201`, which
 * Node's fetch (undici 6) rejects as "bad response"; node:http treats it as informational.
 */
function putToDataNode(location: string, data: Uint8Array): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(location, { method: 'PUT', headers: { 'content-length': data.length } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(data);
  });
}

/** CREATE is two steps: the NameNode names a DataNode with a 307, the data goes there. */
async function createFile(path: string, data: Uint8Array): Promise<{ status: number; body: string; location: string }> {
  const first = await fetch(url(path, 'CREATE', { overwrite: 'false' }), { method: 'PUT', redirect: 'manual' });
  if (first.status !== 307) return { status: first.status, body: await first.text(), location: '' };
  const location = first.headers.get('location');
  if (location === null) throw new Error('307 without Location');
  return { ...(await putToDataNode(location, data)), location };
}

async function readFile(path: string): Promise<{ data: Buffer; redirectedTo: string }> {
  const first = await fetch(url(path, 'OPEN'), { redirect: 'manual' });
  expect(first.status).toBe(307);
  const location = first.headers.get('location');
  if (location === null) throw new Error('307 without Location');
  const second = await fetch(location);
  expect(second.status).toBe(200);
  return { data: Buffer.from(await second.arrayBuffer()), redirectedTo: location };
}

describe('HDFS over WebHDFS', () => {
  it('mkdirs, creates, renames, lists, reads back byte-identical, and deletes', async () => {
    const root = `/smoke/${process.pid}-${Date.now()}`;
    expect(await json<{ boolean: boolean }>(await fetch(url(`${root}/staging`, 'MKDIRS'), { method: 'PUT' }))).toEqual({ boolean: true });

    // 9 MiB crosses the 8 MiB block size the harness configures: two blocks on the DataNode.
    const payload = randomBytes(9 * 1024 * 1024);
    const created = await createFile(`${root}/staging/part-0.bin`, payload);
    expect(created.status).toBe(201);
    expect(new URL(created.location).hostname).toBe('127.0.0.1');
    expect(new URL(created.location).port).not.toBe(new URL(hdfsAddress().webHdfsUrl).port);

    // Creating the same file again without overwrite is refused by HDFS itself.
    const again = await createFile(`${root}/staging/part-0.bin`, Buffer.from('x'));
    expect(again.status).toBeGreaterThanOrEqual(400);
    expect(again.body).toContain('FileAlreadyExistsException');

    const renamed = await fetch(url(`${root}/staging/part-0.bin`, 'RENAME', { destination: `${root}/part-0.bin` }), { method: 'PUT' });
    expect(await json<{ boolean: boolean }>(renamed)).toEqual({ boolean: true });

    const listing = await json<{ FileStatuses: { FileStatus: FileStatus[] } }>(await fetch(url(root, 'LISTSTATUS')));
    const entries = listing.FileStatuses.FileStatus.map(({ pathSuffix, type, length }) => ({ pathSuffix, type, length }));
    expect(entries).toEqual([
      { pathSuffix: 'part-0.bin', type: 'FILE', length: payload.length },
      { pathSuffix: 'staging', type: 'DIRECTORY', length: 0 },
    ]);

    const { data } = await readFile(`${root}/part-0.bin`);
    expect(data.length).toBe(payload.length);
    expect(data.equals(payload)).toBe(true);

    const deleted = await fetch(url(root, 'DELETE', { recursive: 'true' }), { method: 'DELETE' });
    expect(await json<{ boolean: boolean }>(deleted)).toEqual({ boolean: true });
    const gone = await fetch(url(root, 'GETFILESTATUS'));
    expect(gone.status).toBe(404);
    expect(await gone.text()).toContain('FileNotFoundException');
  });
});
