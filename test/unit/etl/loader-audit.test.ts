/**
 * The loader's audit tier and hour markers (issue #9) over whole runs against the in-process fakes
 * (cluster, warehouse, audit topic) and a real registry server: every commit is counted at the
 * LOADER tier under keys that a recount repeats, a commit whose counts were not acknowledged is
 * counted by the next run (never twice in the reconciliation), and closed hours that match the
 * PRODUCER counts get `_COMPLETE`, rewritten when late records land and removed when they no
 * longer match.
 */
import { describe, expect, it } from 'vitest';
import type { AuditCountEvent } from '../../../src/audit/audit-count.js';
import { dedupeEvents } from '../../../src/audit/reconcile.js';
import { windowStartOf } from '../../../src/audit/windows.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { auditCommit, loaderCounterId, unauditedCommits } from '../../../src/etl/completeness/audit-tier.js';
import { readClaim } from '../../../src/etl/load/commit-log.js';
import { parseMarker } from '../../../src/etl/completeness/hour-completeness.js';
import { auditedPath, completeMarkerPath, hourOf } from '../../../src/etl/layout.js';
import type { LoadAudit } from '../../../src/etl/completeness/load-audit.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { commitPhase, planPhase, taskPhase } from '../../../src/etl/load/phases.js';
import { runLoad, type RunOptions } from '../../../src/etl/load/run.js';
import { formatStatus, readCompleteness, readLoadStatus } from '../../../src/etl/status/status.js';
import { JsonEncoder, RecordingPublisher } from '../audit/counter-fakes.js';
import { FakeSource, MemoryWarehouse, quietLogger } from './loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from './loader-world.js';

const TOPIC = 'views';
const HOUR = 3_600_000;
const WINDOW = 600_000;
const T0 = Date.UTC(2026, 10, 29, 13, 0, 0);
const NOW = new Date('2026-11-29T17:00:00Z');
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'header', type: { type: 'record', name: 'Header', fields: [{ name: 'time', type: 'long' }, { name: 'server', type: 'string' }] } },
  ],
});

const world = useLoaderRegistry(`${TOPIC}-value`, [SCHEMA]);

function load(): LoadDefinition {
  return memoryLoad(TOPIC, world.url, { timeField: 'header.time', latenessHorizonMs: 2 * HOUR, audit: { topic: '_audit', bootstrap: ['127.0.0.1:9092'] } });
}

/** The audit topic in memory: what the LOADER counters published, and PRODUCER events the test adds. */
class FakeAudit implements LoadAudit {
  readonly publisher = new RecordingPublisher();
  readonly producerEvents: AuditCountEvent[] = [];
  readonly sink = { publisher: this.publisher, encoder: new JsonEncoder(), server: 'loader-1' };
  unreadable = false;

  /** Counts `times` at the PRODUCER tier, as a producer's counter would (one delta per call). */
  produced(times: readonly number[]): void {
    const windows = new Map<number, number>();
    for (const time of times) windows.set(windowStartOf(time, WINDOW), (windows.get(windowStartOf(time, WINDOW)) ?? 0) + 1);
    const counterId = `producer-${this.producerEvents.length}`;
    let sequence = 0;
    for (const [windowStart, count] of windows) {
      this.producerEvents.push({ topic: TOPIC, tier: 'PRODUCER', cluster: null, server: 'web', windowStart, windowEnd: windowStart + WINDOW, count, publishedAt: 0, origin: 'web-1', counterId, sequence: sequence++, latency: [] });
    }
  }

  loaderEvents(): AuditCountEvent[] {
    return this.publisher.events();
  }

  readEvents(topic: string): Promise<readonly AuditCountEvent[]> {
    if (this.unreadable) return Promise.reject(new Error('the audit cluster is down'));
    return Promise.resolve([...this.producerEvents, ...this.loaderEvents()].filter((event) => event.topic === topic));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Distinct LOADER records per window, as reconciliation sees them. */
function loaderPerWindow(audit: FakeAudit): Map<number, number> {
  const windows = new Map<number, number>();
  for (const event of dedupeEvents(audit.loaderEvents()).events) windows.set(event.windowStart, (windows.get(event.windowStart) ?? 0) + event.count);
  return windows;
}

function perWindow(times: readonly number[]): Map<number, number> {
  const windows = new Map<number, number>();
  for (const time of times) windows.set(windowStartOf(time, WINDOW), (windows.get(windowStartOf(time, WINDOW)) ?? 0) + 1);
  return windows;
}

/** `count` records over 3 partitions and the 3 hours from T0 (or `at(id)`); returns their event times. */
async function produce(source: FakeSource, count: number, firstId = 0, at?: (id: number) => number): Promise<number[]> {
  const times: number[] = [];
  for (let id = firstId; id < firstId + count; id += 1) {
    const time = at?.(id) ?? T0 + ((id * 2_654_435) % (3 * HOUR));
    source.append(TOPIC, id % 3, await world.serializer.encode(`${TOPIC}-value`, { id, header: { time, server: `web-${id % 2}` } }, SCHEMA), time);
    times.push(time);
  }
  return times;
}

function options(warehouse: MemoryWarehouse, source: FakeSource, audit: FakeAudit, extra: Partial<RunOptions> = {}): RunOptions {
  return { load: load(), warehouse, source, registry: world.client, logger: quietLogger, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false, now: () => NOW, audit, ...extra };
}

async function markerOf(warehouse: MemoryWarehouse, hour: number) {
  const bytes = warehouse.files.get(completeMarkerPath('wh', TOPIC, hour, 'hourly'));
  return bytes === undefined ? undefined : parseMarker(bytes);
}

describe('the LOADER audit tier of runs', () => {
  it('counts each commit under keys etl/<load>/<seq>; a recount of the same manifest cuts identical keys and counts', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new FakeAudit();
    const times = await produce(source, 300);
    const report = await runLoad(options(warehouse, source, audit));
    expect(report.audit?.tier.audited).toEqual([{ seq: 1, counterId: loaderCounterId('views', 1), files: report.manifest?.files.length, records: 300 }]);
    expect(warehouse.files.has(auditedPath('wh', 'views', 1))).toBe(true);
    expect(loaderPerWindow(audit)).toEqual(perWindow(times));

    const keys = (events: readonly AuditCountEvent[]) => events.map((event) => [event.counterId, event.sequence, event.topic, event.windowStart, event.origin, event.count]);
    const first = keys(audit.loaderEvents());
    const again = new FakeAudit();
    const { manifest } = await readClaim(warehouse, 'wh', 'views', 1);
    await auditCommit(manifest, { load: load(), warehouse, sink: again.sink });
    expect(keys(again.loaderEvents())).toEqual(first);
    expect(new Set(first.map(([id]) => id))).toEqual(new Set(['etl/views/1']));
  });

  it('an unreachable audit topic leaves the commit standing and unaudited; the next run publishes it once', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new FakeAudit();
    const times = await produce(source, 120);
    audit.publisher.failNext = 1_000;
    const report = await runLoad(options(warehouse, source, audit));
    expect(report.outcome).toBe('committed');
    expect(report.audit?.tier.failed?.error.code).toBe('ETL_AUDIT_UNAVAILABLE');
    expect(await unauditedCommits(warehouse, 'wh', 'views')).toEqual([1]);
    const status = await readLoadStatus(warehouse, 'wh', 'views');
    expect(formatStatus(status, await readCompleteness(warehouse, 'wh', load(), status, undefined))).toContain('commits not yet audited (LOADER counts unpublished; the next run publishes them): 1');

    audit.publisher.failNext = 0;
    const next = await runLoad(options(warehouse, source, audit));
    expect(next.outcome).toBe('nothing-to-load');
    expect(next.auditCatchUp?.audited.map((counted) => counted.seq)).toEqual([1]);
    expect(await unauditedCommits(warehouse, 'wh', 'views')).toEqual([]);
    // The failed sends went out too (an answer lost after storing): still one count per key.
    expect(loaderPerWindow(audit)).toEqual(perWindow(times));
  });

  it('a crash after the flush, before the audited record: the next run recounts under the same keys, 100% and not 200%', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new FakeAudit();
    const times = await produce(source, 90);
    const crash = (point: string) => {
      if (point === 'after-audit-flush') throw new Error('killed');
    };
    const report = await runLoad(options(warehouse, source, audit, { failpoint: crash }));
    expect(report.audit?.tier.failed).toBeDefined();
    const published = audit.loaderEvents().length;
    expect(published).toBeGreaterThan(0);
    await runLoad(options(warehouse, source, audit));
    expect(audit.loaderEvents().length).toBe(2 * published);
    expect(loaderPerWindow(audit)).toEqual(perWindow(times));
    expect(dedupeEvents(audit.loaderEvents()).conflicts).toBe(0);
  });
});

describe('hour markers of runs', () => {
  it('marks closed hours whose records match the PRODUCER counts; late records rewrite the marker, a mismatch removes it', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new FakeAudit();
    const times = await produce(source, 300);
    audit.produced(times);
    const first = await runLoad(options(warehouse, source, audit));
    const [h13, h14, h15] = [hourOf(T0), hourOf(T0) + 1, hourOf(T0) + 2];
    const inHour = (hour: number, list: readonly number[]) => list.filter((time) => hourOf(time) === hour).length;
    // Read to the high watermark at 17:00 with a 2h horizon: 13 and 14 are closed, 15 is open.
    expect(first.audit?.markers?.written).toEqual([`${TOPIC} 2026-11-29T13`, `${TOPIC} 2026-11-29T14`]);
    expect(await markerOf(warehouse, h13)).toMatchObject({ topic: TOPIC, hour: '2026-11-29T13', records: inHour(h13, times), produced: inHour(h13, times), seq: 1 });
    expect((await markerOf(warehouse, h14))?.windows).toHaveLength(6);
    expect(await markerOf(warehouse, h15)).toBeUndefined();

    // Late records of hour 13, produced and counted: a new file in the hour, the marker rewritten.
    const late = await produce(source, 7, 1_000, (id) => T0 + 60_000 * (id - 1_000));
    audit.produced(late);
    const second = await runLoad(options(warehouse, source, audit, { now: () => new Date('2026-11-29T17:30:00Z') }));
    expect(second.audit?.markers?.written).toEqual([`${TOPIC} 2026-11-29T13`]);
    expect(await markerOf(warehouse, h13)).toMatchObject({ records: inHour(h13, times) + 7, produced: inHour(h13, times) + 7, seq: 2 });
    expect(warehouse.filesUnder(`wh/${TOPIC}/hourly/2026/11/29/13/`).filter((name) => name.includes('.tmp'))).toEqual([]);

    // Late records nobody counted at the PRODUCER tier: the marker is withdrawn before they land, and not written again.
    await produce(source, 2, 2_000, () => T0 + HOUR + 5);
    const third = await runLoad(options(warehouse, source, audit, { now: () => new Date('2026-11-29T17:40:00Z') }));
    expect(third.audit?.markers?.written).toEqual([]);
    expect(await markerOf(warehouse, h14)).toBeUndefined();
    expect(await markerOf(warehouse, h13)).toBeDefined();
    const status = await readLoadStatus(warehouse, 'wh', 'views');
    const text = formatStatus(status, await readCompleteness(warehouse, 'wh', load(), status, (topic) => audit.readEvents(topic)));
    expect(text).toMatch(/2026-11-29T13 {2}\d+ {2}COMPLETE \(marker: \d+ records = \d+ produced, commit 2\)/);
    expect(text).toMatch(/2026-11-29T14 {2}\d+ {2}CLOSED-MISMATCH \(loaded \d+, produced \d+\)/);
    expect(text).toMatch(/2026-11-29T15 {2}\d+ {2}OPEN/);
    expect(text).toContain('every published commit audited');
  });

  it('an audit topic that cannot be read leaves markers as they are and does not fail the run', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new FakeAudit();
    audit.produced(await produce(source, 60));
    await runLoad(options(warehouse, source, audit));
    expect(await markerOf(warehouse, hourOf(T0))).toBeDefined();
    audit.unreadable = true;
    await produce(source, 3, 500, () => T0 + 2 * HOUR + 1);
    const report = await runLoad(options(warehouse, source, audit));
    expect(report.outcome).toBe('committed');
    expect(report.audit?.markersFailed?.code).toBe('ETL_AUDIT_UNAVAILABLE');
    expect(await markerOf(warehouse, hourOf(T0))).toBeDefined();
  });
});

describe('the jobs phases', () => {
  it('the commit phase counts at the LOADER tier and marks hours as runLoad does; its start recounts what a crash left', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new FakeAudit();
    const times = await produce(source, 150);
    audit.produced(times);
    const crash = (point: string) => {
      if (point === 'after-audit-flush') throw new Error('killed');
    };
    const services = { load: load(), warehouse, source, registry: world.client, logger: quietLogger, now: () => NOW, audit, store: new MemoryCoordination().session(), numberRuns: false };
    const planned = await planPhase(services, false, (run) => Promise.resolve(run));
    const results = await Promise.all(planned.tasks.map((task) => taskPhase(services, task)));
    const report = await commitPhase({ ...services, failpoint: crash }, planned.plan, results);
    expect(report.outcome).toBe('committed');
    expect(report.audit?.tier.failed?.seq).toBe(1);
    expect(await unauditedCommits(warehouse, 'wh', 'views')).toEqual([1]);

    // The next plan phase (nothing new) recounts commit 1 and marks the closed hours.
    const next = await planPhase(services, false, (run) => Promise.resolve(run));
    expect(next.tasks).toEqual([]);
    expect(await unauditedCommits(warehouse, 'wh', 'views')).toEqual([]);
    expect(loaderPerWindow(audit)).toEqual(perWindow(times));
    expect(await markerOf(warehouse, hourOf(T0))).toMatchObject({ records: times.filter((time) => hourOf(time) === hourOf(T0)).length, seq: 1 });
  });
});
