/**
 * The power-loss tool (test/support/power-loss.ts) on hand-made data dirs whose fsyncs went
 * through the real journal hook: files cut back to their fsynced length, emptied when never
 * fsynced, entries made since their folder's last fsync removed, renames since then undone; and
 * end to end on a partition log "crashed" with flushed and unflushed batches, which recovers to
 * exactly its flushed end.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fsyncAsync, fsyncDirectory, writeFileDurably } from '../../../src/storage/durable-files.js';
import { setFsyncJournalFile } from '../../../src/storage/fsync-journal.js';
import { formatPowerLoss, loseUnsyncedWrites, readFsyncJournal } from '../../support/power-loss.js';
import { batch, openManager, temporaryDirectory } from '../storage/helpers.js';

afterEach(() => setFsyncJournalFile(undefined));

/** A data dir and a journal beside it, with the hook on. */
function journaled(): { dataDir: string; journal: string } {
  const dataDir = temporaryDirectory();
  const journal = join(temporaryDirectory(), 'fsync-journal.jsonl');
  setFsyncJournalFile(journal);
  return { dataDir, journal };
}

async function writeAndSync(path: string, bytes: Buffer, sync = true): Promise<void> {
  const fd = openSync(path, 'a');
  try {
    writeSync(fd, bytes);
    if (sync) await fsyncAsync(fd);
  } finally {
    closeSync(fd);
  }
}

describe('power loss: cutting a data dir back to its fsyncs', () => {
  it('cuts a file back to the length its last fsync covered', async () => {
    const { dataDir, journal } = journaled();
    const path = join(dataDir, 'segment.log');
    await writeAndSync(path, Buffer.alloc(100, 1));
    fsyncDirectory(dataDir);
    await writeAndSync(path, Buffer.alloc(40, 2));
    await writeAndSync(path, Buffer.alloc(60, 3), false);
    const report = loseUnsyncedWrites(dataDir, journal);
    expect(statSync(path).size).toBe(140);
    expect(readFileSync(path).subarray(100)).toEqual(Buffer.alloc(40, 2));
    expect(report.cut).toEqual([{ path: 'segment.log', from: 200, to: 140 }]);
    expect(report.removed).toEqual([]);
  });

  it('removes files and folders made since their folder’s last fsync, with everything in them', async () => {
    const { dataDir, journal } = journaled();
    await writeAndSync(join(dataDir, 'old'), Buffer.from('old'));
    fsyncDirectory(dataDir);
    await writeAndSync(join(dataDir, 'new'), Buffer.from('fsynced, but its name never was'));
    mkdirSync(join(dataDir, 'topic-0'));
    await writeAndSync(join(dataDir, 'topic-0', '00000000000000000000.log'), Buffer.from('data'));
    fsyncDirectory(join(dataDir, 'topic-0'));
    const report = loseUnsyncedWrites(dataDir, journal);
    expect(readdirSync(dataDir)).toEqual(['old']);
    expect([...report.removed].sort()).toEqual(['new', 'topic-0']);
  });

  it('empties a file whose name is durable but whose bytes were never fsynced, and clears a folder never fsynced', async () => {
    const { dataDir, journal } = journaled();
    writeFileSync(join(dataDir, '00000000000000000000.index'), Buffer.alloc(80, 7));
    mkdirSync(join(dataDir, 'topic-1'));
    fsyncDirectory(dataDir);
    await writeAndSync(join(dataDir, 'topic-1', 'a.log'), Buffer.from('fsynced data in a folder whose entries never were'));
    const report = loseUnsyncedWrites(dataDir, journal);
    expect(statSync(join(dataDir, '00000000000000000000.index')).size).toBe(0);
    expect(readdirSync(join(dataDir, 'topic-1'))).toEqual([]);
    expect(report.cut).toEqual([{ path: '00000000000000000000.index', from: 80, to: 0 }]);
    expect(report.removed).toEqual(['topic-1/a.log']);
  });

  it('keeps a fsynced temporary file renamed over a durable name, and a durable rename', async () => {
    const { dataDir, journal } = journaled();
    const path = join(dataDir, 'replication-offset-checkpoint');
    writeFileDurably(path, '0\n1\nt 0 5\n', dataDir);
    // A second write whose folder fsync never happened: temp file fsynced, renamed over.
    await writeAndSync(`${path}.tmp`, Buffer.from('0\n1\nt 0 9\n'));
    renameSync(`${path}.tmp`, path);
    loseUnsyncedWrites(dataDir, journal);
    expect(readFileSync(path, 'utf8')).toBe('0\n1\nt 0 9\n');
    expect(readdirSync(dataDir)).toEqual(['replication-offset-checkpoint']);
  });

  it('undoes a rename made since the folder’s last fsync when the old name is free', async () => {
    const { dataDir, journal } = journaled();
    mkdirSync(join(dataDir, 'topic-0'));
    await writeAndSync(join(dataDir, 'topic-0', 'a.log'), Buffer.from('kept'));
    fsyncDirectory(join(dataDir, 'topic-0'));
    fsyncDirectory(dataDir);
    renameSync(join(dataDir, 'topic-0'), join(dataDir, 'topic-0.123.deleted'));
    const report = loseUnsyncedWrites(dataDir, journal);
    expect(readdirSync(dataDir)).toEqual(['topic-0']);
    expect(readFileSync(join(dataDir, 'topic-0', 'a.log'), 'utf8')).toBe('kept');
    expect(report.restored).toEqual([{ from: 'topic-0.123.deleted', to: 'topic-0' }]);
  });

  it('reads a journal with a torn last line, and refuses one damaged elsewhere', () => {
    const directory = temporaryDirectory();
    const torn = join(directory, 'torn.jsonl');
    writeFileSync(torn, '{"kind":"file","id":"1:2:3","length":5,"path":"x"}\n{"kind":"dir","id":"1:');
    expect(readFsyncJournal(torn)).toMatchObject({ records: 1, fileLengths: new Map([['1:2:3', 5]]) });
    const damaged = join(directory, 'damaged.jsonl');
    writeFileSync(damaged, 'nonsense\n{"kind":"file","id":"1:2:3","length":5,"path":"x"}\n');
    expect(() => readFsyncJournal(damaged)).toThrow(/line 1 is not JSON/);
    expect(readFsyncJournal(join(directory, 'absent.jsonl')).records).toBe(0);
  });

  it('leaves a partition log exactly its flushed batches: it recovers to its flushed end, every batch valid', async () => {
    const { dataDir, journal } = journaled();
    const settings = { segmentBytes: 3_000, indexIntervalBytes: 256, flushMessages: 1_000_000 };
    const first = await openManager(dataDir, settings);
    const log = await first.manager.getOrCreateLog('clicks', 0);
    for (let i = 0; i < 40; i += 1) await log.append(batch(1 + (i % 4), { valueBytes: 60 }));
    await log.flush();
    first.manager.writeRecoveryCheckpoint();
    const flushedEnd = log.flushedEndOffset;
    // Written (in the page cache), never fsynced; rolls new segments too.
    for (let i = 0; i < 40; i += 1) await log.append(batch(2, { valueBytes: 60 }));
    expect(log.logEndOffset).toBeGreaterThan(flushedEnd);
    const segmentsBefore = readdirSync(join(dataDir, 'clicks-0')).filter((file) => file.endsWith('.log')).length;

    // The process dies (no close), and the power with it.
    const report = loseUnsyncedWrites(dataDir, journal);
    expect(report.removed.length + report.cut.length, formatPowerLoss(report)).toBeGreaterThan(0);
    const segmentsAfter = readdirSync(join(dataDir, 'clicks-0')).filter((file) => file.endsWith('.log')).length;
    expect(segmentsAfter).toBeLessThan(segmentsBefore);
    expect(existsSync(join(dataDir, 'meta.properties'))).toBe(true);

    setFsyncJournalFile(undefined);
    const second = await openManager(dataDir, settings);
    const recovered = second.manager.getLog('clicks', 0)!;
    expect(recovered.logEndOffset).toBe(flushedEnd);
    expect(second.manager.storageId).toBe(first.manager.storageId);
    expect(second.lines.some((line) => String(line['msg']).includes('truncated invalid bytes'))).toBe(false);
    await second.manager.close();
  });
});
