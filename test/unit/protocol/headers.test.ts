/**
 * Header rules (kafka-protocol.md §2): a flexible request (Metadata v9) comes with request header
 * v2 — v1 plus a TAG_BUFFER, ClientId still INT16-length — and is answered with response header
 * v1 (correlation id + TAG_BUFFER); non-flexible versions keep v1/v0; ApiVersions responses are
 * header v0 whatever the version. Hand-laid bytes, then the broker's router on whole frames, then
 * our own client against it.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerConnection } from '../../../src/broker/connection.js';
import { RequestRouter, type ApiHandler } from '../../../src/broker/router.js';
import { KafkaConnection } from '../../../src/client/connection.js';
import { createLogger } from '../../../src/common/logger.js';
import { ApiVersionsApi, MetadataApi, type MetadataRequest, type MetadataResponse } from '../../../src/protocol/apis/index.js';
import { decodeRequestHeader, decodeResponseHeader, encodeRequestHeader, encodeResponseHeader, requestHeaderVersion, responseHeaderVersion } from '../../../src/protocol/headers.js';
import { WireReader, WireWriter, isExternalPart } from '../../../src/protocol/wire.js';
import { hex, thrownBy } from './apis/helpers.js';

const silent = createLogger({ name: 'headers-test', level: 'silent' });

function requestHeaderBytes(apiKey: number, apiVersion: number, correlationId: number, clientId: string | null): Buffer {
  const writer = new WireWriter();
  encodeRequestHeader(writer, { apiKey, apiVersion, correlationId, clientId });
  return writer.toBuffer();
}

describe('header versions', () => {
  it('request header v2 for a flexible version of a served API, v1 otherwise', () => {
    expect(requestHeaderVersion(3, 9)).toBe(2);
    expect(requestHeaderVersion(3, 10)).toBe(2); // flexible though not served: read as Kafka would, then refused
    expect(requestHeaderVersion(3, 8)).toBe(1);
    expect(requestHeaderVersion(3, 0)).toBe(1);
    expect(requestHeaderVersion(1, 11)).toBe(1);
    expect(requestHeaderVersion(9999, 9)).toBe(1);
    // ApiVersions declares no flexible version: v3+ gets the v0 fallback without its header tags being read.
    expect(requestHeaderVersion(18, 3)).toBe(1);
  });

  it('response header v1 for a flexible version but ApiVersions, v0 otherwise', () => {
    expect(responseHeaderVersion(3, 9)).toBe(1);
    expect(responseHeaderVersion(3, 8)).toBe(0);
    expect(responseHeaderVersion(0, 8)).toBe(0);
    for (const v of [0, 1, 2, 3, 4]) expect(responseHeaderVersion(ApiVersionsApi.apiKey, v)).toBe(0);
  });
});

describe('header golden bytes', () => {
  it('request header v1 (Metadata v8): no TAG_BUFFER', () => {
    const bytes = hex('00 03 | 00 08 | 00 00 00 07 | 00 02 6a 76');
    expect(requestHeaderBytes(3, 8, 7, 'jv')).toStrictEqual(bytes);
    const reader = new WireReader(Buffer.concat([bytes, hex('ff ff ff ff')]));
    expect(decodeRequestHeader(reader)).toStrictEqual({ apiKey: 3, apiVersion: 8, correlationId: 7, clientId: 'jv' });
    expect(reader.position).toBe(bytes.length);
  });

  it('request header v2 (Metadata v9): the v1 fields, ClientId still INT16-length, then a TAG_BUFFER', () => {
    const bytes = hex('00 03 | 00 09 | 00 00 00 07 | 00 02 6a 76 | 00');
    expect(requestHeaderBytes(3, 9, 7, 'jv')).toStrictEqual(bytes);
    const reader = new WireReader(bytes);
    expect(decodeRequestHeader(reader)).toStrictEqual({ apiKey: 3, apiVersion: 9, correlationId: 7, clientId: 'jv' });
    expect(reader.remaining()).toBe(0);
    expect(requestHeaderBytes(3, 9, 1, null)).toStrictEqual(hex('00 03 | 00 09 | 00 00 00 01 | ff ff | 00'));
  });

  it('request header v2: unknown header tags are skipped, and the reader stops at the body', () => {
    const bytes = hex('00 03 | 00 09 | 00 00 00 07 | 00 02 6a 76 | 02 | 00 03 61 62 63 | 05 00 || 00 00 00 00 00');
    const reader = new WireReader(bytes);
    expect(decodeRequestHeader(reader).clientId).toBe('jv');
    expect(reader.remaining()).toBe(5);
  });

  it('request header v2: a missing or lying TAG_BUFFER is malformed', () => {
    expect(thrownBy(() => decodeRequestHeader(new WireReader(hex('00 03 | 00 09 | 00 00 00 07 | 00 02 6a 76'))))).toBe('MalformedMessageError');
    expect(thrownBy(() => decodeRequestHeader(new WireReader(hex('00 03 | 00 09 | 00 00 00 07 | 00 02 6a 76 | 01 00 09 00'))))).toBe('MalformedMessageError');
  });

  it('response header v0 and v1', () => {
    const v0 = new WireWriter();
    encodeResponseHeader(v0, 7);
    expect(v0.toBuffer()).toStrictEqual(hex('00 00 00 07'));
    const v1 = new WireWriter();
    encodeResponseHeader(v1, 7, 1);
    expect(v1.toBuffer()).toStrictEqual(hex('00 00 00 07 | 00'));
    const reader = new WireReader(hex('00 00 00 07 | 01 | 02 01 ff | 42'));
    expect(decodeResponseHeader(reader, 1)).toBe(7);
    expect(reader.remaining()).toBe(1);
  });
});

// -------------------------------------------------------------------------------------------------
// The router and our client

const RESPONSE: MetadataResponse = {
  throttleTimeMs: 0,
  brokers: [{ nodeId: 1, host: 'h', port: 9092, rack: null }],
  clusterId: 'c',
  controllerId: 1,
  topics: [{ errorCode: 0, name: 't', isInternal: false, partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 1, leaderEpoch: 5, replicaNodes: [1], isrNodes: [1], offlineReplicas: [] }], topicAuthorizedOperations: -2147483648 }],
  clusterAuthorizedOperations: -2147483648,
};

function metadataHandler(seen: { request: MetadataRequest; version: number }[]): ApiHandler<MetadataRequest, MetadataResponse> {
  return {
    api: MetadataApi,
    async handle(request, version) {
      seen.push({ request, version });
      return RESPONSE;
    },
  };
}

async function route(router: RequestRouter, frame: Buffer): Promise<Buffer | string> {
  const outcome = await router.route(frame, 1, 'test');
  if (outcome.kind === 'close') return `close: ${outcome.reason}`;
  if (outcome.kind === 'none') return 'none';
  return Buffer.concat(outcome.parts.filter((part): part is Buffer => !isExternalPart(part)));
}

describe('the router follows the header rules', () => {
  function router(seen: { request: MetadataRequest; version: number }[] = []): RequestRouter {
    const made = new RequestRouter([metadataHandler(seen)], silent);
    made.open();
    return made;
  }

  it('answers a Metadata v9 request (header v2) with response header v1 and a flexible body', async () => {
    const seen: { request: MetadataRequest; version: number }[] = [];
    const frame = hex(`
      00 03 00 09 | 00 00 00 2a | 00 04 6a 61 76 61 | 00   # header v2: Metadata v9, id 42, "java", no tags
      02 | 02 74 | 00 | 01 | 00 | 00 | 00                  # Topics ["t"], AllowAuto, no authorized operations
    `);
    const answer = await route(router(seen), frame);
    expect(answer).toStrictEqual(
      hex(`
        00 00 00 2a | 00                   # response header v1: correlation id 42, TAG_BUFFER
        00 00 00 00                        # ThrottleTimeMs
        02 | 00 00 00 01 | 02 68 | 00 00 23 84 | 00 | 00
        02 63 | 00 00 00 01
        02 | 00 00 | 02 74 | 00
        02 | 00 00 | 00 00 00 00 | 00 00 00 01 | 00 00 00 05 | 02 00 00 00 01 | 02 00 00 00 01 | 01 | 00
        80 00 00 00 | 00
        80 00 00 00 | 00
      `),
    );
    expect(seen).toStrictEqual([{ version: 9, request: { topics: [{ name: 't' }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false } }]);
  });

  it('skips unknown tags in the request header and body', async () => {
    const seen: { request: MetadataRequest; version: number }[] = [];
    const frame = hex('00 03 00 09 | 00 00 00 2b | ff ff | 01 00 02 aa bb || 00 | 01 | 00 | 00 | 01 07 00');
    const answer = await route(router(seen), frame);
    expect(Buffer.isBuffer(answer) ? answer.subarray(0, 5) : answer).toStrictEqual(hex('00 00 00 2b 00'));
    expect(seen.map((s) => s.request.topics)).toStrictEqual([null]);
  });

  it('answers a Metadata v8 request (header v1) with response header v0', async () => {
    const frame = hex('00 03 00 08 | 00 00 00 2c | 00 01 6b || ff ff ff ff | 01 | 00 | 00');
    const answer = await route(router(), frame);
    expect(Buffer.isBuffer(answer) ? answer.subarray(0, 8) : answer).toStrictEqual(hex('00 00 00 2c | 00 00 00 00'));
  });

  it('answers ApiVersions with response header v0, the v3 fallback included', async () => {
    const v2 = await route(router(), hex('00 12 00 02 | 00 00 00 2d | 00 01 6b'));
    expect(Buffer.isBuffer(v2) ? v2.subarray(0, 6) : v2).toStrictEqual(hex('00 00 00 2d | 00 00'));
    const v3 = await route(router(), hex('00 12 00 03 | 00 00 00 2e | 00 01 6b | 00 | 02 6b 00 02 31 00 00'));
    expect(v3).toStrictEqual(hex('00 00 00 2e | 00 23 | 00 00 00 01 | 00 12 00 00 00 02'));
  });

  it('closes on a v9 request whose header TAG_BUFFER lies, or whose body is in the v8 layout', async () => {
    expect(await route(router(), hex('00 03 00 09 | 00 00 00 2f | 00 01 6b | 05 00 00'))).toMatch(/^close: unreadable request header/);
    expect(await route(router(), hex('00 03 00 09 | 00 00 00 30 | 00 01 6b | 00 || ff ff ff ff | 01 | 00 | 00'))).toMatch(/^close: malformed Metadata v9/);
  });
});

describe('our client speaks Metadata v9 too', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('sends header v2 and reads response header v1, as well as v8 with v1/v0, on one connection', async () => {
    const seen: { request: MetadataRequest; version: number }[] = [];
    const router = new RequestRouter([metadataHandler(seen)], silent);
    router.open();
    const server: Server = createServer((socket) => new BrokerConnection(1, socket, router, { maxRequestBytes: 1 << 20, idleTimeoutMs: 60_000, logger: silent }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => server.close());
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    const connection = await KafkaConnection.open('127.0.0.1', address.port);
    cleanups.push(() => connection.close());
    const request: MetadataRequest = { topics: [{ name: 't' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
    const [v9, v8, v9again] = await Promise.all([connection.request(MetadataApi, 9, request), connection.request(MetadataApi, 8, request), connection.request(MetadataApi, 9, request)]);
    expect(v9).toStrictEqual(RESPONSE);
    expect(v8).toStrictEqual(RESPONSE);
    expect(v9again).toStrictEqual(RESPONSE);
    expect(seen.map((s) => [s.version, s.request])).toStrictEqual([
      [9, request],
      [8, request],
      [9, request],
    ]);
  });
});
