/**
 * The decisions of a replay, on manifests written by hand: which offset ranges fed the hours of a
 * window (from commits, replays and rollbacks folded in seq order), which of them the log no
 * longer holds, and when reading them again would move records into other hours or drop them.
 */
import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { MANIFEST_FORMAT, type Manifest } from '../../../src/etl/load/manifest.js';
import { foldHistory, hourStateKey, liveFiles, type HourState } from '../../../src/etl/replay/history.js';
import { REPLAY_MANIFEST_FORMAT, type HourSwap, type ReplayManifest, type VersionFile } from '../../../src/etl/replay/manifest.js';
import { checkRecordsStay, checkWindow, deriveReplayRanges, missingRanges, missingRangesError, rangeKey, type RebuiltRange } from '../../../src/etl/replay/ranges.js';

const SHA = 'a'.repeat(64);

interface FileSpec {
  readonly topic?: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly hour: string;
  readonly records: number;
}

function commit(seq: number, files: readonly FileSpec[], readerId = 1): Manifest {
  const topics = [...new Set(files.map((file) => file.topic ?? 'views'))];
  return {
    format: MANIFEST_FORMAT,
    load: 'views',
    seq,
    attempt: `a${seq}`,
    runNumber: null,
    plannedAt: '2026-11-29T17:00:00.000Z',
    output: { format: 'avro', codec: 'deflate', timeField: 'time' },
    readerSchemas: Object.fromEntries(topics.map((topic) => [topic, { subject: `${topic}-value`, version: 1, id: readerId }])),
    ranges: [],
    nextOffsets: {},
    files: files.map((file) => {
      const topic = file.topic ?? 'views';
      const name = `${topic}+${file.partition}+${file.start}+${file.end}.avro`;
      return { topic, partition: file.partition, start: file.start, end: file.end, hour: file.hour, records: file.records, bytes: 100 + file.records, sha256: SHA, staged: `s/${name}`, path: `wh/${topic}/hourly/x/${name}` };
    }),
    quarantine: { records: 0, reasons: {}, files: [] },
    hours: {},
  };
}

function versionFile(partition: number, start: number, end: number, records: number, readerId = 2): VersionFile {
  return { name: `views+${partition}+${start}+${end}.avro`, partition, start, end, records, bytes: 200 + records, sha256: 'b'.repeat(64), readerId };
}

function swap(seq: number, kind: 'replay' | 'rollback', hours: readonly Pick<HourSwap, 'hour' | 'fromVersion' | 'toVersion' | 'old' | 'new'>[]): ReplayManifest {
  return {
    format: REPLAY_MANIFEST_FORMAT,
    kind,
    load: 'views',
    seq,
    attempt: `r${seq}`,
    runNumber: null,
    createdAt: '2026-11-30T09:00:00.000Z',
    reason: null,
    request: { from: '', to: '', topic: null },
    transform: null,
    readerSchemas: {},
    ranges: [],
    hours: hours.map((hour) => ({ topic: 'views', live: 'l', keep: 'k', bring: 'b', carried: [], recordsChanged: null, outputSchemaChanged: null, ...hour })),
  };
}

function state(hours: ReadonlyMap<string, HourState>, hour: string, topic = 'views'): HourState {
  const found = hours.get(hourStateKey(topic, hour));
  if (found === undefined) throw new Error(`no state for ${topic} ${hour}`);
  return found;
}

function thrown(work: () => unknown): TributaryError {
  try {
    work();
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('nothing was thrown');
}

describe('history of the hours', () => {
  const commits = [
    commit(1, [
      { partition: 0, start: 0, end: 10, hour: '2026-11-29T10', records: 6 },
      { partition: 0, start: 0, end: 10, hour: '2026-11-29T11', records: 4 },
      { partition: 1, start: 0, end: 8, hour: '2026-11-29T11', records: 8 },
    ]),
    commit(2, [{ partition: 0, start: 10, end: 15, hour: '2026-11-29T11', records: 5 }]),
  ];

  it('puts every committed file into version 1 of its hour until a replay', () => {
    const hours = foldHistory(commits, []);
    const eleven = state(hours, '2026-11-29T11');
    expect(eleven).toMatchObject({ live: 1, maxVersion: 1, earlier: [], lateFiles: [] });
    expect(liveFiles(eleven).map((file) => [file.name, file.records, file.readerId])).toEqual([
      ['views+0+0+10.avro', 4, 1],
      ['views+0+10+15.avro', 5, 1],
      ['views+1+0+8.avro', 8, 1],
    ]);
  });

  it('after a replay the hour is at the new version, the old one kept; later commits are late files; a rollback restores and keeps them', () => {
    const replayed = [versionFile(0, 0, 10, 4), versionFile(0, 10, 15, 5), versionFile(1, 0, 8, 8)];
    const replay = swap(3, 'replay', [{ hour: '2026-11-29T11', fromVersion: 1, toVersion: 2, old: liveFiles(state(foldHistory(commits, []), '2026-11-29T11')), new: replayed }]);
    const late = commit(4, [{ partition: 1, start: 8, end: 9, hour: '2026-11-29T11', records: 1 }]);
    const afterReplay = foldHistory([...commits, commit(3, []), late], [replay]);
    const eleven = state(afterReplay, '2026-11-29T11');
    expect(eleven).toMatchObject({ live: 2, maxVersion: 2, earlier: [1] });
    expect(eleven.versionFiles).toEqual(replayed);
    expect(eleven.lateFiles.map((file) => file.name)).toEqual(['views+1+8+9.avro']);
    expect(eleven.kept.get(1)?.map((file) => file.name)).toEqual(['views+0+0+10.avro', 'views+0+10+15.avro', 'views+1+0+8.avro']);
    expect(state(afterReplay, '2026-11-29T10')).toMatchObject({ live: 1, maxVersion: 1 });

    const rollback = swap(5, 'rollback', [{ hour: '2026-11-29T11', fromVersion: 2, toVersion: 1, old: eleven.versionFiles, new: eleven.kept.get(1) ?? [] }]);
    const afterRollback = foldHistory([...commits, commit(3, []), late, commit(5, [])], [replay, rollback]);
    const restored = state(afterRollback, '2026-11-29T11');
    expect(restored).toMatchObject({ live: 1, maxVersion: 2, earlier: [] });
    expect(restored.versionFiles.map((file) => file.readerId)).toEqual([1, 1, 1]);
    expect(restored.lateFiles.map((file) => file.name)).toEqual(['views+1+8+9.avro']);
    expect([...restored.kept.keys()]).toEqual([2]);
  });

  it('refuses a replay log that does not follow from the manifests', () => {
    const wrong = swap(3, 'replay', [{ hour: '2026-11-29T11', fromVersion: 2, toVersion: 3, old: [], new: [] }]);
    const error = thrown(() => foldHistory(commits, [wrong]));
    expect(error.code).toBe('ETL_WAREHOUSE_DAMAGED');
    expect(error.message).toContain('replay 3 of load views, hour 2026-11-29T11 of views, swaps out version 2, but version 1 is live');
  });
});

describe('ranges of a window', () => {
  const hours = foldHistory(
    [
      commit(1, [
        { partition: 0, start: 0, end: 10, hour: '2026-11-29T10', records: 6 },
        { partition: 0, start: 0, end: 10, hour: '2026-11-29T11', records: 4 },
        { partition: 1, start: 0, end: 8, hour: '2026-11-29T12', records: 8 },
        { topic: 'clicks', partition: 0, start: 0, end: 3, hour: '2026-11-29T11', records: 3 },
      ]),
      commit(2, [{ partition: 1, start: 8, end: 12, hour: '2026-11-29T11', records: 4 }]),
    ],
    [],
  );

  it('are the ranges of the files in the window hours, with what each holds in every hour of the topic', () => {
    const ranges = deriveReplayRanges(hours, [state(hours, '2026-11-29T11')]);
    expect(ranges.map((range) => [rangeKey(range), range.hours, Object.fromEntries(range.liveByHour)])).toEqual([
      ['views+0+0+10', ['2026-11-29T11'], { '2026-11-29T10': 6, '2026-11-29T11': 4 }],
      ['views+1+8+12', ['2026-11-29T11'], { '2026-11-29T11': 4 }],
    ]);
    const both = deriveReplayRanges(hours, [state(hours, '2026-11-29T11'), state(hours, '2026-11-29T11', 'clicks')]);
    expect(both.map(rangeKey)).toEqual(['clicks+0+0+3', 'views+0+0+10', 'views+1+8+12']);
  });

  it('lists every part the log no longer holds, with the hours it fed', () => {
    const ranges = deriveReplayRanges(hours, [state(hours, '2026-11-29T10'), state(hours, '2026-11-29T11'), state(hours, '2026-11-29T12')]);
    const bounds = new Map([
      ['views-0', { logStart: 4, highWatermark: 20 }],
      ['views-1', { logStart: 0, highWatermark: 10 }],
    ]);
    const missing = missingRanges(ranges, bounds);
    expect(missing).toEqual([
      { topic: 'views', partition: 0, from: 0, to: 4, hours: ['2026-11-29T10', '2026-11-29T11'], why: 'deleted by retention' },
      { topic: 'views', partition: 1, from: 10, to: 12, hours: ['2026-11-29T11'], why: 'past the end of the log' },
    ]);
    expect(missingRanges(ranges, new Map([['views-0', { logStart: 0, highWatermark: 10 }], ['views-1', { logStart: 0, highWatermark: 12 }]]))).toEqual([]);
    const error = missingRangesError('views', missing) as TributaryError;
    expect(error.code).toBe('ETL_REPLAY_OFFSETS_MISSING');
    expect(error.message).toBe(
      'replay of load views stopped before changing anything: 2 offset ranges that fed the window are no longer in the log:\n' +
        '  views-0 [0, 4) (4 offsets, deleted by retention; fed 2026-11-29T10, 2026-11-29T11)\n' +
        '  views-1 [10, 12) (2 offsets, past the end of the log; fed 2026-11-29T11)\n' +
        'These hours cannot be rebuilt from the source. Replay a window without them, or keep the loaded version',
    );
  });
});

describe('records stay in their hours', () => {
  const hours = foldHistory([commit(1, [{ partition: 0, start: 0, end: 10, hour: '2026-11-29T10', records: 6 }, { partition: 0, start: 0, end: 10, hour: '2026-11-29T11', records: 4 }])], []);
  const ranges = deriveReplayRanges(hours, [state(hours, '2026-11-29T11')]);
  const rebuilding = new Set([hourStateKey('views', '2026-11-29T11')]);
  const rebuilt = (byHour: Record<string, number>, quarantined = 0, reasons: Record<string, number> = {}): Map<string, RebuiltRange> =>
    new Map([['views+0+0+10', { byHour: new Map(Object.entries(byHour)), quarantined, reasons }]]);

  it('accepts the same counts outside the rebuilt hours, and more records inside them (records that decode now)', () => {
    expect(() => checkRecordsStay('views', ranges, rebuilding, rebuilt({ '2026-11-29T10': 6, '2026-11-29T11': 4 }))).not.toThrow();
    expect(() => checkRecordsStay('views', ranges, rebuilding, rebuilt({ '2026-11-29T10': 6, '2026-11-29T11': 5 }))).not.toThrow();
  });

  it('refuses records moving into or out of an hour that is not rebuilt', () => {
    const error = thrown(() => checkRecordsStay('views', ranges, rebuilding, rebuilt({ '2026-11-29T10': 5, '2026-11-29T11': 4, '2026-11-29T12': 1 })));
    expect(error.code).toBe('ETL_REPLAY_RECORDS_MOVE');
    expect(error.message).toContain('views-0 [0, 10) has 6 records in hour 2026-11-29T10 now and would have 5');
    expect(error.message).toContain('views-0 [0, 10) has 0 records in hour 2026-11-29T12 now and would have 1');
    expect(error.message).toContain('Widen --from/--to to cover those hours');
  });

  it('refuses records that were loaded and would now be set aside', () => {
    const error = thrown(() => checkRecordsStay('views', ranges, rebuilding, rebuilt({ '2026-11-29T10': 6, '2026-11-29T11': 2 }, 2, { SERDE_DECODE_FAILED: 2 })));
    expect(error.code).toBe('ETL_REPLAY_RECORDS_DROPPED');
    expect(error.message).toContain('views-0 [0, 10): 10 records loaded, 8 now (2 set aside: 2 SERDE_DECODE_FAILED)');
  });

  it('says a range whose log holds fewer records than were loaded lost them to compaction, not that they moved or no longer decode', () => {
    // Compaction removed 3 records of the range since it was loaded: 2 of hour 10 (not rebuilt), 1 of hour 11.
    const error = thrown(() => checkRecordsStay('views', ranges, rebuilding, rebuilt({ '2026-11-29T10': 4, '2026-11-29T11': 3 })));
    expect(error.code).toBe('ETL_REPLAY_RECORDS_COMPACTED');
    expect(error.message).toContain('views-0 [0, 10): 10 records loaded, 7 in the log now');
    expect(error.message).toContain('compaction removed them since they were loaded');
    // Records set aside now are still in the log: that is a decoding problem, not compaction.
    expect(thrown(() => checkRecordsStay('views', ranges, rebuilding, rebuilt({ '2026-11-29T10': 6, '2026-11-29T11': 1 }, 3, { SERDE_DECODE_FAILED: 3 }))).code).toBe('ETL_REPLAY_RECORDS_DROPPED');
  });
});

describe('window', () => {
  it.each([
    ['2026-11-29T10:30:00Z', '2026-11-29T12:00:00Z', '--from 2026-11-29T10:30:00.000Z is not the start of an hour; a replay rebuilds whole UTC hours: give e.g. 2026-11-29T10:00:00.000Z'],
    ['2026-11-29T10:00:00Z', '2026-11-29T10:00:00Z', 'the window [2026-11-29T10:00:00.000Z, 2026-11-29T10:00:00.000Z) is empty: --to must be later than --from'],
    ['nonsense', '2026-11-29T10:00:00Z', '--from is not a time; give an ISO time in UTC such as 2026-11-29T10:00Z'],
  ])('refuses [%s, %s)', (from, to, message) => {
    const error = thrown(() => checkWindow(new Date(from), new Date(to)));
    expect(error.code).toBe('ETL_REPLAY_WINDOW_INVALID');
    expect(error.message).toContain(message);
  });

  it('accepts whole hours', () => {
    expect(() => checkWindow(new Date('2026-11-29T10:00:00Z'), new Date('2026-11-29T11:00:00Z'))).not.toThrow();
  });
});
