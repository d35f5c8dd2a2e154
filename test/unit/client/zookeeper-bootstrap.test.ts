/**
 * Bootstrap addresses from a cluster's broker registry: a client takes each broker's endpoint of
 * the security protocol it speaks (Kafka's `endpoints` + `listener_security_protocol_map`), and a
 * registration from before listeners is one PLAINTEXT endpoint.
 */
import { describe, expect, it } from 'vitest';
import { bootstrapFromZooKeeper } from '../../../src/client/zookeeper-bootstrap.js';
import { TributaryError } from '../../../src/common/errors.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { brokerIdsPath, brokerPath } from '../../../src/coordination/paths.js';
import type { CoordinationStore } from '../../../src/coordination/store.js';

async function registry(registrations: Record<number, object>): Promise<CoordinationStore> {
  const store = new MemoryCoordination().session();
  await store.ensurePath(brokerIdsPath());
  for (const [id, registration] of Object.entries(registrations)) await store.create(brokerPath(Number(id)), Buffer.from(JSON.stringify(registration)), 'ephemeral');
  return store;
}

describe('bootstrapFromZooKeeper', () => {
  it("picks each broker's listener of the client's protocol", async () => {
    const store = await registry({
      2: { host: 'b2', port: 9092, endpoints: ['INTERNAL://b2:9092', 'EXTERNAL://b2:9094'], listener_security_protocol_map: { INTERNAL: 'PLAINTEXT', EXTERNAL: 'SASL_SSL' } },
      1: { host: 'b1', port: 9092, endpoints: ['PLAINTEXT://b1:9092', 'SASL_SSL://[::1]:9093', 'SSL://b1:9095'] },
    });
    expect(await bootstrapFromZooKeeper(store)).toEqual(['b1:9092', 'b2:9092']);
    expect(await bootstrapFromZooKeeper(store, 'SASL_SSL')).toEqual(['[::1]:9093', 'b2:9094']);
    expect(await bootstrapFromZooKeeper(store, 'SSL').catch((error: unknown) => error)).toMatchObject({ code: 'NO_MATCHING_LISTENER' });
  });

  it('reads a registration without endpoints as one PLAINTEXT listener, and says so to a secured client', async () => {
    const store = await registry({ 0: { host: 'old', port: 9092 } });
    expect(await bootstrapFromZooKeeper(store)).toEqual(['old:9092']);
    const error = await bootstrapFromZooKeeper(store, 'SASL_SSL').catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).message).toContain('registers only a PLAINTEXT listener, but this client speaks SASL_SSL');
  });
});
