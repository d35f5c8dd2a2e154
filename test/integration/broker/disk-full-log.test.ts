/**
 * Partition logs on a really full disk (a 1 MiB tmpfs filled to its last page; issue #22, "Disk
 * full"; reliability reference §8 S9): every write a full disk refuses is refused alone, the log
 * stays up and serves reads, and takes writes again once there is room. Each test here failed
 * before its fix in src/storage (named in the test).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/common/clock.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { decodeRecords } from '../../../src/protocol/records.js';
import { logConfigSchema, type LogConfigOverrides } from '../../../src/storage/log-config.js';
import { LogManager } from '../../../src/storage/log-manager.js';
import type { PartitionLog } from '../../../src/storage/partition-log.js';
import { batch, walkBatches } from '../../unit/storage/helpers.js';
import { fillDisk, MIB, mountTmpfs, removeFiller, tmpfsSupported, unmountTmpfs } from '../../support/tmpfs.js';

const silent = createLogger({ name: 'disk-full-log', level: 'silent' });
const mounts: string[] = [];

beforeAll(() => {
  // These tests need a real full disk: a tmpfs, which only root may mount.
  expect(tmpfsSupported(), 'mounting a tmpfs must work here (run as root)').toBe(true);
});

afterEach(() => {
  for (const directory of mounts.splice(0)) {
    unmountTmpfs(directory);
    rmSync(directory, { recursive: true, force: true });
  }
});

function smallDisk(): string {
  const directory = mkdtempSync(join(tmpdir(), 'tributary-disk-full-'));
  mountTmpfs(directory, MIB);
  mounts.push(directory);
  return directory;
}

async function open(dataDir: string, overrides: LogConfigOverrides = {}): Promise<LogManager> {
  return LogManager.open({ dataDir, logger: silent, clock: new ManualClock(), configFor: () => logConfigSchema.parse(overrides) });
}

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof KafkaProtocolError ? error.code : `${(error as Error).message}`;
  }
}

/** Every record value of the log (without its padding), read from its start through the high watermark. */
async function values(log: PartitionLog): Promise<string[]> {
  const found: string[] = [];
  let offset = log.logStartOffset;
  while (offset < log.highWatermark) {
    const { slice } = await log.read(offset, 1 << 20);
    if (slice === undefined) break;
    const bytes = await slice.readBytes();
    slice.release();
    for (const stored of walkBatches(bytes)) {
      for (const record of decodeRecords(bytes, stored.position)) {
        if (record.offset >= BigInt(offset)) found.push(record.value?.toString('utf8').replace(/a+$/, '') ?? '');
      }
      offset = stored.lastOffset + 1;
    }
  }
  return found;
}

describe('a partition log on a full disk', () => {
  it('refuses only the batches the disk could not take: a flush still fsyncs and answers what was written before them', async () => {
    // Failed before the fix in PartitionLog.flush: the refused write failed the whole flush, so
    // acks=−1 appends written before it were refused too although their bytes were stored.
    const dataDir = smallDisk();
    const manager = await open(dataDir);
    const log = await manager.getOrCreateLog('t', 0);
    await log.append(batch(3, { tag: 'a' }), { waitForFlush: true });
    await log.append(batch(3, { tag: 'b' }));
    const filler = fillDisk(dataDir);
    // Queued, then written by the flush in the same turn: 256 KiB cannot fit a full disk.
    const refused = failure(log.append(batch(2, { tag: 'c', valueBytes: 128 * 1024 }), { waitForFlush: true }));
    expect(await failure(log.flush())).toBe('ok');
    expect(await refused).toBe('KAFKA_STORAGE_ERROR');
    expect(log.flushedEndOffset).toBe(6);
    expect(await values(log)).toEqual(['a-0', 'a-1', 'a-2', 'b-0', 'b-1', 'b-2']);
    removeFiller(filler);
    expect(await failure(log.append(batch(1, { tag: 'd' }), { waitForFlush: true }))).toBe('ok');
    expect(await values(log)).toEqual(['a-0', 'a-1', 'a-2', 'b-0', 'b-1', 'b-2', 'd-0']);
    await manager.close();
  });

  it('defers index entries the disk cannot take instead of taking the log offline, and writes them once there is room', async () => {
    // Failed before the fix in LogSegment.flush (persistIndex): the index write's ENOSPC was taken
    // for a failed fsync, and the log refused every write until a restart.
    const dataDir = smallDisk();
    const manager = await open(dataDir, { indexIntervalBytes: 0 });
    const log = await manager.getOrCreateLog('t', 0);
    await log.append(batch(1, { tag: 'a' }), { waitForFlush: true });
    for (const tag of ['b', 'c', 'd']) await log.append(batch(1, { tag }));
    const filler = fillDisk(dataDir);
    expect(await failure(log.flush())).toBe('ok');
    expect(log.flushedEndOffset).toBe(4);
    removeFiller(filler);
    expect(await failure(log.append(batch(1, { tag: 'e' }), { waitForFlush: true }))).toBe('ok');
    await manager.close();
    const folder = join(dataDir, 't-0');
    const index = readdirSync(folder).find((name) => name.endsWith('.index'));
    // One entry per batch (the first one's included), all written at last.
    expect(statSync(join(folder, index ?? 'missing')).size).toBe(5 * 8);
    const again = await open(dataDir, { indexIntervalBytes: 0 });
    const reopened = again.getLog('t', 0);
    expect(reopened && (await values(reopened))).toEqual(['a-0', 'b-0', 'c-0', 'd-0', 'e-0']);
    await again.close();
  });

  it('deletes nothing by retention while the new log start cannot be recorded, and deletes once it can', async () => {
    // Failed before the fix in PartitionLog.applyRetention: the failed checkpoint write threw after
    // the segments had left the log, so their files and descriptors stayed behind, never deleted.
    const dataDir = smallDisk();
    const manager = await open(dataDir, { segmentBytes: 1024, retentionBytes: 1024 });
    const log = await manager.getOrCreateLog('t', 0);
    for (let i = 0; i < 8; i += 1) await log.append(batch(1, { tag: `r${i}`, valueBytes: 400 }), { waitForFlush: true });
    const segments = log.segmentBaseOffsets.length;
    expect(segments).toBeGreaterThan(2);
    const filler = fillDisk(dataDir);
    expect(manager.applyRetention()).toBe(0);
    expect(log.segmentBaseOffsets.length).toBe(segments);
    expect(log.logStartOffset).toBe(0);
    expect((await values(log)).length).toBe(8);
    removeFiller(filler);
    expect(manager.applyRetention()).toBeGreaterThan(0);
    expect(log.logStartOffset).toBeGreaterThan(0);
    const kept = readdirSync(join(dataDir, 't-0')).filter((name) => name.endsWith('.log')).length;
    expect(kept).toBe(log.segmentBaseOffsets.length);
    await manager.close();
  });

  it('starts on a full disk after an unclean stop and serves every flushed record', async () => {
    // Failed before the fixes in LogManager.loadAll and the index rewrites of recovery: the
    // checkpoint written after loading (or a recovered segment's index) threw ENOSPC, and the
    // broker could not start (or the partition stayed offline) until space was freed.
    const dataDir = smallDisk();
    const first = await open(dataDir, { indexIntervalBytes: 0 });
    const log = await first.getOrCreateLog('t', 0);
    for (const tag of ['a', 'b', 'c']) await log.append(batch(2, { tag }), { waitForFlush: true });
    // No close: the next open finds no clean-shutdown marker and recovers.
    const filler = fillDisk(dataDir);
    const second = await open(dataDir, { indexIntervalBytes: 0 });
    expect(second.offlineLogs()).toEqual([]);
    const recovered = second.getLog('t', 0);
    expect(recovered && (await values(recovered))).toEqual(['a-0', 'a-1', 'b-0', 'b-1', 'c-0', 'c-1']);
    expect(recovered && (await failure(recovered.append(batch(1, { tag: 'x', valueBytes: 128 * 1024 }), { waitForFlush: true })))).toBe('KAFKA_STORAGE_ERROR');
    removeFiller(filler);
    expect(recovered && (await failure(recovered.append(batch(1, { tag: 'd' }), { waitForFlush: true })))).toBe('ok');
    await second.close();
    await first.close().catch(() => undefined);
  });

  it('becomes leader on a full disk: the new epoch waits in memory and is written before the first batch that carries it', async () => {
    // Failed before the fix in LeaderEpochCache.persist: assigning the epoch threw ENOSPC, so a
    // broker started on a full disk could not lead (nor serve reads) until a restart.
    const dataDir = smallDisk();
    const manager = await open(dataDir);
    const log = await manager.getOrCreateLog('t', 0);
    await log.append(batch(2, { tag: 'a' }), { waitForFlush: true, leaderEpoch: 0 });
    const filler = fillDisk(dataDir);
    expect(() => log.leaderEpochCache.assign(1, log.logEndOffset)).not.toThrow();
    expect(log.leaderEpochCache.latestEpoch()).toBe(1);
    expect(await failure(log.append(batch(1, { tag: 'b' }), { waitForFlush: true, leaderEpoch: 1 }))).toBe('KAFKA_STORAGE_ERROR');
    removeFiller(filler);
    expect(await failure(log.append(batch(1, { tag: 'c' }), { waitForFlush: true, leaderEpoch: 1 }))).toBe('ok');
    expect(readFileSync(join(dataDir, 't-0', 'leader-epoch-checkpoint'), 'utf8')).toBe('0\n2\n0 0\n1 2\n');
    expect(await values(log)).toEqual(['a-0', 'a-1', 'c-0']);
    await manager.close();
  });
});

describe('the standalone coordination file on a full disk', () => {
  it('refuses persistent changes with PERSISTENCE_FAILED and undoes them, but registers ephemeral nodes, which it never saves', async () => {
    // Failed before the fix in MemoryCoordination.mutate: an ephemeral-only change waited for a
    // rewrite of the file, so a standalone broker could not even register on a full disk.
    const dataDir = smallDisk();
    const file = join(dataDir, 'standalone-coordination.json');
    const store = new MemoryCoordination({ file, logger: silent }).session();
    await store.create('/brokers', Buffer.from(''), 'persistent');
    const filler = fillDisk(dataDir);
    expect(await failure(store.create('/topics', Buffer.from('x'), 'persistent'))).toMatch(/could not write/);
    expect(await store.exists('/topics')).toBe(false);
    expect(await failure(store.create('/brokers/1', Buffer.from('{}'), 'ephemeral'))).toBe('ok');
    removeFiller(filler);
    expect(await failure(store.create('/topics', Buffer.from('x'), 'persistent'))).toBe('ok');
    await store.close();
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { nodes: { path: string }[] };
    expect(saved.nodes.map((node) => node.path)).toEqual(['/', '/brokers', '/topics']);
  });
});
