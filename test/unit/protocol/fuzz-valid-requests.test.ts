/**
 * The fuzz storm's valid requests (test/support/fuzz-frames.ts `validRequest`): every served API
 * and version is made, and every request made decodes with the protocol layer's own decoders, so
 * the storm's "valid" and "mutated" frames start from requests the broker must answer. Flexible
 * versions come both plain and with unknown tagged fields (longer than their re-encoding).
 */
import { describe, expect, it } from 'vitest';
import { ApiVersionsApi, SUPPORTED_APIS, findApi } from '../../../src/protocol/apis/index.js';
import { decodeRequestHeader } from '../../../src/protocol/headers.js';
import { decodeRequestBody, isFlexibleVersion } from '../../../src/protocol/schema.js';
import { WireReader } from '../../../src/protocol/wire.js';
import { FrameFactory, Prng, requestBody } from '../../support/fuzz-frames.js';

const REQUESTS = 20_000;

describe('fuzz-frames validRequest', () => {
  it(`makes every served API and version, each decoding cleanly (${REQUESTS} requests)`, () => {
    const factory = new FrameFactory(new Prng(20_240_611), { topics: [{ name: 'fuzz-a', partitions: 3 }, { name: 'fuzz-b', partitions: 1 }], scratchTopics: ['scratch-1', 'scratch-2'] });
    const seen = new Set<string>();
    const failures: string[] = [];
    /** Flexible requests seen, per `API vN`: plain, and with unknown tagged fields. */
    const flexible = new Map<string, { plain: number; tagged: number }>();
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
        const request = decodeRequestBody(schema, version, reader);
        if (isFlexibleVersion(schema, version)) {
          const counts = flexible.get(`${api.name} v${version}`) ?? { plain: 0, tagged: 0 };
          const reencoded = requestBody(schema, version, header.correlationId, request, header.clientId);
          if (reencoded.equals(body)) counts.plain += 1;
          else if (body.length > reencoded.length) counts.tagged += 1;
          else failures.push(`${api.name} v${version}: neither its re-encoding nor longer`);
          flexible.set(`${api.name} v${version}`, counts);
        }
      } catch (error) {
        failures.push(`${api.name} v${version}: ${String(error)}`);
      }
    }
    expect(failures.slice(0, 5)).toEqual([]);
    expect([...flexible.keys()]).toEqual(['Metadata v9']);
    for (const [name, counts] of flexible) {
      expect(counts.plain, `${name} plain`).toBeGreaterThan(0);
      expect(counts.tagged, `${name} with unknown tags`).toBeGreaterThan(0);
    }
    const served = SUPPORTED_APIS.flatMap((api) => Array.from({ length: api.maxVersion - api.minVersion + 1 }, (_, i) => `${api.name} v${api.minVersion + i}`));
    expect(served.filter((name) => !seen.has(name))).toEqual([]);
  });
});
