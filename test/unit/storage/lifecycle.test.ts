/**
 * No write to a file the log no longer owns: deleting a log refuses the appends still queued for
 * its next write (UNKNOWN_TOPIC_OR_PARTITION), and no byte of them lands in any file — in
 * particular not in a new log's segment, whose descriptor may reuse the deleted one's number.
 * Retention and reads: a segment deleted under a reader stays readable through the reference the
 * reader holds, and refuses everything once let go. Empty logs hold no files or descriptors.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KafkaProtocolError } from '../../../src/protocol/kafka-errors.js';
import { decodeRecords } from '../../../src/protocol/records.js';
import { batch, openManager, temporaryDirectory, walkBatches } from './helpers.js';

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'NONE';
  } catch (error) {
    return error instanceof KafkaProtocolError ? error.code : `unexpected: ${String(error)}`;
  }
}

/** Every value stored under the data dir, per log folder. */
function storedValues(dataDir: string): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (const folder of readdirSync(dataDir, { withFileTypes: true })) {
    if (!folder.isDirectory()) continue;
    const list: string[] = [];
    for (const file of readdirSync(join(dataDir, folder.name)).filter((name) => name.endsWith('.log')).sort()) {
      const bytes = readFileSync(join(dataDir, folder.name, file));
      for (const stored of walkBatches(bytes)) list.push(...decodeRecords(bytes, stored.position).map((r) => r.value?.toString() ?? ''));
    }
    values.set(folder.name, list);
  }
  return values;
}

function openDescriptors(): number {
  return readdirSync('/proc/self/fd').length;
}

describe('deleting a log under queued appends', () => {
  it('refuses the queued appends with UNKNOWN_TOPIC_OR_PARTITION and writes none of their bytes anywhere', async () => {
    const directory = temporaryDirectory();
    const { manager, lines } = await openManager(directory, { flushMessages: 1_000_000 });
    for (let round = 0; round < 20; round += 1) {
      const doomed = await manager.getOrCreateLog(`old${round}`, 0);
      await doomed.append(batch(1, { tag: `old${round}-first` }));
      // Queued for the write after this turn of the event loop; the deletion starts in this turn.
      const queued = [1, 2, 3].map((i) => outcome(doomed.append(batch(1, { tag: `old${round}-queued${i}`, valueBytes: 3_000 }))));
      const acksAll = outcome(doomed.append(batch(1, { tag: `old${round}-acks-all` }), { waitForFlush: true }));
      const deleted = manager.deleteLog(`old${round}`, 0);
      // A new log, created and written while the deletion runs, may get the old descriptor's number.
      const fresh = await manager.getOrCreateLog(`new${round}`, 0);
      await fresh.append(batch(1, { tag: `new${round}` }));
      await deleted;
      expect(await Promise.all([...queued, acksAll])).toEqual(Array(4).fill('UNKNOWN_TOPIC_OR_PARTITION'));
      expect(await outcome(doomed.append(batch(1)))).toBe('UNKNOWN_TOPIC_OR_PARTITION');
      expect(await outcome(doomed.read(0, 100))).toBe('UNKNOWN_TOPIC_OR_PARTITION');
      await fresh.flush();
    }
    const stored = storedValues(directory);
    for (let round = 0; round < 20; round += 1) {
      expect(stored.has(`old${round}-0`)).toBe(false);
      expect(stored.get(`new${round}-0`)).toEqual([`new${round}-0`]);
    }
    expect(lines.filter((line) => line.level === 50)).toEqual([]);
    await manager.close();
  });

  it('lets a flush under way finish on its own descriptor when the log is deleted meanwhile', async () => {
    const directory = temporaryDirectory();
    const { manager, lines } = await openManager(directory, { flushMessages: 1_000_000 });
    for (let round = 0; round < 20; round += 1) {
      const log = await manager.getOrCreateLog(`flushing${round}`, 0);
      await log.append(batch(3, { valueBytes: 1_000 }));
      const flushed = outcome(log.flush());
      await manager.deleteLog(`flushing${round}`, 0);
      expect(['NONE', 'UNKNOWN_TOPIC_OR_PARTITION']).toContain(await flushed);
      expect(await outcome(log.flush())).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    }
    // No fsync on a closed descriptor: nothing was reported failed, no log went offline.
    expect(lines.filter((line) => line.level === 50)).toEqual([]);
    expect(readdirSync(directory).filter((name) => name.startsWith('flushing'))).toEqual([]);
    await manager.close();
  });

  it('recreating a topic of the same name while its deletion runs leaves the new log its own folder', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, { flushMessages: 1_000_000 });
    const old = await manager.getOrCreateLog('again', 0);
    await old.append(batch(2, { tag: 'old' }));
    const deleted = manager.deleteLog('again', 0);
    const recreated = await manager.getOrCreateLog('again', 0);
    await recreated.append(batch(1, { tag: 'new' }));
    await deleted;
    await recreated.flush();
    expect(storedValues(directory).get('again-0')).toEqual(['new-0']);
    await manager.close();
  });
});

describe('segments deleted under readers', () => {
  it('retention deleting a segment while a timestamp lookup and a slice hold it: both finish, then it refuses', async () => {
    const { manager, clock } = await openManager(temporaryDirectory(), { segmentBytes: 1_000, retentionMs: 1_000, indexIntervalBytes: 0 });
    const log = await manager.getOrCreateLog('held', 0);
    for (let i = 0; i < 12; i += 1) await log.append(batch(2, { tag: `b${i}`, timestamp: 1_000 + i * 10, valueBytes: 200 }));
    await log.flush();
    expect(log.segmentBaseOffsets.length).toBeGreaterThan(2);
    const { slice } = await log.read(0, 1 << 20);
    const lookup = log.offsetForTimestamp(1_001n);
    clock.advance(10_000_000);
    // Deletes every closed segment, the ones the slice and the lookup are reading included.
    expect(manager.applyRetention()).toBeGreaterThan(0);
    expect(log.logStartOffset).toBeGreaterThan(0);
    expect(await lookup).toEqual({ offset: 1, timestamp: 1_001n });
    const bytes = await slice!.readBytes();
    expect(decodeRecords(bytes).map((r) => r.value?.toString().slice(0, 5))).toEqual(['b0-0a', 'b0-1a']);
    slice!.release();
    // After the release the descriptor is gone: the slice refuses to read through it.
    await expect(slice!.readBytes()).rejects.toThrow(/after its release/);
    await manager.close();
  });
});

describe('empty logs', () => {
  it('hold no descriptor and no segment file until their first append, and restart fine either way', async () => {
    const directory = temporaryDirectory();
    const { manager } = await openManager(directory, { flushMessages: 1_000_000 });
    const before = openDescriptors();
    const logs = await Promise.all(Array.from({ length: 300 }, (_, partition) => manager.getOrCreateLog('wide', partition)));
    // A handful of descriptors may come and go (the test runner's), never one per log.
    expect(openDescriptors() - before).toBeLessThan(20);
    expect(readdirSync(join(directory, 'wide-0'))).toEqual([]);
    await logs[7]!.append(batch(2, { tag: 'only' }), { waitForFlush: true });
    expect(readdirSync(join(directory, 'wide-7')).filter((name) => name.endsWith('.log'))).toHaveLength(1);
    await manager.close();
    expect(existsSync(join(directory, 'wide-0'))).toBe(true);

    const again = await openManager(directory);
    expect(again.manager.offlineLogs()).toEqual([]);
    expect(again.manager.getLog('wide', 7)?.logEndOffset).toBe(2);
    expect(again.manager.getLog('wide', 8)?.logEndOffset).toBe(0);
    expect((await again.manager.getLog('wide', 8)!.append(batch(1))).baseOffset).toBe(0);
    await again.manager.close();
  });
});
