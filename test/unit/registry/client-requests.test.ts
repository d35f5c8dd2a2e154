/**
 * RegistryClient against a scripted in-process HTTP server (our own client logic: what it sends,
 * which failures it retries, how it names them). The real registry is exercised in
 * serde-*.test.ts and the integration tests.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TributaryError } from '../../../src/common/errors.js';
import { RegistryClient } from '../../../src/registry/client.js';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly contentType: string | undefined;
  readonly body: string;
}
type Answer = { status: number; body: unknown } | 'hang';

let server: Server;
let url: string;
let seen: Seen[] = [];
let answers: Answer[] = [];

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', contentType: request.headers['content-type'], body });
      const answer = answers.length > 1 ? answers.shift()! : answers[0];
      if (answer === undefined) throw new Error('the test scripted no answer');
      if (answer === 'hang') return; // never answers: the client's deadline must end it
      response.writeHead(answer.status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
      response.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => {
  seen = [];
  answers = [];
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(options: { retries?: number; timeoutMs?: number } = {}): RegistryClient {
  return new RegistryClient({ url, backoffMs: 1, ...options });
}

async function failure(promise: Promise<unknown>): Promise<TributaryError> {
  try {
    await promise;
  } catch (error) {
    return error as TributaryError;
  }
  throw new Error('expected the call to fail');
}

describe('RegistryClient requests', () => {
  it('registers with the Confluent content type, the subject URL-encoded and no schemaType for Avro', async () => {
    answers = [{ status: 200, body: { id: 7 } }];
    expect(await client().register('team/PageView-value', '{"type":"string"}')).toEqual({ id: 7 });
    expect(seen).toEqual([
      { method: 'POST', url: '/subjects/team%2FPageView-value/versions', contentType: 'application/vnd.schemaregistry.v1+json', body: '{"schema":"{\\"type\\":\\"string\\"}"}' },
    ]);
  });

  it('sends the schema type when it is not Avro', async () => {
    answers = [{ status: 200, body: { id: 8, version: 2 } }];
    expect(await client().register('s', '{"type":"object"}', 'JSON')).toEqual({ id: 8, version: 2 });
    expect(JSON.parse(seen[0]!.body)).toEqual({ schema: '{"type":"object"}', schemaType: 'JSON' });
  });

  it('asks for verbose compatibility against latest by default and returns each message', async () => {
    answers = [{ status: 200, body: { is_compatible: false, messages: ['a', { errorType: 'TYPE_MISMATCH' }] } }];
    const result = await client().testCompatibility('s', '"int"');
    expect(seen[0]!.url).toBe('/compatibility/subjects/s/versions/latest?verbose=true');
    expect(result).toEqual({ isCompatible: false, messages: ['a', '{"errorType":"TYPE_MISMATCH"}'] });
  });

  it('tests against a numbered version, or against every version registration would check', async () => {
    answers = [{ status: 200, body: { is_compatible: true } }];
    expect(await client().testCompatibility('s', '"int"', 3, false)).toEqual({ isCompatible: true, messages: [] });
    expect(await client().testCompatibility('s', '"int"', 'all')).toEqual({ isCompatible: true, messages: [] });
    expect(seen.map((request) => request.url)).toEqual(['/compatibility/subjects/s/versions/3', '/compatibility/subjects/s/versions?verbose=true']);
  });

  it('reads and sets config globally and per subject, with the PUT/GET shapes of Confluent', async () => {
    answers = [{ status: 200, body: { compatibilityLevel: 'FULL' } }];
    expect(await client().getConfig('s', { defaultToGlobal: true })).toBe('FULL');
    expect(seen[0]!.url).toBe('/config/s?defaultToGlobal=true');
    answers = [{ status: 200, body: { compatibility: 'NONE' } }];
    expect(await client().setConfig('NONE')).toBe('NONE');
    expect(seen[1]).toMatchObject({ method: 'PUT', url: '/config', body: '{"compatibility":"NONE"}' });
  });

  it('keeps a path prefix of the base URL', async () => {
    answers = [{ status: 200, body: ['a'] }];
    expect(await new RegistryClient({ url: `${url}/apis/ccompat/v7/` }).subjects()).toEqual(['a']);
    expect(seen[0]!.url).toBe('/apis/ccompat/v7/subjects');
  });
});

describe('RegistryClient failures', () => {
  it.each([
    [404, 40401, "Subject 'x' not found.", 'REGISTRY_SUBJECT_NOT_FOUND'],
    [404, 40402, 'Version 9 not found.', 'REGISTRY_VERSION_NOT_FOUND'],
    [404, 40403, 'Schema 5 not found', 'REGISTRY_SCHEMA_NOT_FOUND'],
    [404, 40408, "Subject 'x' does not have subject-level compatibility configured", 'REGISTRY_SUBJECT_CONFIG_NOT_FOUND'],
    [409, 409, 'Schema being registered is incompatible with an earlier schema', 'REGISTRY_INCOMPATIBLE_SCHEMA'],
    [409, 40901, 'Schema being registered is incompatible with an earlier schema', 'REGISTRY_INCOMPATIBLE_SCHEMA'],
    [422, 42201, 'Invalid schema', 'REGISTRY_INVALID_SCHEMA'],
    [422, 42202, 'The specified version is not a valid version id', 'REGISTRY_INVALID_VERSION'],
    [422, 42203, 'Invalid compatibility level', 'REGISTRY_INVALID_COMPATIBILITY_LEVEL'],
    [404, 404, 'HTTP 404 Not Found', 'REGISTRY_REQUEST_REJECTED'],
  ])('maps HTTP %i error_code %i to a permanent error carrying the server message, asked once', async (status, errorCode, message, code) => {
    answers = [{ status, body: { error_code: errorCode, message } }];
    const error = await failure(client().schemaById(5));
    expect(error.code).toBe(code);
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(message);
    expect(error.message).toContain(`HTTP ${status}, error_code ${errorCode}`);
    expect(error.details).toMatchObject({ status, errorCode, serverMessage: message });
    expect(seen).toHaveLength(1);
  });

  it('retries a read after 5xx answers and succeeds', async () => {
    answers = [
      { status: 503, body: 'busy' },
      { status: 500, body: { error_code: 50001, message: 'Error in the backend data store' } },
      { status: 200, body: { schema: '"string"' } },
    ];
    expect(await client({ retries: 3 }).schemaById(1)).toEqual({ schema: '"string"' });
    expect(seen).toHaveLength(3);
  });

  it('gives up on a read after the configured retries with a retriable REGISTRY_UNAVAILABLE', async () => {
    answers = [{ status: 500, body: { error_code: 50002, message: 'Operation timed out' } }];
    const error = await failure(client({ retries: 2 }).subjects());
    expect(error.code).toBe('REGISTRY_UNAVAILABLE');
    expect(error.retriable).toBe(true);
    expect(error.message).toContain('Operation timed out');
    expect(error.details).toMatchObject({ status: 500, errorCode: 50002 });
    expect(seen).toHaveLength(3);
  });

  it('does not retry a write, even after a 5xx', async () => {
    answers = [{ status: 503, body: '<html>Service Unavailable</html>' }];
    const error = await failure(client({ retries: 3 }).register('s', '"string"'));
    expect(error.code).toBe('REGISTRY_UNAVAILABLE');
    expect(error.message).toContain('Service Unavailable');
    expect(seen).toHaveLength(1);
    answers = [{ status: 503, body: '' }];
    await failure(client({ retries: 3 }).setConfig('FULL', 's'));
    expect(seen).toHaveLength(2);
  });

  it('ends an attempt that gets no answer at its deadline and retries it as a read', async () => {
    answers = ['hang'];
    const error = await failure(client({ retries: 1, timeoutMs: 150 }).versions('s'));
    expect(error.code).toBe('REGISTRY_UNAVAILABLE');
    expect(error.retriable).toBe(true);
    expect(error.message).toContain('did not answer GET /subjects/s/versions within 150 ms');
    expect(seen).toHaveLength(2);
  });

  it('names an unreachable registry and the socket error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(new RegistryClient({ url: `http://127.0.0.1:${port}`, retries: 1, backoffMs: 1 }).subjects());
    expect(error.code).toBe('REGISTRY_UNAVAILABLE');
    expect(error.retriable).toBe(true);
    expect(error.message).toContain(`cannot reach schema registry http://127.0.0.1:${port}`);
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('refuses a success answer that is not the expected JSON', async () => {
    answers = [{ status: 200, body: '<html>login page</html>' }];
    const error = await failure(client().schemaById(1));
    expect(error.code).toBe('REGISTRY_BAD_RESPONSE');
    expect(error.message).toContain('login page');
  });

  it('refuses bad arguments before sending anything', async () => {
    expect(() => new RegistryClient({ url: 'localhost:8081' })).toThrow(/not an http:\/\/ or https:\/\/ URL/);
    expect(() => new RegistryClient({ url: 'not a url' })).toThrow(/is not a URL; give the registry as http:\/\/HOST:PORT/);
    expect(() => new RegistryClient({ url, timeoutMs: 0 })).toThrow(/timeoutMs must be a positive number/);
    expect((await failure(client().schemaById(0))).code).toBe('REGISTRY_BAD_ARGUMENT');
    expect((await failure(client().version('s', 0))).message).toContain('version must be "latest" or an integer from 1 to 2^31-1, not 0');
    expect((await failure(client().versions(''))).message).toContain('subject name is empty');
    expect((await failure(client().register('s', '  '))).message).toContain('schema text is empty');
    expect(seen).toHaveLength(0);
  });
});
