/**
 * Request pipelining on one connection, with the real router and codecs behind a real socket and
 * stand-in handlers whose progress the test controls: a request starts once its predecessor is
 * admitted (or answered), at most five are unanswered at once, and responses leave in request
 * order whatever order the handlers finish in.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerConnection } from '../../../src/broker/connection.js';
import { RequestRouter, type ApiHandler } from '../../../src/broker/router.js';
import { createLogger } from '../../../src/common/logger.js';
import { MetadataApi, ProduceApi, type MetadataRequest, type MetadataResponse, type ProduceRequest, type ProduceResponse } from '../../../src/protocol/apis/index.js';
import { Conversation, decodeResponse, requestFrame } from '../../support/conversation.js';

const silent = createLogger({ name: 'connection-test', level: 'silent' });
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A promise the test resolves by hand. */
function gate(): { readonly promise: Promise<void>; readonly open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

async function serve(handlers: ApiHandler[]): Promise<number> {
  const router = new RequestRouter(handlers, silent);
  router.open();
  const server: Server = createServer((socket) => new BrokerConnection(1, socket, router, { maxRequestBytes: 1 << 20, idleTimeoutMs: 60_000, logger: silent }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => server.close());
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return address.port;
}

async function until(condition: () => boolean): Promise<void> {
  await expect.poll(condition, { timeout: 10_000, interval: 5 }).toBe(true);
}

/** Lets every callback already queued run (no I/O is awaited). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

const produceRequest = (name: string): ProduceRequest => ({ transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name, partitionData: [{ index: 0, records: Buffer.alloc(1) }] }] });
const produceResponse = (name: string): ProduceResponse => ({
  responses: [{ name, partitionResponses: [{ index: 0, errorCode: 0, baseOffset: 0n, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null }] }],
  throttleTimeMs: 0,
});

describe('BrokerConnection pipelining', () => {
  it('starts the next request once the previous is admitted, keeps five unanswered at most, and answers in request order', async () => {
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const produce: ApiHandler<ProduceRequest, ProduceResponse> = {
      api: ProduceApi,
      async handle(request, _version, context) {
        const name = request.topicData[0]?.name ?? '';
        started.push(name);
        const own = gate();
        gates.set(name, own);
        context.admitted();
        await own.promise;
        return produceResponse(name);
      },
    };
    const port = await serve([produce]);
    const conversation = await Conversation.open(port);
    cleanups.push(() => conversation.close());
    const names = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'];
    const correlationIds = names.map(() => conversation.nextCorrelationId());
    conversation.send(Buffer.concat(names.map((name, i) => requestFrame(ProduceApi, 8, correlationIds[i] ?? 0, produceRequest(name)))));

    await until(() => started.length === 5);
    await settle();
    expect(started).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);

    // Finishing later requests first answers nothing and starts nothing: r1 is still unanswered.
    for (const name of ['r5', 'r4', 'r3', 'r2']) gates.get(name)?.open();
    await settle();
    expect(started).toHaveLength(5);

    gates.get('r1')?.open();
    await until(() => started.length === 7);
    gates.get('r6')?.open();
    gates.get('r7')?.open();
    const answered: number[] = [];
    for (const [i, name] of names.entries()) {
      const response = decodeResponse(ProduceApi, 8, await conversation.response(), correlationIds[i] ?? 0);
      expect(response.responses[0]?.name).toBe(name);
      answered.push(i);
    }
    expect(answered).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('runs a request whose handler never admits it to the end before the next one starts', async () => {
    const events: string[] = [];
    const metadata: ApiHandler<MetadataRequest, MetadataResponse> = {
      api: MetadataApi,
      async handle(request) {
        const name = request.topics?.[0]?.name ?? '';
        events.push(`start ${name}`);
        await settle();
        events.push(`end ${name}`);
        return { throttleTimeMs: 0, brokers: [], clusterId: null, controllerId: -1, topics: [], clusterAuthorizedOperations: 0 };
      },
    };
    const port = await serve([metadata]);
    const conversation = await Conversation.open(port);
    cleanups.push(() => conversation.close());
    const ids = [conversation.nextCorrelationId(), conversation.nextCorrelationId(), conversation.nextCorrelationId()];
    const request = (name: string): MetadataRequest => ({ topics: [{ name }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
    conversation.send(Buffer.concat(['a', 'b', 'c'].map((name, i) => requestFrame(MetadataApi, 8, ids[i] ?? 0, request(name)))));
    for (const id of ids) decodeResponse(MetadataApi, 8, await conversation.response(), id);
    expect(events).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });
});
