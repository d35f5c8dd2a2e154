/**
 * Plan decisions (src/etl/load/plan.ts): where each partition starts and ends, what retention gaps
 * and logs behind the committed offset mean, and which reader schemas a plan asks for.
 */
import { DEFAULT_MEMORY_BUDGET_BYTES } from '../../../src/etl/load/memory-budget.js';
import { DEFAULT_ROW_GROUP_BYTES } from '../../../src/etl/files/parquet-file.js';
import { describe, expect, it } from 'vitest';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import type { LoadDefinition } from '../../../src/etl/load-file.js';
import { MANIFEST_FORMAT, type Manifest } from '../../../src/etl/load/manifest.js';
import { decidePartition, formatPlan, partitionMoves, partitionProblemError, planRun, type ReaderSchema } from '../../../src/etl/load/plan.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { FakeSource } from './loader-fakes.js';

const bounds = (logStart: number, highWatermark: number) => ({ logStart, highWatermark });

describe('decidePartition', () => {
  it('starts a partition never loaded at its log start (earliest)', () => {
    expect(decidePartition('t', 0, undefined, bounds(40, 100), 1000, false)).toEqual({ topic: 't', partition: 0, start: 40, end: 100, logStart: 40, highWatermark: 100, capped: false });
  });

  it('continues from the committed offset up to the high watermark', () => {
    expect(decidePartition('t', 1, 70, bounds(0, 100), 1000, false)).toMatchObject({ start: 70, end: 100, capped: false });
  });

  it('caps the range at maxRecordsPerRun', () => {
    expect(decidePartition('t', 1, 70, bounds(0, 100), 20, false)).toMatchObject({ start: 70, end: 90, capped: true });
  });

  it('has nothing to read when the partition has not grown', () => {
    const plan = decidePartition('t', 1, 100, bounds(0, 100), 20, false);
    expect(plan).toMatchObject({ start: 100, end: 100 });
    expect(partitionMoves(plan)).toBe(false);
  });

  it('marks offsets deleted by retention as lost, reads nothing, and names the partition and the range', () => {
    const plan = decidePartition('views', 3, 50, bounds(80, 120), 1000, false);
    expect(plan).toMatchObject({ start: 50, end: 50, problem: 'lost' });
    expect(partitionMoves(plan)).toBe(false);
    const error = partitionProblemError(plan, 'page-views');
    expect(error?.code).toBe('ETL_OFFSETS_LOST');
    expect(error?.message).toContain('partition views-3 of load page-views: offsets [50, 80) (at most 30 records) were deleted by retention');
    expect(error?.message).toContain('--accept-gap');
    expect(error?.details).toEqual({ topic: 'views', partition: 3, from: 50, to: 80 });
  });

  it('with --accept-gap records the gap and reads on from the log start', () => {
    const plan = decidePartition('views', 3, 50, bounds(80, 120), 1000, true);
    expect(plan).toMatchObject({ start: 80, end: 120, gap: { from: 50, to: 80 } });
    expect(plan.problem).toBeUndefined();
    expect(partitionMoves(plan)).toBe(true);
  });

  it('moves a partition whose only change is an accepted gap (everything retained was loaded)', () => {
    const plan = decidePartition('views', 0, 50, bounds(80, 80), 1000, true);
    expect(plan).toMatchObject({ start: 80, end: 80, gap: { from: 50, to: 80 } });
    expect(partitionMoves(plan)).toBe(true);
  });

  it('refuses a committed offset past the log end (topic recreated), even with --accept-gap', () => {
    const plan = decidePartition('views', 2, 500, bounds(0, 120), 1000, true);
    expect(plan.problem).toBe('ahead');
    const error = partitionProblemError(plan, 'page-views');
    expect(error?.code).toBe('ETL_OFFSETS_AHEAD');
    expect(error?.message).toContain('partition views-2 of load page-views: the committed next offset 500 is past the log end 120');
  });
});

const readerText = JSON.stringify({
  type: 'record',
  name: 'View',
  fields: [
    { name: 'header', type: { type: 'record', name: 'Header', fields: [{ name: 'time', type: 'long' }, { name: 'server', type: 'string' }] } },
    { name: 'url', type: 'string' },
  ],
});

function load(overrides: Partial<LoadDefinition> = {}): LoadDefinition {
  return {
    file: '/jobs/test.yaml',
    name: 'test',
    source: { bootstrap: ['127.0.0.1:9092'] },
    topics: { kind: 'pattern', pattern: /^views-.*$/, source: 'views-.*' },
    registry: 'http://127.0.0.1:8081',
    warehouse: { url: '/tmp/x', root: '', baseDirectory: '/jobs' },
    format: 'avro',
    codec: 'deflate',
    maxRecordsPerRun: 1000,
    maxRecordsPerTask: 1_000_000,
    memoryBudget: DEFAULT_MEMORY_BUDGET_BYTES,
    rowGroupBytes: DEFAULT_ROW_GROUP_BYTES,
    parquetEncoderThread: false,
    quarantine: { maxRecords: 0 },
    latenessHorizonMs: 7_200_000,
    layout: 'hourly',
    ...overrides,
  };
}

function baseManifest(nextOffsets: Manifest['nextOffsets'], seq = 4): Manifest {
  return {
    format: MANIFEST_FORMAT,
    load: 'test',
    seq,
    attempt: 'a',
    runNumber: null,
    plannedAt: '2026-11-29T00:00:00.000Z',
    output: { format: 'avro', codec: 'deflate', timeField: null },
    readerSchemas: {},
    ranges: [],
    nextOffsets,
    files: [],
    quarantine: { records: 0, reasons: {}, files: [] },
    hours: {},
  };
}

describe('planRun', () => {
  const source = new FakeSource();
  source.addTopic('views-a', 2);
  source.addTopic('views-b', 1);
  source.addTopic('clicks', 1);
  for (let index = 0; index < 30; index += 1) {
    source.append('views-a', 0, Buffer.from('x'), 0);
    source.append('views-a', 1, Buffer.from('x'), 0);
    source.append('views-b', 0, Buffer.from('x'), 0);
    source.append('clicks', 0, Buffer.from('x'), 0);
  }
  const lookedUp: string[] = [];
  const readerSchema = async (topic: string): Promise<ReaderSchema> => {
    lookedUp.push(topic);
    return { ref: { subject: `${topic}-value`, version: 2, id: 7 }, schema: parseAvroSchema(readerText), fileType: parseDataFileSchema(readerText) };
  };

  it('plans every matching partition from the last manifest, as seq + 1, asking only for the reader schemas it needs', async () => {
    lookedUp.length = 0;
    const plan = await planRun({
      load: load(),
      base: baseManifest({ 'views-a': { '0': 10, '1': 30 }, 'views-b': { '0': 30 } }),
      source,
      readerSchema,
      acceptGap: false,
      now: new Date('2026-11-29T16:00:00Z'),
    });
    expect(plan.seq).toBe(5);
    expect(plan.plannedAt).toBe('2026-11-29T16:00:00.000Z');
    expect(plan.partitions.map((p) => [p.topic, p.partition, p.start, p.end])).toEqual([
      ['views-a', 0, 10, 30],
      ['views-a', 1, 30, 30],
      ['views-b', 0, 30, 30],
    ]);
    expect(lookedUp).toEqual(['views-a']);
    expect([...plan.readerSchemas.keys()]).toEqual(['views-a']);
    const text = formatPlan(plan, 'test');
    expect(text).toContain('load test: next commit 5');
    expect(text).toContain('reader schema of views-a: views-a-value version 2 (id 7)');
    expect(text).toContain('20 records to read from 1 of 3 partitions');
  });

  it('starts with seq 1 and the log starts when nothing was committed', async () => {
    const plan = await planRun({ load: load({ topics: { kind: 'list', names: ['clicks'] } }), base: undefined, source, readerSchema, acceptGap: false, now: new Date(0) });
    expect(plan.seq).toBe(1);
    expect(plan.partitions).toMatchObject([{ topic: 'clicks', partition: 0, start: 0, end: 30 }]);
  });

  it('checks the time field against the reader schema and says what is wrong', async () => {
    await expect(planRun({ load: load({ timeField: 'header.time' }), base: undefined, source, readerSchema, acceptGap: false, now: new Date(0) })).resolves.toBeDefined();
    const missing = planRun({ load: load({ timeField: 'header.when' }), base: undefined, source, readerSchema, acceptGap: false, now: new Date(0) });
    await expect(missing).rejects.toMatchObject({ code: 'ETL_SCHEMA_PROBLEM', message: expect.stringContaining('timeField header.when of the load: the reader schema of topic views-a (views-a-value version 2, id 7) has no such field') as unknown });
    const wrongType = planRun({ load: load({ timeField: 'url' }), base: undefined, source, readerSchema, acceptGap: false, now: new Date(0) });
    await expect(wrongType).rejects.toMatchObject({ code: 'ETL_SCHEMA_PROBLEM', message: expect.stringContaining('has it as string, not int or long') as unknown });
  });

  it('asks again while a new leader (a failover) serves a high watermark below the committed offset, and plans from it', async () => {
    const failedOver = new FakeSource();
    failedOver.addTopic('views-y', 1);
    for (let index = 0; index < 40; index += 1) failedOver.append('views-y', 0, Buffer.from('x'), 0);
    failedOver.lagging = { highWatermark: 20, looks: 3 };
    const plan = await planRun({ load: load(), base: baseManifest({ 'views-y': { '0': 30 } }), source: failedOver, readerSchema, acceptGap: false, now: new Date(0), highWatermarkWaitMs: 10_000 });
    expect(plan.partitions).toMatchObject([{ topic: 'views-y', partition: 0, start: 30, end: 40, highWatermark: 40 }]);
    expect(plan.partitions[0]?.problem).toBeUndefined();
  });

  it('marks a partition ahead once its high watermark stays below the committed offset', async () => {
    const truncated = new FakeSource();
    truncated.addTopic('views-z', 1);
    for (let index = 0; index < 20; index += 1) truncated.append('views-z', 0, Buffer.from('x'), 0);
    const plan = await planRun({ load: load(), base: baseManifest({ 'views-z': { '0': 30 } }), source: truncated, readerSchema, acceptGap: false, now: new Date(0), highWatermarkWaitMs: 300 });
    expect(plan.partitions).toMatchObject([{ topic: 'views-z', partition: 0, start: 30, end: 30, highWatermark: 20, problem: 'ahead' }]);
  });

  it('shows a lost range in the printed plan', async () => {
    const gapped = new FakeSource();
    gapped.addTopic('views-x', 1);
    for (let index = 0; index < 10; index += 1) gapped.append('views-x', 0, Buffer.from('x'), 0);
    gapped.deleteBefore('views-x', 0, 6);
    const plan = await planRun({ load: load(), base: baseManifest({ 'views-x': { '0': 2 } }), source: gapped, readerSchema, acceptGap: false, now: new Date(0) });
    expect(formatPlan(plan, 'test')).toContain('LOST [2, 6): fails without --accept-gap');
  });
});
