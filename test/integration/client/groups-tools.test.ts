/**
 * `tributary groups describe|reset-offsets|list` against a broker process on real ZooKeeper: the
 * offsets they write are what the group consumer reads (decimal text under
 * /consumers/<group>/offsets/<topic>/<partition>), and a group with live members is left alone.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { runTributary } from '../../support/cli.js';
import { services, zookeeperAddress } from '../services.js';

const tributary = (...args: string[]): ReturnType<typeof runTributary> => runTributary(args);

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('tributary groups', () => {
  // Eleven CLI processes: several seconds each on a loaded 2-core machine.
  it('resets offsets to the earliest, a date-time, and by a shift; describes lag; refuses a live group', { timeout: 180_000 }, async () => {
    const zookeeper = `${zookeeperAddress().connectString}/groups-${process.pid}-${randomBytes(3).toString('hex')}`;
    const broker: BrokerProcess = await startBrokerProcess({ run: openRun(services().runDir), id: 1, zookeeper });
    cleanups.push(() => broker.stop());
    const created = await tributary('topics', 'create', '--bootstrap-server', broker.bootstrap, '--topic', 'events', '--partitions', '2');
    expect(created.status, created.stderr).toBe(0);
    const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1 });
    const base = Date.parse('2026-01-01T00:00:00Z');
    // 20 records per partition, one second apart.
    for (const partition of [0, 1]) {
      await producer.send('events', Array.from({ length: 20 }, (_, i) => ({ partition, value: Buffer.from(`${partition}-${i}`), timestamp: base + i * 1000 })));
    }
    await producer.close();

    const earliest = await tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'g1', '--topic', 'events', '--to-earliest');
    expect(earliest.status, earliest.stderr).toBe(0);
    expect(earliest.stdout.trim().split('\n')).toEqual(['events 0 0', 'events 1 0']);

    const described = await tributary('groups', 'describe', '--zookeeper', zookeeper, '--group', 'g1');
    expect(described.status, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/events\s+0\s+0\s+20\s+20\s+-/);

    const atTime = await tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'g1', '--topic', 'events', '--to-datetime', '2026-01-01T00:00:12.500Z');
    expect(atTime.stdout.trim().split('\n')).toEqual(['events 0 13', 'events 1 13']);

    const shifted = await tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'g1', '--topic', 'events', '--shift-by', '-20');
    expect(shifted.stdout.trim().split('\n')).toEqual(['events 0 0', 'events 1 0']);

    const store = await ZooKeeperStore.connect(zookeeper);
    cleanups.push(() => store.close());
    expect((await store.get('/consumers/g1/offsets/events/1'))?.data.toString()).toBe('0');
    await store.ensurePath('/consumers/g1/ids');
    await store.create('/consumers/g1/ids/live-member', Buffer.from('{"subscription":{"events":1}}'), 'ephemeral');
    const refused = await tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'g1', '--topic', 'events', '--to-latest');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('group g1 has 1 live members (live-member); stop them before resetting its offsets');

    const listed = await tributary('groups', 'list', '--zookeeper', zookeeper);
    expect(listed.stdout).toBe('group  kind       state\ng1     zookeeper  1 live member\n');

    // Rewind to a time, then a group member consumes again from there (the paper's rewind).
    await store.delete('/consumers/g1/ids/live-member');
    const rewound = await tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'g1', '--topic', 'events', '--to-datetime', '2026-01-01T00:00:12.500Z');
    expect(rewound.status, rewound.stderr).toBe(0);
    const consumed = await tributary('consume', '--bootstrap-server', broker.bootstrap, '--topic', 'events', '--group', 'g1', '--zookeeper', zookeeper, '--max-messages', '14');
    expect(consumed.status, consumed.stderr).toBe(0);
    expect(consumed.stdout.trim().split('\n').sort()).toEqual(
      [0, 1].flatMap((partition) => Array.from({ length: 7 }, (_, i) => `${partition}-${13 + i}`)).sort(),
    );
    const after = await tributary('groups', 'describe', '--zookeeper', zookeeper, '--group', 'g1');
    expect(after.stdout).toMatch(/events\s+0\s+20\s+20\s+0\s+-/);
  });
});
