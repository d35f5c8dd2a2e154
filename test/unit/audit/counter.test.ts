import { describe, expect, it, vi } from 'vitest';
import { AUDIT_SUBJECT, AUDIT_TOPIC } from '../../../src/audit/audit-count.js';
import { AuditCounter, type AuditCounterOptions } from '../../../src/audit/counter.js';
import { ORIGIN_HEADER, UNKNOWN_ORIGIN } from '../../../src/audit/origin.js';
import { ManualClock } from '../../../src/common/clock.js';
import { TributaryError } from '../../../src/common/errors.js';
import { JsonEncoder, RecordingPublisher } from './counter-fakes.js';

const MINUTE = 60_000;
const WINDOW = 10 * MINUTE;
/** A window boundary, so tests can place records at known offsets into windows. */
const T0 = 2_833_334 * WINDOW;

function setup(options: Partial<AuditCounterOptions> = {}) {
  const clock = new ManualClock(T0);
  const publisher = new RecordingPublisher();
  const encoder = new JsonEncoder();
  const counter = new AuditCounter({ tier: 'MIRROR', publisher, encoder, server: 'mirror-1', cluster: 'offline', clock, publishIntervalMs: 0, ...options });
  return { clock, publisher, encoder, counter };
}

const origin = (name: string) => [{ key: ORIGIN_HEADER, value: Buffer.from(name) }];

describe('AuditCounter windows', () => {
  it('counts per (topic, window of creation time, origin) and publishes one event per cell with the window bounds', async () => {
    const { clock, publisher, counter } = setup();
    clock.set(T0 + 25 * MINUTE);
    counter.countRecords('page-views', [
      { timestamp: T0, headers: origin('web-1') },
      { timestamp: T0 + WINDOW - 1, headers: origin('web-1') },
      { timestamp: T0 + WINDOW, headers: origin('web-1') },
      { timestamp: T0 + 5 * MINUTE, headers: origin('web-2') },
      { timestamp: T0 + 5 * MINUTE },
    ]);
    counter.countRecords('clicks', [{ timestamp: T0 + 1, headers: origin('web-1') }]);
    await counter.flush();

    const events = publisher.events().map((e) => [e.topic, e.windowStart - T0, e.windowEnd - T0, e.origin, e.count]);
    expect(events).toEqual(
      expect.arrayContaining([
        ['page-views', 0, WINDOW, 'web-1', 2],
        ['page-views', WINDOW, 2 * WINDOW, 'web-1', 1],
        ['page-views', 0, WINDOW, 'web-2', 1],
        ['page-views', 0, WINDOW, UNKNOWN_ORIGIN, 1],
        ['clicks', 0, WINDOW, 'web-1', 1],
      ]),
    );
    expect(events).toHaveLength(5);
    const [first] = publisher.lastEvents();
    expect(first).toMatchObject({ tier: 'MIRROR', server: 'mirror-1', cluster: 'offline', publishedAt: T0 + 25 * MINUTE, counterId: counter.counterId });
  });

  it('uses the configured window length, aligned to the epoch', async () => {
    const { publisher, counter } = setup({ windowMs: MINUTE });
    counter.count('t', T0 + 90_000, 'web-1');
    await counter.flush();
    expect(publisher.lastEvents()[0]).toMatchObject({ windowStart: T0 + MINUTE, windowEnd: T0 + 2 * MINUTE, count: 1 });
  });

  it('publishes to the audit topic, keyed by the counted topic, framed under the _audit-value subject, timestamped when published', async () => {
    const { clock, publisher, encoder, counter } = setup();
    clock.set(T0 + 3 * MINUTE);
    counter.count('page-views', T0, 'web-1');
    await counter.flush();
    expect(publisher.attempts).toHaveLength(1);
    expect(publisher.attempts[0]?.topic).toBe(AUDIT_TOPIC);
    expect(publisher.attempts[0]?.records[0]?.key?.toString()).toBe('page-views');
    expect(publisher.attempts[0]?.records[0]?.timestamp).toBe(T0 + 3 * MINUTE);
    expect(encoder.subjects).toEqual([AUDIT_SUBJECT]);
  });

  it('does not count records of the audit topic itself (the mirror copies it)', async () => {
    const { publisher, counter } = setup();
    counter.countRecords(AUDIT_TOPIC, [{ timestamp: T0 }]);
    await counter.flush();
    expect(publisher.attempts).toHaveLength(0);
  });
});

describe('AuditCounter lateness', () => {
  it('counts a record of a closed window as a delta of that old window, and tells it was late', async () => {
    const { clock, publisher, counter } = setup({ latenessMs: 5 * MINUTE });
    clock.set(T0 + WINDOW + 5 * MINUTE - 1);
    counter.count('t', T0 + 1, 'web-1');
    expect(counter.lateRecords).toBe(0);
    clock.set(T0 + WINDOW + 5 * MINUTE);
    counter.count('t', T0 + 2, 'web-1');
    expect(counter.lateRecords).toBe(1);
    await counter.flush();
    expect(publisher.lastEvents()).toEqual([expect.objectContaining({ windowStart: T0, count: 2 })]);
  });
});

describe('AuditCounter deltas', () => {
  it('publishes only what was counted since the previous publish, with the next sequence numbers of the same counter id', async () => {
    const { publisher, counter } = setup();
    counter.count('t', T0, 'web-1', T0, 3);
    await counter.flush();
    counter.count('t', T0, 'web-1', T0, 2);
    counter.count('t', T0 + WINDOW, 'web-1');
    await counter.flush();
    await counter.flush();

    const events = publisher.events();
    expect(events.map((e) => [e.sequence, e.windowStart - T0, e.count])).toEqual([
      [0, 0, 3],
      [1, 0, 2],
      [2, WINDOW, 1],
    ]);
    expect(new Set(events.map((e) => e.counterId))).toEqual(new Set([counter.counterId]));
    expect(publisher.attempts).toHaveLength(2);
  });

  it('gives every counter instance its own id, so a restarted process never reuses a key', () => {
    const { counter: first } = setup();
    const { counter: second } = setup();
    expect(first.counterId).not.toBe(second.counterId);
  });

  it('after a failed publish, flush rejects retriably and the next flush resends the same events byte for byte, then the new ones', async () => {
    const { publisher, counter } = setup();
    counter.count('t', T0, 'web-1', T0, 4);
    publisher.failNext = 1;
    const failure = await counter.flush().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TributaryError);
    expect(failure).toMatchObject({ code: 'AUDIT_PUBLISH_FAILED', retriable: true });
    expect(counter.unacknowledgedEvents).toBe(1);

    counter.count('t', T0, 'web-1', T0, 1);
    await counter.flush();
    const [failed, retried] = publisher.attempts;
    expect(retried?.records[0]?.value).toEqual(failed?.records[0]?.value);
    expect(publisher.lastEvents().map((e) => [e.sequence, e.count])).toEqual([
      [0, 4],
      [1, 1],
    ]);
    expect(counter.unacknowledgedEvents).toBe(0);
  });

  it('a flush covers counts made while an earlier publish was in flight', async () => {
    const { publisher, counter } = setup();
    counter.count('t', T0, 'web-1');
    const release = publisher.holdSends();
    const first = counter.flush();
    await vi.waitUntil(() => publisher.attempts.length === 1);
    counter.count('t', T0, 'web-1', T0, 5);
    const second = counter.flush();
    release();
    await Promise.all([first, second]);
    expect(publisher.attempts.map(({ records }) => records.length)).toEqual([1, 1]);
    expect(publisher.events().map((e) => e.count)).toEqual([1, 5]);
  });

  it('close publishes what is left and refuses later counts', async () => {
    const { publisher, counter } = setup();
    counter.count('t', T0, 'web-1', T0, 7);
    await counter.close();
    expect(publisher.lastEvents()[0]?.count).toBe(7);
    expect(() => counter.count('t', T0, 'web-1')).toThrow(expect.objectContaining({ code: 'AUDIT_COUNTER_CLOSED' }));
  });
});

describe('AuditCounter latency', () => {
  it('publishes a histogram of (seen − created) per cell', async () => {
    const { publisher, counter } = setup();
    counter.count('t', T0, 'web-1', T0 + 3);
    counter.count('t', T0, 'web-1', T0 + 3);
    counter.count('t', T0 + 10, 'web-1', T0 + 1_010);
    await counter.flush();
    const latency = publisher.lastEvents()[0]?.latency ?? [];
    expect(latency[0]).toEqual({ upperBoundMs: 3, count: 2 });
    expect(latency).toHaveLength(2);
    expect(latency[1]?.count).toBe(1);
    expect(latency[1]?.upperBoundMs).toBeGreaterThanOrEqual(1_000);
    expect(latency[1]?.upperBoundMs).toBeLessThan(1_100);
  });
});

describe('AuditCounter options', () => {
  it('refuses a publisher without acks=-1 and bad windows, naming each problem', () => {
    const publisher = Object.assign(new RecordingPublisher(), { acks: 1 as const });
    expect(() => new AuditCounter({ tier: 'PRODUCER', publisher, encoder: new JsonEncoder(), windowMs: 0, publishIntervalMs: 0 })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(/acks=-1.*windowMs must be a positive integer/) as unknown }),
    );
  });
});

describe('AuditCounter counterId', () => {
  it('is random by default, and the given one when set: equal counts in equal order cut equal keys', async () => {
    expect(setup().counter.counterId).not.toBe(setup().counter.counterId);
    const cut = async () => {
      const { publisher, counter } = setup({ counterId: 'etl/views/7' });
      counter.count('t', T0 + 1, 'web-1');
      counter.count('t', T0 + WINDOW, 'web-2', T0 + WINDOW, 3);
      counter.count('u', T0, 'web-1');
      await counter.close();
      return publisher.events().map((event) => [event.counterId, event.sequence, event.topic, event.windowStart, event.origin, event.count]);
    };
    const first = await cut();
    expect(first).toHaveLength(3);
    expect(first.every(([id]) => id === 'etl/views/7')).toBe(true);
    expect(await cut()).toEqual(first);
  });

  it('refuses an empty counterId', () => {
    expect(() => setup({ counterId: ' ' })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('counterId') as unknown }));
  });
});
