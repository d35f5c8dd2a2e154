/**
 * Bad requests against a real registry on each store: each gets its Confluent status and error
 * code, and the stored state (every node under /schemas in ZooKeeper, or the state file's bytes)
 * is exactly what it was before.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STATE_FILE } from '../../../src/registry/store/open-storage.js';
import { cleanUp, dataDirectory, dumpZooKeeper, http, recordSchema, startRegistry, zookeeperChroot } from './registry-support.js';

afterEach(cleanUp);

const user = recordSchema('User', ['name']);

/** [what, method, path, body, HTTP status, Confluent error code, text the message must hold] */
const BAD_REQUESTS: readonly [string, string, string, unknown, number, number, string][] = [
  ['malformed JSON', 'POST', '/subjects/users-value/versions', '{"schema": "{', 422, 42201, 'not valid JSON'],
  ['an invalid schema', 'POST', '/subjects/users-value/versions', { schema: '{"type":"record","name":"User","fields":[{"name":"n"}]}' }, 422, 42201, ''],
  ['an invalid schema in a lookup', 'POST', '/subjects/users-value', { schema: '{"type":"fixed","name":"F"}' }, 422, 42201, ''],
  ['an unknown subject', 'GET', '/subjects/nobody/versions', undefined, 404, 40401, "Subject 'nobody' not found."],
  ['an unknown subject in a lookup', 'POST', '/subjects/nobody', { schema: user }, 404, 40401, "Subject 'nobody' not found."],
  ['an unknown subject to delete', 'DELETE', '/subjects/nobody', undefined, 404, 40401, "Subject 'nobody' not found."],
  ['an unknown version', 'GET', '/subjects/users-value/versions/9', undefined, 404, 40402, 'Version 9 not found.'],
  ['an unknown version to delete', 'DELETE', '/subjects/users-value/versions/9', undefined, 404, 40402, 'Version 9 not found.'],
  ['an unknown id', 'GET', '/schemas/ids/424242', undefined, 404, 40403, 'Schema 424242 not found'],
  ['an unknown schema in a lookup', 'POST', '/subjects/users-value', { schema: recordSchema('Other', ['x']) }, 404, 40403, 'Schema not found'],
  ['an invalid version', 'GET', '/subjects/users-value/versions/0', undefined, 422, 42202, "The specified version '0' is not a valid version id"],
  ['an invalid compatibility level', 'PUT', '/config/users-value', { compatibility: 'SOMETIMES' }, 422, 42203, 'Invalid compatibility level'],
  ['an incompatible schema', 'POST', '/subjects/users-value/versions', { schema: recordSchema('User', ['name', 'email']) }, 409, 409, 'READER_FIELD_MISSING_DEFAULT_VALUE'],
  ['a type change', 'POST', '/subjects/users-value/versions', { schema: recordSchema('User', [{ name: 'name', type: 'int' }]) }, 409, 409, 'TYPE_MISMATCH'],
];

describe.each([
  ['the ZooKeeper store', () => {
    const zookeeper = zookeeperChroot();
    return { storage: { zookeeper }, snapshot: () => dumpZooKeeper(zookeeper) };
  }],
  ['the file store', () => {
    const dataDir = dataDirectory();
    return { storage: { dataDir }, snapshot: async () => ({ file: readFileSync(join(dataDir, STATE_FILE), 'base64') }) };
  }],
] as const)('bad input on %s', (_name, setUp) => {
  it('gets the Confluent status and code, and changes no stored byte', async () => {
    const { storage, snapshot } = setUp();
    const { url } = await startRegistry(storage);
    expect((await http(url, 'POST', '/subjects/users-value/versions', { schema: user })).json).toEqual({ id: 1 });
    const before = await snapshot();
    const listingBefore = await http(url, 'GET', '/subjects?deleted=true');

    for (const [what, method, path, body, status, errorCode, text] of BAD_REQUESTS) {
      const answer = await http(url, method, path, body);
      expect({ what, status: answer.status }).toEqual({ what, status });
      expect(answer.json).toMatchObject({ error_code: errorCode, message: expect.stringContaining(text) as unknown });
      expect({ what, state: await snapshot() }).toEqual({ what, state: before });
    }
    expect(await http(url, 'GET', '/subjects?deleted=true')).toEqual(listingBefore);
    expect((await http(url, 'GET', '/subjects/users-value/versions?deleted=true')).json).toEqual([1]);
  });
});
