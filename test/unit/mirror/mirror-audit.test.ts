/**
 * The MIRROR-tier range publisher: counting the same range again, in any order, publishes the
 * same events under the same identities (what reconciliation needs to keep them once).
 */
import { describe, expect, it } from 'vitest';
import type { AuditCountEvent } from '../../../src/audit/audit-count.js';
import { dedupeEvents } from '../../../src/audit/reconcile.js';
import type { ProducerRecord } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { rangeCountPublisher } from '../../../src/mirror/mirror-audit.js';
import type { CountedRecord } from '../../../src/mirror/range-audit.js';

function capture(): { events: AuditCountEvent[]; publisher: ReturnType<typeof rangeCountPublisher> } {
  const events: AuditCountEvent[] = [];
  const publisher = rangeCountPublisher({
    publisher: {
      acks: -1,
      send: (_topic: string, records: readonly ProducerRecord[]) => {
        for (const record of records) events.push(JSON.parse(record.value?.toString('utf8') ?? 'null') as AuditCountEvent);
        return Promise.resolve();
      },
    },
    encoder: { encode: (_subject: string, value: unknown) => Promise.resolve(Buffer.from(JSON.stringify(value))) },
    windowMs: 1_000,
    logger: createLogger({ name: 'test', level: 'silent' }),
  });
  return { events, publisher };
}

const records: CountedRecord[] = [
  { offset: 0n, timestamp: 100, origin: 'web-b', seenAt: 5_000 },
  { offset: 1n, timestamp: 1_100, origin: 'web-a', seenAt: 5_000 },
  { offset: 2n, timestamp: 200, origin: 'web-a', seenAt: 5_000 },
  { offset: 3n, timestamp: 2_500, origin: 'web-b', seenAt: 5_000 },
  { offset: 4n, timestamp: 300, origin: 'web-b', seenAt: 5_000 },
];

const identity = (event: AuditCountEvent): unknown => [event.counterId, event.sequence, event.topic, event.tier, event.windowStart, event.origin, event.count];

describe('rangeCountPublisher', () => {
  it('publishes the same events for the same range counted again in another order', async () => {
    const { events, publisher } = capture();
    await publisher.publish('mirror/g/dc1/events/0/0', 'events', records);
    const first = events.splice(0);
    await publisher.publish('mirror/g/dc1/events/0/0', 'events', [...records].reverse().map((record) => ({ ...record, seenAt: 9_000 })));
    expect(events.map(identity)).toEqual(first.map(identity));
    expect(first.map((event) => [event.origin, event.windowStart, event.count])).toEqual([
      ['web-a', 0, 1], ['web-a', 1_000, 1], ['web-b', 0, 2], ['web-b', 2_000, 1],
    ]);
    expect(first.every((event) => event.tier === 'MIRROR' && event.cluster === 'offline')).toBe(true);
    const deduped = dedupeEvents([...first, ...events]);
    expect(deduped).toMatchObject({ duplicates: 4, conflicts: 0 });
    expect(deduped.events.reduce((sum, event) => sum + event.count, 0)).toBe(records.length);
  });

  it('publishes nothing for an empty range', async () => {
    const { events, publisher } = capture();
    await publisher.publish('mirror/g/dc1/events/0/7', 'events', []);
    expect(events).toEqual([]);
  });
});
