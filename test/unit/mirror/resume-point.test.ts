/**
 * The resume search over an in-process fake of one target partition: several origins interleave
 * in it; the answer is one past the last record of the asked origin, found from the end in
 * windows, never looking at or below the position the last commit recorded.
 */
import { describe, expect, it } from 'vitest';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { MIRROR_ORIGIN_HEADER, encodeMirrorOrigin } from '../../../src/mirror/origin-header.js';
import { findResumePoint, type ResumeSearch, type TargetPartitionReader } from '../../../src/mirror/resume-point.js';

/** An origin, with where its consumer read on from when the source had a gap before it (compaction). */
type Origin = readonly [source: string, partition: number, offset: number, from?: number] | 'no-header';

/**
 * A target partition holding `origins` at offsets start, start + 1, …, in batches of `perRead`
 * records; a read returns the batch holding `from` onward (its records from `from` on) and the
 * offset after it. With `removed`, the target's own offsets in it hold no record (the target was
 * compacted): a batch then ends where the next kept record begins.
 */
function fakeTarget(origins: readonly Origin[], options: { start?: number; perRead?: number; removed?: ReadonlySet<number> } = {}): TargetPartitionReader & { readsFrom: bigint[] } {
  const start = BigInt(options.start ?? 0);
  const all: KafkaRecord[] = origins.map((origin, index) => ({
    offset: start + BigInt(index),
    timestamp: 0,
    key: null,
    value: Buffer.from(String(index)),
    headers:
      origin === 'no-header'
        ? []
        : [{ key: MIRROR_ORIGIN_HEADER, value: encodeMirrorOrigin({ source: origin[0], partition: origin[1], offset: BigInt(origin[2]), ...(origin[3] === undefined ? {} : { from: BigInt(origin[3]) }) }) }],
  }));
  const perRead = options.perRead ?? 3;
  const end = start + BigInt(all.length);
  const batches = Array.from({ length: Math.ceil(all.length / perRead) }, (_, index) => all.slice(index * perRead, (index + 1) * perRead)).map((batch) => ({
    end: (batch.at(-1)?.offset ?? start) + 1n,
    records: batch.filter((record) => options.removed?.has(Number(record.offset)) !== true),
  }));
  const readsFrom: bigint[] = [];
  return {
    readsFrom,
    bounds: () => Promise.resolve({ start, end }),
    read: (from) => {
      readsFrom.push(from);
      const batch = batches.find((candidate) => candidate.end > from);
      return Promise.resolve(batch === undefined ? { records: [], nextOffset: from } : { records: batch.records.filter((record) => record.offset >= from), nextOffset: batch.end });
    },
  };
}

const search = (overrides: Partial<ResumeSearch> = {}): ResumeSearch => ({ source: 'dc1', sourcePartition: 0, committed: undefined, covered: undefined, stepRecords: 4, ...overrides });

/** dc1/0 and dc2/0 interleaved, then dc1/1 alone at the end. */
const interleaved: Origin[] = [
  ['dc1', 0, 0], ['dc2', 0, 0], ['dc1', 0, 1], ['dc2', 0, 1], ['dc1', 0, 2], ['dc1', 0, 2], // a retried batch repeats next to itself
  ['dc2', 0, 2], ['dc2', 0, 3], 'no-header', ['dc1', 1, 40], ['dc1', 1, 41], ['dc1', 1, 42], ['dc1', 1, 43], ['dc1', 1, 44],
];

describe('findResumePoint', () => {
  it('resumes after the last record of the origin, several windows back from the end', async () => {
    const target = fakeTarget(interleaved);
    const point = await findResumePoint(target, search());
    expect(point).toMatchObject({ offset: 3n, lastInTarget: 2n });
    // Windows [10,14), [6,10), [2,6): the newest first, each read forward from its start; the origin is found in the third.
    expect(target.readsFrom.slice(0, 1)).toEqual([10n]);
    expect(target.readsFrom).not.toContain(0n);
  });

  it('tells origins apart by source and by partition', async () => {
    const target = fakeTarget(interleaved);
    expect((await findResumePoint(target, search({ source: 'dc2' }))).offset).toBe(4n);
    expect((await findResumePoint(target, search({ sourcePartition: 1 }))).offset).toBe(45n);
    expect((await findResumePoint(target, search({ source: 'dc3' }))).offset).toBeUndefined();
  });

  it('takes the committed offset as a lower bound and as the answer when the target has nothing of the origin', async () => {
    expect((await findResumePoint(fakeTarget(interleaved), search({ committed: 2n }))).offset).toBe(3n);
    expect((await findResumePoint(fakeTarget(interleaved), search({ committed: 10n }))).offset).toBe(10n);
    expect((await findResumePoint(fakeTarget(interleaved), search({ source: 'dc3', committed: 7n }))).offset).toBe(7n);
    expect((await findResumePoint(fakeTarget([]), search({ committed: 7n })))).toEqual({ offset: 7n, lastInTarget: undefined, scanned: 0 });
  });

  it('looks only above the target offset the last commit recorded, and resumes at its source end when nothing of the origin is there', async () => {
    // The commit recorded: dc1/0 below source offset 3 is at target offsets ≤ 5. Everything after is other origins.
    const target = fakeTarget(interleaved);
    const point = await findResumePoint(target, search({ committed: 2n, covered: { sourceEnd: 3n, targetOffset: 5n } }));
    expect(point).toMatchObject({ offset: 3n, lastInTarget: undefined, scanned: 8 });
    expect(target.readsFrom.every((from) => from > 5n)).toBe(true);
  });

  it('finds records of the origin written after the recorded position (a kill after the send, before the next commit)', async () => {
    const log: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc2', 0, 0], ['dc1', 0, 2], ['dc1', 0, 3], ['dc2', 0, 1]];
    const point = await findResumePoint(fakeTarget(log, { start: 100 }), search({ committed: 2n, covered: { sourceEnd: 2n, targetOffset: 101n } }));
    expect(point).toMatchObject({ offset: 4n, lastInTarget: 3n });
  });

  it('starts at the log start when older records were deleted, and reads in steps smaller than a window', async () => {
    const target = fakeTarget(interleaved.slice(4), { start: 50, perRead: 1 });
    expect((await findResumePoint(target, search({ stepRecords: 100 }))).offset).toBe(3n);
    expect(target.readsFrom[0]).toBe(50n);
    expect(new Set(target.readsFrom).size).toBe(target.readsFrom.length);
  });

  it('with a recorded position resumes at the first source offset missing from the run, never past a refused record', async () => {
    // dc1/0 offsets 2, 3 then 5, 6: offset 4 was refused for good and the batches behind it were stored.
    const log: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc1', 0, 2], ['dc2', 0, 0], ['dc1', 0, 3], ['dc1', 0, 3], ['dc1', 0, 5], ['dc1', 0, 6]];
    const point = await findResumePoint(fakeTarget(log), search({ committed: 2n, covered: { sourceEnd: 2n, targetOffset: 1n } }));
    expect(point.offset).toBe(4n);
    // Without the hole the same log resumes after its last record.
    const whole: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc1', 0, 2], ['dc2', 0, 0], ['dc1', 0, 3], ['dc1', 0, 3], ['dc1', 0, 4], ['dc1', 0, 5]];
    expect((await findResumePoint(fakeTarget(whole), search({ committed: 2n, covered: { sourceEnd: 2n, targetOffset: 1n } }))).offset).toBe(6n);
  });

  it('on a compacted source follows the run over the offsets compaction removed, and still stops at a hole', async () => {
    // Source offsets 3, 5–6 and 9 held nothing when they were mirrored: each next record says where its consumer read on from.
    const compacted: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc1', 0, 2], ['dc1', 0, 4, 3], ['dc2', 0, 0], ['dc1', 0, 7, 5], ['dc1', 0, 8], ['dc1', 0, 10, 9]];
    const covered = { sourceEnd: 2n, targetOffset: 1n };
    expect(await findResumePoint(fakeTarget(compacted), search({ committed: 2n, covered }))).toMatchObject({ offset: 11n, lastInTarget: 10n });
    // Source offset 8 was refused for good: record 10 read on from 9, so 8 is a hole however many gaps came before it.
    const refused: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc1', 0, 2], ['dc1', 0, 4, 3], ['dc1', 0, 7, 5], ['dc1', 0, 10, 9]];
    expect((await findResumePoint(fakeTarget(refused), search({ committed: 2n, covered }))).offset).toBe(8n);
  });

  it('steps over a jump below the source log start (deleted by retention: nothing there can be sent again), not over one above it', async () => {
    // The consumer's offset reset jumped from 2 to the log start 6: offsets 2–5 were deleted by retention before they were mirrored.
    const reset: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc1', 0, 6], ['dc1', 0, 7]];
    const covered = { sourceEnd: 1n, targetOffset: 0n };
    expect((await findResumePoint(fakeTarget(reset), search({ covered, sourceLogStart: 6n }))).offset).toBe(8n);
    // With the log start at 4, offsets 4 and 5 are still in the source and missing from the target: resume there.
    expect((await findResumePoint(fakeTarget(reset), search({ covered, sourceLogStart: 4n }))).offset).toBe(4n);
    expect((await findResumePoint(fakeTarget(reset), search({ covered }))).offset).toBe(2n);
  });

  it('reads a target whose batches end in removed records through to its end', async () => {
    // Target offsets 2, 5 and 8 hold nothing (the offline topic was compacted); each is the last of its batch of three.
    const log: Origin[] = [['dc1', 0, 0], ['dc1', 0, 1], ['dc2', 0, 0], ['dc1', 0, 2], ['dc1', 0, 3], ['dc2', 0, 1], ['dc1', 0, 4], ['dc1', 0, 5], ['dc2', 0, 2], ['dc1', 0, 6]];
    const removed = new Set([2, 5, 8]);
    expect((await findResumePoint(fakeTarget(log, { removed }), search({ covered: { sourceEnd: 1n, targetOffset: 0n } }))).offset).toBe(7n);
    expect((await findResumePoint(fakeTarget(log, { removed }), search({ stepRecords: 100 }))).offset).toBe(7n);
  });
});
