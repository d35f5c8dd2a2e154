/** The pure decisions of hour completeness (src/etl/completeness/hour-completeness.ts) and the loaded event time of manifests, on hand-built inputs. */
import { describe, expect, it } from 'vitest';
import type { AuditCountEvent } from '../../../src/audit/audit-count.js';
import { buildManifestEventTimes } from '../../../src/etl/load/build-manifest.js';
import { decideMarkers, judgeHours, loadedThrough, markerOf, parseMarker, type HourVerdict } from '../../../src/etl/completeness/hour-completeness.js';
import { parseLoadFile } from '../../../src/etl/load-file.js';
import { parseManifest, serializeManifest, type Manifest } from '../../../src/etl/load/manifest.js';
import type { PartitionPlan } from '../../../src/etl/load/plan.js';

const HOUR = 3_600_000;
const H10 = Date.UTC(2026, 10, 29, 10);
const HORIZON = 2 * HOUR;

function event(tier: AuditCountEvent['tier'], windowStart: number, count: number, counterId: string, sequence: number, topic = 'views'): AuditCountEvent {
  return { topic, tier, cluster: null, server: 's', windowStart, windowEnd: windowStart + 600_000, count, publishedAt: 0, origin: 'web-1', counterId, sequence, latency: [] };
}

const records = { '2026-11-29T10': 30, '2026-11-29T11': 20, '2026-11-29T12': 5 };
const produced = [
  event('PRODUCER', H10, 10, 'p', 0),
  event('PRODUCER', H10 + 600_000, 20, 'p', 1),
  event('PRODUCER', H10 + 600_000, 20, 'p', 1), // the same event delivered twice
  event('PRODUCER', H10 + HOUR, 21, 'p', 2),
  event('LOADER', H10 + HOUR, 20, 'l', 0),
  event('PRODUCER', H10 + 2 * HOUR, 5, 'p', 3),
  event('PRODUCER', H10, 99, 'q', 0, 'other-topic'),
];

describe('judgeHours', () => {
  it('an hour is closed when every loaded partition is past its end + the horizon, complete when its records equal the distinct PRODUCER counts', () => {
    const verdicts = judgeHours({ topic: 'views', records, partitions: ['0', '1'], eventTimes: { '0': H10 + 4 * HOUR, '1': H10 + 4 * HOUR + 1 }, latenessHorizonMs: HORIZON, events: produced });
    expect(verdicts.map((verdict) => [verdict.hour, verdict.state, verdict.records, verdict.produced])).toEqual([
      ['2026-11-29T10', 'COMPLETE', 30, 30],
      ['2026-11-29T11', 'CLOSED-MISMATCH', 20, 21],
      ['2026-11-29T12', 'OPEN', 5, 5],
    ]);
    expect(verdicts[0]?.windows).toEqual([{ windowStart: H10, produced: 10 }, { windowStart: H10 + 600_000, produced: 20 }]);
  });

  it('the slowest partition decides; a partition without a loaded event time (an older manifest) keeps every hour open', () => {
    const slow = judgeHours({ topic: 'views', records, partitions: ['0', '1'], eventTimes: { '0': H10 + 9 * HOUR, '1': H10 + 3 * HOUR - 1 }, latenessHorizonMs: HORIZON, events: produced });
    expect(slow.map((verdict) => verdict.state)).toEqual(['OPEN', 'OPEN', 'OPEN']);
    expect(loadedThrough(['0', '1'], { '0': 5 })).toBeUndefined();
    expect(loadedThrough([], {})).toBeUndefined();
    const old = judgeHours({ topic: 'views', records, partitions: ['0'], eventTimes: undefined, latenessHorizonMs: HORIZON, events: produced });
    expect(old.every((verdict) => verdict.state === 'OPEN')).toBe(true);
  });

  it('records nobody counted at the PRODUCER tier never make an hour complete', () => {
    const [verdict] = judgeHours({ topic: 'views', records: { '2026-11-29T10': 3 }, partitions: ['0'], eventTimes: { '0': H10 + 10 * HOUR }, latenessHorizonMs: HORIZON, events: [] });
    expect(verdict).toMatchObject({ state: 'CLOSED-MISMATCH', produced: 0 });
  });
});

describe('decideMarkers', () => {
  const verdict = (hour: string, state: HourVerdict['state'], count: number, producedCount = count): HourVerdict => ({ topic: 'views', hour, records: count, produced: producedCount, closed: state !== 'OPEN', state, windows: [] });

  it('writes new markers, rewrites those with other counts, keeps equal ones, removes those of hours that no longer match', () => {
    const existing = new Map([
      ['2026-11-29T10', markerOf(verdict('2026-11-29T10', 'COMPLETE', 30), 1)],
      ['2026-11-29T11', markerOf(verdict('2026-11-29T11', 'COMPLETE', 20), 1)],
      ['2026-11-29T12', markerOf(verdict('2026-11-29T12', 'COMPLETE', 5), 1)],
      ['2026-11-29T13', null],
    ]);
    const decision = decideMarkers(
      [verdict('2026-11-29T10', 'COMPLETE', 30), verdict('2026-11-29T11', 'COMPLETE', 27), verdict('2026-11-29T12', 'CLOSED-MISMATCH', 6, 5), verdict('2026-11-29T13', 'COMPLETE', 4), verdict('2026-11-29T14', 'COMPLETE', 8), verdict('2026-11-29T15', 'OPEN', 1)],
      existing,
      4,
    );
    expect(decision.write.map((marker) => [marker.hour, marker.records, marker.seq])).toEqual([
      ['2026-11-29T11', 27, 4],
      ['2026-11-29T13', 4, 4],
      ['2026-11-29T14', 8, 4],
    ]);
    expect(decision.remove).toEqual(['2026-11-29T12']);
  });

  it('a marker reads back; anything else is not a marker', () => {
    const marker = markerOf(verdict('2026-11-29T10', 'COMPLETE', 30), 1);
    expect(parseMarker(Buffer.from(JSON.stringify(marker)))).toEqual(marker);
    expect(parseMarker(Buffer.from('{"records": 3}'))).toBeNull();
    expect(parseMarker(Buffer.from('not json'))).toBeNull();
  });
});

describe('manifest eventTimes', () => {
  const partition = (number: number, fields: Partial<PartitionPlan>): PartitionPlan => ({ topic: 'views', partition: number, start: 0, end: 0, logStart: 0, highWatermark: 0, capped: false, ...fields });
  const plannedAt = '2026-11-29T17:00:00.000Z';

  it('the largest event time loaded, raised to plannedAt when read to the high watermark; never lowered; capped and troubled partitions keep theirs', () => {
    const base = { nextOffsets: { views: { '0': 10, '1': 10, '2': 10, '3': 10 } }, eventTimes: { views: { '0': H10, '1': H10 + 9 * HOUR, '2': H10, '3': H10 } } };
    const plan = {
      plannedAt,
      partitions: [
        partition(0, { start: 10, end: 20, highWatermark: 20 }), // caught up: plannedAt
        partition(1, { start: 10, end: 10, highWatermark: 10 }), // idle, ahead in event time already: kept
        partition(2, { start: 10, end: 15, highWatermark: 99, capped: true }), // capped: its records only
        partition(3, { start: 10, end: 10, highWatermark: 5, problem: 'ahead' }),
        partition(4, { start: 0, end: 0, highWatermark: 0 }), // never had a record: left out
      ],
    };
    const staged = new Map([['views\u00002', { topic: 'views', partition: 2, files: [], quarantine: undefined, reasons: {}, maxEventTime: H10 + HOUR }]]);
    expect(buildManifestEventTimes(base, plan, staged)).toEqual({ views: { '0': Date.parse(plannedAt), '1': H10 + 9 * HOUR, '2': H10 + HOUR, '3': H10 } });
  });

  it('manifests written before eventTimes still read', () => {
    const manifest = {
      format: 'tributary-etl-manifest-v1',
      load: 'views',
      seq: 1,
      attempt: 'a1',
      runNumber: null,
      plannedAt,
      output: { format: 'avro', codec: 'deflate', timeField: 'time' },
      readerSchemas: {},
      ranges: [],
      nextOffsets: { views: { '0': 3 } },
      files: [],
      quarantine: { records: 0, reasons: {}, files: [] },
      hours: {},
    } as Manifest;
    expect(parseManifest(serializeManifest(manifest), 'old').eventTimes).toBeUndefined();
    expect(parseManifest(serializeManifest({ ...manifest, eventTimes: { views: { '0': 5 } } }), 'new').eventTimes).toEqual({ views: { '0': 5 } });
  });
});

describe('load file audit section', () => {
  const base = ['name: views', 'source: { bootstrap: [127.0.0.1:9092] }', 'topics: [views]', 'registry: http://127.0.0.1:8081', 'warehouse: { url: ./wh }', 'format: avro', 'codec: deflate'];

  it('defaults the topic to _audit and the cluster to source.bootstrap', () => {
    const load = parseLoadFile([...base, 'timeField: header.time', 'audit: {}'].join('\n'), '/jobs/views.yaml');
    expect(load.audit).toEqual({ topic: '_audit', bootstrap: ['127.0.0.1:9092'] });
    const other = parseLoadFile([...base, 'timeField: header.time', 'audit: { topic: audit-counts, bootstrap: "h1:1,h2:2" }'].join('\n'), '/jobs/views.yaml');
    expect(other.audit).toEqual({ topic: 'audit-counts', bootstrap: ['h1:1', 'h2:2'] });
    expect(parseLoadFile(base.join('\n'), '/jobs/views.yaml').audit).toBeUndefined();
  });

  it('refuses an audit section without timeField', () => {
    expect(() => parseLoadFile([...base, 'audit: {}'].join('\n'), '/jobs/views.yaml')).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('set timeField') as unknown }));
  });
});
