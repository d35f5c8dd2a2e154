/**
 * Loads in the hive layout (`<topic>/dt=YYYY-MM-DD/hr=HH/`) over whole runs against the in-process
 * fakes and a real registry server: data lands in partition folders, `_SUCCESS` stands exactly
 * where `_COMPLETE` does (written after it, withdrawn with it, added back when a crash left it
 * out), and a load's layout cannot change once it has commits.
 */
import { describe, expect, it } from 'vitest';
import type { AuditCountEvent } from '../../../src/audit/audit-count.js';
import { windowStartOf } from '../../../src/audit/windows.js';
import { TributaryError } from '../../../src/common/errors.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { parseManifest, serializeManifest } from '../../../src/etl/load/manifest.js';
import { claimPath, completeMarkerPath, hourMarkerPath, hourOf, publishedPath, type HourLayout } from '../../../src/etl/layout.js';
import type { LoadAudit } from '../../../src/etl/completeness/load-audit.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { runLoad, type RunOptions } from '../../../src/etl/load/run.js';
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

function load(layout: HourLayout = 'hive'): LoadDefinition {
  return memoryLoad(TOPIC, world.url, { timeField: 'header.time', latenessHorizonMs: 2 * HOUR, audit: { topic: '_audit', bootstrap: ['127.0.0.1:9092'] }, layout });
}

/** PRODUCER counts the test adds; the LOADER tier's events are recorded and ignored here. */
class ProducerCounts implements LoadAudit {
  readonly publisher = new RecordingPublisher();
  readonly sink = { publisher: this.publisher, encoder: new JsonEncoder(), server: 'loader-1' };
  private readonly events: AuditCountEvent[] = [];

  produced(times: readonly number[]): void {
    const windows = new Map<number, number>();
    for (const time of times) windows.set(windowStartOf(time, WINDOW), (windows.get(windowStartOf(time, WINDOW)) ?? 0) + 1);
    const counterId = `producer-${this.events.length}`;
    let sequence = 0;
    for (const [windowStart, count] of windows) {
      this.events.push({ topic: TOPIC, tier: 'PRODUCER', cluster: null, server: 'web', windowStart, windowEnd: windowStart + WINDOW, count, publishedAt: 0, origin: 'web-1', counterId, sequence: sequence++, latency: [] });
    }
  }

  readEvents(topic: string): Promise<readonly AuditCountEvent[]> {
    return Promise.resolve(this.events.filter((event) => event.topic === topic));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

async function produce(source: FakeSource, count: number, firstId = 0, at?: (id: number) => number): Promise<number[]> {
  const times: number[] = [];
  for (let id = firstId; id < firstId + count; id += 1) {
    const time = at?.(id) ?? T0 + ((id * 2_654_435) % (3 * HOUR));
    source.append(TOPIC, id % 3, await world.serializer.encode(`${TOPIC}-value`, { id, header: { time, server: `web-${id % 2}` } }, SCHEMA), time);
    times.push(time);
  }
  return times;
}

function options(warehouse: MemoryWarehouse, source: FakeSource, audit: ProducerCounts, extra: Partial<RunOptions> = {}): RunOptions {
  return { load: load(), warehouse, source, registry: world.client, logger: quietLogger, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false, now: () => NOW, audit, ...extra };
}

/** Fails every write of a _SUCCESS temp while `failSuccess` is set (a failure between the two markers). */
class SuccessFailingWarehouse extends MemoryWarehouse {
  failSuccess = false;

  override async create(path: string, data: Parameters<MemoryWarehouse['create']>[1]): Promise<void> {
    if (this.failSuccess && path.includes('/_SUCCESS.')) throw new Error('the warehouse went away');
    return super.create(path, data);
  }
}

/** The hour folders holding `name`, as `dt=…/hr=…`. */
function foldersWith(warehouse: MemoryWarehouse, name: string): string[] {
  return warehouse
    .filesUnder(`wh/${TOPIC}/`)
    .filter((path) => path.endsWith(`/${name}`))
    .map((path) => path.slice(`wh/${TOPIC}/`.length, -name.length - 1));
}

describe('the hive layout', () => {
  it('puts data, _COMPLETE and _SUCCESS into dt=/hr= folders; _SUCCESS only beside _COMPLETE, withdrawn with it', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new ProducerCounts();
    audit.produced(await produce(source, 300));
    const first = await runLoad(options(warehouse, source, audit));
    expect(first.manifest?.output.layout).toBe('hive');
    expect(first.manifest?.files.map((file) => file.path.split('/').slice(0, -1).join('/')).sort()).toEqual(
      ['13', '13', '13', '14', '14', '14', '15', '15', '15'].map((hour) => `wh/${TOPIC}/dt=2026-11-29/hr=${hour}`),
    );
    expect(warehouse.filesUnder(`wh/${TOPIC}/hourly`)).toEqual([]);
    // 13 and 14 are closed and match; 15 is open.
    expect(foldersWith(warehouse, '_COMPLETE')).toEqual(['dt=2026-11-29/hr=13', 'dt=2026-11-29/hr=14']);
    expect(foldersWith(warehouse, '_SUCCESS')).toEqual(foldersWith(warehouse, '_COMPLETE'));
    expect(warehouse.files.get(hourMarkerPath('wh', TOPIC, hourOf(T0), 'hive', '_SUCCESS'))).toEqual(Buffer.alloc(0));
    expect(warehouse.filesUnder(`wh/${TOPIC}/`).filter((path) => path.endsWith('.tmp'))).toEqual([]);

    // Late records nobody counted into hour 14: both markers are withdrawn before they land.
    await produce(source, 2, 2_000, () => T0 + HOUR + 5);
    await runLoad(options(warehouse, source, audit, { now: () => new Date('2026-11-29T17:40:00Z') }));
    expect(foldersWith(warehouse, '_COMPLETE')).toEqual(['dt=2026-11-29/hr=13']);
    expect(foldersWith(warehouse, '_SUCCESS')).toEqual(['dt=2026-11-29/hr=13']);
    const withdrawn = warehouse.operations.filter((operation) => operation.startsWith('delete') && operation.includes('hr=14/_'));
    expect(withdrawn).toEqual([`delete wh/${TOPIC}/dt=2026-11-29/hr=14/_SUCCESS`, `delete wh/${TOPIC}/dt=2026-11-29/hr=14/_COMPLETE`]);
  });

  it('a _SUCCESS that a failure left out beside its _COMPLETE is written by the next run', async () => {
    const warehouse = new SuccessFailingWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new ProducerCounts();
    audit.produced(await produce(source, 90));
    // The first marker is renamed into place, then its _SUCCESS cannot be written: the marker step fails.
    warehouse.failSuccess = true;
    const failed = await runLoad(options(warehouse, source, audit));
    expect(failed.outcome).toBe('committed');
    expect(failed.audit?.markersFailed?.code).toBe('ETL_AUDIT_UNAVAILABLE');
    expect(foldersWith(warehouse, '_COMPLETE')).toEqual(['dt=2026-11-29/hr=13']);
    expect(foldersWith(warehouse, '_SUCCESS')).toEqual([]);
    const marker = warehouse.files.get(completeMarkerPath('wh', TOPIC, hourOf(T0), 'hive'));

    warehouse.failSuccess = false;
    const again = await runLoad(options(warehouse, source, audit, { now: () => new Date('2026-11-29T17:10:00Z') }));
    expect(again.outcome).toBe('nothing-to-load');
    expect(again.audit?.markersFailed).toBeUndefined();
    expect(foldersWith(warehouse, '_COMPLETE')).toEqual(['dt=2026-11-29/hr=13', 'dt=2026-11-29/hr=14']);
    expect(foldersWith(warehouse, '_SUCCESS')).toEqual(foldersWith(warehouse, '_COMPLETE'));
    expect(warehouse.files.get(completeMarkerPath('wh', TOPIC, hourOf(T0), 'hive'))).toEqual(marker); // left as it was
    expect(warehouse.filesUnder(`wh/${TOPIC}/`).filter((path) => path.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses to run a load in another layout than its first commit records (absent: hourly)', async () => {
    const warehouse = new MemoryWarehouse();
    const source = new FakeSource();
    source.addTopic(TOPIC, 3);
    const audit = new ProducerCounts();
    await produce(source, 30);
    await runLoad(options(warehouse, source, audit));
    await produce(source, 3, 100);
    const refused = await runLoad(options(warehouse, source, audit, { load: load('hourly') })).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TributaryError);
    expect(refused).toMatchObject({ code: 'CONFIG_INVALID', details: { layout: 'hourly', committed: 'hive' } });
    expect((refused as Error).message).toContain('cannot change once it has commits');
    expect(warehouse.filesUnder('wh/_etl/views/commits/')).toHaveLength(2); // commit 1 only

    // A first commit written before manifests recorded the layout is hourly.
    const claim = parseManifest(warehouse.files.get(claimPath('wh', 'views', 1))!, 'claim 1');
    const { layout: _layout, ...older } = claim.output;
    for (const path of [claimPath('wh', 'views', 1), publishedPath('wh', 'views', 1)]) warehouse.files.set(path, serializeManifest({ ...claim, output: older }));
    const stillRefused = await runLoad(options(warehouse, source, audit)).catch((error: unknown) => error);
    expect(stillRefused).toMatchObject({ code: 'CONFIG_INVALID', details: { layout: 'hive', committed: 'hourly' } });
  });
});
