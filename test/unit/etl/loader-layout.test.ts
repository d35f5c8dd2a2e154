/**
 * Names the loader gives things (src/etl/layout.ts), the offsets a data file records
 * (compactOffsets), and event times (event-time.ts): all from the record and the range, never the clock.
 */
import { describe, expect, it } from 'vitest';
import { eventTimeOf } from '../../../src/etl/records/event-time.js';
import { compactOffsets, expandOffsets } from '../../../src/etl/load/extract.js';
import {
  claimPath,
  completeMarkerPath,
  dataFileName,
  dataFilePath,
  hourKey,
  hourMarkerPath,
  hourMarkerTempPath,
  hourOf,
  hourPartitionValues,
  isHiddenName,
  parseCommitName,
  parseStagingName,
  parseTopicHourFolder,
  publishedPath,
  quarantineDir,
  stagingDir,
  topicHourDir,
  topicHourFolder,
} from '../../../src/etl/layout.js';

describe('warehouse layout', () => {
  const hour = hourOf(Date.UTC(2026, 10, 29, 15, 59, 59, 999));

  it('puts data in <root>/<topic>/hourly/YYYY/MM/DD/HH/<topic>+<partition>+<start>+<end>.<ext> (UTC) by default', () => {
    expect(dataFilePath('warehouse', 'page-views', hour, 3, 1000, 2000, 'avro', 'hourly')).toBe('warehouse/page-views/hourly/2026/11/29/15/page-views+3+1000+2000.avro');
    expect(dataFilePath('', 'v', hourOf(0), 0, 0, 1, 'parquet', 'hourly')).toBe('v/hourly/1970/01/01/00/v+0+0+1.parquet');
    expect(hourKey(hour)).toBe('2026-11-29T15');
  });

  it('puts data in <root>/<topic>/dt=YYYY-MM-DD/hr=HH/ with the hive layout, markers beside it', () => {
    expect(dataFilePath('warehouse', 'page-views', hour, 3, 1000, 2000, 'avro', 'hive')).toBe('warehouse/page-views/dt=2026-11-29/hr=15/page-views+3+1000+2000.avro');
    expect(dataFilePath('', 'v', hourOf(0), 0, 0, 1, 'parquet', 'hive')).toBe('v/dt=1970-01-01/hr=00/v+0+0+1.parquet');
    expect(topicHourDir('w', 't', hour, 'hive')).toBe('w/t/dt=2026-11-29/hr=15');
    expect(completeMarkerPath('w', 't', hour, 'hive')).toBe('w/t/dt=2026-11-29/hr=15/_COMPLETE');
    expect(hourMarkerPath('w', 't', hour, 'hive', '_SUCCESS')).toBe('w/t/dt=2026-11-29/hr=15/_SUCCESS');
    expect(hourMarkerPath('w', 't', hour, 'hourly', '_SUCCESS')).toBe('w/t/hourly/2026/11/29/15/_SUCCESS');
    expect(hourMarkerTempPath('w', 't', hour, 'hourly', '_SUCCESS', 'a1')).toBe('w/t/hourly/2026/11/29/15/_SUCCESS.a1.tmp');
    expect(hourPartitionValues(hour, 'hive')).toEqual([['dt', '2026-11-29'], ['hr', '15']]);
    expect(hourPartitionValues(hour, 'hourly')).toEqual([['year', '2026'], ['month', '11'], ['day', '29'], ['hour', '15']]);
  });

  it('reads an hour back from its folder in either layout, and nothing else', () => {
    for (const layout of ['hourly', 'hive'] as const) {
      expect(parseTopicHourFolder(topicHourFolder(hour, layout), layout)).toBe(hour);
      expect(parseTopicHourFolder(topicHourFolder(hourOf(0), layout), layout)).toBe(0);
    }
    expect(parseTopicHourFolder('hourly/2026/11/29/15', 'hive')).toBeUndefined();
    expect(parseTopicHourFolder('dt=2026-11-29/hr=15', 'hourly')).toBeUndefined();
    expect(parseTopicHourFolder('dt=2026-11-29/hr=15/x', 'hive')).toBeUndefined();
    expect(parseTopicHourFolder('dt=2026-13-29/hr=15', 'hive')).toBeUndefined();
  });

  it('never names a data file as Hadoop hides it: topics starting with _ or . get part- in front', () => {
    expect(dataFileName('page-views', 0, 5, 9, 'avro')).toBe('page-views+0+5+9.avro');
    expect(dataFileName('_audit', 0, 5, 9, 'avro')).toBe('part-_audit+0+5+9.avro');
    expect(dataFileName('.internal', 2, 0, 1, 'parquet')).toBe('part-.internal+2+0+1.parquet');
    expect(dataFilePath('w', '_audit', hour, 0, 5, 9, 'avro', 'hive')).toBe('w/_audit/dt=2026-11-29/hr=15/part-_audit+0+5+9.avro');
    for (const topic of ['_audit', '.x', '__consumer_offsets', 'a', '-a', '0']) expect(isHiddenName(dataFileName(topic, 0, 0, 1, 'avro')), topic).toBe(false);
    expect(['_COMPLETE', '_SUCCESS', '_COMPLETE.a1.tmp', '.hive-staging', 'part-0'].map(isHiddenName)).toEqual([true, true, true, true, false]);
  });

  it('keeps the commit log and staging under <root>/_etl/<load>/ with ten-digit, sortable seqs', () => {
    expect(claimPath('w', 'views', 7)).toBe('w/_etl/views/commits/0000000007.pending');
    expect(publishedPath('w', 'views', 7)).toBe('w/_etl/views/commits/0000000007.json');
    expect(stagingDir('w', 'views', 12, 'a1b2c3')).toBe('w/_etl/views/staging/0000000012-a1b2c3');
    expect(quarantineDir('w', 'views', 12)).toBe('w/_etl/views/quarantine/0000000012');
    expect(parseCommitName('0000000007.pending')).toEqual({ seq: 7, kind: 'claim' });
    expect(parseCommitName('0000000007.json')).toEqual({ seq: 7, kind: 'published' });
    expect(parseCommitName('7.json')).toBeUndefined();
    expect(parseStagingName('0000000012-a1b2c3')).toEqual({ seq: 12, attempt: 'a1b2c3' });
    expect(parseStagingName('notes')).toBeUndefined();
  });
});

describe('record offsets in data files', () => {
  it('are written as compact ranges and read back exactly', () => {
    const offsets = [100, 101, 102, 105, 107, 108, 200];
    expect(compactOffsets(offsets)).toBe('100-102,105,107-108,200');
    expect(expandOffsets(compactOffsets(offsets))).toEqual(offsets);
    expect(compactOffsets([])).toBe('');
    expect(expandOffsets('')).toEqual([]);
  });
});

describe('event time', () => {
  it('comes from the time field, else the record timestamp', () => {
    expect(eventTimeOf({ header: { time: 1_700_000_000_000 } }, 5, 'header.time')).toEqual({ ok: true, ms: 1_700_000_000_000 });
    expect(eventTimeOf({ header: { time: 1 } }, 5, undefined)).toEqual({ ok: true, ms: 5 });
  });

  it('is refused, with the reason, when missing or not a time', () => {
    expect(eventTimeOf({ header: {} }, 5, 'header.time')).toEqual({ ok: false, reason: 'field header.time is missing, not a time in ms since the epoch' });
    expect(eventTimeOf({ header: { time: null } }, 5, 'header.time')).toEqual({ ok: false, reason: 'field header.time is null, not a time in ms since the epoch' });
    expect(eventTimeOf({}, -1, undefined)).toEqual({ ok: false, reason: 'the record timestamp is -1, not a time in ms since the epoch' });
    expect(eventTimeOf({ t: 1e17 }, 5, 't')).toEqual({ ok: false, reason: 'field t is 100000000000000000, not a time in ms since the epoch' });
  });
});
