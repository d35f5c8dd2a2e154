/**
 * The short version of the registry fuzz run (test/chaos/registry-fuzz.ts) against a real
 * `tributary registry start` process, and the bugs the full run found, each checked directly:
 *
 *   - a path that does not URL-decode and bytes that are not HTTP got fastify's own
 *     `{"error","statusCode"}` body, and a request without Host Node's bare 400, instead of a
 *     Confluent error (fails without src/registry/routes/framework-errors.ts and the server's
 *     requireHostHeader: false);
 *   - `"default": 1e400` was stored as `"default": null`, a schema no parser accepts (fails
 *     without the Infinity check in src/registry/avro-schema/structure.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRegistryProcess, type RegistryProcess } from '../../chaos/registry-fuzz-process.js';
import { formatRegistryFuzzLine, runRegistryFuzz } from '../../chaos/registry-fuzz.js';

let folder: string;
let registry: RegistryProcess;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tributary-registry-fuzz-'));
  registry = await startRegistryProcess(join(folder, 'direct'));
});

afterAll(async () => {
  await registry.stop();
  rmSync(folder, { recursive: true, force: true });
});

/** Writes raw bytes and reads everything until the registry closes the connection. */
function raw(bytes: string): Promise<{ status: number; body: unknown }> {
  const { hostname, port } = new URL(registry.url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
      const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
      try {
        resolve({ status, body: JSON.parse(body) as unknown });
      } catch {
        resolve({ status, body });
      }
    });
  });
}

const confluentError = { error_code: expect.any(Number) as unknown, message: expect.any(String) as unknown };

describe('registry answers to hostile HTTP', () => {
  it('answers undecodable paths, non-HTTP bytes and a missing Host with Confluent errors', async () => {
    for (const path of ['/subjects/%ff%fe/versions', '/subjects/%/versions', '/config/%E0%A4%A']) {
      const response = await fetch(`${registry.url}${path}`);
      expect({ path, status: response.status, body: (await response.json()) }).toEqual({ path, status: 400, body: { error_code: 400, message: expect.stringContaining('not a valid url component') as unknown } });
    }
    for (const bytes of ['GARBAGE\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!', 'GET /\u0000 HTTP/1.1\r\nHost: x\r\n\r\n']) {
      const answer = await raw(bytes);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual(confluentError);
    }
    const noHost = await raw('GET /subjects HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(noHost).toEqual({ status: 200, body: [] });
  });

  it('refuses a default beyond a double instead of storing it as null', async () => {
    const body = '{"schema": "{\\"type\\":\\"record\\",\\"name\\":\\"D\\",\\"fields\\":[{\\"name\\":\\"a\\",\\"type\\":\\"double\\",\\"default\\":1e400}]}"}';
    const response = await fetch(`${registry.url}/subjects/overflow/versions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ error_code: 42201, message: expect.stringContaining('at /fields/0/default: the number is too large for a double') as unknown });
    expect(await (await fetch(`${registry.url}/subjects`)).json()).toEqual([]);
  });
});

describe('registry fuzz, short', () => {
  it('answers 500 seeded hostile requests with Confluent errors or correct successes and stores nothing invalid', async () => {
    const result = await runRegistryFuzz({ folder: join(folder, 'fuzz'), requests: 500, seed: 2026 });
    expect(result.violations, formatRegistryFuzzLine(result)).toEqual([]);
    expect(result.requests).toBe(500);
    expect(result.accepted).toBeGreaterThan(0);
    expect(result.answers.serverError).toBe(0);
    expect(result.officialClient).toBe(true);
  });
});
