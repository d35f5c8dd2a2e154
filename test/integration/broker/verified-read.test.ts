/**
 * The checker of the storage fault runs (test/support/verified-read.ts) must see damage when a
 * broker serves it, or its "nothing corrupt served" proves nothing. A clean stop is the one case
 * where a broker serves a damaged active segment as it is: like Kafka, it checks segments only
 * from the recovery point after an unclean stop (a clean stop flushed everything), and leaves the
 * CRC to the clients (Java's check.crcs, librdkafka's check.crcs). The checker must say so.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaConnection } from '../../../src/client/connection.js';
import { Producer } from '../../../src/client/producer.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { readVerified } from '../../support/verified-read.js';

let broker: InProcessBroker | undefined;
afterAll(async () => {
  await broker?.stop();
});

describe('the verified reader', () => {
  it('reads a healthy partition whole, then reports the CRC of a damaged batch a broker serves', async () => {
    broker = await startInProcessBroker({ 'log.index.interval.bytes': '64' });
    const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, lingerMs: 0 });
    for (let batch = 0; batch < 20; batch += 1) await producer.send('checked', Array.from({ length: 5 }, (_, index) => ({ partition: 0, key: null, value: Buffer.from(`v${batch}-${index}`) })));
    await producer.close();
    let connection = await KafkaConnection.open('127.0.0.1', broker.broker.port);
    const healthy = await readVerified(connection, 'checked', 0, { probes: 20, random: Math.random });
    connection.close();
    expect(healthy.violations).toEqual([]);
    expect(healthy.end).toBe(100n);
    expect(healthy.records.get(57n)?.value).toBe('v11-2');

    const dataDir = broker.dataDir;
    await broker.stop();
    const folder = join(dataDir, 'checked-0');
    const segment = join(folder, readdirSync(folder).find((name) => name.endsWith('.log')) ?? '');
    const bytes = readFileSync(segment);
    const value = bytes.indexOf('v11-2');
    bytes[value + 1] = 0x39; // "v91-2": a record value changed, its batch's CRC now wrong
    writeFileSync(segment, bytes);
    broker = await startInProcessBroker({}, dataDir);
    connection = await KafkaConnection.open('127.0.0.1', broker.broker.port);
    const damaged = await readVerified(connection, 'checked', 0, { probes: 0, random: Math.random });
    connection.close();
    expect(damaged.violations).toEqual(['checked-0 read from 0: served a batch whose CRC does not match at offset 55']);
  });
});
