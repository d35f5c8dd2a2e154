/**
 * The test-only fsync journal (src/storage/fsync-journal.ts): off, nothing is written and the
 * durable-file helpers behave as before; on, each completed fsync of a file records its identity
 * and the length it covered, each fsync of a folder its entries, through every helper the broker
 * uses (fsyncAsync, fsyncDirectory, fsyncDirectoryAsync, writeFileDurably) and the coordination
 * memory store's file.
 */
import { appendFileSync, existsSync, lstatSync, openSync, closeSync, readFileSync, statSync, writeFileSync, writeSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { fsyncAsync, fsyncDirectory, fsyncDirectoryAsync, writeFileDurably } from '../../../src/storage/durable-files.js';
import { beforeFileSync, fileIdentity, fsyncCompleted, fsyncJournalFile, setFsyncJournalFile, type FsyncRecord } from '../../../src/storage/fsync-journal.js';
import { temporaryDirectory } from './helpers.js';

afterEach(() => setFsyncJournalFile(undefined));

function records(journal: string): FsyncRecord[] {
  return readFileSync(journal, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as FsyncRecord);
}

const identity = (path: string): string => fileIdentity(lstatSync(path, { bigint: true }));

describe('fsync journal', () => {
  it('is off unless TRIBUTARY_FSYNC_JOURNAL is set: nothing is recorded and the helpers work as before', async () => {
    expect(process.env['TRIBUTARY_FSYNC_JOURNAL'] ?? '').toBe('');
    expect(fsyncJournalFile()).toBeUndefined();
    const directory = temporaryDirectory();
    const fd = openSync(join(directory, 'data'), 'w+');
    writeSync(fd, Buffer.from('hello'));
    expect(beforeFileSync(fd)).toBeUndefined();
    await fsyncAsync(fd);
    closeSync(fd);
    writeFileDurably(join(directory, 'small'), 'contents', directory);
    fsyncDirectory(directory);
    await fsyncDirectoryAsync(directory);
    expect(readFileSync(join(directory, 'small'), 'utf8')).toBe('contents');
    fsyncCompleted(undefined);
  });

  it('records a file by identity with the length its fsync covered, and a folder with its entries', async () => {
    const directory = temporaryDirectory();
    const journal = join(temporaryDirectory(), 'journal.jsonl');
    setFsyncJournalFile(journal);
    const path = join(directory, '00000000000000000000.log');
    const fd = openSync(path, 'w+');
    writeSync(fd, Buffer.alloc(100, 1));
    await fsyncAsync(fd);
    writeSync(fd, Buffer.alloc(50, 2), 0, 50, 100);
    closeSync(fd);
    mkdirSync(join(directory, 'sub'));
    fsyncDirectory(directory);

    const [file, folder] = records(journal);
    expect(file).toEqual({ kind: 'file', id: identity(path), length: 100, path });
    expect(folder).toEqual({ kind: 'dir', id: identity(directory), entries: { '00000000000000000000.log': identity(path), sub: identity(join(directory, 'sub')) }, path: directory });
    // The later write is in the file, not in the journal: nothing fsynced it.
    expect(statSync(path).size).toBe(150);
  });

  it('records the temporary file of writeFileDurably, which keeps its identity under the final name, then the folder', () => {
    const directory = temporaryDirectory();
    const journal = join(temporaryDirectory(), 'journal.jsonl');
    setFsyncJournalFile(journal);
    const path = join(directory, 'leader-epoch-checkpoint');
    writeFileDurably(path, '0\n1\n0 0\n', directory);
    const [file, folder] = records(journal);
    expect(file).toMatchObject({ kind: 'file', id: identity(path), length: 8, path: `${path}.tmp` });
    expect(folder).toMatchObject({ kind: 'dir', id: identity(directory), entries: { 'leader-epoch-checkpoint': identity(path) } });
  });

  it('records asynchronous folder fsyncs, shared or not', async () => {
    const directory = temporaryDirectory();
    const journal = join(temporaryDirectory(), 'journal.jsonl');
    setFsyncJournalFile(journal);
    writeFileSync(join(directory, 'a'), 'a');
    const first = fsyncDirectoryAsync(directory);
    writeFileSync(join(directory, 'b'), 'b');
    const second = fsyncDirectoryAsync(directory);
    await Promise.all([first, second]);
    const folders = records(journal).filter((record) => record.kind === 'dir');
    expect(folders.length).toBeGreaterThanOrEqual(1);
    // The last one holds both entries: b was made before the second fsync started.
    expect(Object.keys(folders.at(-1)?.kind === 'dir' ? folders.at(-1)!.entries : {}).sort()).toEqual(['a', 'b']);
  });

  it('records the coordination memory store’s file and folder', async () => {
    const directory = temporaryDirectory();
    const journal = join(temporaryDirectory(), 'journal.jsonl');
    setFsyncJournalFile(journal);
    const file = join(directory, 'coordination.json');
    const store = new MemoryCoordination({ file });
    const session = store.session();
    await session.create('/node', Buffer.from('x'), 'persistent');
    await session.close();
    const written = records(journal);
    expect(written.some((record) => record.kind === 'file' && record.id === identity(file) && record.length === statSync(file).size)).toBe(true);
    expect(written.some((record) => record.kind === 'dir' && record.id === identity(directory) && record.entries['coordination.json'] === identity(file))).toBe(true);
  });

  it('appends: a journal left by an earlier run is kept', async () => {
    const directory = temporaryDirectory();
    const journal = join(temporaryDirectory(), 'journal.jsonl');
    appendFileSync(journal, '{"kind":"dir","id":"0:0:0","entries":{},"path":"/earlier"}\n');
    setFsyncJournalFile(journal);
    fsyncDirectory(directory);
    expect(records(journal).map((record) => record.path)).toEqual(['/earlier', directory]);
    expect(existsSync(journal)).toBe(true);
  });
});
