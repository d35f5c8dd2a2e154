/**
 * The disk-full chaos runs of issue #22 (test/chaos/disk*.ts), short: a broker, the schema
 * registry's file store and the loader's local warehouse, each on a small tmpfs filled to its last
 * page and given space back, with their invariants checked (see each runner). The broker run also
 * checks what kafkajs, a client users run, is told while the disk is full. Needs root (tmpfs).
 */
import { Kafka, logLevel } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { runDiskFullBroker } from '../../chaos/disk-broker.js';
import { runDiskFullRegistry } from '../../chaos/disk-registry.js';
import { runDiskFullWarehouse } from '../../chaos/disk-warehouse.js';
import { openRun } from '../../services/run-dir.js';
import { seededRandom } from '../../support/seeded-random.js';
import { tmpfsSupported } from '../../support/tmpfs.js';
import { services } from '../services.js';

beforeAll(() => {
  expect(tmpfsSupported(), 'mounting a tmpfs must work here (run as root)').toBe(true);
});

/** kafkajs without retries: the produce must fail with Kafka's storage error, nothing else. */
async function kafkajsRefused(bootstrap: string): Promise<void> {
  const kafka = new Kafka({ clientId: 'disk-full-test', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const producer = kafka.producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    let refusal: unknown;
    // The first sends may still fit pages the log already holds.
    for (let attempt = 0; attempt < 50 && refusal === undefined; attempt += 1) {
      await producer.send({ topic: 'disk-full', acks: -1, messages: [{ partition: attempt % 3, value: 'k'.repeat(64 * 1024) }] }).catch((error: unknown) => {
        refusal = error;
      });
    }
    const error = refusal as { type?: unknown; message?: unknown; cause?: { type?: unknown } } | undefined;
    const name = error?.type ?? error?.cause?.type;
    if (name !== 'KAFKA_STORAGE_ERROR') {
      const told = typeof name === 'string' ? name : error === undefined ? 'nothing (every send succeeded)' : JSON.stringify(error.message);
      throw new Error(`kafkajs was told ${told}, not KAFKA_STORAGE_ERROR`);
    }
  } finally {
    await producer.disconnect();
  }
}

describe('disk full (short chaos runs)', () => {
  it('a broker refuses produce with KAFKA_STORAGE_ERROR, serves reads, survives a SIGKILL on the full disk and takes writes again once there is room', async () => {
    const result = await runDiskFullBroker({ run: openRun(services().runDir), cycles: 2, killEvery: 2, random: seededRandom(22), probes: 3, whileFull: kafkajsRefused });
    expect(result.violations).toEqual([]);
    expect(result.refusedRequests).toBeGreaterThan(0);
    expect([...result.refusedByCode.keys()]).toEqual([56]);
    expect(result.readsWhileFull).toBe(2);
    expect(result.resumeMs).toHaveLength(2);
    expect(result.lost + result.refusedStored + result.duplicated).toBe(0);
  }, 60_000);

  it("the registry's file store answers 5xx with Confluent's body, serves reads, never shows a refused schema and registers again once there is room", async () => {
    const result = await runDiskFullRegistry({ run: openRun(services().runDir), cycles: 2, killEvery: 2, attemptsWhileFull: 3, random: seededRandom(22) });
    expect(result.violations).toEqual([]);
    expect(result.refused).toBeGreaterThan(0);
    expect(result.resumeMs).toHaveLength(2);
    expect(result.lost).toBe(0);
  }, 60_000);

  it('a load into a full local warehouse fails clearly and commits nothing; the next run loads exactly once', async () => {
    const result = await runDiskFullWarehouse({ run: openRun(services().runDir), cycles: 1, recordsPerCycle: 150, random: seededRandom(22) });
    expect(result.violations).toEqual([]);
    expect(result.refusedRuns).toBe(1);
    expect(result.commits).toBe(1);
    expect(result.lost + result.duplicated).toBe(0);
  }, 60_000);
});
