/**
 * The broker's connection handling, seen from a raw socket: responses in request order under
 * pipelining, idle connections closed, metrics exported, and a clean stop on SIGTERM.
 */
import { existsSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderMetrics } from '../../../src/common/metrics.js';
import { KafkaConnection } from '../../../src/client/connection.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';
import { FetchApi } from '../../../src/protocol/apis/fetch.js';
import { MetadataApi } from '../../../src/protocol/apis/metadata.js';
import { ApiVersionsApi } from '../../../src/protocol/apis/api-versions.js';
import { encodeRequestHeader } from '../../../src/protocol/headers.js';
import { encodeRequestBody, type ApiSchema } from '../../../src/protocol/schema.js';
import { WireWriter } from '../../../src/protocol/wire.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { kcat } from '../../support/kcat.js';
import { services } from '../services.js';

function frame<Request>(api: ApiSchema<Request, unknown>, version: number, correlationId: number, request: Request): Buffer {
  const writer = new WireWriter();
  writer.int32(0);
  encodeRequestHeader(writer, { apiKey: api.apiKey, apiVersion: version, correlationId, clientId: 'raw' });
  encodeRequestBody(api, version, request, writer);
  const bytes = writer.toBuffer();
  bytes.writeInt32BE(bytes.length - 4, 0);
  return bytes;
}

function openSocket(bootstrap: string): Promise<Socket> {
  const [host = '', port = ''] = bootstrap.split(':');
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port: Number(port) });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Correlation ids of the next `count` response frames. */
function correlationIds(socket: Socket, count: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const ids: number[] = [];
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
        ids.push(buffered.readInt32BE(4));
        buffered = buffered.subarray(4 + buffered.readInt32BE(0));
        if (ids.length === count) resolve(ids);
      }
    });
    socket.once('close', () => reject(new Error(`connection closed after ${ids.length} responses`)));
  });
}

describe('broker connections', () => {
  let broker: InProcessBroker;
  beforeAll(async () => {
    broker = await startInProcessBroker({ 'connections.max.idle.ms': '1500' });
  });
  afterAll(async () => {
    await broker.stop();
  });

  it('answers pipelined requests in the order they were sent', async () => {
    const socket = await openSocket(broker.bootstrap);
    const metadata = { topics: [{ name: 'pipelined' }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false };
    const frames = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0 ? frame(ApiVersionsApi, 2, 1000 + i, {}) : frame(MetadataApi, 8, 1000 + i, metadata),
    );
    const answered = correlationIds(socket, frames.length);
    socket.write(Buffer.concat(frames));
    expect(await answered).toEqual(frames.map((_, i) => 1000 + i));
    socket.destroy();
  });

  it('parks a fetch with too few bytes and wakes it when new records are flushed', async () => {
    const [host = '', port = ''] = broker.bootstrap.split(':');
    const connection = await KafkaConnection.open(host, Number(port), { requestTimeoutMs: 120_000 });
    const created = await kcat(['-b', broker.bootstrap, '-P', '-t', 'parked', '-p', '0', '-X', 'acks=all'], 'first\n');
    expect(created.status, created.stderr).toBe(0);
    // MaxWaitMs far beyond the test's timeout: only the wake-up on new data can answer in time.
    const parked = connection.request(FetchApi, 11, {
      replicaId: -1,
      maxWaitMs: 600_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 1,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: 'parked', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 1n, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] }],
      forgottenTopicsData: [],
      rackId: '',
    });
    const produced = await kcat(['-b', broker.bootstrap, '-P', '-t', 'parked', '-p', '0', '-X', 'acks=all'], 'second\n');
    expect(produced.status, produced.stderr).toBe(0);
    const response = await parked;
    const partition = response.responses[0]?.partitions[0];
    expect(partition?.errorCode).toBe(0);
    expect(partition?.highWatermark).toBe(2n);
    const records = partition?.records;
    expect(Buffer.isBuffer(records) && records.readBigInt64BE(0)).toBe(1n);
    connection.close();
  }, 30_000);

  it('applies topic configs given at creation, refuses unknown ones with INVALID_CONFIG and partitions beyond the per-request limit with POLICY_VIOLATION', async () => {
    const [host = '', port = ''] = broker.bootstrap.split(':');
    const connection = await KafkaConnection.open(host, Number(port));
    const create = (name: string, configs: { name: string; value: string }[]) =>
      connection.request(CreateTopicsApi, 4, { topics: [{ name, numPartitions: 2, replicationFactor: 1, assignments: [], configs }], timeoutMs: 10_000, validateOnly: false });
    const created = await create('configured', [{ name: 'retention.ms', value: '3600000' }, { name: 'segment.bytes', value: '1048576' }]);
    expect(created.topics[0]?.errorCode).toBe(0);
    await expect.poll(() => broker.broker.logManager.getLog('configured', 1)?.config.retentionMs, { timeout: 10_000 }).toBe(3_600_000);
    expect(broker.broker.logManager.getLog('configured', 0)?.config.segmentBytes).toBe(1_048_576);
    const refused = await create('misconfigured', [{ name: 'retention.mss', value: '1' }]);
    expect(refused.topics[0]).toMatchObject({ errorCode: 40, errorMessage: expect.stringContaining('unknown topic config retention.mss') as unknown });
    const tooMany = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: 'huge', numPartitions: 100_000, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false,
    });
    expect(tooMany.topics[0]).toMatchObject({ errorCode: 44, errorMessage: expect.stringContaining('create.topic.max.partitions') as unknown });
    // The limit holds over the whole request: the second topic does not fit beside the first.
    const twoLarge = await connection.request(CreateTopicsApi, 4, {
      topics: ['large-a', 'large-b'].map((name) => ({ name, numPartitions: 3000, replicationFactor: 1, assignments: [], configs: [] })),
      timeoutMs: 10_000,
      validateOnly: true,
    });
    expect(twoLarge.topics.map((topic) => topic.errorCode)).toEqual([0, 44]);
    const none = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: 'empty', numPartitions: 0, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false,
    });
    expect(none.topics[0]?.errorCode).toBe(37);
    connection.close();
  });

  it('stores every byte of large produce requests from concurrent producers (their frames reuse pooled buffers)', async () => {
    // librdkafka batches ~1 MB per request: each frame spans many socket chunks, is copied into a
    // pooled buffer, and that buffer is lent again once the request is answered. Handing it back
    // too early would put one producer's bytes into another's records.
    const lines = (producer: number): string[] =>
      Array.from({ length: 15_000 }, (_, i) => `${producer}:${i}:`.padEnd(400, String.fromCharCode(97 + ((producer * 7 + i) % 26))));
    const inputs = [0, 1, 2].map((producer) => lines(producer));
    const runs = await Promise.all(inputs.map((input) =>
      kcat(['-b', broker.bootstrap, '-P', '-t', 'pooled-frames', '-p', '0', '-X', 'acks=1'], `${input.join('\n')}\n`)));
    for (const run of runs) expect(run.status, run.stderr).toBe(0);
    const read = await kcat(['-b', broker.bootstrap, '-C', '-t', 'pooled-frames', '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%s\n']);
    expect(read.status, read.stderr).toBe(0);
    const stored = read.stdout.split('\n').filter((line) => line !== '');
    expect(stored.length).toBe(45_000);
    expect(stored.sort()).toEqual(inputs.flat().sort());
  }, 60_000);

  it('closes a connection that stays idle longer than connections.max.idle.ms', async () => {
    const socket = await openSocket(broker.bootstrap);
    const closed = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)));
    expect(await closed).toBe(true);
  });

  it('counts bytes and records in per topic in its Prometheus metrics', async () => {
    const produced = await kcat(['-b', broker.bootstrap, '-P', '-t', 'metered', '-p', '0'], 'one\ntwo\nthree\n');
    expect(produced.status, produced.stderr).toBe(0);
    const { body } = await renderMetrics();
    expect(body).toMatch(/tributary_broker_records_in_total\{topic="metered"\} 3/);
    expect(body).toMatch(/tributary_broker_bytes_in_total\{topic="metered"\} \d+/);
    expect(body).toMatch(/tributary_broker_request_seconds_count\{api="Produce"\} [1-9]/);
  });
});

describe('tributary broker start', () => {
  it('serves /metrics and stops cleanly on SIGTERM: exit 0, logs flushed, clean-shutdown marker written', async () => {
    const broker = await startBrokerProcess({ run: openRun(services().runDir), id: 11, metrics: true });
    const produced = await kcat(['-b', broker.bootstrap, '-P', '-t', 'stopping', '-p', '0', '-X', 'acks=all'], 'a\nb\n');
    expect(produced.status, produced.stderr).toBe(0);
    const metrics = await fetch(`http://${broker.metricsAddress}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/tributary_broker_records_in_total\{topic="stopping"\} 2/);
    expect(await broker.stop()).toBe(0);
    expect(existsSync(join(broker.dataDir, '.clean-shutdown'))).toBe(true);
  });
});
