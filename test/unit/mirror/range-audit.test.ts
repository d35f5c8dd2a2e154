/**
 * The mirror's audit counts across kills, over the in-process coordination store and a fake
 * publisher that keeps one publish per identity (as reconciliation keeps one event per key): after
 * any kill and resume, every source record below the resume point is counted exactly once, and a
 * range counted again is counted with the same records.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { countedRangePath, readCountedRange } from '../../../src/mirror/progress-nodes.js';
import { RangeAudit, type CountedRecord, type RangeCountPublisher } from '../../../src/mirror/range-audit.js';

const logger = createLogger({ name: 'test', level: 'silent' });
const source = Array.from({ length: 40 }, (_, offset) => ({ offset: BigInt(offset), timestamp: 1_000 * offset, headers: [{ key: 'tributary.origin', value: Buffer.from(`web-${offset % 2}`) }] }));

class KeyedPublisher implements RangeCountPublisher {
  readonly byIdentity = new Map<string, bigint[]>();
  failNext = false;

  publish(counterId: string, _topic: string, records: readonly CountedRecord[]): Promise<void> {
    const offsets = records.map((record) => record.offset).sort((a, b) => (a < b ? -1 : 1));
    const earlier = this.byIdentity.get(counterId);
    // The same identity must always carry the same records, else reconciliation would see a conflict.
    if (earlier !== undefined) expect(offsets, counterId).toEqual(earlier);
    if (this.failNext) {
      this.failNext = false;
      // A kill in the middle of a publish: some events stored, the caller never hears back.
      this.byIdentity.set(counterId, offsets);
      return Promise.reject(new Error('publish interrupted'));
    }
    this.byIdentity.set(counterId, offsets);
    return Promise.resolve();
  }

  /** Offset → how many times it is counted over all distinct identities. */
  counted(): Map<bigint, number> {
    const counts = new Map<bigint, number>();
    for (const offsets of this.byIdentity.values()) for (const offset of offsets) counts.set(offset, (counts.get(offset) ?? 0) + 1);
    return counts;
  }
}

/** One life of the mirror's audit; `removed`: source offsets compaction removed (no longer read). */
function mirrorLife(store: ReturnType<MemoryCoordination['session']>, publisher: RangeCountPublisher, removed: ReadonlySet<bigint> = new Set()): RangeAudit {
  return new RangeAudit({
    group: 'g',
    source: 'dc1',
    store,
    publisher,
    readSource: (_topic, _partition, from, to) => Promise.resolve(source.filter((record) => record.offset >= from && record.offset < to && !removed.has(record.offset))),
    logger,
  });
}

function acknowledge(audit: RangeAudit, from: number, to: number): void {
  for (const record of source.slice(from, to)) audit.count('events', 0, record, 50_000);
}

function expectOnceBelow(publisher: KeyedPublisher, end: number): void {
  const counted = publisher.counted();
  expect([...counted.keys()].sort((a, b) => (a < b ? -1 : 1))).toEqual(source.slice(0, end).map((record) => record.offset));
  expect([...counted.values()].every((times) => times === 1)).toBe(true);
}

describe('RangeAudit', () => {
  it('counts once what a killed life acknowledged but did not publish, and what it published but did not commit', async () => {
    const store = new MemoryCoordination().session();
    const publisher = new KeyedPublisher();
    const first = mirrorLife(store, publisher);
    await first.resume('events', 0, 0n);
    acknowledge(first, 0, 12);
    await first.publishThrough('events', 0, 8n); // published [0, 8); the commit of 8 may or may not have followed
    // Killed: [8, 12) acknowledged by the target, never published. The target's tail says: resume at 12.
    const second = mirrorLife(store, publisher);
    await second.resume('events', 0, 12n);
    expectOnceBelow(publisher, 12);
    acknowledge(second, 12, 20);
    await second.publishThrough('events', 0, 20n);
    expectOnceBelow(publisher, 20);
    expect(await readCountedRange(store, countedRangePath('g', 'events', 0))).toEqual({ from: 12n, to: 20n, records: 8 });
  });

  it('publishes a range cut off by a kill again with the same records, then the records skipped after it', async () => {
    const store = new MemoryCoordination().session();
    const publisher = new KeyedPublisher();
    const first = mirrorLife(store, publisher);
    await first.resume('events', 0, 5n);
    acknowledge(first, 5, 15);
    publisher.failNext = true;
    await expect(first.publishThrough('events', 0, 10n)).rejects.toThrow('publish interrupted');
    const second = mirrorLife(store, publisher);
    await second.resume('events', 0, 15n);
    const counted = publisher.counted();
    expect([...counted.keys()].sort((a, b) => (a < b ? -1 : 1))).toEqual(source.slice(5, 15).map((record) => record.offset));
    expect([...counted.values()].every((times) => times === 1)).toBe(true);
  });

  it('in one life, retries a failed range as it was before publishing later records', async () => {
    const store = new MemoryCoordination().session();
    const publisher = new KeyedPublisher();
    const life = mirrorLife(store, publisher);
    await life.resume('events', 0, 0n);
    acknowledge(life, 0, 10);
    publisher.failNext = true;
    await expect(life.publishThrough('events', 0, 4n)).rejects.toThrow();
    acknowledge(life, 10, 16);
    await life.publishThrough('events', 0, 16n);
    expect([...publisher.byIdentity.keys()]).toEqual(['mirror/g/dc1/events/0/0', 'mirror/g/dc1/events/0/4']);
    expectOnceBelow(publisher, 16);
  });

  it('keeps the published counts of a range whose source records compaction removed since, rather than publishing fewer under the same identities', async () => {
    const store = new MemoryCoordination().session();
    const publisher = new KeyedPublisher();
    const first = mirrorLife(store, publisher);
    await first.resume('events', 0, 0n);
    acknowledge(first, 0, 12);
    await first.publishThrough('events', 0, 10n); // [0, 10) published: 10 records
    // The source is compacted before the next life: 3, 4 and 8 are gone from it (the target holds their copies).
    const second = mirrorLife(store, publisher, new Set([3n, 4n, 8n]));
    await second.resume('events', 0, 12n);
    expectOnceBelow(publisher, 12);
    expect(await readCountedRange(store, countedRangePath('g', 'events', 0))).toEqual({ from: 10n, to: 12n, records: 2 });
  });

  it('survives many kills at arbitrary points', async () => {
    const store = new MemoryCoordination().session();
    const publisher = new KeyedPublisher();
    let acknowledged = 0;
    const plan = [
      [3, 7, false], [9, 9, true], [14, 20, false], [20, 25, true], [26, 26, false], [30, 40, true],
    ] as const;
    for (const [publishTo, ackTo, failPublish] of plan) {
      const life = mirrorLife(store, publisher);
      await life.resume('events', 0, BigInt(acknowledged));
      acknowledge(life, acknowledged, ackTo);
      acknowledged = ackTo;
      publisher.failNext = failPublish;
      await life.publishThrough('events', 0, BigInt(Math.min(publishTo, ackTo))).catch(() => undefined);
      publisher.failNext = false;
    }
    await mirrorLife(store, publisher).resume('events', 0, BigInt(acknowledged));
    expectOnceBelow(publisher, 40);
  });
});
