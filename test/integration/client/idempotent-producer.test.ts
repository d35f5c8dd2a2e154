/**
 * The idempotent producer against a real (in-process) broker reached only through a TCP proxy
 * that cuts connections while numbered records are in flight. The broker listens on 127.0.0.2 and
 * advertises the proxy's 127.0.0.1 address, so the client never goes around the proxy.
 *
 * - Random cuts (test/support/tcp-proxy.ts): with idempotence every record is stored exactly
 *   once, in send order per partition; without it the same faults may store some twice, which the
 *   test counts and reports.
 * - Lost answers, made reliable by a proxy that forwards a Produce and cuts the connection when
 *   the answer comes back: without idempotence the retry stores the batch again (the detector
 *   works); with it the broker recognises the retry and answers with the original offset.
 */
import { mkdtempSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { Producer, type RecordMetadata } from '../../../src/client/producer.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const BROKER_HOST = '127.0.0.2';
const PARTITIONS = 3;
const silent = createLogger({ name: 'idempotent-producer-test', level: 'silent' });

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A broker on BROKER_HOST:port that advertises 127.0.0.1:port, where the caller's proxy listens. */
async function brokerBehind(port: number): Promise<Broker> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tributary-idempotent-'));
  const broker = await Broker.start({
    id: 0,
    listen: { host: BROKER_HOST, port },
    advertisedHost: '127.0.0.1',
    dataDir,
    config: parseBrokerConfig({ 'num.partitions': String(PARTITIONS) }, 'test settings'),
    store: new MemoryCoordination({ file: join(dataDir, 'standalone-coordination.json') }).session(),
    logger: createLogger({ name: 'test-broker', level: 'silent', destination: new Writable({ write: (_chunk, _encoding, done) => done() }) }),
  });
  cleanups.push(() => broker.stop());
  return broker;
}

async function proxiedBroker(): Promise<{ proxy: TcpProxy }> {
  const target = { host: BROKER_HOST, port: 0 };
  const proxy = await startTcpProxy(target);
  cleanups.push(() => proxy.close());
  target.port = proxy.port;
  await brokerBehind(proxy.port);
  return { proxy };
}

/** The values stored in each partition of `topic`, in offset order. */
async function storedValues(bootstrap: string, topic: string): Promise<string[][]> {
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], allowAutoTopicCreation: false });
  try {
    const consumer = new SimpleConsumer(cluster);
    const partitions: string[][] = [];
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const values: string[] = [];
      let offset = 0n;
      for (;;) {
        const { records, nextOffset, highWatermark } = await consumer.fetch(topic, partition, offset);
        for (const record of records) values.push(record.value?.toString() ?? '');
        offset = nextOffset;
        if (offset >= highWatermark) break;
      }
      partitions.push(values);
    }
    return partitions;
  } finally {
    cluster.close();
  }
}

/** Sends `count` numbered records, `perSend` to a call, spread round-robin over the partitions. */
async function sendNumbered(producer: Producer, topic: string, count: number, perSend: number): Promise<RecordMetadata[]> {
  const sends: Promise<RecordMetadata[]>[] = [];
  for (let first = 0; first < count; first += perSend) {
    const records = Array.from({ length: Math.min(perSend, count - first) }, (_, i) => ({ value: Buffer.from(`n${first + i}`), partition: (first + i) % PARTITIONS }));
    sends.push(producer.send(topic, records));
    // Keep sends coming while the proxy cuts, rather than all queued before the first cut.
    if (sends.length % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return (await Promise.all(sends)).flat();
}

function expectedPerPartition(count: number): string[][] {
  return Array.from({ length: PARTITIONS }, (_, partition) => Array.from({ length: count }, (_, i) => i).filter((i) => i % PARTITIONS === partition).map((i) => `n${i}`));
}

/** Cuts every proxied connection every 20–50 ms, until stopped; returns how many cuts it made. */
function cutRepeatedly(proxy: TcpProxy): { stop: () => Promise<number> } {
  let running = true;
  let cuts = 0;
  const loop = (async () => {
    while (running) {
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 30));
      if (!running) break;
      proxy.block();
      cuts += 1;
      await new Promise((resolve) => setTimeout(resolve, 2));
      proxy.unblock();
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return cuts;
    },
  };
}

function duplicatesIn(partitions: readonly string[][]): number {
  return partitions.reduce((sum, values) => sum + values.length - new Set(values).size, 0);
}

const COUNT = 3000;

describe('idempotent producer through a proxy that cuts connections', () => {
  it('stores every record exactly once, in send order per partition', { timeout: 120_000 }, async () => {
    const { proxy } = await proxiedBroker();
    const producer = await Producer.connect({ bootstrap: [proxy.address], retries: 1000, retryBackoffMs: 10, retryBackoffMaxMs: 100, lingerMs: 1, batchSize: 1024, logger: silent });
    cleanups.push(() => producer.close());
    expect(producer.idempotent).toBe(true);
    const cutter = cutRepeatedly(proxy);
    const results = await sendNumbered(producer, 'numbered', COUNT, 10);
    const cuts = await cutter.stop();
    expect(cuts).toBeGreaterThan(0);
    const stored = await storedValues(proxy.address, 'numbered');
    console.info(`idempotent, ${cuts} cuts: ${duplicatesIn(stored)} duplicate records of ${COUNT}`);
    expect(stored).toEqual(expectedPerPartition(COUNT));
    // And each send was told where its record really is.
    for (const [index, metadata] of results.entries()) expect(stored[metadata.partition]?.[Number(metadata.offset)]).toBe(`n${index}`);
  });

  it('with idempotent: false the same cuts may store records twice (counted and reported), never out of order', { timeout: 120_000 }, async () => {
    const { proxy } = await proxiedBroker();
    const producer = await Producer.connect({ bootstrap: [proxy.address], idempotent: false, retries: 1000, retryBackoffMs: 10, retryBackoffMaxMs: 100, lingerMs: 1, batchSize: 1024, logger: silent });
    cleanups.push(() => producer.close());
    const cutter = cutRepeatedly(proxy);
    await sendNumbered(producer, 'numbered', COUNT, 10);
    const cuts = await cutter.stop();
    const stored = await storedValues(proxy.address, 'numbered');
    const duplicates = duplicatesIn(stored);
    console.info(`idempotent: false, ${cuts} cuts: ${duplicates} duplicate records of ${COUNT}`);
    expect(duplicates).toBeGreaterThanOrEqual(0);
    // At least once: every record is there; duplicates (if any) sit right after the original batch.
    expect(stored.map((values) => [...new Set(values)])).toEqual(expectedPerPartition(COUNT));
  });
});

/**
 * A proxy that, when armed, forwards the client's bytes but cuts the connection as soon as the
 * broker answers: the request was handled (a Produce stored), the answer never arrives.
 */
async function answerLosingProxy(): Promise<{ address: string; port: number; loseNextAnswer: () => void; cut: () => number }> {
  let armed = false;
  let cuts = 0;
  const target = { host: BROKER_HOST, port: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection(target);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(socket);
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (armed) {
        armed = false;
        cuts += 1;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
  });
  const port = await new Promise<number>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
  target.port = port;
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { address: `127.0.0.1:${port}`, port, loseNextAnswer: () => void (armed = true), cut: () => cuts };
}

describe('a lost Produce answer', () => {
  for (const idempotent of [false, true]) {
    it(`idempotent: ${idempotent}: the retry ${idempotent ? 'is recognised and answered with the original offset' : 'stores the batch a second time'}`, { timeout: 60_000 }, async () => {
      const proxy = await answerLosingProxy();
      await brokerBehind(proxy.port);
      const producer = await Producer.connect({ bootstrap: [proxy.address], idempotent, retryBackoffMs: 10, logger: silent });
      cleanups.push(() => producer.close());
      await producer.send('answers', [{ value: Buffer.from('before'), partition: 0 }]);
      proxy.loseNextAnswer();
      const [metadata] = await producer.send('answers', [{ value: Buffer.from('lost-answer'), partition: 0 }]);
      expect(proxy.cut()).toBe(1);
      const [stored] = await storedValues(proxy.address, 'answers');
      if (idempotent) {
        expect(stored).toEqual(['before', 'lost-answer']);
        expect(metadata?.offset).toBe(1n);
      } else {
        expect(stored).toEqual(['before', 'lost-answer', 'lost-answer']);
        expect(metadata?.offset).toBe(2n);
      }
    });
  }
});
