/**
 * The producer and cluster client against scripted fake brokers (real TCP, the project's codec):
 * errors a real broker rarely gives on cue — NOT_LEADER_OR_FOLLOWER, a leader that moves,
 * LEADER_NOT_AVAILABLE right after auto-creation, MESSAGE_TOO_LARGE, dropped connections — and
 * what the producer must keep true through them: one batch in flight per partition, records in
 * send order, clear errors when it gives up.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer } from '../../../src/client/producer.js';
import { TributaryError } from '../../../src/common/errors.js';
import { MetadataApi, type MetadataRequest, type MetadataResponse } from '../../../src/protocol/apis/metadata.js';
import { ProduceApi, type ProducePartitionResponse, type ProduceRequest, type ProduceResponse } from '../../../src/protocol/apis/produce.js';
import { FrameDecoder } from '../../../src/protocol/framing.js';
import { decodeRequestHeader, encodeResponseHeader } from '../../../src/protocol/headers.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { decodeRecords } from '../../../src/protocol/records.js';
import { decodeRequestBody, encodeResponseBody, type ApiSchema } from '../../../src/protocol/schema.js';
import { WireReader, WireWriter } from '../../../src/protocol/wire.js';

/** What every fake broker of a test agrees on: who leads what. */
interface ClusterState {
  brokers: FakeBroker[];
  /** topic → leader per partition; a topic missing here is answered with `missingTopicError`. */
  topics: Map<string, number[]>;
  missingTopicError: number;
  metadataRequests: number;
}

type ProduceDecision = { errorCode: number; errorMessage?: string } | 'append' | 'hang';

class FakeBroker {
  readonly stored = new Map<string, string[]>();
  readonly produceRequests: ProduceRequest[] = [];
  /** Partitions with a Produce being handled right now, to catch two in flight at once. */
  private readonly handling = new Set<string>();
  overlaps = 0;
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  port = 0;

  constructor(
    readonly id: number,
    private readonly cluster: ClusterState,
    /** Decides each partition's answer; `attempt` counts Produce requests for that partition. */
    public decide: (topic: string, partition: number, attempt: number) => ProduceDecision = () => 'append',
    private readonly answerDelayMs = 5,
  ) {
    this.server = createServer((socket) => this.serve(socket));
  }

  private readonly attempts = new Map<string, number>();

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address !== null ? address.port : 0;
  }

  get bootstrap(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Drops every open connection (the broker stays up). */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.dropConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    const decoder = new FrameDecoder(1 << 26);
    // Answers go back in request order, as a real broker's do.
    let answered: Promise<void> = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        const reader = new WireReader(frame);
        const header = decodeRequestHeader(reader);
        const answer = this.handle(header.apiKey, header.apiVersion, reader);
        answered = answered.then(async () => {
          const response = await answer;
          if (response === undefined || socket.destroyed) return;
          const writer = new WireWriter();
          writer.int32(0);
          encodeResponseHeader(writer, header.correlationId);
          encodeResponseBody(response.api, header.apiVersion, response.body, writer);
          const bytes = writer.toBuffer();
          bytes.writeInt32BE(bytes.length - 4, 0);
          socket.write(bytes);
        });
      }
    });
  }

  private async handle(apiKey: number, version: number, reader: WireReader): Promise<{ api: ApiSchema<unknown, unknown>; body: unknown } | undefined> {
    if (apiKey === MetadataApi.apiKey) {
      const request = decodeRequestBody(MetadataApi, version, reader);
      return { api: MetadataApi, body: this.metadata(request) };
    }
    if (apiKey === ProduceApi.apiKey) {
      const request = decodeRequestBody(ProduceApi, version, reader);
      this.produceRequests.push(request);
      const response = await this.produce(request);
      return request.acks === 0 ? undefined : { api: ProduceApi, body: response };
    }
    throw new Error(`fake broker got api ${apiKey}`);
  }

  private metadata(request: MetadataRequest): MetadataResponse {
    this.cluster.metadataRequests += 1;
    const names = request.topics === null ? [...this.cluster.topics.keys()] : request.topics.map((topic) => topic.name);
    return {
      throttleTimeMs: 0,
      brokers: this.cluster.brokers.map((broker) => ({ nodeId: broker.id, host: '127.0.0.1', port: broker.port, rack: null })),
      clusterId: 'fake',
      controllerId: 0,
      topics: names.map((name) => {
        const leaders = this.cluster.topics.get(name);
        return {
          errorCode: leaders === undefined ? this.cluster.missingTopicError : 0,
          name,
          isInternal: false,
          partitions: (leaders ?? []).map((leader, partitionIndex) => ({
            errorCode: leader < 0 ? KafkaErrorCode.LEADER_NOT_AVAILABLE : 0,
            partitionIndex,
            leaderId: leader,
            leaderEpoch: 0,
            replicaNodes: [leader],
            isrNodes: [leader],
            offlineReplicas: [],
          })),
          topicAuthorizedOperations: -2147483648,
        };
      }),
      clusterAuthorizedOperations: -2147483648,
    };
  }

  private async produce(request: ProduceRequest): Promise<ProduceResponse> {
    const keys = request.topicData.flatMap((topic) => topic.partitionData.map((data) => `${topic.name}/${data.index}`));
    for (const key of keys) {
      if (this.handling.has(key)) this.overlaps += 1;
      this.handling.add(key);
    }
    await new Promise((resolve) => setTimeout(resolve, this.answerDelayMs));
    const responses = request.topicData.map((topic) => ({
      name: topic.name,
      partitionResponses: topic.partitionData.map((data): ProducePartitionResponse => {
        const key = `${topic.name}/${data.index}`;
        const attempt = (this.attempts.get(key) ?? 0) + 1;
        this.attempts.set(key, attempt);
        const decision = this.decide(topic.name, data.index, attempt);
        const base = { index: data.index, logAppendTimeMs: -1n, logStartOffset: 0n, recordErrors: [], errorMessage: null };
        if (decision === 'append') {
          const log = this.stored.get(key) ?? [];
          this.stored.set(key, log);
          const baseOffset = BigInt(log.length);
          for (const record of decodeRecords(data.records ?? Buffer.alloc(0))) log.push(record.value?.toString() ?? '');
          return { ...base, errorCode: 0, baseOffset };
        }
        if (decision === 'hang') return { ...base, errorCode: KafkaErrorCode.REQUEST_TIMED_OUT, baseOffset: -1n };
        return { ...base, errorCode: decision.errorCode, baseOffset: -1n, errorMessage: decision.errorMessage ?? null };
      }),
    }));
    for (const key of keys) this.handling.delete(key);
    return { responses, throttleTimeMs: 0 };
  }
}

const running: FakeBroker[] = [];
const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await Promise.all(running.splice(0).map((broker) => broker.stop()));
});

async function fakeCluster(count: number, topics: Record<string, number[]> = {}): Promise<{ state: ClusterState; brokers: FakeBroker[] }> {
  const state: ClusterState = { brokers: [], topics: new Map(Object.entries(topics)), missingTopicError: KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, metadataRequests: 0 };
  for (let id = 0; id < count; id += 1) {
    const broker = new FakeBroker(id, state);
    await broker.start();
    state.brokers.push(broker);
    running.push(broker);
  }
  return { state, brokers: state.brokers };
}

async function connect(bootstrap: string, options: Omit<Parameters<typeof Producer.connect>[0], 'bootstrap'> = {}): Promise<Producer> {
  // These fakes neither serve InitProducerId nor dedupe: they pin the non-idempotent path (idempotent-producer.test.ts has the other).
  const producer = await Producer.connect({ bootstrap: [bootstrap], retryBackoffMs: 5, retryBackoffMaxMs: 20, idempotent: false, ...options });
  closers.push(() => producer.close());
  return producer;
}

const values = (prefix: string, count: number): { value: Buffer }[] => Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`${prefix}-${i}`) }));
const texts = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('producer retries', () => {
  it('retries NOT_LEADER_OR_FOLLOWER after a metadata refresh, with one batch in flight and the records in send order', async () => {
    const { state, brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    broker!.decide = (_topic, _partition, attempt) => (attempt <= 2 || attempt === 5 ? { errorCode: KafkaErrorCode.NOT_LEADER_OR_FOLLOWER } : 'append');
    const producer = await connect(broker!.bootstrap, { lingerMs: 0, batchSize: 200 });
    const metadataBefore = state.metadataRequests;
    const sends = Array.from({ length: 20 }, (_, i) => producer.send('t', values(`s${i}`, 7)));
    const results = await Promise.all(sends);
    const expected = Array.from({ length: 20 }, (_, i) => texts(`s${i}`, 7)).flat();
    expect(broker!.stored.get('t/0')).toEqual(expected);
    expect(results.flat().map((result) => result.offset)).toEqual(expected.map((_, i) => BigInt(i)));
    expect(broker!.overlaps).toBe(0);
    // Two refused attempts, then the retried batch with everything queued behind it merged in.
    expect(broker!.produceRequests.length).toBeGreaterThan(2);
    expect(state.metadataRequests).toBeGreaterThan(metadataBefore);
  });

  it('with retries 0, pipelines several batches of a partition and keeps them in order', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    const producer = await connect(broker!.bootstrap, { retries: 0, lingerMs: 0, batchSize: 200 });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => producer.send('t', values(`s${i}`, 5))));
    const expected = Array.from({ length: 30 }, (_, i) => texts(`s${i}`, 5)).flat();
    expect(broker!.stored.get('t/0')).toEqual(expected);
    expect(results.flat().map((result) => result.offset)).toEqual(expected.map((_, i) => BigInt(i)));
    expect(broker!.overlaps).toBeGreaterThan(0);
  });

  it('follows a leader that moved to another broker', async () => {
    const { state, brokers } = await fakeCluster(2, { t: [0, 0] });
    const [first, second] = brokers;
    first!.decide = (_topic, partition) => {
      if (partition !== 1) return 'append';
      state.topics.set('t', [0, 1]); // partition 1 moves to broker 1
      return { errorCode: KafkaErrorCode.NOT_LEADER_OR_FOLLOWER };
    };
    const producer = await connect(first!.bootstrap, { lingerMs: 1 });
    const results = await producer.send('t', [...values('p0', 3).map((r) => ({ ...r, partition: 0 })), ...values('p1', 3).map((r) => ({ ...r, partition: 1 }))]);
    expect(results.map((result) => result.partition)).toEqual([0, 0, 0, 1, 1, 1]);
    expect(first!.stored.get('t/0')).toEqual(texts('p0', 3));
    expect(first!.stored.get('t/1')).toBeUndefined();
    expect(second!.stored.get('t/1')).toEqual(texts('p1', 3));
  });

  it('sends again over a new connection when the old one dropped mid-request', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    broker!.decide = (_topic, _partition, attempt) => {
      if (attempt === 1) {
        broker!.dropConnections();
        return 'hang';
      }
      return 'append';
    };
    const producer = await connect(broker!.bootstrap, { lingerMs: 0 });
    await producer.send('t', values('a', 5));
    expect(broker!.stored.get('t/0')).toEqual(texts('a', 5));
    expect(broker!.produceRequests).toHaveLength(2);
  });

  it('gives up on a retriable error after `retries` and says so, naming the Kafka error', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    broker!.decide = () => ({ errorCode: KafkaErrorCode.LEADER_NOT_AVAILABLE });
    const producer = await connect(broker!.bootstrap, { retries: 2, lingerMs: 0 });
    const error = await producer.send('t', values('x', 3)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TributaryError);
    expect(error).toMatchObject({ code: 'LEADER_NOT_AVAILABLE', retriable: true });
    expect((error as Error).message).toMatch(/gave up after 3 attempts \(retries: 2\)/);
    expect(broker!.produceRequests).toHaveLength(3);
  });

  it('fails only the sends of a batch refused with a non-retriable error, at once, with advice', async () => {
    const { brokers } = await fakeCluster(1, { t: [0, 0] });
    const [broker] = brokers;
    broker!.decide = (_topic, partition) => (partition === 1 ? { errorCode: KafkaErrorCode.MESSAGE_TOO_LARGE, errorMessage: 'batch of 2000000 bytes' } : 'append');
    const producer = await connect(broker!.bootstrap, { lingerMs: 0 });
    const [good, bad] = await Promise.allSettled([
      producer.send('t', values('ok', 2).map((r) => ({ ...r, partition: 0 }))),
      producer.send('t', values('big', 2).map((r) => ({ ...r, partition: 1 }))),
    ]);
    expect(good.status).toBe('fulfilled');
    expect(bad.status).toBe('rejected');
    const error = (bad as PromiseRejectedResult).reason as TributaryError;
    expect(error).toMatchObject({ code: 'MESSAGE_TOO_LARGE', retriable: false });
    expect(error.message).toContain('batch of 2000000 bytes');
    expect(error.message).toContain('message.max.bytes');
    expect(broker!.produceRequests.filter((request) => request.topicData.some((t) => t.partitionData.some((p) => p.index === 1)))).toHaveLength(1);
  });

  it('groups ready batches of partitions led by the same broker into one request', async () => {
    const { brokers } = await fakeCluster(1, { t: [0, 0, 0, 0] });
    const [broker] = brokers;
    const producer = await connect(broker!.bootstrap, { lingerMs: 20 });
    await producer.send('t', [0, 1, 2, 3].map((partition) => ({ value: Buffer.from(`v${partition}`), partition })));
    expect(broker!.produceRequests).toHaveLength(1);
    expect(broker!.produceRequests[0]?.topicData[0]?.partitionData.map((p) => p.index).sort()).toEqual([0, 1, 2, 3]);
  });

  it('acks=0 resolves without an answer, with offset -1', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    const producer = await connect(broker!.bootstrap, { acks: 0, lingerMs: 0 });
    const results = await producer.send('t', values('z', 3));
    expect(results.map((result) => result.offset)).toEqual([-1n, -1n, -1n]);
    await expect.poll(() => broker!.stored.get('t/0')).toEqual(texts('z', 3));
    expect(broker!.produceRequests[0]?.acks).toBe(0);
  });

  it('refuses sends after close and bad options up front', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const producer = await connect(brokers[0]!.bootstrap);
    await producer.close();
    await expect(producer.send('t', values('late', 1))).rejects.toMatchObject({ code: 'PRODUCER_CLOSED' });
    await expect(connect(brokers[0]!.bootstrap, { acks: 2 as never, batchSize: 0 })).rejects.toThrow(/acks must be -1, 0 or 1.*batchSize must be/);
  });
});

describe('ClusterClient', () => {
  it('asks again, with backoff, for a topic that is LEADER_NOT_AVAILABLE right after auto-creation', async () => {
    const { state, brokers } = await fakeCluster(1);
    state.missingTopicError = KafkaErrorCode.LEADER_NOT_AVAILABLE;
    const cluster = await ClusterClient.connect({ bootstrap: [brokers[0]!.bootstrap], metadataRetryBackoffMs: 5 });
    closers.push(() => cluster.close());
    setTimeout(() => state.topics.set('fresh', [0, 0, 0]), 30);
    expect(await cluster.partitionsFor('fresh')).toEqual([0, 1, 2]);
    expect(state.metadataRequests).toBeGreaterThan(2);
  });

  it('gives up on a topic that never becomes ready with a retriable error naming it', async () => {
    const { state, brokers } = await fakeCluster(1);
    state.missingTopicError = KafkaErrorCode.LEADER_NOT_AVAILABLE;
    const cluster = await ClusterClient.connect({ bootstrap: [brokers[0]!.bootstrap], metadataRetries: 3, metadataRetryBackoffMs: 1 });
    closers.push(() => cluster.close());
    const error = await cluster.partitionsFor('never').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LEADER_NOT_AVAILABLE', retriable: true });
    expect((error as Error).message).toMatch(/topic "never" has no usable metadata after 4 attempts/);
  });

  it('reconnects after a dropped connection, and backs off while a broker is unreachable', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    const cluster = await ClusterClient.connect({ bootstrap: [broker!.bootstrap], reconnectBackoffMs: 50 });
    closers.push(() => cluster.close());
    const first = await cluster.leaderConnection('t', 0);
    broker!.dropConnections();
    await expect(first.request(MetadataApi, 8, { topics: [], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false })).rejects.toMatchObject({
      code: 'CONNECTION_LOST',
    });
    const started = Date.now();
    const second = await cluster.leaderConnection('t', 0);
    expect(second).not.toBe(first);
    expect(Date.now() - started).toBeGreaterThanOrEqual(35); // 50 ms ± 20 % jitter
    await cluster.refreshMetadata(['t']);
    expect(await cluster.leaderConnection('t', 0)).toBe(second);
  });

  it('fails clearly when no bootstrap broker answers', async () => {
    const { brokers } = await fakeCluster(1);
    const address = brokers[0]!.bootstrap;
    await brokers[0]!.stop();
    running.splice(0);
    await expect(ClusterClient.connect({ bootstrap: [address] })).rejects.toMatchObject({ code: 'BROKER_UNREACHABLE', retriable: true });
    await expect(ClusterClient.connect({ bootstrap: ['no-port'] })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});

describe('producer batching', () => {
  it('merges the batches queued behind an in-flight one into one request, in order', async () => {
    const { brokers } = await fakeCluster(1, { t: [0] });
    const [broker] = brokers;
    const producer = await connect(broker!.bootstrap, { lingerMs: 0, batchSize: 100 });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => producer.send('t', values(`m${i}`, 4))));
    const expected = Array.from({ length: 50 }, (_, i) => texts(`m${i}`, 4)).flat();
    expect(broker!.stored.get('t/0')).toEqual(expected);
    expect(results.flat().map((result) => result.offset)).toEqual(expected.map((_, i) => BigInt(i)));
    // 50 sends of ~100-byte batches, but far fewer round trips.
    expect(broker!.produceRequests.length).toBeLessThan(25);
  });
});
