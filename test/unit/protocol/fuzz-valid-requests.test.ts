/**
 * The fuzz storm's valid requests (test/support/fuzz-frames.ts `validRequest`): every served API
 * and version is made, and every request made decodes with the protocol layer's own decoders, so
 * the storm's "valid" and "mutated" frames start from requests the broker must answer.
 */
import { describe, expect, it } from 'vitest';
import { ApiVersionsApi, SUPPORTED_APIS, findApi } from '../../../src/protocol/apis/index.js';
import { decodeRequestHeader } from '../../../src/protocol/headers.js';
import { decodeRequestBody } from '../../../src/protocol/schema.js';
import { WireReader } from '../../../src/protocol/wire.js';
import { FrameFactory, Prng } from '../../support/fuzz-frames.js';

const REQUESTS = 20_000;

describe('fuzz-frames validRequest', () => {
  it(`makes every served API and version, each decoding cleanly (${REQUESTS} requests)`, () => {
    const factory = new FrameFactory(new Prng(20_240_611), { topics: [{ name: 'fuzz-a', partitions: 3 }, { name: 'fuzz-b', partitions: 1 }], scratchTopics: ['scratch-1', 'scratch-2'] });
    const seen = new Set<string>();
    const failures: string[] = [];
    for (let i = 0; i < REQUESTS; i += 1) {
      const { api, version, body } = factory.validRequest();
      seen.add(`${api.name} v${version}`);
      const reader = new WireReader(body);
      const header = decodeRequestHeader(reader);
      expect([header.apiKey, header.apiVersion]).toEqual([api.apiKey, version]);
      if (api.apiKey === ApiVersionsApi.apiKey && version > ApiVersionsApi.maxVersion) continue; // the v3 fallback frame
      const schema = findApi(header.apiKey);
      if (schema === undefined) throw new Error(`no schema for ${api.name}`);
      try {
        decodeRequestBody(schema, version, reader);
      } catch (error) {
        failures.push(`${api.name} v${version}: ${String(error)}`);
      }
    }
    expect(failures.slice(0, 5)).toEqual([]);
    const served = SUPPORTED_APIS.flatMap((api) => Array.from({ length: api.maxVersion - api.minVersion + 1 }, (_, i) => `${api.name} v${api.minVersion + i}`));
    expect(served.filter((name) => !seen.has(name))).toEqual([]);
  });
});
