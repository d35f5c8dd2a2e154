/**
 * The I6 replica-file check on segment files written by hand in a temporary folder: identical
 * replicas pass however their segments are split, and each way replicas can differ below the high
 * watermark is reported (while differences above it are allowed).
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { CRC_OFFSET } from '../../../src/protocol/record-batch.js';
import { compareReplicas, formatReplicaComparison, readReplicaLog, type ReplicaLocation } from '../../support/replica-files.js';

const TOPIC = 'events';
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A batch of the records `values` stored at `baseOffset` under leader epoch `epoch`. */
function batch(baseOffset: number, values: readonly string[], epoch = 0): Buffer {
  return encodeRecordBatch(
    values.map((value) => ({ value: Buffer.from(value) })),
    { baseOffset: BigInt(baseOffset), partitionLeaderEpoch: epoch, baseTimestamp: 1_700_000_000_000 },
  );
}

/** A broker data dir holding partition 0 of TOPIC as the given segments (each a list of batches). */
function replica(brokerId: number, segments: readonly (readonly Buffer[])[]): ReplicaLocation {
  const dataDir = mkdtempSync(join(tmpdir(), `tributary-replica-${brokerId}-`));
  folders.push(dataDir);
  const directory = join(dataDir, `${TOPIC}-0`);
  mkdirSync(directory);
  for (const batches of segments) {
    const first = batches[0];
    const base = first === undefined ? 0 : Number(first.readBigInt64BE(0));
    writeFileSync(join(directory, `${String(base).padStart(20, '0')}.log`), Buffer.concat(batches));
  }
  // Files the broker keeps next to the segments must not be read as segments.
  writeFileSync(join(directory, '00000000000000000000.index'), Buffer.alloc(16));
  return { brokerId, dataDir };
}

/** The log every test starts from: offsets 0–5 in three batches, the last under epoch 1. */
const B0 = () => batch(0, ['a', 'b']);
const B2 = () => batch(2, ['c', 'd', 'e']);
const B5 = () => batch(5, ['f'], 1);

describe('readReplicaLog', () => {
  it('lists the batches of every segment in offset order, with offsets, epoch, size and CRC', () => {
    const location = replica(1, [[B5()], [B0(), B2()]]);
    const log = readReplicaLog(location.dataDir, TOPIC, 0);
    expect(log.exists).toBe(true);
    expect(log.segments).toEqual(['00000000000000000000.log', '00000000000000000005.log']);
    expect(log.damage).toBeUndefined();
    expect(log.batches.map(({ baseOffset, lastOffset, partitionLeaderEpoch, crcValid, size, segment, position }) => ({ baseOffset, lastOffset, partitionLeaderEpoch, crcValid, size, segment, position }))).toEqual([
      { baseOffset: 0, lastOffset: 1, partitionLeaderEpoch: 0, crcValid: true, size: B0().length, segment: '00000000000000000000.log', position: 0 },
      { baseOffset: 2, lastOffset: 4, partitionLeaderEpoch: 0, crcValid: true, size: B2().length, segment: '00000000000000000000.log', position: B0().length },
      { baseOffset: 5, lastOffset: 5, partitionLeaderEpoch: 1, crcValid: true, size: B5().length, segment: '00000000000000000005.log', position: 0 },
    ]);
    expect(log.batches[0]?.crc).toBe(B0().readUInt32BE(CRC_OFFSET));
  });

  it('stops at a torn tail and says where', () => {
    const location = replica(1, [[B0(), B2()]]);
    appendFileSync(join(location.dataDir, `${TOPIC}-0`, '00000000000000000000.log'), B5().subarray(0, B5().length - 3));
    const log = readReplicaLog(location.dataDir, TOPIC, 0);
    expect(log.batches.map((stored) => stored.baseOffset)).toEqual([0, 2]);
    expect(log.damage).toEqual({ segment: '00000000000000000000.log', position: B0().length + B2().length, reason: `a batch of ${B5().length} bytes is cut short: ${B5().length - 3} bytes remain (a torn write)` });
  });

  it('says when the broker has no folder for the partition', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tributary-replica-empty-'));
    folders.push(dataDir);
    expect(readReplicaLog(dataDir, TOPIC, 0)).toMatchObject({ exists: false, batches: [], segments: [] });
  });
});

describe('compareReplicas', () => {
  it('passes identical replicas, whatever their segment boundaries', () => {
    const replicas = [replica(1, [[B0(), B2(), B5()]]), replica(2, [[B0()], [B2(), B5()]]), replica(3, [[B0(), B2()], [B5()]])];
    const comparison = compareReplicas(replicas, TOPIC, 0, 6);
    expect(comparison.problems).toEqual([]);
    expect(comparison.ok).toBe(true);
    expect(comparison.comparedFrom).toBe(0);
    expect(comparison.replicas).toEqual([1, 2, 3].map((brokerId) => ({ brokerId, startOffset: 0, endOffset: 6, batchesBelowHighWatermark: 3, damage: undefined })));
    expect(formatReplicaComparison(comparison)).toBe('events-0 below high watermark 6: replicas identical (broker 1 [0, 6) 3 batches below, broker 2 [0, 6) 3 batches below, broker 3 [0, 6) 3 batches below)');
  });

  it('ignores differences at and above the high watermark: a follower behind, a divergent or torn tail', () => {
    const torn = replica(3, [[B0(), B2()]]);
    appendFileSync(join(torn.dataDir, `${TOPIC}-0`, '00000000000000000000.log'), Buffer.alloc(30, 7));
    const replicas = [replica(1, [[B0(), B2(), B5()]]), replica(2, [[B0(), B2(), batch(5, ['other'], 2)]]), torn];
    expect(compareReplicas(replicas, TOPIC, 0, 5).problems).toEqual([]);
  });

  it('reports a replica whose batch below the high watermark holds other records, naming the fields that differ', () => {
    const replicas = [replica(1, [[B0(), B2(), B5()]]), replica(2, [[B0(), batch(2, ['c', 'X', 'e']), B5()]])];
    const comparison = compareReplicas(replicas, TOPIC, 0, 6);
    expect(comparison.ok).toBe(false);
    expect(comparison.problems).toEqual([{ kind: 'diverged', brokerId: 2, referenceBrokerId: 1, baseOffset: 2, differences: [expect.stringMatching(/^crc: \d+ ≠ \d+$/)] }]);
    expect(formatReplicaComparison(comparison)).toContain('broker 2 diverges from broker 1 at the batch of offset 2: crc:');
  });

  it('reports a batch stored under another leader epoch, and batches split at other offsets', () => {
    const otherEpoch = replica(2, [[B0(), B2(), batch(5, ['f'], 2)]]);
    const otherSplit = replica(3, [[B0(), batch(2, ['c', 'd']), batch(4, ['e']), B5()]]);
    const problems = compareReplicas([replica(1, [[B0(), B2(), B5()]]), otherEpoch, otherSplit], TOPIC, 0, 6).problems;
    expect(problems).toEqual([
      { kind: 'diverged', brokerId: 2, referenceBrokerId: 1, baseOffset: 5, differences: ['partitionLeaderEpoch: 1 ≠ 2'] },
      { kind: 'diverged', brokerId: 3, referenceBrokerId: 1, baseOffset: 2, differences: ['lastOffset: 4 ≠ 3', `size: ${B2().length} ≠ ${batch(2, ['c', 'd']).length}`, expect.stringMatching(/^crc: /)] },
    ]);
  });

  it('reports a replica whose whole batches end below the high watermark, with the damage that ended them', () => {
    const torn = replica(2, [[B0()]]);
    appendFileSync(join(torn.dataDir, `${TOPIC}-0`, '00000000000000000000.log'), B2().subarray(0, 40));
    const problems = compareReplicas([replica(1, [[B0(), B2(), B5()]]), torn, replica(3, [[B0(), B2()]])], TOPIC, 0, 6).problems;
    expect(problems).toEqual([
      {
        kind: 'short',
        brokerId: 2,
        endOffset: 2,
        highWatermark: 6,
        damage: { segment: '00000000000000000000.log', position: B0().length, reason: '40 bytes at the end are too few for a batch header (a torn write)' },
      },
      { kind: 'short', brokerId: 3, endOffset: 5, highWatermark: 6, damage: undefined },
    ]);
  });

  it('reports a batch below the high watermark that fails its CRC, and its bytes unless asked to compare headers only', () => {
    // A flipped bit in the last record: the stored CRC (and every header field) still matches the
    // other replica's, so only the CRC check and the byte comparison see it.
    const corrupt = B2();
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 1) ^ 0x01, corrupt.length - 1);
    const replicas = [replica(1, [[B0(), B2(), B5()]]), replica(2, [[B0(), corrupt, B5()]])];
    expect(compareReplicas(replicas, TOPIC, 0, 6).problems).toEqual([
      { kind: 'bad-crc', brokerId: 2, baseOffset: 2, segment: '00000000000000000000.log', position: B0().length },
      { kind: 'diverged', brokerId: 2, referenceBrokerId: 1, baseOffset: 2, differences: [`bytes differ from byte ${B2().length - 1} of the batch`] },
    ]);
    expect(compareReplicas(replicas, TOPIC, 0, 6, { byteIdentical: false }).problems.map((problem) => problem.kind)).toEqual(['bad-crc']);
  });

  it('reports a hole between batches and a replica without the partition', () => {
    const holed = replica(2, [[B0()], [B5()]]);
    const dataDir = mkdtempSync(join(tmpdir(), 'tributary-replica-none-'));
    folders.push(dataDir);
    const problems = compareReplicas([replica(1, [[B0(), B2(), B5()]]), holed, { brokerId: 3, dataDir }], TOPIC, 0, 6).problems;
    expect(problems.map((problem) => problem.kind)).toEqual(['offset-gap', 'missing', 'diverged']);
    expect(problems[0]).toEqual({ kind: 'offset-gap', brokerId: 2, expectedOffset: 2, baseOffset: 5, segment: '00000000000000000005.log', position: 0 });
    expect(problems[1]).toEqual({ kind: 'missing', brokerId: 3, directory: join(dataDir, `${TOPIC}-0`) });
    expect(problems[2]).toMatchObject({ kind: 'diverged', brokerId: 2, referenceBrokerId: 1, baseOffset: 5 });
    expect(problems[2]?.kind === 'diverged' && problems[2].differences[0]).toBe('baseOffset: 2 ≠ 5');
  });

  it('throws when given no replicas, rather than passing with nothing compared', () => {
    expect(() => compareReplicas([], TOPIC, 0, 6)).toThrow(/no replicas given/);
  });

  it('compares from the highest log start when retention removed old batches on one replica', () => {
    const trimmed = replica(2, [[B2(), B5()]]);
    const comparison = compareReplicas([replica(1, [[B0(), B2(), B5()]]), trimmed], TOPIC, 0, 6);
    expect(comparison.comparedFrom).toBe(2);
    expect(comparison.problems).toEqual([]);
  });
});
