/**
 * What a run's audit and marker steps read (issue #19), counted with the in-process fakes (memory
 * warehouse, fake cluster, an audit topic in memory that answers reads from a time as ListOffsets
 * by timestamp does) and a real registry server:
 *
 * - the 1000th run of an hourly load makes the same warehouse calls and reads the same number of
 *   audit records as its 10th: the hours judged are those that can still change, and the audit
 *   topic is read from a little before the earliest of them;
 * - a PRODUCER count published late, while its hour is still open, is still read and counted;
 * - an hour marked complete is not read again, until a new commit or a replay touches it: then
 *   it is judged again (its marker rewritten, or left withdrawn when the counts no longer match);
 * - a checkpoint that is missing or damaged costs one run that judges every hour, as before.
 */
import { describe, expect, it } from 'vitest';
import type { AuditCountEvent } from '../../../src/audit/audit-count.js';
import type { AuditReadWindow } from '../../../src/audit/read-audit-topic.js';
import { windowStartOf } from '../../../src/audit/windows.js';
import type { ProducerRecord } from '../../../src/client/producer.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCheckpoint } from '../../../src/etl/completeness/completeness-checkpoint.js';
import { auditReadSince, parseMarker } from '../../../src/etl/completeness/hour-completeness.js';
import type { LoadAudit } from '../../../src/etl/completeness/load-audit.js';
import { completeMarkerPath, completenessCheckpointPath, completenessDir, hourKey, hourOf } from '../../../src/etl/layout.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { runLoad, type RunReport } from '../../../src/etl/load/run.js';
import { replayWindow } from '../../../src/etl/replay/replay.js';
import { compareNames, parseWarehousePath } from '../../../src/etl/warehouse/paths.js';
import type { WarehouseEntry, WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import { JsonEncoder } from '../audit/counter-fakes.js';
import { FakeSource, MemoryWarehouse, quietLogger } from './loader-fakes.js';
import { memoryLoad, useLoaderRegistry } from './loader-world.js';

const TOPIC = 'views';
const HOUR = 3_600_000;
const MINUTE = 60_000;
const WINDOW = 10 * MINUTE;
/** The first hour of the load's data. */
const T0 = Date.UTC(2026, 0, 1, 0);
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'View',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'header', type: { type: 'record', name: 'Header', fields: [{ name: 'time', type: 'long' }, { name: 'server', type: 'string' }] } },
  ],
});

const registry = useLoaderRegistry(`${TOPIC}-value`, [SCHEMA]);

function load(overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  return memoryLoad(TOPIC, registry.url, { timeField: 'header.time', latenessHorizonMs: 2 * HOUR, audit: { topic: '_audit', bootstrap: ['127.0.0.1:9092'] }, ...overrides });
}

/**
 * The audit topic in memory: one log of records, each stamped when it was appended (the test's
 * clock). A read from `since` starts at the first record stamped at or after it, as ListOffsets
 * by timestamp does, and reads every record from there on (whatever their stamps).
 */
class AuditLog implements LoadAudit {
  readonly log: { readonly stamp: number; readonly event: AuditCountEvent }[] = [];
  /** Records read by the last reads (every topic's), since `resetCounts`. */
  recordsRead = 0;
  reads = 0;
  now = 0;
  readonly sink = {
    publisher: {
      acks: -1 as const,
      send: (_topic: string, records: readonly ProducerRecord[]): Promise<unknown> => {
        for (const record of records) this.log.push({ stamp: this.now, event: JSON.parse(record.value?.toString() ?? 'null') as AuditCountEvent });
        return Promise.resolve([]);
      },
    },
    encoder: new JsonEncoder(),
    server: 'loader-1',
  };
  private producers = 0;

  /** PRODUCER counts of records created at `times`, published (stamped) at `publishedAt`. */
  produced(times: readonly number[], publishedAt: number): void {
    const windows = new Map<number, number>();
    for (const time of times) windows.set(windowStartOf(time, WINDOW), (windows.get(windowStartOf(time, WINDOW)) ?? 0) + 1);
    const counterId = `producer-${(this.producers += 1)}`;
    let sequence = 0;
    for (const [windowStart, count] of windows) {
      const event: AuditCountEvent = { topic: TOPIC, tier: 'PRODUCER', cluster: null, server: 'web', windowStart, windowEnd: windowStart + WINDOW, count, publishedAt, origin: 'web-1', counterId, sequence: sequence++, latency: [] };
      this.log.push({ stamp: publishedAt, event });
    }
  }

  readEvents(topic: string, window?: AuditReadWindow): Promise<readonly AuditCountEvent[]> {
    const since = window?.since;
    const found = since === undefined ? 0 : this.log.findIndex((entry) => entry.stamp >= since);
    const start = found === -1 ? this.log.length : found;
    this.reads += 1;
    this.recordsRead += this.log.length - start;
    return Promise.resolve(this.log.slice(start).map((entry) => entry.event).filter((event) => event.topic === topic));
  }

  resetCounts(): void {
    this.recordsRead = 0;
    this.reads = 0;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The children of every folder of the memory warehouse, in listing order, kept up to date as its maps change. */
class ChildIndex {
  readonly children = new Map<string, string[]>();

  private static parentOf(path: string): string {
    const cut = path.lastIndexOf('/');
    return cut < 0 ? '' : path.slice(0, cut);
  }

  /** Where `path` is, or goes, among its siblings (binary search in byte order of the names). */
  private static place(siblings: readonly string[], path: string): number {
    let low = 0;
    let high = siblings.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (compareNames(siblings[middle] ?? '', path) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  add(path: string): void {
    if (path === '') return;
    const parent = ChildIndex.parentOf(path);
    let siblings = this.children.get(parent);
    if (siblings === undefined) this.children.set(parent, (siblings = []));
    const at = ChildIndex.place(siblings, path);
    if (siblings[at] !== path) siblings.splice(at, 0, path);
  }

  remove(path: string): void {
    const siblings = this.children.get(ChildIndex.parentOf(path));
    if (siblings === undefined) return;
    const at = ChildIndex.place(siblings, path);
    if (siblings[at] === path) siblings.splice(at, 1);
  }
}

class IndexedFiles extends Map<string, Buffer> {
  constructor(private readonly index: ChildIndex) {
    super();
  }

  override set(path: string, bytes: Buffer): this {
    if (!this.has(path)) this.index.add(path);
    return super.set(path, bytes);
  }

  override delete(path: string): boolean {
    if (!super.delete(path)) return false;
    this.index.remove(path);
    return true;
  }
}

class IndexedDirectories extends Set<string> {
  constructor(private readonly index: ChildIndex) {
    super();
  }

  override add(path: string): this {
    if (!this.has(path)) this.index.add(path);
    return super.add(path);
  }

  override delete(path: string): boolean {
    if (!super.delete(path)) return false;
    this.index.remove(path);
    return true;
  }
}

/**
 * The loader's memory warehouse, listing a folder from an index of children instead of scanning
 * every file: a thousand runs leave thousands of files, and the test is about the calls a run
 * makes, not about how fast the fake answers them. Same entries, same order, same failures.
 */
class IndexedMemoryWarehouse extends MemoryWarehouse {
  private readonly index = new ChildIndex();

  constructor() {
    super();
    const directories = new IndexedDirectories(this.index);
    directories.add('');
    Object.defineProperty(this, 'files', { value: new IndexedFiles(this.index) });
    Object.defineProperty(this, 'directories', { value: directories });
  }

  override async list(path: string): Promise<WarehouseEntry[]> {
    const at = parseWarehousePath(path, 'list', 'memory warehouse').normal;
    // Failures (a file, a missing folder) as the fake reports them.
    if (this.files.has(at) || !this.directories.has(at)) return super.list(path);
    // Siblings share their folder's prefix, so the order of the paths is the order of the names.
    return (this.index.children.get(at) ?? []).map((child): WarehouseEntry => {
      const name = child.slice(child.lastIndexOf('/') + 1);
      const bytes = this.files.get(child);
      return bytes === undefined ? { name, path: child, type: 'directory', length: 0, modifiedAt: 0 } : { name, path: child, type: 'file', length: bytes.length, modifiedAt: 0 };
    });
  }
}

/** The memory warehouse behind a proxy that records every call as `<method> <path>`. */
function counted(inner: MemoryWarehouse): { warehouse: WarehouseFileSystem; calls: string[] } {
  const calls: string[] = [];
  const warehouse = new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'describe') return value;
      return (...args: unknown[]) => {
        calls.push(`${String(property)} ${String(args[0])}`);
        return (value as (...rest: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { warehouse, calls };
}

/** Calls per method: what a run cost in warehouse round trips. */
function perMethod(calls: readonly string[]): Record<string, number> {
  const methods: Record<string, number> = {};
  for (const call of calls) {
    const method = call.slice(0, call.indexOf(' '));
    methods[method] = (methods[method] ?? 0) + 1;
  }
  return methods;
}

interface World {
  readonly memory: MemoryWarehouse;
  readonly warehouse: WarehouseFileSystem;
  readonly calls: string[];
  readonly source: FakeSource;
  readonly audit: AuditLog;
  readonly store: ReturnType<MemoryCoordination['session']>;
}

function newWorld(): World {
  const memory = new IndexedMemoryWarehouse();
  const { warehouse, calls } = counted(memory);
  const source = new FakeSource();
  source.addTopic(TOPIC, 2);
  return { memory, warehouse, calls, source, audit: new AuditLog(), store: new MemoryCoordination().session() };
}

let ids = 0;
/** Records created at `times`, over the 2 partitions; returns the times. */
async function produce(world: World, times: readonly number[]): Promise<readonly number[]> {
  for (const time of times) {
    const id = (ids += 1);
    world.source.append(TOPIC, id % 2, await registry.serializer.encode(`${TOPIC}-value`, { id, header: { time, server: 'web-1' } }, SCHEMA), time);
  }
  return times;
}

/** Six records in hour `hour` (hours since T0), one per 10-minute window. */
const hourTimes = (hour: number): number[] => Array.from({ length: 6 }, (_, index) => T0 + hour * HOUR + index * WINDOW + 1_000);

/** One run at `now`, its warehouse calls and audit reads counted. */
async function runAt(world: World, now: number): Promise<RunReport & { calls: string[]; recordsRead: number; reads: number }> {
  world.calls.length = 0;
  world.audit.resetCounts();
  world.audit.now = now;
  const report = await runLoad({ load: load(), warehouse: world.warehouse, source: world.source, registry: registry.client, logger: quietLogger, acceptGap: false, store: world.store, numberRuns: false, now: () => new Date(now), audit: world.audit });
  return { ...report, calls: [...world.calls], recordsRead: world.audit.recordsRead, reads: world.audit.reads };
}

async function markerOf(world: World, hour: number) {
  const bytes = world.memory.files.get(completeMarkerPath('wh', TOPIC, hourOf(T0) + hour, 'hourly'));
  return bytes === undefined ? undefined : parseMarker(bytes);
}

/**
 * Hourly runs: run k (at k hours and 5 minutes after T0) loads the 6 records created in hour k−1,
 * whose PRODUCER counts were published a minute after that hour ended.
 */
async function hourlyRun(world: World, k: number) {
  const times = await produce(world, hourTimes(k - 1));
  world.audit.produced(times, T0 + k * HOUR + MINUTE);
  return runAt(world, T0 + k * HOUR + 5 * MINUTE);
}

describe('what an hourly run of a load with an audit section reads', () => {
  it(
    'the 1000th run makes the same warehouse calls and reads the same audit records as the 10th',
    async () => {
      const hourly = newWorld();
      const measured = new Map<number, Awaited<ReturnType<typeof hourlyRun>>>();
      for (let k = 1; k <= 1_000; k += 1) {
        const run = await hourlyRun(hourly, k);
        expect(run.outcome).toBe('committed');
        // From run 3 on, each run closes one hour (its end + the 2h horizon has passed) and marks it.
        if (k >= 3) expect(run.audit?.markers?.written, `run ${k}`).toEqual([`${TOPIC} ${hourKey(hourOf(T0) + k - 3)}`]);
        if (k === 10 || k === 1_000) measured.set(k, run);
      }
      const tenth = measured.get(10)!;
      const thousandth = measured.get(1_000)!;

      expect(perMethod(thousandth.calls)).toEqual(perMethod(tenth.calls));
      expect(thousandth.calls.length).toBe(tenth.calls.length);
      expect(thousandth.reads).toBe(tenth.reads);
      expect(thousandth.recordsRead).toBe(tenth.recordsRead);
      // The audit topic then holds about 14 records per hour of history; a run reads a few hours' worth.
      expect(hourly.audit.log.length).toBeGreaterThan(10_000);
      expect(thousandth.recordsRead).toBeLessThan(100);
      // The hours judged: the open ones and the new commit's, not the 997 marked before.
      expect(thousandth.audit?.markers?.verdicts.map((verdict) => verdict.hour)).toEqual([hourKey(hourOf(T0) + 997), hourKey(hourOf(T0) + 998), hourKey(hourOf(T0) + 999)]);
      // No marker of an earlier hour is opened, listed or stat'ed.
      const hourFolders = thousandth.calls.filter((call) => call.includes(`/${TOPIC}/hourly/`) && call.includes('_COMPLETE'));
      expect(hourFolders.every((call) => [997, 998, 999].some((hour) => call.includes(completeMarkerPath('wh', TOPIC, hourOf(T0) + hour, 'hourly'))))).toBe(true);
      // The checkpoint folder holds the last generations only.
      expect(hourly.memory.filesUnder(`${completenessDir('wh', 'views')}/`)).toHaveLength(2);
      expect(await markerOf(hourly, 500)).toMatchObject({ records: 6, produced: 6 });
    },
    300_000,
  );

  it('a PRODUCER count published late, while its hour is open, is read and counted when the hour closes', async () => {
    const hourly = newWorld();
    for (let k = 1; k <= 5; k += 1) await hourlyRun(hourly, k);
    // Hour 5: 6 records, of which the counts of 2 windows are published only 100 minutes after the hour ended.
    const times = await produce(hourly, hourTimes(5));
    const early = times.slice(0, 4);
    const late = times.slice(4);
    hourly.audit.produced(early, T0 + 6 * HOUR + MINUTE);
    const open = await runAt(hourly, T0 + 6 * HOUR + 5 * MINUTE);
    expect(open.audit?.markers?.verdicts.find((verdict) => verdict.hour === hourKey(hourOf(T0) + 5))).toMatchObject({ state: 'OPEN', records: 6, produced: 4 });

    hourly.audit.produced(late, T0 + 7 * HOUR + 40 * MINUTE);
    const still = await runAt(hourly, T0 + 7 * HOUR + 45 * MINUTE);
    expect(still.audit?.markers?.verdicts.find((verdict) => verdict.hour === hourKey(hourOf(T0) + 5))).toMatchObject({ state: 'OPEN', records: 6, produced: 6 });
    const closes = await runAt(hourly, T0 + 8 * HOUR + 5 * MINUTE);
    expect(closes.audit?.markers?.written).toContain(`${TOPIC} ${hourKey(hourOf(T0) + 5)}`);
    expect(await markerOf(hourly, 5)).toMatchObject({ records: 6, produced: 6 });
    // That read started after the log start: it read less than the audit topic holds.
    expect(closes.recordsRead).toBeLessThan(hourly.audit.log.length);
  });

  it('a marked hour is not judged again until a new commit or a replay touches it; then it is', async () => {
    const hourly = newWorld();
    for (let k = 1; k <= 6; k += 1) await hourlyRun(hourly, k);
    const hour1 = hourKey(hourOf(T0) + 1);
    expect(await markerOf(hourly, 1)).toMatchObject({ records: 6, produced: 6, seq: 4 });

    // Nothing new: hour 1 is settled, so it is neither judged nor its marker read.
    const quiet = await runAt(hourly, T0 + 6 * HOUR + 30 * MINUTE);
    expect(quiet.outcome).toBe('nothing-to-load');
    expect(quiet.audit?.markers?.verdicts.map((verdict) => verdict.hour)).not.toContain(hour1);
    expect(quiet.calls.filter((call) => call.includes(completeMarkerPath('wh', TOPIC, hourOf(T0) + 1, 'hourly')))).toEqual([]);

    // Late records of hour 1, counted: the commit withdraws the marker, the hour is judged again and marked with 9.
    const late = await produce(hourly, [T0 + HOUR + 30_000, T0 + HOUR + 31_000, T0 + HOUR + 32_000]);
    hourly.audit.produced(late, T0 + 6 * HOUR + 50 * MINUTE);
    const touched = await runAt(hourly, T0 + 7 * HOUR);
    expect(touched.outcome).toBe('committed');
    expect(touched.audit?.markers?.verdicts.find((verdict) => verdict.hour === hour1)).toMatchObject({ state: 'COMPLETE', records: 9, produced: 9 });
    // (Hour 4 closes at 07:00 too.)
    expect(touched.audit?.markers?.written).toEqual([`${TOPIC} ${hour1}`, `${TOPIC} ${hourKey(hourOf(T0) + 4)}`]);
    expect(await markerOf(hourly, 1)).toMatchObject({ records: 9, produced: 9, seq: 7 });

    // Late records nobody counted: the marker is withdrawn, the hour judged a mismatch, and no marker written.
    await produce(hourly, [T0 + HOUR + 40_000]);
    const mismatch = await runAt(hourly, T0 + 7 * HOUR + 10 * MINUTE);
    expect(mismatch.audit?.markers?.verdicts.find((verdict) => verdict.hour === hour1)).toMatchObject({ state: 'CLOSED-MISMATCH', records: 10, produced: 9 });
    expect(await markerOf(hourly, 1)).toBeUndefined();
    // A mismatch stays judged for a day after its hour (a late PRODUCER count would still mark it), then settles.
    const after = await runAt(hourly, T0 + 7 * HOUR + 20 * MINUTE);
    expect(after.audit?.markers?.verdicts.find((verdict) => verdict.hour === hour1)).toMatchObject({ state: 'CLOSED-MISMATCH' });

    // A replay of hour 2 (rebuilt from the same offsets, with another codec so its files differ and
    // it swaps): the next run judges hour 2 again and keeps its marker.
    const hour2 = hourKey(hourOf(T0) + 2);
    const marker2 = await markerOf(hourly, 2);
    expect(marker2).toMatchObject({ records: 6, produced: 6 });
    const services = { load: load({ codec: 'snappy' }), warehouse: hourly.warehouse, source: hourly.source, registry: registry.client, logger: quietLogger, store: hourly.store, numberRuns: false, now: () => new Date(T0 + 7 * HOUR + 25 * MINUTE) };
    expect((await replayWindow({ ...services, from: new Date(T0 + 2 * HOUR), to: new Date(T0 + 3 * HOUR) })).outcome).toBe('swapped');
    const replayed = await runAt(hourly, T0 + 7 * HOUR + 30 * MINUTE);
    expect(replayed.audit?.markers?.verdicts.find((verdict) => verdict.hour === hour2)).toMatchObject({ state: 'COMPLETE', records: 6, produced: 6 });
    expect(await markerOf(hourly, 2)).toEqual(marker2);
    const next = await runAt(hourly, T0 + 7 * HOUR + 40 * MINUTE);
    expect(next.audit?.markers?.verdicts.map((verdict) => verdict.hour)).not.toContain(hour2);
    // Judged a last time once its day is over, then settled.
    await runAt(hourly, T0 + 26 * HOUR + 10 * MINUTE);
    const settled = await runAt(hourly, T0 + 26 * HOUR + 20 * MINUTE);
    expect(settled.audit?.markers?.verdicts.map((verdict) => verdict.hour)).not.toContain(hour1);
  });

  it('without a checkpoint (deleted) a run judges every hour from the manifests, as before, and writes one again', async () => {
    const hourly = newWorld();
    for (let k = 1; k <= 6; k += 1) await hourlyRun(hourly, k);
    await hourly.memory.delete(completenessDir('wh', 'views'), { recursive: true });
    const rebuilt = await runAt(hourly, T0 + 6 * HOUR + 30 * MINUTE);
    expect(rebuilt.audit?.markers?.verdicts.map((verdict) => verdict.hour)).toEqual([0, 1, 2, 3, 4, 5].map((hour) => hourKey(hourOf(T0) + hour)));
    expect(rebuilt.audit?.markers?.written).toEqual([]);
    const next = await runAt(hourly, T0 + 6 * HOUR + 40 * MINUTE);
    expect(next.audit?.markers?.verdicts.map((verdict) => verdict.hour)).toEqual([4, 5].map((hour) => hourKey(hourOf(T0) + hour)));
  });
});

describe('the completeness checkpoint and the audit read start', () => {
  it('reading starts latenessHorizon + one audit window before the earliest hour judged, never before 0', () => {
    expect(auditReadSince(['2026-01-01T05', '2026-01-01T03', '2026-01-01T04'], 2 * HOUR)).toBe(Date.UTC(2026, 0, 1, 3) - 2 * HOUR - WINDOW);
    expect(auditReadSince(['1970-01-01T00'], 2 * HOUR)).toBe(0);
  });

  it('a damaged newest generation is skipped for the one before it; none readable means none', async () => {
    const hourly = newWorld();
    for (let k = 1; k <= 3; k += 1) await hourlyRun(hourly, k);
    const found = await readCheckpoint(hourly.memory, 'wh', 'views');
    expect(found.checkpoint).toMatchObject({ generation: 3, commitsThrough: 3, topics: { [TOPIC]: { open: [hourKey(hourOf(T0) + 1), hourKey(hourOf(T0) + 2)] } } });
    expect(found.generations).toEqual([2, 3]);
    await hourly.memory.create(completenessCheckpointPath('wh', 'views', 4), Buffer.from('{"format": "tributary-etl-completeness-v1", "load": "views"'));
    expect((await readCheckpoint(hourly.memory, 'wh', 'views')).checkpoint?.generation).toBe(3);
    for (const generation of [2, 3]) await hourly.memory.delete(completenessCheckpointPath('wh', 'views', generation));
    expect((await readCheckpoint(hourly.memory, 'wh', 'views')).checkpoint).toBeUndefined();
    // The next run judges every hour from the manifests and writes generation 5.
    const rebuilt = await hourlyRun(hourly, 4);
    expect(rebuilt.audit?.markers?.verdicts).toHaveLength(4);
    expect((await readCheckpoint(hourly.memory, 'wh', 'views')).checkpoint?.generation).toBe(5);
  });
});

